// readingsd as a service: sd_notify and watchdog through a test NOTIFY_SOCKET, signals, exit
// codes that tell systemd what a restart can fix, backup, SIGHUP reload.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/http_client.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

// The systemd side of sd_notify: a datagram socket that collects what the daemon says.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind notify socket");
    timeval tv{0, 100'000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() { close(fd_); }
  // Waits until a message containing `needle` arrives; counts such messages within `timeout`.
  int Count(const std::string& needle, std::chrono::milliseconds timeout, int enough = 1) {
    int seen = 0;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline && seen < enough) {
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        std::string msg(buf, static_cast<std::size_t>(n));
        messages_ += msg + "\n--\n";
        if (msg.find(needle) != std::string::npos) ++seen;
      }
    }
    return seen;
  }
  const std::string& messages() const { return messages_; }

 private:
  std::string path_;
  int fd_;
  std::string messages_;
};

TEST(Service, NotifiesReadyPingsTheWatchdogAndStopsCleanlyOnSigterm) {
  MosquittoBroker broker;
  TempDir dir("readingsd-notify");
  NotifySocket notify(dir.File("notify"));
  Daemon daemon({.broker_port = broker.port(),
                 .env = {{"NOTIFY_SOCKET", dir.File("notify")}, {"WATCHDOG_USEC", "600000"}}});
  daemon.Start();
  EXPECT_EQ(notify.Count("READY=1", std::chrono::seconds(10)), 1) << notify.messages();
  EXPECT_EQ(notify.Count("WATCHDOG=1", std::chrono::seconds(5), 3), 3) << notify.messages();
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

TEST(Service, SigintAlsoStopsCleanly) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  kill(daemon.pid(), SIGINT);
  EXPECT_EQ(daemon.Terminate(), 0);
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

TEST(Service, ACorruptDataDirIsAClearErrorThatSystemdWillNotRestartInALoop) {
  TempDir dir("readingsd-corrupt");
  std::filesystem::create_directories(dir.File("data"));
  std::ofstream(dir.File("data/CURRENT")) << "MANIFEST-999999\n";
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + dir.File("data"), "--http.listen=127.0.0.1:0"});
  EXPECT_TRUE(status == 65 || status == 74) << status << ": " << out;
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
  TempDir dir("readingsd-backup");
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", dir.File("copy")});
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(daemon.Terminate(), 0);
  EXPECT_TRUE(StoredKeys(dir.File("copy"), DeviceIds(30)) == ExpectedKeys(generator));
  EXPECT_TRUE(StoredKeys(dir.File("copy"), DeviceIds(30)) == daemon.StoredKeys(DeviceIds(30)));
  auto [again, out2] = RunReadingsd({"--storage.data_dir=" + daemon.data_dir(), "backup", dir.File("copy")});
  EXPECT_EQ(again, 64) << out2;  // refuses to overwrite
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
    daemon::HttpGetResult res;
    daemon::HttpGet("127.0.0.1", std::to_string(daemon.http_port()), "/readyz", token, std::chrono::seconds(5), &res);
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
