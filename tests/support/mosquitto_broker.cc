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
    : dir_("readingsd-mosquitto"),
      port_(FreeLoopbackPort()),
      config_path_(dir_.File("mosquitto.conf")),
      log_path_(dir_.File("mosquitto.log")) {
  const std::string shipped = ReadFile(READINGSD_SHIPPED_MOSQUITTO_CONF);
  if (shipped.empty()) throw std::runtime_error("cannot read " READINGSD_SHIPPED_MOSQUITTO_CONF);
  std::ofstream conf(config_path_);
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
  conf << options.extra_config;
  conf.close();
  if (!conf) throw std::runtime_error("cannot write " + config_path_);
  Start();
}

MosquittoBroker::~MosquittoBroker() = default;

void MosquittoBroker::Start() {
  process_.emplace(ProcessOptions{.argv = {kMosquittoPath, "-c", config_path_}, .env = {}, .log_path = log_path_});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!AcceptsConnections(port_)) {
    if (!process_->Running() || std::chrono::steady_clock::now() >= deadline) {
      process_.reset();
      throw std::runtime_error("mosquitto did not start on port " + std::to_string(port_) + "; log:\n" + log());
    }
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
