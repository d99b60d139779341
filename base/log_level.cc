#include "base/log_level.h"

namespace readingsd {

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "error") return LogLevel::kError;
  if (name == "warn") return LogLevel::kWarning;
  if (name == "debug") return LogLevel::kDebug;
  return LogLevel::kInfo;
}

}  // namespace readingsd
