// Log: lines on stderr with syslog priority prefixes ("<4>mqtt: ..."), which journald reads as
// levels when the daemon runs under systemd, plus a per-key rate limit for floods (bad payloads).
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/log_level.h"

namespace readingsd::daemon {

class Log {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` and `out` are for tests: a fake clock, a memory stream.
  explicit Log(LogLevel level, std::function<Clock::time_point()> now = Clock::now, std::FILE* out = stderr)
      : level_(level), now_(std::move(now)), out_(out) {}
  void SetLevel(LogLevel level);
  void Write(LogLevel level, std::string_view message);
  // At most `burst` lines per `key` in a period of `period`, which starts at the key's first line;
  // the lines past that are only counted. Once the period is over, one line says how many:
  // "<key>: 1995 more in the last 10 s, not logged one by one" (see ReportSuppressed). So a
  // flood is visible, and counted, without drowning the journal.
  void WriteLimited(std::string_view key, LogLevel level, std::string_view message, int burst = 5,
                    std::chrono::seconds period = std::chrono::seconds(10));
  // Writes the count line of every key whose period is over. Called on a timer (the daemon's
  // one-second tick), so a flood that stopped is still counted; a key's next line also writes it.
  void ReportSuppressed();

 private:
  struct Budget {
    Clock::time_point period_start;
    std::chrono::seconds period;
    LogLevel level;
    int written = 0;
    uint64_t suppressed = 0;
  };
  void WriteLocked(LogLevel level, std::string_view message);
  // The count line of a period that is over, if it suppressed any.
  void ReportLocked(std::string_view key, const Budget& budget);

  std::mutex mu_;
  LogLevel level_;
  const std::function<Clock::time_point()> now_;
  std::FILE* const out_;
  std::map<std::string, Budget, std::less<>> budgets_;
};

}  // namespace readingsd::daemon
