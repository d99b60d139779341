#include "api/router.h"

#include <cstdio>
#include <optional>
#include <random>
#include <span>

#include "api/ui/ui.h"

namespace readingsd::api {

Status Router::Make(const RouterOptions& options, const storage::Store* store, RouterHooks hooks,
                    std::unique_ptr<Router>* router) {
  if (!store) return Status::InvalidArgument("no store");
  if (options.read_helpers < 0) return Status::InvalidArgument("read_helpers must not be negative");
  if (options.limits.max_limit < 1) return Status::InvalidArgument("max_limit must be at least 1");
  if (options.remote_read.max_queries < 1 || options.remote_read.max_series < 1 || options.remote_read.max_samples < 1 ||
      options.remote_read.max_scanned < 1) {
    return Status::InvalidArgument("every remote read cap must be at least 1");
  }
  if (options.table_name.empty()) return Status::InvalidArgument("table_name must not be empty");
  if (options.region.empty()) return Status::InvalidArgument("region must not be empty");
  if (Status s = write::ValidateOptions(options.write); !s.ok()) return s;
  for (const std::string& token : options.bearer_tokens) {
    if (token.empty()) return Status::InvalidArgument("a bearer token is empty");
  }
  if (options.cluster) {
    const cluster::NodeMap& map = options.cluster->map;
    if (map.partitions < 1 || map.self >= map.nodes.size() || map.Self().partitions.empty()) {
      return Status::InvalidArgument("the node map must hold this node, owning at least one of at least one partition");
    }
  }
  router->reset(new Router(options, store, std::move(hooks)));
  return Status::OK();
}

Router::Router(const RouterOptions& options, const storage::Store* store, RouterHooks hooks)
    : options_(options),
      ops_(std::move(hooks.ops)),
      write_(std::move(hooks.write)),
      delete_(std::move(hooks.delete_readings)),
      authenticator_(options.bearer_tokens),
      request_id_salt_(std::random_device{}() * 0x100000000ull + std::random_device{}()),
      read_helpers_(options.read_helpers),
      read_{*store, options.limits, &read_helpers_, std::move(hooks.on_partition_read),
            std::move(hooks.on_index_partition_read)},
      forwarder_(options.cluster ? std::optional<cluster::Forwarder>(std::in_place, *options.cluster) : std::nullopt) {}

dynamodb::Context Router::DynamoDbContext() {
  char id[33];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(request_id_salt_),
                static_cast<unsigned long long>(requests_.fetch_add(1)));
  return dynamodb::Context{read_, options_.table_name, started_, id, options_.region};
}

http::Response Router::Handle(const http::Request& request, std::string_view* endpoint) {
  query::ReadHelpers::ScopedRequest answering(read_helpers_);
  const std::string_view target = http::ToStd(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  const bool dynamodb_call = request.count("X-Amz-Target") != 0;
  // The page's files hold no data; the page asks for a token when the API answers 401.
  if (request.method() == http::verb::get) {
    if (std::optional<http::Response> file = ui::Serve(path, request.version(), request.keep_alive())) {
      *endpoint = "ui";
      return std::move(*file);
    }
  }
  // /ping, as InfluxDB's, tells nothing but that the server is up.
  if (path != "/healthz" && path != "/ping" && !authenticator_.Allows(request) &&
      !authenticator_.AllowsCredential(write::InfluxPassword(request))) {
    *endpoint = "unauthorized";
    http::Response res =
        dynamodb_call ? dynamodb::Error(DynamoDbContext(), http::status::unauthorized,
                                        "UnrecognizedClientException",
                                        "The security token included in the request is invalid.")
                      : native::Error(http::status::unauthorized, "Unauthorized", "missing or invalid credentials");
    res.set(http::field::www_authenticate, "Bearer");
    return res;
  }
  if (forwarder_) {
    std::string device;
    if (const cluster::Reach reach = ReachOf(request, &device); reach != cluster::Reach::kLocal) {
      const cluster::Local local{
          .answer = [this](const http::Request& part) {
            std::string_view unused;
            return Answer(part, &unused);
          },
          .merge = [this, &request](std::span<const std::string> shares) { return Merge(request, shares); },
          .error = [this, dynamodb_call](http::status status, std::string_view code, std::string_view message) {
            return dynamodb_call ? dynamodb::Error(DynamoDbContext(), status, code, message)
                                 : native::Error(status, code, message);
          }};
      if (std::optional<http::Response> answer = forwarder_->Route(request, reach, device, local, endpoint)) {
        return std::move(*answer);
      }
    }
  }
  return Answer(request, endpoint);
}

cluster::Reach Router::ReachOf(const http::Request& request, std::string* device_id) {
  const std::string_view target = http::ToStd(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/") return dynamodb::ReachOf(request, device_id);
  if (path == "/api/v1/read") return request.method() == http::verb::post ? cluster::Reach::kMerged : cluster::Reach::kLocal;
  // A write is taken by the node it reaches, which with [nats] publishes it into the stream for
  // the device's owners (docs/cluster.md); a DELETE too (native::ReachOf).
  if (write::IsWriteRequest(request)) return cluster::Reach::kLocal;
  return native::ReachOf(request, device_id);
}

http::Response Router::Answer(const http::Request& request, std::string_view* endpoint) {
  const std::string_view target = http::ToStd(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/") return dynamodb::HandleRequest(DynamoDbContext(), request, endpoint);
  if (path == "/api/v1/read") return prometheus::HandleRequest(prometheus::Context{read_, options_.remote_read}, request, endpoint);
  if (write::IsWriteRequest(request)) return write::HandleRequest(write::Context{options_.write, write_}, request, endpoint);
  return native::HandleRequest(native::Context{read_, ops_, delete_}, request, endpoint);
}

http::Response Router::Merge(const http::Request& request, std::span<const std::string> shares) {
  const std::string_view target = http::ToStd(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/") return dynamodb::Merge(DynamoDbContext(), request, shares);
  if (path == "/api/v1/read") return prometheus::Merge(prometheus::Context{read_, options_.remote_read}, shares);
  return native::Merge(native::Context{read_, ops_, delete_}, request, shares);
}

http::Response Router::Error(http::status status, std::string_view code, std::string_view message) {
  return native::Error(status, code, message);
}

}  // namespace readingsd::api
