// Log: lines on stderr with syslog priority prefixes ("<4>mqtt: ..."), which journald reads as
// levels when the daemon runs under systemd, plus a per-key rate limit for floods (bad payloads).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/log_level.h"

namespace readingsd::daemon {

class Log {
 public:
  explicit Log(LogLevel level) : level_(level) {}
  void SetLevel(LogLevel level);
  void Write(LogLevel level, std::string_view message);
  // At most `burst` lines per key per `period`; the next line after a quiet period says how many
  // were suppressed, so a flood is visible without drowning the journal.
  void WriteLimited(std::string_view key, LogLevel level, std::string_view message, int burst = 5,
                    std::chrono::seconds period = std::chrono::seconds(10));

 private:
  struct Budget {
    std::chrono::steady_clock::time_point window_start;
    int written = 0;
    uint64_t suppressed = 0;
  };
  std::mutex mu_;
  LogLevel level_;
  std::map<std::string, Budget, std::less<>> budgets_;
};

}  // namespace readingsd::daemon
