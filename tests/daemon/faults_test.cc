// Storage faults end to end: the real daemon on a data dir that fills up (a small tmpfs that is
// grown again) or is read-only. A full disk must hold acks, so the broker keeps every reading
// until space returns; a read-only data dir must stop startup with a clear message and the exit
// code systemd retries (74). The mounts need root (CI runs as root); elsewhere the tests skip.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>

#include "storage/key.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/mount.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Polls /readyz until its status is `status`; returns the last (status, body).
std::pair<int, std::string> WaitForReadyz(int port, int status, seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto last = Get(port, "/readyz");
  while (last.first != status && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
    last = Get(port, "/readyz");
  }
  return last;
}

class StorageFaults : public ::testing::Test {
 protected:
  void TearDown() override {
    if (daemon_ && daemon_->Running()) daemon_->Kill9();  // before its data dir goes away
    mount_.reset();
    daemon_.reset();
  }

  // Mounts a tmpfs; skips the test when this process may not mount.
  void MountTmpfs(const std::string& dir, const std::string& size, bool read_only) {
    std::string error;
    mount_ = Mount::Tmpfs(dir, size, read_only, &error);
    if (!mount_ && !Mount::Permitted(error)) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to mount a tmpfs: " << error;
    ASSERT_TRUE(mount_) << error;
  }

  // Starts the daemon on an 8 MiB tmpfs and publishes kReadings readings, more than fit, then
  // waits for the store to fail. The WAL (which RocksDB does not compress) fills after about
  // 1,500 of these readings, long before the 64 MiB memtable would flush.
  void FillTheDisk(MosquittoBroker& broker) {
    daemon_.emplace(DaemonOptions{.broker_port = broker.port()});
    ASSERT_NO_FATAL_FAILURE(MountTmpfs(daemon_->data_dir(), "8m", /*read_only=*/false));
    if (IsSkipped()) return;
    daemon_->Start();
    PublishResult published = RunPublisher({.port = broker.port(), .generator = generator_});
    ASSERT_EQ(published.exit_code, 0) << published.output;  // acked by the broker, which queues them
    auto [status, body] = WaitForReadyz(daemon_->http_port(), 503, seconds(20));
    ASSERT_EQ(status, 503) << body << "\n" << daemon_->log();
  }

  static constexpr std::size_t kReadings = 6000;
  const tools::GeneratorOptions generator_{.count = kReadings, .devices = 20, .payload_pad = 2000};
  const std::vector<std::string> devices_ = DeviceIds(20);
  std::optional<Daemon> daemon_;
  std::unique_ptr<Mount> mount_;
};

TEST_F(StorageFaults, AFullDiskHoldsAcksAndNoReadingIsLostOnceSpaceReturns) {
  MosquittoBroker broker;
  ASSERT_NO_FATAL_FAILURE(FillTheDisk(broker));
  if (IsSkipped()) return;
  auto [status, body] = Get(daemon_->http_port(), "/readyz");
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("store write failed"), std::string::npos) << body;
  EXPECT_NE(body.find("No space left on device"), std::string::npos) << body;
  // The error is logged once, at error level, naming it; the daemon keeps running and holds.
  std::this_thread::sleep_for(seconds(2));
  EXPECT_TRUE(daemon_->Running()) << daemon_->log();
  std::string log = daemon_->log();
  auto error_line = log.find("<3>ingest: IO error: write: IO error: No space left on device");
  EXPECT_NE(error_line, std::string::npos) << log;
  EXPECT_NE(log.find("holding acks and retrying", error_line), std::string::npos) << log;
  EXPECT_LT(daemon_->StoredKeys(devices_).size(), kReadings);
  EXPECT_EQ(Get(daemon_->http_port(), "/readyz").first, 503);

  // The disk grows: the store resumes by itself, the held acks go out and the broker delivers
  // the rest.
  std::string error;
  ASSERT_TRUE(mount_->Resize("64m", &error)) << error;
  EXPECT_EQ(daemon_->WaitForStored(devices_, kReadings, seconds(30)), kReadings) << daemon_->log();
  EXPECT_EQ(Difference(daemon_->StoredReadings(devices_), PublishedReadings(generator_)), "");
  EXPECT_EQ(WaitForReadyz(daemon_->http_port(), 200, seconds(10)).first, 200);
  EXPECT_NE(daemon_->log().find("<6>ingest: store writes succeed again"), std::string::npos) << daemon_->log();
  EXPECT_EQ(daemon_->Terminate(), 0) << daemon_->log();
  EXPECT_EQ(Difference(daemon_->StoredReadings(devices_), PublishedReadings(generator_)), "");
}

