// A minimal HTTP/1.1 GET over loopback, for the watchdog's self-probe and `readingsd query`.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"

namespace readingsd::daemon {

struct HttpGetResult {
  int status = 0;
  std::string body;
};

Status HttpGet(const std::string& host, const std::string& port, const std::string& target,
               const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result);

// The address to reach a server listening on `host`: loopback for the wildcard addresses.
std::string LoopbackFor(const std::string& host);

}  // namespace readingsd::daemon
