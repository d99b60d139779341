// The page in a real browser (#27): ui.js drives Debian's headless chromium through
// playwright-core (package-lock.json here, installed by scripts/setup) against a real daemon
// with auth on, fed through a real mosquitto. Screenshots and the downloaded CSV land in the build
// dir (ui-*.png, ui-long.csv).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {
namespace {

const std::string kDir = READINGSD_UI_TEST_DIR;
const std::string kOut = READINGSD_UI_TEST_OUT;

TEST(Ui, FleetAndDevicePagesInChromium) {
  ASSERT_EQ(::access((kDir + "/node_modules/playwright-core/package.json").c_str(), R_OK), 0)
      << "playwright-core is not installed in " << kDir << "/node_modules: run scripts/setup";
  ASSERT_EQ(::access("/usr/bin/chromium", X_OK), 0) << "chromium is missing: run scripts/setup";

  TempDir work("readingsd-ui");
  {
    std::ofstream tokens(work.File("tokens"));
    tokens << "ui-secret\n";
  }
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(),
                 .extra_args = {"--http.auth_token_file=" + work.File("tokens")}});
  daemon.StartUnready();  // its /readyz needs the token: ui.js waits for it

  const std::string log = work.File("node.log");
  std::optional<int> status;
  try {
    Process node(ProcessOptions{{"node", kDir + "/ui.js", "--readingsd",
                                 "http://127.0.0.1:" + std::to_string(daemon.http_port()), "--mqtt-port",
                                 std::to_string(broker.port()), "--token", "ui-secret", "--out", kOut},
                                {},
                                log});
    status = node.Wait(std::chrono::seconds(120));
  } catch (const std::exception& e) {
    FAIL() << "cannot run node (scripts/setup installs Node.js): " << e.what();
  }
  std::ifstream in(log);
  std::stringstream output;
  output << in.rdbuf();
  std::cout << output.str();
  ASSERT_TRUE(status.has_value()) << "ui.js did not finish within 120 s";
  EXPECT_EQ(*status, 0) << "failures above; readingsd's log:\n" << daemon.log();
}

}  // namespace
}  // namespace readingsd::test
