// The write API: readings in over HTTP, through the same parsing, checks, rejection reasons and
// write as MQTT's (ingest/payload.h, ingest/write.h).
//
//   POST /v1/readings               a reading or an array of them in the MQTT payload format,
//                                   each naming its deviceId
//   POST /v1/devices/{id}/readings  the same; a reading may leave deviceId out, else it must be {id}
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
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "http/handler.h"
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

  bool operator==(const WriteOptions&) const = default;
};

// Where the readings go. Both must be thread-safe; called from the I/O threads.
struct WriteHooks {
  // Writes all or nothing; OK means in the WAL. Empty: every write is refused with 503.
  std::function<Status(std::span<const storage::Reading>)> write;
  // Each refused reading, with where it came from ("POST /v1/readings").
  std::function<void(std::string_view source, const ingest::Rejection&)> on_rejected;
};

struct Context {
  const WriteOptions& options;
  const WriteHooks& hooks;
};

// Whether the write API answers `request` (its method and path), so the Router sends it here.
bool IsWriteRequest(const http::Request& request);

// Thread-safe. `endpoint` is set to write.json.
http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint);

}  // namespace readingsd::api::write
