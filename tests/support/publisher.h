// Runs the built readingsd-publish tool against a test broker.
//
// Tests publish through the real tool (not a library call) so that its flags, its exit code
// and its "all PUBACKs arrived" guarantee are what gets tested. The binary's path is compiled
// in by CMake (READINGSD_PUBLISH_PATH = $<TARGET_FILE:readingsd-publish>).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tools/reading_generator.h"

namespace readingsd::test {

struct PublisherOptions {
  int port = 0;
  // What to publish; tools::ExpectedReadings(generator) is then exactly what was sent.
  tools::GeneratorOptions generator;
  std::string client_id = "test-publisher";
  double rate = 0;       // messages per second; 0 = as fast as acknowledgements allow
  int max_inflight = 0;  // 0: the tool's default
  std::chrono::seconds timeout{30};  // the tool's --timeout
  std::vector<std::string> extra_args;
};

struct PublishResult {
  int exit_code = -1;  // -1: did not exit within timeout + 10 s and was killed
  std::uint64_t published = 0;
  std::uint64_t acked = 0;
  std::string output;  // stdout and stderr
};

// readingsd-publish's command line for `options`.
std::vector<std::string> PublisherArgv(const PublisherOptions& options);

// readingsd-publish running in the background, e.g. while a test restarts the broker.
class AsyncPublisher {
 public:
  explicit AsyncPublisher(const PublisherOptions& options);

  // Waits for the exit and parses the tool's summary line.
  PublishResult Wait();
  Process& process() { return process_; }

 private:
  std::chrono::seconds timeout_;
  TempDir dir_;
  std::string log_path_;
  Process process_;
};

// Runs readingsd-publish to completion.
PublishResult RunPublisher(const PublisherOptions& options);

}  // namespace readingsd::test
