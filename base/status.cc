#include "base/status.h"

namespace readingsd {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk: return name;
    case Code::kInvalidArgument: name = "Invalid argument"; break;
    case Code::kNotFound: name = "Not found"; break;
    case Code::kIOError: name = "IO error"; break;
    case Code::kCorruption: name = "Corruption"; break;
    case Code::kBusy: name = "Busy"; break;
    case Code::kUnavailable: name = "Unavailable"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace readingsd
