// Partitions: the fixed slices of the device space that readingsd nodes own (docs/cluster.md).
//
// NATS files each device's readings under a partition with a subject mapping such as
// "readings.*" -> "readings.{{partition(16,1)}}.{{wildcard(1)}}"; a node that answers for a
// device must compute the same partition, so this is NATS' own function, not one like it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace readingsd::cluster {

// The partition NATS' partition(partitions, ...) mapping gives a subject whose mapped token is
// `device_id`: FNV-1a 32-bit of the token's bytes modulo `partitions` (nats-server 2.9
// server/accounts.go, transform.getHashPartition). `partitions` >= 1.
uint32_t PartitionOf(std::string_view device_id, uint32_t partitions);

// Parses the partitions a node owns: each entry "N" or "N-M" (both ends included), every N below
// `partitions`; an empty list means all of them. The result is sorted, without repeats.
// InvalidArgument names the entry that is wrong.
Status ParsePartitionList(const std::vector<std::string>& entries, uint32_t partitions, std::vector<uint32_t>* out);

}  // namespace readingsd::cluster
