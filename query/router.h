// Router: the http::Handler the daemon serves. It checks credentials and sends `/` to the
// DynamoDB-compatible API and everything else to the native API.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/auth.h"
#include "http/handler.h"
#include "query/query.h"
#include "query/read_helpers.h"
#include "storage/store.h"

namespace readingsd::query {

struct RouterOptions {
  std::string table_name = "readings";  // the one table of the DynamoDB endpoint
  // Non-empty: every endpoint but /healthz needs `Authorization: Bearer <token>` or, for AWS
  // clients that cannot send one, a SigV4 Authorization header whose access key id is a token.
  std::vector<std::string> bearer_tokens;
  ReadLimits limits;
  // Threads that read the later part of a long page while the request's thread reads the first
  // (query/read_helpers.h); 0 = every page is read by its request's thread alone.
  int read_helpers = 1;

  bool operator==(const RouterOptions&) const = default;
};

// Called from the I/O threads, possibly concurrently: each must be thread-safe. Any may be empty.
struct RouterHooks {
  std::function<std::string()> metrics;            // GET /metrics body (Prometheus text)
  std::function<bool(std::string* detail)> ready;  // GET /readyz: 200 when true, else 503
  // Once per query or get: the partition, the items read and the bytes of items returned.
  std::function<void(std::string_view device_id, std::size_t items, std::size_t bytes)> on_partition_read;
};

// Thread-safe. The endpoint names it reports: readings, latest, item, healthz, readyz, metrics,
// dynamodb.<Op>, dynamodb.other, unauthorized, other.
class Router final : public http::Handler {
 public:
  // `store` is not owned and must outlive the router. InvalidArgument for unusable options.
  static Status Make(const RouterOptions& options, const storage::Store* store, RouterHooks hooks,
                     std::unique_ptr<Router>* router);

  // Only /healthz answers without credentials, and the 401 looks the same whatever was asked
  // for; a request that says it is a DynamoDB call gets it in DynamoDB's shape, so AWS clients
  // print it.
  http::Response Handle(const http::Request& request, std::string_view* endpoint) override;
  // In the native API's shape.
  http::Response Error(http::status status, std::string_view code, std::string_view message) override;

 private:
  Router(const RouterOptions& options, const storage::Store* store, RouterHooks hooks);
  std::string NextRequestId();

  const RouterOptions options_;
  const storage::Store* const store_;
  const RouterHooks hooks_;
  const http::Authenticator authenticator_;
  const std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
  const uint64_t request_id_salt_;  // random, so request ids differ across restarts
  std::atomic<uint64_t> requests_{0};
  ReadHelpers read_helpers_;
};

}  // namespace readingsd::query
