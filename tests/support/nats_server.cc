#include "tests/support/nats_server.h"

#include <chrono>
#include <csignal>
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
  auto write_and_launch = [&] {
    std::ofstream conf(config_path_, std::ios::trunc);
    conf << "server_name: " << name() << "\n"
         << "listen: 127.0.0.1:" << port_ << "\n"
         << "jetstream { store_dir: \"" << dir_.File("jetstream") << "\" }\n";
    if (options_.mqtt) conf << "mqtt { listen: 127.0.0.1:" << mqtt_port_ << " }\n";
    if (options_.partitions > 0) {
      conf << "mappings { \"" << options_.prefix << ".*\": \"" << options_.prefix << ".{{partition("
           << options_.partitions << ",1)}}.{{wildcard(1)}}\" }\n";
    }
    if (options_.member) {
      conf << "cluster { name: test, listen: 127.0.0.1:" << options_.member->cluster_port << ", routes: [";
      for (int route : options_.member->routes) conf << " \"nats-route://127.0.0.1:" << route << "\",";
      conf << " ] }\n";
    }
    conf.close();
    if (!conf) throw std::runtime_error("cannot write " + config_path_);
    return Launch();
  };
  if (options_.member) {
    port_ = options_.member->port;
    mqtt_port_ = options_.mqtt ? options_.member->mqtt_port : 0;
    if (!write_and_launch()) throw std::runtime_error("nats-server: a port of " + options_.member->name + " is taken");
    return;
  }
  StartOnFreePorts(options_.mqtt ? 2 : 1, [&](const std::vector<int>& ports) {
    port_ = ports[0];
    mqtt_port_ = options_.mqtt ? ports[1] : 0;
    return write_and_launch();
  });
}

std::vector<NatsServerOptions::Member> ClusterMembers(int n) {
  const std::vector<int> ports = FreeLoopbackPorts(3 * n);
  std::vector<NatsServerOptions::Member> members(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& member = members[static_cast<std::size_t>(i)];
    member.name = "n" + std::to_string(i + 1);
    member.port = ports[static_cast<std::size_t>(3 * i)];
    member.cluster_port = ports[static_cast<std::size_t>(3 * i + 1)];
    member.mqtt_port = ports[static_cast<std::size_t>(3 * i + 2)];
    for (int j = 0; j < n; ++j) {
      if (j != i) member.routes.push_back(ports[static_cast<std::size_t>(3 * j + 1)]);
    }
  }
  return members;
}

NatsServer::~NatsServer() = default;

void NatsServer::Kill9() {
  process_->Kill(SIGKILL);
  process_->Wait(std::chrono::seconds(5));
}

void NatsServer::Restart() {
  if (!Launch()) throw std::runtime_error("nats-server " + name() + ": a port was taken while it was down");
}

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
