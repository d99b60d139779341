// The real readingsd binary on damaged copies of a real store: each damage that loses readings
// stops it with exit 65 (which systemd's unit does not restart) and leaves every file byte for
// byte as it was, however often it is started; damage it cannot see at start (a flipped bit in
// an SST file) answers 500 where it is read, is logged and counted, and degrades /readyz;
// `readingsd verify` finds it, and `readingsd repair` reports first and repairs only with --yes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "storage/store.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/damaged_store.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/ports.h"

namespace readingsd::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class DamagedStoreDaemon : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pristine_dir_ = new TempDir("readingsd-pristine");
    built_ = new BuiltStore(BuildStore(pristine_dir_->File("db"), 20, 100, 50));
  }
  static void TearDownTestSuite() {
    delete built_;
    delete pristine_dir_;
  }

  // A fresh copy of the pristine store at `path`, to damage.
  static std::string CopyTo(const std::string& path) {
    CopyDir(pristine_dir_->File("db"), path);
    return path;
  }

  static StoredKeySet AllKeys() {
    StoredKeySet all = built_->flushed;
    all.insert(built_->in_wal.begin(), built_->in_wal.end());
    return all;
  }

  // Starts readingsd on `path` (no broker needed: it stops before connecting to one).
  static std::pair<int, std::string> Run(const std::string& path) {
    return RunReadingsd({"--storage.data_dir=" + path, "--http.listen=127.0.0.1:0",
                         "--mqtt.port=" + std::to_string(FreeLoopbackPorts(1)[0])});
  }

  // Each start exits 65 with an error naming the store and saying `says`; no file changes.
  static void ExpectRefused(const std::string& path, const std::string& says, int starts = 1) {
    DirSnapshot before = Snapshot(path);
    for (int i = 0; i < starts; ++i) {
      auto [status, out] = Run(path);
      EXPECT_EQ(status, 65) << out;
      EXPECT_NE(out.find("<3>storage:"), std::string::npos) << out;
      EXPECT_NE(out.find(path), std::string::npos) << out;
      EXPECT_NE(out.find(says), std::string::npos) << out;
      EXPECT_EQ(SnapshotDiff(before, Snapshot(path)), "") << "after start " << i + 1;
    }
  }

  TempDir dir_{"readingsd-damaged"};
  static TempDir* pristine_dir_;
  static BuiltStore* built_;
};

TempDir* DamagedStoreDaemon::pristine_dir_ = nullptr;
BuiltStore* DamagedStoreDaemon::built_ = nullptr;

TEST_F(DamagedStoreDaemon, ACutManifestExits65AndLeavesEveryFileAsItWas) {
  std::string path = CopyTo(dir_.File("db"));
  std::string manifest = NewestFile(path, "MANIFEST-");
  CutFile(manifest, FileSize(manifest) / 2);
  ExpectRefused(path, "it was cut short");
}

TEST_F(DamagedStoreDaemon, AMissingCurrentExits65OnEveryRetry) {
  std::string path = CopyTo(dir_.File("db"));
  fs::remove(path + "/CURRENT");
  ExpectRefused(path, "CURRENT is missing", /*starts=*/3);
}

TEST_F(DamagedStoreDaemon, ACurrentNamingAMissingManifestExits65) {
  std::string path = CopyTo(dir_.File("db"));
  std::ofstream(path + "/CURRENT", std::ios::trunc) << "MANIFEST-999999\n";
  ExpectRefused(path, "CURRENT names \"MANIFEST-999999\", which does not exist");
}

TEST_F(DamagedStoreDaemon, AWalCutInHalfExits65) {
  std::string path = CopyTo(dir_.File("db"));
  std::string wal = NewestFile(path, ".log");
  CutFile(wal, FileSize(wal) / 2);
  ExpectRefused(path, "writes are gone");
}

TEST_F(DamagedStoreDaemon, AWalOverwrittenInTheMiddleExits65) {
  std::string path = CopyTo(dir_.File("db"));
  std::string wal = NewestFile(path, ".log");
  OverwriteFile(wal, FileSize(wal) / 2, std::string(300, '\xa5'));
  ExpectRefused(path, "RocksDB cannot read it");
}

TEST_F(DamagedStoreDaemon, ANonEmptyDirectoryThatIsNotAStoreExits65) {
  std::string path = dir_.File("home");
  fs::create_directories(path + "/photos");
  std::ofstream(path + "/notes.txt") << "shopping list\n";
  ExpectRefused(path, "no READINGSD marker");
}

