#include "daemon/log.h"

#include <cstdio>

namespace readingsd::daemon {

void Log::SetLevel(LogLevel level) {
  std::lock_guard lock(mu_);
  level_ = level;
}

void Log::Write(LogLevel level, std::string_view message) {
  std::lock_guard lock(mu_);
  if (static_cast<int>(level) > static_cast<int>(level_)) return;
  std::fprintf(stderr, "<%d>%.*s\n", static_cast<int>(level), static_cast<int>(message.size()), message.data());
}

void Log::WriteLimited(std::string_view key, LogLevel level, std::string_view message, int burst,
                       std::chrono::seconds period) {
  std::string line;
  {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    auto it = budgets_.find(key);
    if (it == budgets_.end()) it = budgets_.emplace(std::string(key), Budget{now}).first;
    Budget& b = it->second;
    if (now - b.window_start >= period) {
      if (b.suppressed > 0) line = "(" + std::to_string(b.suppressed) + " similar messages suppressed) ";
      b = Budget{now};
    }
    if (b.written >= burst) {
      ++b.suppressed;
      return;
    }
    ++b.written;
  }
  line += message;
  Write(level, line);
}

}  // namespace readingsd::daemon
