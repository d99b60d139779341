// The node map: which readingsd node owns which partitions and where its HTTP API is, so that any
// node can answer any request (docs/cluster.md). Plain data, read from [cluster] in the config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace readingsd::cluster {

struct Node {
  std::string name;
  std::string host;  // of its HTTP API
  std::string port;
  std::vector<uint32_t> partitions;  // sorted, without repeats

  bool Owns(uint32_t partition) const;

  bool operator==(const Node&) const = default;
};

struct NodeMap {
  uint32_t partitions = 1;  // P, as nats.partitions
  std::vector<Node> nodes;  // in the config's order: the order a partition's owners are tried
  std::size_t self = 0;     // this node, in nodes

  const Node& Self() const { return nodes[self]; }
  bool OwnsAll() const { return Self().partitions.size() == partitions; }

  bool operator==(const NodeMap&) const = default;
};

// What a request needs of the fleet, for a node that stores only some partitions.
enum class Reach {
  kLocal,    // nothing of the store (ops, table metadata), or a request this node refuses anyway
  kDevice,   // one device's readings: any owner of its partition answers
  // Every partition's answer, mergeable: one live owner per partition answers for its share
  // (PartitionSet) and the API merges the shares (the device listing, index queries, Scan,
  // BatchGetItem, remote read).
  kMerged,
};

// "http://host:port" (a name, an IPv4 address or a [v6] one) into host and port; InvalidArgument
// says what is wrong.
Status ParseNodeUrl(std::string_view url, std::string* host, std::string* port);

// A sorted partition list as "0-3,7", the form ParsePartitionRanges reads.
std::string PartitionRanges(const std::vector<uint32_t>& partitions);
// The partitions a node answers for when it gives its share of a merged request (Forwarder):
// `partitions=0-3,7&partition_count=16` in the request target's query string, one mechanism for
// every API. Only those partitions' devices are in its answer. Plain data.
struct PartitionSet {
  uint32_t count = 1;                // P, as the asking node's nats.partitions
  std::vector<uint32_t> partitions;  // sorted, without repeats, each below count

  // Whether `device_id`'s partition (PartitionOf) is one of them.
  bool Holds(std::string_view device_id) const;
};
// The two parameters' values (nullptr: absent) as a set; *out stays unset when both are absent.
// InvalidArgument names the parameter that is wrong.
Status ParsePartitionSet(const std::string* partitions, const std::string* partition_count,
                         std::optional<PartitionSet>* out);
// The same from a whole request target ("/path?a=b&partitions=…"): other parameters are passed
// over (the API checks them), one given twice is refused.
Status PartitionSetOf(std::string_view target, std::optional<PartitionSet>* out);
// `target` with the parameters that ask for `partitions` of `count` appended.
std::string WithPartitionSet(std::string_view target, const std::vector<uint32_t>& partitions, uint32_t count);

// "0-3,7": ParsePartitionList of the comma-separated entries (none is an error here).
Status ParsePartitionRanges(std::string_view text, uint32_t partitions, std::vector<uint32_t>* out);

}  // namespace readingsd::cluster