TEST_F(DamagedStoreDaemon, AFlippedSstBitAnswers500IsLoggedCountedDegradesReadyzAndVerifyFindsIt) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  std::string path = CopyTo(daemon.data_dir());
  std::string sst = NewestFile(path, ".sst");
  std::string sst_name = fs::path(sst).filename().string();
  FlipBit(sst, FileSize(sst) / 10);  // in a data block of readings: they come first, rollup records after
  std::string damaged_device, sound_device;
  {
    std::unique_ptr<storage::Store> store;
    ASSERT_TRUE(storage::Store::Open({.path = path, .read_only = true}, &store).ok());
    for (const auto& device : built_->devices) {
      auto it = store->NewIterator(device, "", "");
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
      }
      (it->status().ok() ? sound_device : damaged_device) = device;
    }
  }
  ASSERT_FALSE(damaged_device.empty());
  ASSERT_FALSE(sound_device.empty());

  daemon.Start();  // nothing at start reads that block
  EXPECT_EQ(Get(daemon.http_port(), "/v1/devices/" + sound_device + "/readings?limit=1000").first, 200);
  auto [status, body] = Get(daemon.http_port(), "/v1/devices/" + damaged_device + "/readings?limit=1000");
  EXPECT_EQ(status, 500) << body;
  EXPECT_NE(body.find("Corruption"), std::string::npos) << body;

  auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (daemon.log().find("storage: store damaged") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string log = daemon.log();
  EXPECT_NE(log.find("<3>storage: store damaged"), std::string::npos) << log;
  EXPECT_NE(log.find(sst_name), std::string::npos) << log;
  auto [metrics_status, metrics] = Get(daemon.http_port(), "/metrics");
  auto counter = metrics.find("\nreadingsd_store_corruption_errors_total ");
  ASSERT_NE(counter, std::string::npos) << metrics;
  EXPECT_GE(std::stod(metrics.substr(counter + 41)), 1.0) << metrics;
  auto [ready, detail] = Get(daemon.http_port(), "/readyz");
  EXPECT_EQ(ready, 503) << detail;
  EXPECT_NE(detail.find("store damaged"), std::string::npos) << detail;
  EXPECT_NE(detail.find(sst_name), std::string::npos) << detail;

  auto [verify, out] = RunReadingsd({"--storage.data_dir=" + path, "verify"});  // beside the daemon
  EXPECT_EQ(verify, 65) << out;
  EXPECT_NE(out.find("is damaged"), std::string::npos) << out;
  EXPECT_NE(out.find(sst_name + ": Corruption"), std::string::npos) << out;
  EXPECT_NE(out.find("verify: "), std::string::npos) << out;  // the progress line
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST_F(DamagedStoreDaemon, VerifyPassesASoundStore) {
  std::string path = CopyTo(dir_.File("db"));
  DirSnapshot before = Snapshot(path);
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + path, "verify"});
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("is sound"), std::string::npos) << out;
  EXPECT_EQ(SnapshotDiff(before, Snapshot(path)), "");
}

TEST_F(DamagedStoreDaemon, RepairReportsWithoutChangingAnythingThenWithYesKeepsACopyAndTheDaemonStarts) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  std::string path = CopyTo(daemon.data_dir());
  std::string manifest = NewestFile(path, "MANIFEST-");
  CutFile(manifest, FileSize(manifest) / 2);
  DirSnapshot damaged = Snapshot(path);

  auto [report, out] = RunReadingsd({"--storage.data_dir=" + path, "repair"});
  EXPECT_EQ(report, 65) << out;
  EXPECT_NE(out.find("it was cut short"), std::string::npos) << out;
  EXPECT_NE(out.find("a repair keeps " + std::to_string(AllKeys().size()) + " readings"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was changed"), std::string::npos) << out;
  EXPECT_EQ(SnapshotDiff(damaged, Snapshot(path)), "");

  std::string kept = dir_.File("kept");
  auto [repaired, out2] = RunReadingsd({"--storage.data_dir=" + path, "repair", "--yes", "--copy-to", kept});
  EXPECT_EQ(repaired, 0) << out2;
  EXPECT_NE(out2.find("repaired; the data dir as it was is kept at " + kept), std::string::npos) << out2;
  EXPECT_EQ(SnapshotDiff(damaged, Snapshot(kept)), "");

  daemon.Start();
  EXPECT_TRUE(daemon.StoredKeys(built_->devices) == AllKeys());
  EXPECT_EQ(daemon.Terminate(), 0);
}

}  // namespace
}  // namespace readingsd::test
