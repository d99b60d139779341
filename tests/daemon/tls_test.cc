// MQTT over TLS with a client certificate and a password, against a real mosquitto whose TLS
// listener requires both. Every test makes its own PKI with openssl: a CA, a broker certificate
// it signed for 127.0.0.1 and localhost, a client certificate it signed, and a second CA that
// signed nothing of the broker's. The password reaches the daemon only through a file.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kUser = "reader";
constexpr const char* kPassword = "Pa55-d0-not-show-me";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Polls /readyz until `done(status, body)`; returns the last (status, body).
template <typename Done>
std::pair<int, std::string> PollReadyz(int port, Done done, seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto last = Get(port, "/readyz");
  while (!done(last.first, last.second) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
    last = Get(port, "/readyz");
  }
  return last;
}

// The first line of `log` that contains `needle` ("" if none).
std::string LineWith(const std::string& log, const std::string& needle) {
  auto at = log.find(needle);
  if (at == std::string::npos) return "";
  auto begin = log.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return log.substr(begin, log.find('\n', at) - begin);
}

// Polls `log()` until it contains `needle`.
template <typename Log>
bool WaitForLog(Log log, const std::string& needle, seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (log().find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return true;
}

class MqttTls : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string ec[] = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
    auto self_signed_ca = [&](const std::string& name, const std::string& cn) {
      std::vector<std::string> argv = {"openssl", "req", "-x509"};
      argv.insert(argv.end(), std::begin(ec), std::end(ec));
      argv.insert(argv.end(), {"-keyout", File(name + ".key"), "-out", File(name + ".crt"), "-days", "2",
                               "-subj", "/CN=" + cn});
      Run(argv);
    };
    auto signed_by_ca = [&](const std::string& name, const std::string& cn, const std::string& extensions) {
      std::vector<std::string> argv = {"openssl", "req"};
      argv.insert(argv.end(), std::begin(ec), std::end(ec));
      argv.insert(argv.end(), {"-keyout", File(name + ".key"), "-out", File(name + ".csr"), "-subj", "/CN=" + cn});
      Run(argv);
      WriteAll(File(name + ".ext"), extensions);
      Run({"openssl", "x509", "-req", "-in", File(name + ".csr"), "-CA", File("ca.crt"), "-CAkey", File("ca.key"),
           "-CAcreateserial", "-out", File(name + ".crt"), "-days", "2", "-extfile", File(name + ".ext")});
    };
    self_signed_ca("ca", "readingsd test CA");
    self_signed_ca("other-ca", "a CA the broker does not use");
    signed_by_ca("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    signed_by_ca("client", "readingsd", "extendedKeyUsage=clientAuth\n");
    Run({"mosquitto_passwd", "-b", "-c", File("passwd"), kUser, kPassword});
    WriteAll(File("password"), std::string(kPassword) + "\n");
    WriteAll(File("wrong-password"), "not-the-password\n");

    // The harness's plain listener stays for the publisher; the settings below are global (no
    // per_listener_settings), so it too wants the password now.
    std::ostringstream conf;
    conf << "cafile " << File("ca.crt") << "\n"
         << "certfile " << File("server.crt") << "\n"
         << "keyfile " << File("server.key") << "\n"
         << "require_certificate true\n"
         << "use_identity_as_username false\n"
         << "allow_anonymous false\n"
         << "password_file " << File("passwd") << "\n";
    broker_.emplace(BrokerOptions{.second_listener = conf.str()});
    tls_port_ = broker_->second_port();
  }

  std::string File(const std::string& name) const { return dir_.File(name); }

  // Runs a program to completion; fails the test with its output unless it exits 0.
  void Run(const std::vector<std::string>& argv) {
    std::string log = File("commands.log");
    std::optional<int> status;
    {
      Process process(ProcessOptions{argv, {}, log});
      status = process.Wait(seconds(30));
    }
    if (status != 0) throw std::runtime_error(argv[0] + " " + argv[1] + " failed:\n" + ReadAll(log));
  }

  // The daemon's flags for the TLS listener, with everything it needs unless overridden.
  std::vector<std::string> TlsArgs(const std::string& ca = "ca.crt", const std::string& password = "password",
                                   bool client_certificate = true) const {
    std::vector<std::string> args = {"--mqtt.ca_file=" + File(ca), "--mqtt.username=" + std::string(kUser),
                                     "--mqtt.password_file=" + File(password)};
    if (client_certificate) {
      args.insert(args.end(), {"--mqtt.cert_file=" + File("client.crt"), "--mqtt.key_file=" + File("client.key")});
    }
    return args;
  }

  // Whether the broker logged `client_id` connecting through the listener on `port`, as `user`.
  bool ConnectedThrough(const std::string& client_id, int port, const std::string& user) const {
    std::string log = broker_->log();
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      // "New client connected from 127.0.0.1:40000 as readingsd-under-test (p2, c0, k30, u'reader')."
      auto from = line.find("New client connected from ");
      auto as = line.find(" as " + client_id + " (");
      if (from == std::string::npos || as == std::string::npos) continue;
      std::string peer = line.substr(from + 26, as - from - 26);
      if (line.find("u'" + user + "'") == std::string::npos) continue;
      if (log.find("New connection from " + peer + " on port " + std::to_string(port) + ".") != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  TempDir dir_{"readingsd-tls"};
  int tls_port_ = 0;
  std::optional<MosquittoBroker> broker_;
};

TEST_F(MqttTls, IngestsOverTlsWithAClientCertificateAndAPasswordFromAFile) {
  Daemon daemon({.broker_port = tls_port_, .extra_args = TlsArgs()});
  daemon.Start();  // ready = connected and subscribed, over TLS
  EXPECT_TRUE(ConnectedThrough("readingsd-under-test", tls_port_, kUser)) << broker_->log();

  auto generator = tools::GeneratorOptions{.count = 2000, .devices = 10};
  PublishResult published = RunPublisher({.port = broker_->port(),
                                          .generator = generator,
                                          .extra_args = {"--username", kUser, "--password-file", File("password")}});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  EXPECT_EQ(daemon.WaitForStored(DeviceIds(10), 2000, seconds(30)), 2000u) << daemon.log();
  EXPECT_TRUE(daemon.StoredKeys(DeviceIds(10)) == ExpectedKeys(generator));
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

TEST_F(MqttTls, AWrongPasswordIsReportedAsRefusedAndTheDaemonKeepsRunning) {
  Daemon daemon({.broker_port = tls_port_, .extra_args = TlsArgs("ca.crt", "wrong-password")});
  daemon.StartUnready();
  auto [status, body] = PollReadyz(
      daemon.http_port(), [](int, const std::string& b) { return b.find("refused") != std::string::npos; }, seconds(10));
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("broker refused"), std::string::npos) << body;
  EXPECT_NE(body.find("not authorised"), std::string::npos) << body;
  // It keeps retrying, and keeps saying why.
  std::this_thread::sleep_for(seconds(2));
  EXPECT_TRUE(daemon.Running());
  std::tie(status, body) = Get(daemon.http_port(), "/readyz");
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("broker refused"), std::string::npos) << body;
  EXPECT_NE(daemon.log().find("<3>mqtt: broker refused the connection: Connection Refused: not authorised"),
            std::string::npos)
      << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

TEST_F(MqttTls, ABrokerCertificateFromAnotherCaIsRefusedWithAClearLogLine) {
  Daemon daemon({.broker_port = tls_port_, .extra_args = TlsArgs("other-ca.crt")});
  daemon.StartUnready();
  EXPECT_TRUE(WaitForLog([&] { return daemon.log(); }, "certificate verify failed", seconds(10))) << daemon.log();
  // An error, not a warning: retrying will not fix a certificate.
  EXPECT_TRUE(LineWith(daemon.log(), "certificate verify failed").starts_with("<3>mqtt: cannot connect to 127.0.0.1:"))
      << daemon.log();
  auto [status, body] = Get(daemon.http_port(), "/readyz");
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("certificate verify failed"), std::string::npos) << body;
  EXPECT_TRUE(daemon.Running());
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

TEST_F(MqttTls, WithoutTheClientCertificateTheBrokerRefusesTheHandshake) {
  Daemon daemon({.broker_port = tls_port_, .extra_args = TlsArgs("ca.crt", "password", /*client_certificate=*/false)});
  daemon.StartUnready();
  EXPECT_TRUE(WaitForLog([&] { return daemon.log(); }, "certificate required", seconds(10))) << daemon.log();
  EXPECT_TRUE(LineWith(daemon.log(), "certificate required").starts_with("<3>mqtt: cannot connect")) << daemon.log();
  auto [status, body] = Get(daemon.http_port(), "/readyz");
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("certificate required"), std::string::npos) << body;
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
}

TEST_F(MqttTls, ThePasswordIsInNeitherTheCommandLineNorTheConfigDumpNorTheLog) {
  Daemon daemon({.broker_port = tls_port_, .extra_args = TlsArgs()});
  daemon.Start();
  std::string proc = "/proc/" + std::to_string(daemon.pid());
  std::string cmdline = ReadAll(proc + "/cmdline");
  EXPECT_NE(cmdline.find("--mqtt.password_file=" + File("password")), std::string::npos) << cmdline;
  EXPECT_EQ(cmdline.find(kPassword), std::string::npos) << cmdline;
  EXPECT_EQ(ReadAll(proc + "/environ").find(kPassword), std::string::npos);
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.log();
  EXPECT_EQ(daemon.log().find(kPassword), std::string::npos) << daemon.log();

  std::vector<std::string> args = TlsArgs();
  args.push_back("--print-config");
  auto [exit_code, out] = RunReadingsd(args);
  EXPECT_EQ(exit_code, 0) << out;
  EXPECT_NE(out.find("password_file = \"" + File("password") + "\""), std::string::npos) << out;
  EXPECT_NE(out.find("username = \"reader\""), std::string::npos) << out;
  EXPECT_EQ(out.find(kPassword), std::string::npos) << out;
}

}  // namespace
}  // namespace readingsd::test
