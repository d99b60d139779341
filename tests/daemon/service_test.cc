// readingsd as a service: sd_notify and watchdog through a test NOTIFY_SOCKET, signals, exit
// codes that tell systemd what a restart can fix, backup, SIGHUP reload.
#include <arpa/inet.h>
#include <date/date.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <iterator>
#include <map>
#include <set>
#include <mutex>
#include <thread>
#include <vector>

#include "config/config.h"
#include "http/client.h"
#include "daemon/options.h"
#include "daemon/service.h"
#include "storage/key.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/damaged_store.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/ports.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

// The systemd side of sd_notify: a datagram socket that collects what the daemon says. A thread
// of its own reads it all along, as systemd does: once its queue (10 datagrams) is full, the
// daemon's sd_notify blocks, and so does its main loop.
class NotifySocket {
 public:
  NotifySocket() : dir_("readingsd-notify"), path_(dir_.File("notify")) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind notify socket");
    timeval tv{0, 100'000};  // how often the reader looks at stop_
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    reader_ = std::thread([this] { Read(); });
  }
  ~NotifySocket() {
    stop_ = true;
    reader_.join();
    close(fd_);
  }

  // Waits until `enough` messages containing `needle` arrived beyond those counted by earlier
  // calls, or `timeout` passed; returns how many did.
  int Count(const std::string& needle, std::chrono::milliseconds timeout, int enough = 1) {
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int seen = 0;
    for (;;) {
      for (; next_ < messages_.size() && seen < enough; ++next_) {
        if (messages_[next_].find(needle) != std::string::npos) ++seen;
      }
      if (seen >= enough || !arrived_.wait_until(lock, deadline, [&] { return next_ < messages_.size(); })) {
        return seen;
      }
    }
  }
  // Like Count, of every message sent before this call and no more, without waiting for others.
  int CountArrived(const std::string& needle) {
    // A marker sent now is queued behind them: once the reader took it, it took them.
    const int marker = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    const bool sent = sendto(marker, kMarker, sizeof kMarker - 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) > 0;
    close(marker);
    EXPECT_TRUE(sent);
    {
      std::unique_lock lock(mu_);
      const int wanted = ++markers_sent_;
      EXPECT_TRUE(arrived_.wait_for(lock, std::chrono::seconds(30), [&] { return markers_read_ >= wanted; }));
    }
    return Count(needle, std::chrono::milliseconds(0), std::numeric_limits<int>::max());
  }
  const std::string& path() const { return path_; }
  std::string messages() const {
    std::lock_guard lock(mu_);
    std::string all;
    for (const auto& m : messages_) all += m + "\n--\n";
    return all;
  }

 private:
  static constexpr char kMarker[] = "test: marker";

  void Read() {
    char buf[4096];
    while (!stop_) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::lock_guard lock(mu_);
      std::string msg(buf, static_cast<std::size_t>(n));
      if (msg == kMarker) {
        ++markers_read_;
      } else {
        messages_.push_back(std::move(msg));
      }
      arrived_.notify_all();
    }
  }

  TempDir dir_;
  std::string path_;
  int fd_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable arrived_;
  std::vector<std::string> messages_;
  std::size_t next_ = 0;  // messages_ before it were counted
  int markers_sent_ = 0, markers_read_ = 0;
  std::thread reader_;
};

// What systemd passes a Type=notify unit with a watchdog: where to notify, and how often (600 ms).
std::vector<std::pair<std::string, std::string>> NotifyEnv(const NotifySocket& notify) {
  return {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "600000"}};
}

