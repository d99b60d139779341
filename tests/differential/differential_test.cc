// The differential test (#22): the real readingsd binary beside dynalite, an independent
// DynamoDB implementation, on the same readings, diffed request by request through the AWS SDK
// for JavaScript v3. This file starts the broker and the daemon; differential.js (Node) starts
// dynalite, loads both, sends the requests of cases.js and checks every difference against the
// documented list in expected-differences.js. See README.md in this folder.
//
// Node.js and the npm packages are installed by scripts/setup; when they are missing this test
// fails (it never skips), saying so.
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

const std::string kDir = READINGSD_DIFFERENTIAL_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Differential, ReadingsdAnswersAsDynaliteDoesSaveTheListedDifferences) {
  ASSERT_EQ(::access((kDir + "/node_modules/dynalite/package.json").c_str(), R_OK), 0)
      << "dynalite is not installed in " << kDir << "/node_modules: run scripts/setup (npm ci there)";

  MosquittoBroker broker;
  // No future bound: the readings are stamped 2026-06-23 whatever this machine's clock says.
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--ingest.max_future="}});
  daemon.Start();

  TempDir work("readingsd-differential");
  const std::string log = work.File("node.log");
  std::optional<int> status;
  try {
    Process node(ProcessOptions{{"node", kDir + "/differential.js", "--readingsd",
                                 "http://127.0.0.1:" + std::to_string(daemon.http_port()), "--mqtt-port",
                                 std::to_string(broker.port()), "--work", work.path()},
                                {},
                                log});
    status = node.Wait(std::chrono::seconds(200));
  } catch (const std::exception& e) {
    FAIL() << "cannot run node (scripts/setup installs Node.js): " << e.what();
  }
  const std::string output = ReadFile(log);
  std::cout << output;
  ASSERT_TRUE(status.has_value()) << "differential.js did not finish within 200 s";
  EXPECT_EQ(*status, 0) << "differences above (dynalite | readingsd); readingsd's log:\n" << daemon.log();
}

}  // namespace
}  // namespace readingsd::test
