// A minimal HTTP/1.1 client: the watchdog's self-probe, `readingsd query` and `readingsd import`
// through a running daemon, and requests relayed to other nodes (cluster/forward.h), several at
// once. One connection per request, closed after it; each call bounded by its timeouts.
#pragma once

#include <chrono>
#include <span>
#include <string>

#include "base/status.h"
#include "http/handler.h"

namespace readingsd::http {

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

// Sends `request` as it is (method, target, headers and body; Host and Content-Length are set
// here) and reads the whole answer into *response: status, headers and body, a chunked one
// joined. Unavailable, saying why, when no connection was made within `connect_timeout`
// (refused, unreachable) or the whole answer did not come within `timeout` of the start.
Status Send(const std::string& host, const std::string& port, Request request,
            std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout, Response* response);

// One request of SendEach, and what became of it.
struct Call {
  std::string host;
  std::string port;
  Request request;    // as Send takes it; moved from
  Status status;      // as Send returns it
  Response response;  // when `status` is OK
};
// Each call's request as Send sends it, all at once (a connection each) on the calling thread:
// returns once every one has its answer or has failed, within `timeout` of the start.
void SendEach(std::span<Call> calls, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout);

// The address to reach a server listening on `host`: loopback for the wildcard addresses.
std::string LoopbackFor(const std::string& host);

}  // namespace readingsd::http
