// The node map: which readingsd node owns which partitions and where its HTTP API is, so that any
// node can answer any request (docs/cluster.md). Plain data, read from [cluster] in the config.
#pragma once

#include <cstddef>
#include <cstdint>
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
  kDevices,  // the device listing: one owner per partition, merged in device id order
  kFleet,    // readings of every partition (index queries, fleet readings, Scan, remote read)
  kEveryOwner,  // a change to one device's readings (a delete): every owner of its partition
};

// "http://host:port" (a name, an IPv4 address or a [v6] one) into host and port; InvalidArgument
// says what is wrong.
Status ParseNodeUrl(std::string_view url, std::string* host, std::string* port);

// A sorted partition list as "0-3,7", the form ParsePartitionRanges reads.
std::string PartitionRanges(const std::vector<uint32_t>& partitions);
// "0-3,7": ParsePartitionList of the comma-separated entries (none is an error here).
Status ParsePartitionRanges(std::string_view text, uint32_t partitions, std::vector<uint32_t>* out);

}  // namespace readingsd::cluster
