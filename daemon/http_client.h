// A minimal HTTP/1.1 client over loopback, for the watchdog's self-probe, `readingsd query` and
// `readingsd import` through a running daemon.
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
// A POST of `body` as `content_type`; the same otherwise.
Status HttpPost(const std::string& host, const std::string& port, const std::string& target,
                const std::string& bearer_token, const std::string& content_type, std::string body,
                std::chrono::milliseconds timeout, HttpGetResult* result);

// A DELETE; the same otherwise.
Status HttpDelete(const std::string& host, const std::string& port, const std::string& target,
                  const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result);

// The address to reach a server listening on `host`: loopback for the wildcard addresses.
std::string LoopbackFor(const std::string& host);

}  // namespace readingsd::daemon
