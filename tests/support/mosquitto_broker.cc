#include "tests/support/mosquitto_broker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/ports.h"

namespace readingsd::test {
namespace {

constexpr const char* kMosquittoPath = "/usr/sbin/mosquitto";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

bool AcceptsConnections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return connected;
}

}  // namespace

MosquittoBroker::MosquittoBroker(BrokerOptions options)
    : dir_("readingsd-mosquitto"), config_path_(dir_.File("mosquitto.conf")), log_path_(dir_.File("mosquitto.log")) {
  StartOnFreePorts(options.second_listener.empty() ? 1 : 2, [&](const std::vector<int>& ports) {
    port_ = ports[0];
    second_port_ = ports.size() > 1 ? ports[1] : 0;
    WriteConfig(options);
    return Launch();
  });
}

MosquittoBroker::~MosquittoBroker() = default;

void MosquittoBroker::WriteConfig(const BrokerOptions& options) {
  const std::string shipped = ReadFile(READINGSD_SHIPPED_MOSQUITTO_CONF);
  if (shipped.empty()) throw std::runtime_error("cannot read " READINGSD_SHIPPED_MOSQUITTO_CONF);
  std::ofstream conf(config_path_, std::ios::trunc);
  conf << "# --- " READINGSD_SHIPPED_MOSQUITTO_CONF "\n"
       << shipped << "\n"
       << "# --- test harness\n"
       << "listener " << port_ << " 127.0.0.1\n"
       << "allow_anonymous true\n"
       // Started as root, mosquitto switches to user mosquitto, which cannot write our 0700
       // temp dir; stay root instead (the setting has no effect for other users).
       << "user root\n"
       << "persistence_location " << dir_.path() << "/\n";
  if (!options.persistence) conf << "persistence false\n";
  if (second_port_ != 0) conf << "listener " << second_port_ << " 127.0.0.1\n" << options.second_listener;
  conf << options.extra_config;
  conf.close();
  if (!conf) throw std::runtime_error("cannot write " + config_path_);
}

void MosquittoBroker::Start() {
  if (!Launch()) throw std::runtime_error("mosquitto: port " + std::to_string(port_) + " is taken; log:\n" + log());
}

bool MosquittoBroker::Launch() {
  const std::size_t log_before = log().size();
  process_.emplace(ProcessOptions{.argv = {kMosquittoPath, "-c", config_path_}, .env = {}, .log_path = log_path_});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const bool running = process_->Running();
    const std::string logged = log().substr(log_before);  // read after Running(): all of it if it exited
    if (!running || std::chrono::steady_clock::now() >= deadline) {
      process_.reset();
      if (logged.find("Address already in use") != std::string::npos) return false;
      throw std::runtime_error("mosquitto did not start on port " + std::to_string(port_) + "; log:\n" + log());
    }
    // "running" is logged once every listener is bound, after the persistence file was loaded.
    if (logged.find(" running\n") != std::string::npos && AcceptsConnections(port_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void MosquittoBroker::Stop() {
  if (!process_) return;
  process_->Kill(SIGTERM);
  const bool stopped = process_->Wait(std::chrono::seconds(10)).has_value();
  process_.reset();
  if (!stopped) throw std::runtime_error("mosquitto ignored SIGTERM for 10 s; log:\n" + log());
}

void MosquittoBroker::Kill() { process_.reset(); }

bool MosquittoBroker::Running() { return process_ && process_->Running(); }

std::string MosquittoBroker::log() const { return ReadFile(log_path_); }

}  // namespace readingsd::test
