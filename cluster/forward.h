// Any node answers any request (docs/cluster.md). A request for a device of a partition this node
// does not own is sent to a live owner (each request to the next owner in turn) and its answer
// relayed; a request that needs every partition (the device listing, index queries, Scan,
// BatchGetItem, remote read) is asked of one live owner per partition, all at once, each for its
// share, and the shares merged by the request's API. Never a silently partial answer: when no
// owner of a partition answers, the client gets a 503 naming the partition, and a node asked for
// a share it does not own says so (503).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/node_map.h"
#include "http/client.h"
#include "http/handler.h"

namespace readingsd::cluster {

// A forwarded request carries it, with its sender's name: the node answers it itself, so that
// no request is forwarded twice (no loops). Also the way to ask one node for what it stores.
inline constexpr char kForwardedHeader[] = "X-Readingsd-Forwarded";
// On an answer relayed from another node: that node's name.
inline constexpr char kAnsweredByHeader[] = "X-Readingsd-Node";

struct ForwardOptions {
  NodeMap map;
  // An owner that does not accept the connection within this is down: the next one is asked.
  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds timeout{10000};  // the most one forwarded request waits for its answer

  bool operator==(const ForwardOptions&) const = default;
};

// What this node does itself, for the request being routed (the Router's own handling).
struct Local {
  // Answers a request from this node's store, never forwarding.
  std::function<http::Response(const http::Request&)> answer;
  // The answer to the routed request from the shares several nodes gave of it (each a 200
  // answer's body, for the partitions its target named: PartitionSet), together every partition
  // once: the API's merge (api/native Merge, api/dynamodb Merge, api/prometheus Merge).
  std::function<http::Response(std::span<const std::string> shares)> merge;
  // An error in the shape of the request's API.
  std::function<http::Response(http::status, std::string_view code, std::string_view message)> error;
};

// Thread-safe: it keeps nothing between calls but its options and, per partition, which owner
// the next forwarded request starts at (an atomic counter). A forwarded request holds the calling
// I/O thread until the owners answer (ForwardOptions::timeout at most for each round of a merged
// request); a merged one also runs one thread of its own while this node answers its share.
class Forwarder {
 public:
  explicit Forwarder(ForwardOptions options)
      : options_(std::move(options)), turns_(std::make_unique<std::atomic<uint32_t>[]>(options_.map.partitions)) {}

  // nullopt: this node answers `request` itself. Else the answer: relayed from an owner, merged,
  // or the error saying why there is none. `reach` and `device_id` are what the request's API
  // says of it (native::ReachOf, dynamodb::ReachOf). `endpoint` gets the label for the metrics.
  std::optional<http::Response> Route(const http::Request& request, Reach reach, std::string_view device_id,
                                      const Local& local, std::string_view* endpoint) const;

  const ForwardOptions& options() const { return options_; }

 private:
  // The partition's owners, from the one after the previous request's first in map order (so
  // that they share the reads), the next one when one is down or answers 503.
  http::Response Device(const http::Request& request, std::string_view device_id, uint32_t partition,
                        const Local& local) const;
  // A request for `share` (a node's share of a merged one): nullopt when this node owns all of it
  // and answers it, else the 503 saying the maps disagree.
  std::optional<http::Response> Share(const http::Request& request, const PartitionSet& share, const Local& local,
                                      std::string_view* endpoint) const;
  // A node of the map and the partitions it is asked for.
  struct Asked {
    std::size_t node;
    std::vector<uint32_t> share;
  };
  // Nodes (not `failed`) that together own every partition not `covered` that any of them owns,
  // each with its share: greedily, the node owning most of what is still missing first (map
  // order among equals), so that few are asked.
  std::vector<Asked> Plan(std::vector<bool> covered, const std::vector<bool>& failed) const;
  // Reach::kMerged, in rounds: this node's share while the nodes of a Plan of the rest answer
  // theirs, all at once; then, while some failed (down, or 503), a Plan of what is still
  // missing among the others, all at once again; the 503 as soon as a missing partition has no
  // owner left. Merged by `local`. At most one request per node at a time.
  http::Response Merged(const http::Request& request, const Local& local) const;
  // `request` as node `node` gets it: marked forwarded, without what belongs to this hop.
  http::Request Outgoing(const http::Request& request) const;
  // Sends `request` to `node`; *answer gets its answer, relayed. Unavailable when it is down or
  // answers 503.
  Status Ask(const Node& node, http::Request request, http::Response* answer) const;
  // What Ask makes of `call`, sent to `node`.
  static Status Relayed(const Node& node, http::Call call, http::Response* answer);

  const ForwardOptions options_;
  // Per partition: how many requests for one of its devices were forwarded.
  const std::unique_ptr<std::atomic<uint32_t>[]> turns_;
};

}  // namespace readingsd::cluster
