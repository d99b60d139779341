// The real readingsd binary under test: started as a child process against a test broker and a
// temp data dir, observed through its store (opened read-only beside it) and its HTTP port.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "storage/store.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tools/reading_generator.h"

namespace readingsd::test {

// (deviceId, readingTs) of every reading stored in `data_dir` for `devices`, read through a
// read-only open (so it works beside a running daemon).
std::set<std::pair<std::string, std::string>> StoredKeys(const std::string& data_dir,
                                                        const std::vector<std::string>& devices);

// Readings by (deviceId, normalised readingTs), each as its attributes by name.
using ReadingMap =
    std::map<std::pair<std::string, std::string>, std::map<std::string, storage::AttributeValue>>;
// What StoredKeys reads, with the values.
ReadingMap StoredReadings(const std::string& data_dir, const std::vector<std::string>& devices);
// What a generator run publishes, in the same form.
ReadingMap PublishedReadings(const tools::GeneratorOptions& options);
// "" when equal, else how `got` differs from `want`: how many readings are missing, foreign or
// hold other values, with the first of each.
std::string Difference(const ReadingMap& got, const ReadingMap& want);

struct DaemonOptions {
  int broker_port = 0;
  std::vector<std::string> extra_args;                       // e.g. --mqtt.max_batch=10
  std::vector<std::pair<std::string, std::string>> env;      // e.g. NOTIFY_SOCKET
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  // Starts it with HTTP on a port of the kernel's choosing (a new one at each start, so no other
  // process can take it) and returns once /readyz is 200; throws with the daemon's log when
  // that takes over 30 s.
  void Start();
  // Returns once HTTP answers, ready or not: for a daemon that cannot become ready (a broker
  // that refuses it). Throws like Start.
  void StartUnready();
  // Sends `signal` and returns the exit status (nullopt if it did not exit within `timeout`).
  std::optional<int> Stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Stop(SIGTERM): what systemctl stop sends.
  std::optional<int> Terminate(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  void Kill9();
  // The options the next Start uses: a restart may change them.
  DaemonOptions& options() { return options_; }
  bool Running() { return process_ && process_->Running(); }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  // The HTTP port of the current (or last) run, from its "http: listening on" log line.
  int http_port() const { return http_port_; }
  const std::string& data_dir() const { return data_dir_; }
  std::string log() const;

  std::set<std::pair<std::string, std::string>> StoredKeys(const std::vector<std::string>& devices) const {
    return test::StoredKeys(data_dir_, devices);
  }
  ReadingMap StoredReadings(const std::vector<std::string>& devices) const {
    return test::StoredReadings(data_dir_, devices);
  }
  // Polls StoredKeys until it has `n` keys or `timeout` passes; returns the last count.
  std::size_t WaitForStored(const std::vector<std::string>& devices, std::size_t n, std::chrono::seconds timeout) const;

 private:
  void Launch(bool ready);

  DaemonOptions options_;
  TempDir dir_;
  std::string data_dir_;
  std::string log_path_;
  int http_port_ = 0;
  std::optional<Process> process_;
};

// The (deviceId, normalised readingTs) pairs a generator run publishes, and its device ids.
std::set<std::pair<std::string, std::string>> ExpectedKeys(const tools::GeneratorOptions& options);
std::vector<std::string> DeviceIds(int devices);

// The path of the readingsd binary under test.
std::string ReadingsdBinary();

// Runs `argv` to completion (`timeout` at most); returns its exit status (-1 when it did not
// exit) and what it printed on stdout and stderr.
std::pair<int, std::string> RunProgram(const std::vector<std::string>& argv,
                                       std::chrono::seconds timeout = std::chrono::seconds(60));
// RunProgram of readingsd with `args`.
std::pair<int, std::string> RunReadingsd(const std::vector<std::string>& args);

// GET http://127.0.0.1:port/target → (status, body); status 0 when unreachable.
std::pair<int, std::string> Get(int port, const std::string& target);

// The value of `series` (name{labels}, as exposed) in a /metrics text; -1 when absent.
double MetricValue(const std::string& metrics, const std::string& series);

}  // namespace readingsd::test