TEST(Service, NotifiesReadyPingsTheWatchdogAndStopsCleanlyOnSigterm) {
  MosquittoBroker broker;
  NotifySocket notify;
  Daemon daemon({.broker_port = broker.port(), .env = NotifyEnv(notify)});
  daemon.Start();
  EXPECT_EQ(notify.Count("READY=1", std::chrono::seconds(30)), 1) << notify.messages();
  EXPECT_EQ(notify.Count("WATCHDOG=1", std::chrono::seconds(30), 3), 3) << notify.messages();
  EXPECT_NE(notify.messages().find("STATUS="), std::string::npos);

  auto generator = tools::GeneratorOptions{.count = 2000, .devices = 10};
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  daemon.WaitForStored(DeviceIds(10), 2000, std::chrono::seconds(30));
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
  EXPECT_EQ(notify.Count("STOPPING=1", std::chrono::seconds(2)), 1) << notify.messages();
  // Reopened after the clean stop, the store has every reading.
  EXPECT_EQ(daemon.StoredKeys(DeviceIds(10)).size(), 2000u);
  EXPECT_NE(daemon.log().find("<6>stopped;"), std::string::npos) << daemon.log();
}

// A broker address whose accept queue is full: the kernel drops further SYNs, so a client's
// blocking connect() hangs, retransmitting, until there is room again.
class FullAcceptQueue {
 public:
  FullAcceptQueue() : listen_fd_(ListenOnLoopback(/*backlog=*/0, &port_)) {
    // Backlog 0 holds one connection: the filler's.
    filler_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    if (connect(filler_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("filler");
  }
  ~FullAcceptQueue() {
    close(filler_fd_);
    close(listen_fd_);
  }
  int port() const { return port_; }
  // Takes the filler off the queue: the waiting client's next SYN gets through.
  void MakeRoom() { close(accept(listen_fd_, nullptr, nullptr)); }

 private:
  int port_ = 0;
  int listen_fd_;
  int filler_fd_ = -1;
};

// The unit's WatchdogSec restarts a daemon whose ingest is wedged: the pings must stop while the
// ingest loop does not turn, and come back once it does. Its loop is held in a connect() to a
// broker address that drops SYNs, like a firewalled one.
TEST(Service, TheWatchdogStopsPingingWhileTheIngestLoopIsStuck) {
  FullAcceptQueue broker;
  NotifySocket notify;
  Daemon daemon({.broker_port = broker.port(), .env = NotifyEnv(notify)});
  daemon.StartUnready();
  EXPECT_EQ(notify.Count("READY=1", std::chrono::seconds(30)), 1) << notify.messages();
  // The loop turned once before it got stuck: the pings go on until that is 10 s ago.
  EXPECT_EQ(notify.Count("WATCHDOG=1", std::chrono::seconds(30)), 1) << notify.messages();

  // The daemon says, at every watchdog tick, that it holds the ping back. A ping sent before a
  // line of the log is counted by CountArrived once the line is there to read.
  constexpr std::string_view kStuck = "<4>watchdog: not pinging: ingest loop stuck";
  auto stuck_lines = [&] {
    const std::string log = daemon.log();
    std::size_t n = 0;
    for (std::size_t at = log.find(kStuck); at != std::string::npos; at = log.find(kStuck, at + 1)) ++n;
    return n;
  };
  auto wait_for_stuck_lines = [&](std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (stuck_lines() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return stuck_lines() >= n;
  };
  ASSERT_TRUE(wait_for_stuck_lines(1)) << daemon.log();
  notify.CountArrived("WATCHDOG=1");  // the pings from before
  ASSERT_TRUE(wait_for_stuck_lines(stuck_lines() + 3)) << daemon.log();
  EXPECT_EQ(notify.CountArrived("WATCHDOG=1"), 0) << notify.messages();

  broker.MakeRoom();  // connect() returns at the next SYN retransmission; the loop turns again
  EXPECT_EQ(notify.Count("WATCHDOG=1", std::chrono::seconds(60)), 1) << notify.messages() << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

TEST(Service, SigintAlsoStopsCleanly) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  EXPECT_EQ(daemon.Stop(SIGINT), 0) << daemon.log();
  EXPECT_NE(daemon.log().find("received SIGINT, stopping"), std::string::npos) << daemon.log();
  EXPECT_NE(daemon.log().find("<6>stopped;"), std::string::npos) << daemon.log();
}

TEST(Service, ASecondDaemonOnTheSameDataDirExitsWithTempFail) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "--http.listen=127.0.0.1:0",
                                     "--mqtt.port=" + std::to_string(broker.port())});
  EXPECT_EQ(status, 75) << out;
  EXPECT_NE(out.find("in use by another process"), std::string::npos) << out;
  EXPECT_EQ(daemon.Terminate(), 0);
}

