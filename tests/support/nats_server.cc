#include "tests/support/nats_server.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/ports.h"

namespace readingsd::test {
namespace {

constexpr const char* kNatsServerPath = "/usr/sbin/nats-server";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace

NatsServer::NatsServer(NatsServerOptions options)
    : options_(std::move(options)),
      dir_("readingsd-nats"),
      config_path_(dir_.File("nats.conf")),
      log_path_(dir_.File("nats.log")) {
  StartOnFreePorts(options_.mqtt ? 2 : 1, [&](const std::vector<int>& ports) {
    port_ = ports[0];
    mqtt_port_ = options_.mqtt ? ports[1] : 0;
    std::ofstream conf(config_path_, std::ios::trunc);
    conf << "server_name: test\n"
         << "listen: 127.0.0.1:" << port_ << "\n"
         << "jetstream { store_dir: \"" << dir_.File("jetstream") << "\" }\n";
    if (options_.mqtt) conf << "mqtt { listen: 127.0.0.1:" << mqtt_port_ << " }\n";
    if (options_.partitions > 0) {
      conf << "mappings { \"" << options_.prefix << ".*\": \"" << options_.prefix << ".{{partition("
           << options_.partitions << ",1)}}.{{wildcard(1)}}\" }\n";
    }
    conf.close();
    if (!conf) throw std::runtime_error("cannot write " + config_path_);
    return Launch();
  });
}

NatsServer::~NatsServer() = default;

bool NatsServer::Launch() {
  const std::size_t log_before = log().size();
  process_.emplace(ProcessOptions{.argv = {kNatsServerPath, "-c", config_path_}, .env = {}, .log_path = log_path_});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const bool running = process_->Running();
    const std::string logged = log().substr(log_before);
    if (!running || std::chrono::steady_clock::now() >= deadline) {
      process_.reset();
      if (logged.find("address already in use") != std::string::npos) return false;
      throw std::runtime_error("nats-server did not start on port " + std::to_string(port_) + "; log:\n" + log());
    }
    // Logged once every listener is bound and JetStream is up.
    if (logged.find("Server is ready") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string NatsServer::log() const { return ReadFile(log_path_); }

}  // namespace readingsd::test