TEST_F(StorageFaults, StoppedWhileTheDiskIsFullItAcksNothingUnwrittenAndLosesNothing) {
  MosquittoBroker broker;
  ASSERT_NO_FATAL_FAILURE(FillTheDisk(broker));
  if (IsSkipped()) return;
  // SIGTERM (systemctl stop): it tries to write what it holds until its stop deadline (10 s),
  // then exits without acking it.
  EXPECT_EQ(daemon_->Terminate(seconds(30)), 0) << daemon_->log();
  EXPECT_NE(daemon_->log().find("unwritten readings; they were not acked"), std::string::npos) << daemon_->log();
  std::string error;
  ASSERT_TRUE(mount_->Resize("64m", &error)) << error;
  daemon_->Start();
  EXPECT_EQ(daemon_->WaitForStored(devices_, kReadings, seconds(30)), kReadings) << daemon_->log();
  EXPECT_EQ(Difference(daemon_->StoredReadings(devices_), PublishedReadings(generator_)), "");
}

TEST_F(StorageFaults, KilledWhileTheDiskIsFullLosesNothingAfterARestart) {
  MosquittoBroker broker;
  ASSERT_NO_FATAL_FAILURE(FillTheDisk(broker));
  if (IsSkipped()) return;
  daemon_->Kill9();  // the WAL ends in the append that failed
  std::string error;
  ASSERT_TRUE(mount_->Resize("64m", &error)) << error;
  daemon_->Start();
  EXPECT_EQ(daemon_->WaitForStored(devices_, kReadings, seconds(30)), kReadings) << daemon_->log();
  EXPECT_EQ(Difference(daemon_->StoredReadings(devices_), PublishedReadings(generator_)), "");
}

TEST_F(StorageFaults, StartingOnAReadOnlyDataDirExitsWithIoErrAndSaysWhy) {
  TempDir dir("readingsd-ro");
  ASSERT_NO_FATAL_FAILURE(MountTmpfs(dir.File("data"), "1m", /*read_only=*/true));
  if (IsSkipped()) return;
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + dir.File("data"), "--http.listen=127.0.0.1:0"});
  EXPECT_EQ(status, 74) << out;
  EXPECT_NE(out.find("<3>storage:"), std::string::npos) << out;
  EXPECT_NE(out.find(dir.File("data")), std::string::npos) << out;
  EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
  mount_.reset();
}

TEST_F(StorageFaults, AStoreRemountedReadOnlyExitsWithIoErrAndStaysIntact) {
  TempDir dir("readingsd-ro");
  {
    std::unique_ptr<storage::Store> store;
    ASSERT_TRUE(storage::Store::Open({.path = dir.File("data")}, &store).ok());
    std::string sk;
    ASSERT_TRUE(storage::NormalizeTimestamp("2026-06-23T08:00:00Z", &sk).ok());
    ASSERT_TRUE(store->Put({"dev00001", sk, {{"temperature", 21.5}}}).ok());
  }
  std::string error;
  mount_ = Mount::ReadOnlyBind(dir.File("data"), dir.File("ro"), &error);
  if (!mount_ && !Mount::Permitted(error)) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to mount: " << error;
  ASSERT_TRUE(mount_) << error;

  auto [status, out] = RunReadingsd({"--storage.data_dir=" + dir.File("ro"), "--http.listen=127.0.0.1:0"});
  EXPECT_EQ(status, 74) << out;
  EXPECT_NE(out.find("<3>storage:"), std::string::npos) << out;
  EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
  mount_.reset();
  EXPECT_EQ(StoredKeys(dir.File("data"), {"dev00001"}).size(), 1u);
}

}  // namespace
}  // namespace readingsd::test
