// The native JSON API (the Router sends it every request that is not a DynamoDB call).
//
//   GET /v1/devices                 prefix, limit, cursor (and partitions, partition_count: only
//                                   those partitions' devices, a node's share of a merged listing,
//                                   cluster::Forwarder): every device in id order with its first
//                                   and last reading time, reading count and latest reading, from
//                                   the device registry (storage::Store::ListDevices); a page ends
//                                   at limit (default 100, at most http.max_limit) or after about
//                                   http.max_page_bytes, and has nextCursor while more follow
//   GET /v1/devices/{id}/readings   from, to (inclusive), after, before (exclusive), begins_with,
//                                   limit, order=asc|desc, cursor, filter, attributes,
//                                   format=rows|columns|csv (request.h Format; csv: csv.h)
//                                   (a bound may be a date: its first instant, storage::NormalizeBound)
//   GET /v1/devices/{id}/latest     n (newest first), attributes, format
//   DELETE /v1/devices/{id}/readings  from, to, after, before, begins_with as the GET's, or all=true
//                                   (one of them is required): {"deviceId":…,"deleted":N}; with
//                                   [nats], 202 {"deviceId":…,"streamSequence":S} (DeleteOutcome)
//   GET /v1/devices/{id}/readings/{timestamp}
//   GET /v1/devices/{id}/aggregate  from|after, to|before, step, fn, attributes, format (aggregate.h)
//   GET /v1/indexes/{name}/readings  a fleet-wide question through a secondary index (index.h);
//                                   with partitions, partition_count: a node's share (index.h)
//   GET /v1/readings                 refused: names the index to declare (index.h)
//   GET /healthz, /readyz, /metrics
//
// Every request that is not a DynamoDB call lands here, so this module also owns the 404 and 405
// answers and the error shape {"error":{"code":…,"message":…}}.
// Query strings are form-encoded ('+' or %20 is a space, %2B a plus); a timestamp parameter also
// takes a bare '+' before its offset (from=2026-06-23T10:00:00+02:00). Paths are percent-encoded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cluster/node_map.h"
#include "http/handler.h"
#include "query/query.h"

namespace readingsd::api::native {

// Where the ops endpoints' answers come from. Either may be empty; both must be thread-safe.
struct OpsHooks {
  std::function<std::string()> metrics;            // GET /metrics body (Prometheus text)
  std::function<bool(std::string* detail)> ready;  // GET /readyz: 200 when true, else 503
};

// How a delete was carried out. On one node, in its store: `deleted` counts the readings removed,
// also when it fails part way, and the answer is 200 {"deviceId":…,"deleted":N}. On a node with
// [nats] (docs/cluster.md), into the stream: `stream_sequence` is set once JetStream acked the
// delete (it is durable there), and the answer is 202 {"deviceId":…,"streamSequence":S}. Every
// owner of the device's partition applies it from the stream, in the stream's order: the readings
// the stream held before it are deleted, those after it kept; an owner that is down applies it
// when it is back. That happens after the answer (as the readings of a write are stored after its
// 204), usually within milliseconds; each owner logs it ("delete: device …") and counts it in
// readingsd_readings_deleted_total. A 503 (StreamUnavailable) says the stream did not ack it in
// time: ask again (a delete applied twice deletes the same readings).
struct DeleteOutcome {
  uint64_t deleted = 0;
  std::optional<uint64_t> stream_sequence;
};
// What DELETE /v1/devices/{id}/readings does with the device's readings in `range`
// (storage::Store::DeleteReadings, with its log line and metrics, or a delete published into the
// stream). Thread-safe. Empty: deletes are refused with 503 (a read-only store).
using DeleteHook =
    std::function<Status(std::string_view device_id, const query::SortKeyRange& range, DeleteOutcome* outcome)>;

struct Context {
  const query::ReadContext& read;
  const OpsHooks& ops;
  const DeleteHook& remove;
};

// Thread-safe: it keeps nothing between calls. `endpoint` is set to the name reported to
// http::ServerHooks::on_request: devices, readings, delete_readings, latest, item, aggregate,
// index_readings, fleet_readings, healthz, readyz, metrics or other.
http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint);

// What `request` needs of the fleet when this node holds only some partitions, and for kDevice
// the device it reads. What this module refuses anyway (no such path, a bad device id, a method
// not allowed) is kLocal: every node refuses it alike.
cluster::Reach ReachOf(const http::Request& request, std::string* device_id);

// The answer to `request` (a cluster::Reach::kMerged one: the device listing or an index query)
// from the shares several nodes answered for it, each a 200 answer's body for the partitions its
// request named (cluster::Forwarder): the page a node holding every partition gives.
http::Response Merge(const Context& context, const http::Request& request, std::span<const std::string> shares);
// Merge of the device listing: in device id order, at most the request's limit, with one cursor.
http::Response MergeDevicePages(const query::ReadLimits& limits, const http::Request& request,
                                std::span<const std::string> parts);

// The native error response; the Router uses it too (401, and what the server refuses itself).
http::Response Error(http::status status, std::string_view code, std::string_view message);

}  // namespace readingsd::api::native
