// A real mosquitto broker for tests, on a free loopback port, configured like production.
//
// The config is systemd/mosquitto-readingsd.conf (the snippet we ship for
// /etc/mosquitto/conf.d/) followed by the lines only a test needs: a 127.0.0.1 listener,
// anonymous access, a private persistence directory, then BrokerOptions::second_listener and
// BrokerOptions::extra_config. Tests
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
  // Lines configuring a second 127.0.0.1 listener (e.g. TLS), written after its "listener" line;
  // "" = none. Its port is second_port().
  std::string second_listener;
  // Appended last. mosquitto lets a later numeric or boolean setting override an earlier one,
  // e.g. "max_queued_messages 1000" restores the broker default. Lines end with '\n'.
  std::string extra_config;
};

class MosquittoBroker {
 public:
  // Picks ports, writes the config and starts, with fresh ports while one turns out taken;
  // throws std::runtime_error on any other failure.
  explicit MosquittoBroker(BrokerOptions options = {});
  ~MosquittoBroker();  // SIGKILL: a test's broker needs no orderly shutdown

  MosquittoBroker(const MosquittoBroker&) = delete;
  MosquittoBroker& operator=(const MosquittoBroker&) = delete;

  int port() const { return port_; }
  int second_port() const { return second_port_; }
  const std::string& config_path() const { return config_path_; }

  // Starts the broker again on the same ports and persistence directory and waits until it
  // accepts TCP connections (mosquitto loads its persistence file before listening). Throws
  // std::runtime_error, with the broker's log, if that takes over 30 s or the broker exits.
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
  void WriteConfig(const BrokerOptions& options);
  // Start(), except that it returns false when a port was taken.
  bool Launch();

  TempDir dir_;
  int port_ = 0;
  int second_port_ = 0;
  std::string config_path_;
  std::string log_path_;
  std::optional<Process> process_;
};

}  // namespace readingsd::test
