// Log levels, shared by every module that reports (ingest's hook, the daemon's log, config's check).
#pragma once

#include <array>
#include <string_view>

namespace readingsd {

enum class LogLevel { kError = 3, kWarning = 4, kInfo = 6, kDebug = 7 };  // syslog numbers

// The names config accepts for log.level, most severe first.
inline constexpr std::array<std::string_view, 4> kLogLevelNames = {"error", "warn", "info", "debug"};

// One of kLogLevelNames; anything else is info (config validates the value).
LogLevel ParseLogLevel(std::string_view name);

}  // namespace readingsd
