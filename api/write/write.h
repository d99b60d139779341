// The write API: readings in over HTTP, through the same parsing, checks, rejection reasons and
// write as MQTT's (ingest/payload.h, ingest/write.h).
//
//   POST /v1/readings               a reading or an array of them in the MQTT payload format,
//                                   each naming its deviceId
//   POST /v1/devices/{id}/readings  the same; a reading may leave deviceId out, else it must be {id}
//
//   POST /write                     InfluxDB 1.x line protocol: db and rp are taken and ignored,
//                                   precision (n, ns, u, us, ms, s, m, h), u and p (p a token)
//   POST /api/v2/write              InfluxDB 2.x: org and bucket ignored, precision (ns, us, ms, s)
//   GET|HEAD /ping                  204 with X-Influxdb-Version, which InfluxDB clients ask first
//
// Bodies may be gzip (Content-Encoding: gzip); the decompressed body is bounded too, so a gzip
// bomb gets 413 and is never inflated past the bound.
//
// Answers: 204 only once every reading is in the WAL (Store::Write returned OK; synced when
// storage.sync). When some readings are refused the rest are still written, and the answer is
//   207 {"written":N,"rejected":[{"index":I,"reason":"invalid_timestamp","message":"…"},…]}
// with I the reading's place in the array (0 for a single object); 400 with the same body when
// none was written, 413 when the body is too large or holds too many readings. A write the store
// refuses (disk full, I/O error) is 503 with the native error shape, and nothing is acknowledged.
//
// On a node with [nats] (docs/cluster.md) the readings are not written here: after the same
// parsing and checks they are published into the JetStream stream on each device's subject
// (WriteHooks::publish), and every owner of the device's partition stores them from there, each
// once. Then 204 and 207 (and InfluxDB's 204 and partial-write 400) come only once JetStream acked
// every accepted reading, that is once they are durable in the replicated stream; a 503 (InfluxDB
// 1.x: 500) says the stream did not ack them all in time (nats.publish_timeout_ms): nothing is
// claimed, though what was acked will be stored all the same, so send the request again (each
// reading is stored once under its key). The readings are on the owners as soon as their
// consumers fetched them, usually milliseconds after the answer, not before it.
//
// The line protocol endpoints answer as InfluxDB does: 204 once every point is in the WAL; when
// some lines are refused, the rest are still written and the answer is 400 with InfluxDB's error
// JSON, {"error":"partial write: line 3: malformed_line: …; dropped=1"} (2.x:
// {"code":"invalid","message":…}); 413 for too large a body; 500 (2.x: 503) when the store
// refuses the write. ingest/line_readings.h maps points to readings.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/handler.h"
#include "ingest/nats_publish.h"
#include "ingest/payload.h"
#include "storage/reading.h"

namespace readingsd::api::write {

struct WriteOptions {
  // The plausible window, as ingest::PayloadOptions has it (ingest.min_timestamp, ingest.max_future).
  std::string min_sort_key = "2000-01-01T00:00:00.000000000Z";
  std::chrono::seconds max_future = std::chrono::hours(24);
  // Most bytes a body may hold once decompressed, and most readings one request may carry.
  std::size_t max_body_bytes = 16u << 20;
  std::size_t max_readings = 10000;
  // Line protocol: the device id of a point (ingest::LineProtocolOptions::device_template).
  std::string line_device = "{tag:device}";
  // The fields a JSON reading's timestamp and device id may come in (ingest::PayloadOptions').
  std::vector<std::string> timestamp_fields = {std::string(storage::kReadingTsAttribute)};
  std::vector<std::string> device_id_fields = {std::string(storage::kDeviceIdAttribute)};
  // Through the stream (WriteHooks::publish): the most bytes and readings one message may hold,
  // what the consumers take (mqtt.max_payload_bytes, mqtt.max_batch). 0 bytes: not through a
  // stream. Then timestamp_fields must list readingTs and device_id_fields deviceId, the names
  // the messages give them.
  std::size_t stream_message_bytes = 0;
  std::size_t stream_message_readings = 1000;

  bool operator==(const WriteOptions&) const = default;
};

// Where the readings go. Both must be thread-safe; called from the I/O threads.
struct WriteHooks {
  // Writes all or nothing; OK means in the WAL. Empty: every write is refused with 503.
  std::function<Status(std::span<const storage::Reading>)> write;
  // Set (a node with [nats]): the readings go into the stream in place of `write`, as messages in
  // the MQTT payload format (StreamMessages); OK means JetStream acked every one.
  std::function<Status(std::span<const ingest::StreamMessage>)> publish;
  // Each refused reading, with where it came from ("POST /v1/readings").
  std::function<void(std::string_view source, const ingest::Rejection&)> on_rejected;
};

struct Context {
  const WriteOptions& options;
  const WriteHooks& hooks;
};

// InvalidArgument for options no request could be answered with (a line_device template that
// ingest::ValidateDeviceTemplate refuses, zero caps).
Status ValidateOptions(const WriteOptions& options);

// The messages `readings` go into the stream as: each run of one device's readings in JSON arrays
// of at most options.stream_message_readings readings and stream_message_bytes bytes, each reading
// rendered as the native API answers it (native::AppendItem: a number in its exact canonical text,
// which the consumers' ParsePayload reads back to the same number). InvalidArgument for a reading
// no message can carry: a device id with a '.', an attribute named as a timestamp or device id
// field, or a reading larger than a message alone.
Status StreamMessages(const WriteOptions& options, std::span<const storage::Reading> readings,
                      std::vector<ingest::StreamMessage>* out);

// Whether the write API answers `request` (its method and path), so the Router sends it here.
bool IsWriteRequest(const http::Request& request);
// The token an InfluxDB 1.x client may send as `p` on /write ("" when none): the Router takes it
// beside Authorization.
std::string InfluxPassword(const http::Request& request);

// Thread-safe. `endpoint` is set to write.json, write.influx, write.influx2 or ping.
http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint);

}  // namespace readingsd::api::write