// Issue #25: a start that fails (here on a busy HTTP port, exit 69) leaves no store behind,
// neither a data dir it created nor files in an empty one; a store that was there stays.
TEST(Service, AStartThatFailsLeavesNoNewStoreBehind) {
  int busy_port = 0;
  const int busy = ListenOnLoopback(1, &busy_port);
  const std::string listen = "--http.listen=127.0.0.1:" + std::to_string(busy_port);
  TempDir dir("readingsd-failed-start");
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + dir.File("new/data"), listen});
  EXPECT_EQ(status, 69) << out;
  EXPECT_NE(out.find("cannot listen on"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.File("new"))) << out;

  std::filesystem::create_directories(dir.File("empty"));
  std::tie(status, out) = RunReadingsd({"--storage.data_dir=" + dir.File("empty"), listen});
  EXPECT_EQ(status, 69) << out;
  EXPECT_TRUE(std::filesystem::is_empty(dir.File("empty"))) << out;

  std::unique_ptr<storage::Store> store;
  ASSERT_TRUE(storage::Store::Open({.path = dir.File("store")}, &store).ok());
  store.reset();
  std::tie(status, out) = RunReadingsd({"--storage.data_dir=" + dir.File("store"), listen});
  EXPECT_EQ(status, 69) << out;
  EXPECT_TRUE(storage::Store::Open({.path = dir.File("store")}, &store).ok()) << out;
  close(busy);
}

TEST(Service, ACorruptDataDirIsAClearErrorThatSystemdWillNotRestartInALoop) {
  TempDir dir("readingsd-corrupt");
  std::filesystem::create_directories(dir.File("data"));
  std::ofstream(dir.File("data/CURRENT")) << "MANIFEST-999999\n";
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + dir.File("data"), "--http.listen=127.0.0.1:0"});
  // 65 is in the unit's RestartPreventExitStatus; 74 (an I/O error) would be restarted.
  EXPECT_EQ(status, 65) << out;
  EXPECT_NE(out.find(dir.File("data")), std::string::npos) << out;
  EXPECT_NE(out.find("<3>storage:"), std::string::npos) << out;
}

TEST(Service, BackupBesideARunningDaemonRestoresToAnIdenticalStore) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto generator = tools::GeneratorOptions{.count = 3000, .devices = 30};
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(30), 3000, std::chrono::seconds(30)), 3000u);
  TempDir dir("readingsd-backup");  // backups/ does not exist yet: backup makes it
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", dir.File("backups/copy")});
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(daemon.Terminate(), 0);
  EXPECT_EQ(Difference(StoredReadings(dir.File("backups/copy"), DeviceIds(30)), PublishedReadings(generator)), "");
  EXPECT_EQ(Difference(StoredReadings(dir.File("backups/copy"), DeviceIds(30)), daemon.StoredReadings(DeviceIds(30))), "");
  auto [again, out2] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", dir.File("backups/copy")});
  EXPECT_EQ(again, 64) << out2;  // refuses to overwrite
}

