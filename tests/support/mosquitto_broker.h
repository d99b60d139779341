// A real mosquitto broker for tests, on a free loopback port, configured like production.
//
// The config is systemd/mosquitto-readingsd.conf (the snippet we ship for
// /etc/mosquitto/conf.d/) followed by the lines only a test needs: a 127.0.0.1 listener,
// anonymous access, a private persistence directory, then BrokerOptions::extra_config. Tests
// therefore exercise the shipped queueing and persistence settings, not mosquitto's defaults,
// which drop all but 1000 queued messages per offline client.
#pragma once

#include <optional>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {

struct BrokerOptions {
  // Whether sessions and queued messages survive Stop()/Start() (the shipped config: yes).
  bool persistence = true;
  // Appended last. mosquitto lets a later numeric or boolean setting override an earlier one,
  // e.g. "max_queued_messages 1000" restores the broker default. Lines end with '\n'.
  std::string extra_config;
};

class MosquittoBroker {
 public:
  // Picks a port, writes the config and Start()s; throws std::runtime_error on failure.
  explicit MosquittoBroker(BrokerOptions options = {});
  ~MosquittoBroker();  // SIGKILL: a test's broker needs no orderly shutdown

  MosquittoBroker(const MosquittoBroker&) = delete;
  MosquittoBroker& operator=(const MosquittoBroker&) = delete;

  int port() const { return port_; }
  const std::string& config_path() const { return config_path_; }

  // Starts the broker on the same port and persistence directory as before and waits until it
  // accepts TCP connections (mosquitto loads its persistence file before listening). Throws
  // std::runtime_error, with the broker's log, if that takes over 5 s or the broker exits.
  void Start();
  // SIGTERM and wait for the exit: mosquitto saves its persistence file on the way out, so
  // every acknowledged message is still there after Start(). Throws if it takes over 10 s.
  void Stop();
  // SIGKILL and reap: whatever arrived since the last autosave is lost, as in a crash.
  void Kill();
  bool Running();
  // Everything the broker logged (errors, warnings, notices, connections) across restarts.
  std::string log() const;

 private:
  TempDir dir_;
  int port_;
  std::string config_path_;
  std::string log_path_;
  std::optional<Process> process_;
};

}  // namespace readingsd::test
