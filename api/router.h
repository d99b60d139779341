// api: the HTTP APIs readingsd answers, and the Router, the one http::Handler the daemon serves.
// The Router serves the web page under /ui/ (api/ui/), checks credentials and sends `/` to the
// DynamoDB-compatible API (api/dynamodb/), /api/v1/read to Prometheus' remote read
// (api/prometheus/), writes to the write API (api/write/), everything else to the native API
// (api/native/). It knows no API's parameters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/dynamodb/dynamodb.h"
#include "api/native/native.h"
#include "api/prometheus/prometheus.h"
#include "api/write/write.h"
#include "base/status.h"
#include "cluster/forward.h"
#include "http/auth.h"
#include "http/handler.h"
#include "query/query.h"
#include "storage/store.h"

namespace readingsd::api {

struct RouterOptions {
  std::string table_name = "readings";  // the one table of the DynamoDB endpoint
  std::string region = "us-east-1";     // in the table's ARN
  // Non-empty: every endpoint but /healthz needs `Authorization: Bearer <token>` or, for AWS
  // clients that cannot send one, a SigV4 Authorization header whose access key id is a token.
  std::vector<std::string> bearer_tokens;
  query::ReadLimits limits;
  api::prometheus::RemoteReadLimits remote_read;  // POST /api/v1/read
  // Threads that read the later part of a long page while the request's thread reads the first
  // (query/read_helpers.h); 0 = every page is read by its request's thread alone.
  int read_helpers = 1;
  write::WriteOptions write;
  // Set: this node is one of several (docs/cluster.md), and answers for every partition through
  // the others: cluster::Forwarder.
  std::optional<cluster::ForwardOptions> cluster;

  bool operator==(const RouterOptions&) const = default;
};

// Called from the I/O threads, possibly concurrently: each must be thread-safe. Any may be empty.
struct RouterHooks {
  native::OpsHooks ops;                          // GET /metrics and /readyz
  query::PartitionReadHook on_partition_read;    // every query and get, of either API
  query::IndexPartitionReadHook on_index_partition_read;  // every index query, of either API
  write::WriteHooks write;                       // the write API's readings and refusals
  native::DeleteHook delete_readings;            // DELETE /v1/devices/{id}/readings
};

// Thread-safe. The endpoint names it reports: ui, devices, readings, delete_readings, latest,
// item, aggregate, index_readings, fleet_readings, healthz, readyz, metrics, prometheus.read,
// dynamodb.<Op>, dynamodb.other, write.json, write.influx, write.influx2, unauthorized, other;
// with a node map also forwarded, merged and forward_refused.
class Router final : public http::Handler {
 public:
  // `store` is not owned and must outlive the router. InvalidArgument for unusable options.
  static Status Make(const RouterOptions& options, const storage::Store* store, RouterHooks hooks,
                     std::unique_ptr<Router>* router);

  // Only /healthz and the page's files under /ui/ answer without credentials, and the 401 looks the same whatever was asked
  // for; a request that says it is a DynamoDB call gets it in DynamoDB's shape, so AWS clients
  // print it.
  http::Response Handle(const http::Request& request, std::string_view* endpoint) override;
  // In the native API's shape.
  http::Response Error(http::status status, std::string_view code, std::string_view message) override;
  // Parts of pages handed to a read helper since start (query::ReadHelpers::tasks_run), so a
  // test can tell that its pages took the helpers' path.
  uint64_t read_helper_tasks() const { return read_helpers_.tasks_run(); }

 private:
  Router(const RouterOptions& options, const storage::Store* store, RouterHooks hooks);
  // Each with a request id of its own (x-amzn-RequestId).
  dynamodb::Context DynamoDbContext();
  // What this node's store answers, credentials checked: the API the request is for.
  http::Response Answer(const http::Request& request, std::string_view* endpoint);
  // A cluster::Reach::kMerged request's answer from the nodes' shares of it: its API's merge.
  http::Response Merge(const http::Request& request, std::span<const std::string> shares);
  // What the request needs of the fleet (cluster::Reach), with a node map.
  static cluster::Reach ReachOf(const http::Request& request, std::string* device_id);

  const RouterOptions options_;
  const native::OpsHooks ops_;
  const write::WriteHooks write_;
  const native::DeleteHook delete_;
  const http::Authenticator authenticator_;
  const std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
  const uint64_t request_id_salt_;  // random, so request ids differ across restarts
  std::atomic<uint64_t> requests_{0};
  query::ReadHelpers read_helpers_;
  const query::ReadContext read_;  // after read_helpers_, which it points to
  const std::optional<cluster::Forwarder> forwarder_;
};

}  // namespace readingsd::api
