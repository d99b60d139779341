#include "daemon/log.h"

namespace readingsd::daemon {

void Log::SetLevel(LogLevel level) {
  std::lock_guard lock(mu_);
  level_ = level;
}

void Log::Write(LogLevel level, std::string_view message) {
  std::lock_guard lock(mu_);
  WriteLocked(level, message);
}

void Log::WriteLocked(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > static_cast<int>(level_)) return;
  std::fprintf(out_, "<%d>%.*s\n", static_cast<int>(level), static_cast<int>(message.size()), message.data());
}

void Log::ReportLocked(std::string_view key, const Budget& budget) {
  if (budget.suppressed == 0) return;
  WriteLocked(budget.level, std::string(key) + ": " + std::to_string(budget.suppressed) + " more in the last " +
                                std::to_string(budget.period.count()) + " s, not logged one by one");
}

void Log::WriteLimited(std::string_view key, LogLevel level, std::string_view message, int burst,
                       std::chrono::seconds period) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = now_();
  auto it = budgets_.find(key);
  if (it != budgets_.end() && now - it->second.period_start >= period) {
    ReportLocked(key, it->second);
    budgets_.erase(it);
    it = budgets_.end();
  }
  if (it == budgets_.end()) it = budgets_.emplace(std::string(key), Budget{now, period, level}).first;
  Budget& budget = it->second;
  if (budget.written >= burst) {
    ++budget.suppressed;
    return;
  }
  ++budget.written;
  WriteLocked(level, message);
}

void Log::ReportSuppressed() {
  std::lock_guard lock(mu_);
  const Clock::time_point now = now_();
  for (auto it = budgets_.begin(); it != budgets_.end();) {
    if (now - it->second.period_start < it->second.period) {
      ++it;
      continue;
    }
    ReportLocked(it->first, it->second);
    it = budgets_.erase(it);
  }
}

}  // namespace readingsd::daemon