// Issue #25: `serve` answers over HTTP from a store opened read-only, a backup here, with ingest
// off: ready without a broker, the readings there, nothing in the directory touched, nothing
// taken from the broker.
TEST(Service, ServeAnswersFromABackupReadOnlyWithIngestOff) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto generator = tools::GeneratorOptions{.count = 300, .devices = 3};
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), 300, std::chrono::seconds(30)), 300u);
  TempDir dir("readingsd-serve");
  const std::string copy = dir.File("copy");
  ASSERT_EQ(RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", copy}).first, 0);
  EXPECT_EQ(daemon.Terminate(), 0);  // its session stays: the broker queues what comes next for it
  const DirSnapshot before = Snapshot(copy);

  Daemon served({.broker_port = broker.port(), .extra_args = {"--storage.data_dir=" + copy, "serve"}});
  served.Start();  // ready with no broker connection
  auto [status, ready] = Get(served.http_port(), "/readyz");
  EXPECT_EQ(status, 200);
  EXPECT_NE(ready.find("read-only"), std::string::npos) << ready;
  auto [code, body] = Get(served.http_port(), "/v1/devices/" + DeviceIds(3)[0] + "/readings?limit=1000");
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find("\"count\":100"), std::string::npos) << body.substr(0, 300);
  generator.start_ms += 3'600'000;  // an hour later: 300 new readings
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(served.Terminate(), 0);
  EXPECT_EQ(served.log().find("mqtt:"), std::string::npos) << served.log();
  EXPECT_EQ(SnapshotDiff(before, Snapshot(copy)), "");
  // What was published meanwhile waited for the ingesting daemon, which gets all of it.
  daemon.Start();
  EXPECT_EQ(daemon.WaitForStored(DeviceIds(3), 600, std::chrono::seconds(30)), 600u);
  EXPECT_EQ(daemon.Terminate(), 0);
}

// The store's table files (*.sst) now in `dir`.
std::set<std::string> TableFiles(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".sst") names.insert(entry.path().filename());
  }
  return names;
}

// Issue #25 (README, Back up and verify): `serve` pointed at the live store beside the daemon.
// RocksDB allows read-only instances beside its one writer; each is a view of the store as it was
// when it opened, with every table file held open, so the writer may flush, compact and delete
// files under it. Here the daemon restarts (each start flushes its log into a new table file)
// until compaction has deleted a file serve opened: serve goes on answering what it saw, the
// daemon goes on storing everything, and serve started again sees it all.
TEST(Service, ServeBesideTheRunningDaemonAnswersWhileTheDaemonGoesOnStoring) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto generator = tools::GeneratorOptions{.count = 300, .devices = 3};
  ReadingMap published = PublishedReadings(generator);
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), 300, std::chrono::seconds(30)), 300u);
  ASSERT_EQ(daemon.Terminate(), 0);
  daemon.Start();  // its log is now a table file, which serve opens
  const std::string path = "/v1/devices/" + DeviceIds(3)[0] + "/readings?limit=1000";

  Daemon served({.broker_port = broker.port(), .extra_args = {"--storage.data_dir=" + daemon.data_dir(), "serve"}});
  served.Start();
  auto [ready_status, ready] = Get(served.http_port(), "/readyz");
  EXPECT_EQ(ready_status, 200);
  EXPECT_NE(ready.find("read-only"), std::string::npos) << ready;
  const auto [status, seen] = Get(served.http_port(), path);
  ASSERT_EQ(status, 200) << seen;
  EXPECT_NE(seen.find("\"count\":100,"), std::string::npos) << seen.substr(0, 300);
  const std::set<std::string> opened = TableFiles(daemon.data_dir());
  ASSERT_FALSE(opened.empty());

  bool compacted = false;
  for (int round = 1; round <= 8 && !compacted; ++round) {
    generator.start_ms += 3'600'000;  // an hour later: 300 new readings
    published.merge(PublishedReadings(generator));
    ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
    ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), published.size(), std::chrono::seconds(30)), published.size());
    ASSERT_EQ(daemon.Terminate(), 0);
    daemon.Start();
    for (int i = 0; i < 50 && !compacted; ++i) {  // compaction runs in the background
      const std::set<std::string> now = TableFiles(daemon.data_dir());
      compacted = std::any_of(opened.begin(), opened.end(), [&](const std::string& f) { return !now.count(f); });
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(Get(served.http_port(), path), std::make_pair(200, seen)) << "round " << round;
    const std::string stored = Get(daemon.http_port(), path).second;
    EXPECT_NE(stored.find("\"count\":" + std::to_string(100 * (round + 1)) + ","), std::string::npos)
        << "round " << round << ": " << stored.substr(0, 300);
  }
  EXPECT_TRUE(compacted) << "no table file serve opened was ever deleted: the test did not test that";
  EXPECT_EQ(Get(served.http_port(), path), std::make_pair(200, seen));
  EXPECT_EQ(served.Terminate(), 0);
  EXPECT_EQ(served.log().find("mqtt:"), std::string::npos) << served.log();
  EXPECT_EQ(Difference(daemon.StoredReadings(DeviceIds(3)), published), "");

  served.Start();  // a new view: everything the daemon stored
  const auto [again_status, again] = Get(served.http_port(), path);
  EXPECT_EQ(again_status, 200);
  EXPECT_NE(again.find("\"count\":" + std::to_string(published.size() / 3) + ","), std::string::npos)
      << again.substr(0, 300);
  EXPECT_EQ(served.Terminate(), 0);
  EXPECT_EQ(daemon.Terminate(), 0);
}

