#include "tests/support/publisher.h"

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace readingsd::test {

std::vector<std::string> PublisherArgv(const PublisherOptions& options) {
  const tools::GeneratorOptions& gen = options.generator;
  std::vector<std::string> argv = {
      READINGSD_PUBLISH_PATH,
      "--host", "127.0.0.1",
      "--port", std::to_string(options.port),
      "--client-id", options.client_id,
      "--count", std::to_string(gen.count),
      "--devices", std::to_string(gen.devices),
      "--batch", std::to_string(gen.batch),
      "--start", tools::FormatTimestamp(gen.start_ms),
      "--step-ms", std::to_string(gen.step_ms),
      "--topic-template", gen.topic_template,
      "--payload-pad", std::to_string(gen.payload_pad),
      "--rate", std::to_string(options.rate),
      "--timeout", std::to_string(options.timeout.count()),
  };
  if (gen.seed) argv.insert(argv.end(), {"--seed", std::to_string(*gen.seed)});
  if (options.max_inflight > 0) argv.insert(argv.end(), {"--max-inflight", std::to_string(options.max_inflight)});
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  return argv;
}

AsyncPublisher::AsyncPublisher(const PublisherOptions& options)
    : timeout_(options.timeout),
      dir_("readingsd-publish"),
      log_path_(dir_.File("publish.log")),
      process_(ProcessOptions{.argv = PublisherArgv(options), .env = {}, .log_path = log_path_}) {}

PublishResult AsyncPublisher::Wait() {
  PublishResult result;
  // The tool enforces its own timeout; the margin only catches a hung tool.
  if (auto status = process_.Wait(timeout_ + std::chrono::seconds(10))) {
    result.exit_code = *status;
  } else {
    process_.Kill(SIGKILL);
    process_.Wait(std::chrono::seconds(5));
  }
  std::ifstream in(log_path_);
  std::ostringstream output;
  output << in.rdbuf();
  result.output = output.str();

  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    unsigned long long published = 0, acked = 0;
    if (std::sscanf(line.c_str(), "published=%llu acked=%llu", &published, &acked) == 2) {
      result.published = published;
      result.acked = acked;
    }
  }
  return result;
}

PublishResult RunPublisher(const PublisherOptions& options) { return AsyncPublisher(options).Wait(); }

}  // namespace readingsd::test
