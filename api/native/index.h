// Fleet-wide questions through declared secondary indexes (storage/index.h).
//
//   GET /v1/indexes/{name}/readings
//     from, to (inclusive) / after, before (exclusive): the readings' time window. An index
//       partitioned by readingHour or readingDay reads every bucket of it (at most 10,000), in
//       time order (newest bucket first with order=desc); each bucket's shards merged in sort order.
//     value: the partition value of an index partitioned by an attribute (status=alarm: value=alarm).
//     gt, ge, lt, le, eq: one condition on the index's sort value (ge with le: between).
//     limit, order=asc|desc, cursor, filter, attributes: as /v1/devices/{id}/readings.
//     format=rows|columns (request.h Format).
//   Answer: {"index":…,"items":[…],"count":…,"scannedCount":…,"nextCursor":…}; an item carries
//   readingHour / readingDay as an attribute when the index is partitioned by it. format=columns:
//   {"index":…,"deviceId":[…],"readingTs":[…],"columns":{…},"count":…,…}, the same page transposed
//   (readingHour / readingDay a column), with the same cursor.
//
//   With partitions and partition_count (request.h PartitionSetParam): a node's share of the query
//   merged across nodes, only those partitions' devices' entries, as query::IndexShareWriter
//   records them (binary); the node asked merges the shares (native::Merge) into the page above,
//   the same as one node holding every partition answers, with the same cursor.
//
//   GET /v1/readings (no device): refused, naming the index to declare or the one to use, never
//   answered by reading every partition.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "api/native/native.h"
#include "api/native/request.h"

namespace readingsd::api::native {

// With `shares`: the page from the nodes' shares of it instead of from this node's store.
http::Response IndexReadings(const Context& context, std::string_view index, const Params& params,
                             std::optional<std::span<const std::string>> shares = std::nullopt);
http::Response FleetReadings(const Context& context, const Params& params);

}  // namespace readingsd::api::native