// A backup taken while readings stream in is a store of its own holding a consistent state:
// everything stored before the backup began, and of each device a prefix of what it sent, with
// the values it sent.
TEST(Service, ABackupTakenWhileReadingsFlowHoldsAConsistentPrefix) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--mqtt.max_batch=50"}});
  daemon.Start();
  constexpr std::size_t kTotal = 20000;
  const auto generator = tools::GeneratorOptions{.count = kTotal, .devices = 20};
  const auto devices = DeviceIds(20);
  AsyncPublisher publisher(
      {.port = broker.port(), .generator = generator, .rate = 2000, .timeout = std::chrono::seconds(120)});
  ASSERT_GE(daemon.WaitForStored(devices, 3000, std::chrono::seconds(60)), 3000u) << daemon.log();
  const ReadingMap before = daemon.StoredReadings(devices);
  TempDir dir("readingsd-backup");
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", dir.File("copy")});
  ASSERT_EQ(status, 0) << out;
  // Readings were still being written: the backup was taken in the middle of the stream.
  ASSERT_TRUE(publisher.process().Running()) << "the stream ended before the backup did";
  EXPECT_LT(before.size(), kTotal);

  {
    std::unique_ptr<storage::Store> copy;  // opens for writing too: a daemon can start on it
    Status s = storage::Store::Open({.path = dir.File("copy")}, &copy);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  const ReadingMap backup = StoredReadings(dir.File("copy"), devices);
  std::size_t lost = 0;
  for (const auto& reading : before) lost += backup.count(reading.first) ? 0 : 1;
  EXPECT_EQ(lost, 0u) << "of " << before.size() << " readings stored before the backup began";
  // Of each device, its first readings (ts order is send order), as many as the backup holds.
  std::map<std::string, std::size_t> held;
  for (const auto& reading : backup) ++held[reading.first.first];
  ReadingMap prefix;
  for (const auto& reading : PublishedReadings(generator)) {
    if (held[reading.first.first] > 0) {
      --held[reading.first.first];
      prefix.insert(reading);
    }
  }
  EXPECT_EQ(Difference(backup, prefix), "") << "the backup is not a prefix of each device's stream";
  EXPECT_GE(backup.size(), before.size());

  ASSERT_EQ(publisher.Wait().exit_code, 0);
  EXPECT_EQ(daemon.WaitForStored(devices, kTotal, std::chrono::seconds(60)), kTotal);
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

// storage.sync reaches the store: with it, every group commit fsyncs the WAL (RocksDB's own
// count, exported as readingsd_rocksdb_wal_syncs); without it, only the store's own marks do
// (the new store's format marker, and a high-water mark at most every 5 s while written).
TEST(Service, StorageSyncFsyncsTheWalAtEveryGroupCommit) {
  MosquittoBroker broker;
  const auto generator = tools::GeneratorOptions{.count = 500, .devices = 5};
  for (const bool sync : {false, true}) {
    SCOPED_TRACE(sync ? "storage.sync = true" : "storage.sync = false");
    Daemon daemon({.broker_port = broker.port(),
                   .extra_args = {sync ? "--storage.sync=true" : "--storage.sync=false", "--mqtt.max_batch=10"}});
    const auto started = std::chrono::steady_clock::now();
    daemon.Start();
    ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
    ASSERT_EQ(daemon.WaitForStored(DeviceIds(5), 500, std::chrono::seconds(60)), 500u) << daemon.log();
    auto [status, metrics] = Get(daemon.http_port(), "/metrics");
    const auto marks = 2 + (std::chrono::steady_clock::now() - started) / std::chrono::seconds(5);
    ASSERT_EQ(status, 200);
    const double commits = MetricValue(metrics, "readingsd_write_batch_size_count");
    const double syncs = MetricValue(metrics, "readingsd_rocksdb_wal_syncs");
    EXPECT_GE(commits, 50);  // at most 10 readings each
    if (sync) {
      EXPECT_GE(syncs, commits) << metrics;
    } else {
      EXPECT_LE(syncs, static_cast<double>(marks)) << metrics;
    }
    EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
  }
}

// storage.retention reaches the store: readings older than it go at compaction, and compaction
// comes at least daily (RocksDB keeps the options it opened with in the data dir's OPTIONS file).
TEST(Service, StorageRetentionDropsOldReadingsAtCompactionAndCompactsDaily) {
  TempDir dir("readingsd-retention");
  const auto now = std::chrono::system_clock::now();
  auto sort_key = [](std::chrono::system_clock::time_point t) {
    std::string sk;
    EXPECT_TRUE(storage::NormalizeTimestamp(date::format("%FT%TZ", date::floor<std::chrono::seconds>(t)), &sk).ok());
    return sk;
  };
  const std::string old_key = sort_key(now - std::chrono::hours(24 * 31));
  const std::string kept_key = sort_key(now - std::chrono::hours(24 * 29));
  // Opens the store as readingsd does with `flags`, writes both readings and compacts.
  auto stored_after_compaction = [&](const std::string& name, std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"readingsd", "--storage.data_dir=" + dir.File(name)});
    std::vector<const char*> argv;
    for (const auto& flag : flags) argv.push_back(flag.c_str());
    config::Config config;
    config::CommandLine command;
    Status parsed = config::ParseCommandLine(static_cast<int>(argv.size()), argv.data(), &config, &command);
    EXPECT_TRUE(parsed.ok()) << parsed.message();
    std::unique_ptr<storage::Store> store;
    EXPECT_TRUE(storage::Store::Open(daemon::StoreOptionsFrom(config), &store).ok());
    std::set<std::string> keys;
    if (store == nullptr) return keys;
    for (const auto& key : {old_key, kept_key}) EXPECT_TRUE(store->Put({"dev00001", key, {{"t", 1.0}}}).ok());
    EXPECT_TRUE(store->CompactAll().ok());
    auto it = store->NewIterator("dev00001", "", "");
    for (it->SeekToFirst(); it->Valid(); it->Next()) keys.emplace(it->sort_key());
    return keys;
  };
  EXPECT_EQ(stored_after_compaction("kept", {}), (std::set<std::string>{old_key, kept_key}));
  EXPECT_EQ(stored_after_compaction("expiring", {"--storage.retention=30d"}), std::set<std::string>{kept_key});

  std::string options_file;  // the newest, as RocksDB reads it on open
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("expiring"))) {
    const std::string name = entry.path().filename();
    if (name.starts_with("OPTIONS-") && name > std::filesystem::path(options_file).filename().string()) {
      options_file = entry.path();
    }
  }
  ASSERT_FALSE(options_file.empty());
  std::ifstream in(options_file);
  const std::string options((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(options.find("periodic_compaction_seconds=86400\n"), std::string::npos) << options;
  EXPECT_NE(options.find("compaction_filter_factory=readingsd.RetentionFilterFactory"), std::string::npos) << options;
}

TEST(Service, CheckConfigAndSighupReload) {
  TempDir dir("readingsd-config");
  std::ofstream(dir.File("readingsd.toml")) << "[log]\nlevel = \"info\"\n";
  auto [ok, ok_out] = RunReadingsd({"--config", dir.File("readingsd.toml"), "check-config"});
  EXPECT_EQ(ok, 0) << ok_out;
  auto [bad, bad_out] = RunReadingsd({"--mqtt.username=u", "--mqtt.password_file=" + dir.File("missing"), "check-config"});
  EXPECT_EQ(bad, 78) << bad_out;
  EXPECT_NE(bad_out.find("mqtt.password_file"), std::string::npos) << bad_out;

  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--config", dir.File("readingsd.toml")}});
  daemon.Start();
  std::ofstream(dir.File("readingsd.toml")) << "[log]\nlevel = \"debug\"\n";
  kill(daemon.pid(), SIGHUP);
  for (int i = 0; i < 50 && daemon.log().find("reloaded log.level = debug") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(daemon.log().find("reloaded log.level = debug"), std::string::npos) << daemon.log();
  std::ofstream(dir.File("readingsd.toml")) << "[log]\nlevel = 7\n";
  kill(daemon.pid(), SIGHUP);
  for (int i = 0; i < 50 && daemon.log().find("keeping the running config") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(daemon.log().find("keeping the running config"), std::string::npos) << daemon.log();
  EXPECT_TRUE(daemon.Running());
  EXPECT_EQ(daemon.Terminate(), 0);
}

// The daemon, `readingsd query` and check-config read http.auth_token_file alike: comments,
// blank lines, CRLF and spaces around a token are skipped by all three.
TEST(Service, TheTokenFileReadsTheSameForTheDaemonQueryAndCheckConfig) {
  TempDir dir("readingsd-tokens");
  std::ofstream(dir.File("tokens"), std::ios::binary) << "# readingsd tokens\r\n\r\n  first-token \r\n# ci\r\nsecond\r\n";
  std::ofstream(dir.File("comments-only")) << "# no token yet\n";
  std::ofstream(dir.File("spaced")) << "two words\n";
  const std::string tokens = "--http.auth_token_file=" + dir.File("tokens");

  auto [ok, ok_out] = RunReadingsd({tokens, "check-config"});
  EXPECT_EQ(ok, 0) << ok_out;
  // --help says what README says (issue #25).
  auto [help_status, help] = RunReadingsd({"--help"});
  EXPECT_EQ(help_status, 0);
  EXPECT_NE(help.find("file of bearer tokens, one per line (# starts a comment line)"), std::string::npos) << help;
  for (const char* bad : {"comments-only", "spaced"}) {
    auto [status, out] = RunReadingsd({"--http.auth_token_file=" + dir.File(bad), "check-config"});
    EXPECT_EQ(status, 78) << bad << ": " << out;
    EXPECT_NE(out.find("http.auth_token_file: " + dir.File(bad)), std::string::npos) << out;
    auto [run, run_out] = RunReadingsd({"--http.auth_token_file=" + dir.File(bad), "--storage.data_dir=" + dir.File("data"),
                                        "--http.listen=127.0.0.1:0"});
    EXPECT_EQ(run, 78) << bad << ": " << run_out;
  }

  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {tokens}});
  daemon.StartUnready();  // /readyz wants a token too; HTTP answering is enough here
  auto get = [&daemon](const std::string& token) {
    http::HttpGetResult res;
    http::HttpGet("127.0.0.1", std::to_string(daemon.http_port()), "/readyz", token, std::chrono::seconds(5), &res);
    return res.status;
  };
  EXPECT_EQ(get("first-token"), 200);
  EXPECT_EQ(get("second"), 200);
  EXPECT_EQ(get("# readingsd tokens"), 401);
  EXPECT_EQ(get(""), 401);

  std::string listen = "--http.listen=127.0.0.1:" + std::to_string(daemon.http_port());
  auto [query, table] = RunReadingsd({listen, tokens, "query", "--device", "d1"});
  EXPECT_EQ(query, 0) << table;
  EXPECT_NE(table.find("readingTs"), std::string::npos) << table;
  auto [comments, comments_out] = RunReadingsd({listen, "--http.auth_token_file=" + dir.File("comments-only"), "query",
                                                "--device", "d1"});
  EXPECT_EQ(comments, 78) << comments_out;
  EXPECT_NE(comments_out.find("no token in it"), std::string::npos) << comments_out;
  EXPECT_EQ(daemon.Terminate(), 0);
}

}  // namespace
}  // namespace readingsd::test
