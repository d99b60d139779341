// Payload: turns one MQTT message into readings, or into rejections that say why.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/reading.h"

namespace readingsd::ingest {

// Every way a message can be refused. The names are the `reason` label of
// readingsd_readings_rejected_total, so the set is fixed and small.
enum class RejectReason {
  kOversize,
  kMalformedJson,
  kNotAnObject,
  kEmptyBatch,
  kBatchTooLarge,
  kMissingDeviceId,
  kInvalidDeviceId,
  kDeviceIdMismatch,
  kMissingTimestamp,
  kInvalidTimestamp,
  kInvalidAttribute,
  kDuplicateKey,
  kTimestampTooOld,
  kTimestampInFuture,
  kMalformedLine,  // a line of line protocol or a CSV row that does not parse
};
inline constexpr RejectReason kAllRejectReasons[] = {
    RejectReason::kOversize,         RejectReason::kMalformedJson,    RejectReason::kNotAnObject,
    RejectReason::kEmptyBatch,       RejectReason::kBatchTooLarge,    RejectReason::kMissingDeviceId,
    RejectReason::kInvalidDeviceId,  RejectReason::kDeviceIdMismatch, RejectReason::kMissingTimestamp,
    RejectReason::kInvalidTimestamp, RejectReason::kInvalidAttribute, RejectReason::kDuplicateKey,
    RejectReason::kTimestampTooOld,  RejectReason::kTimestampInFuture, RejectReason::kMalformedLine,
};
std::string_view ReasonName(RejectReason reason);

struct Rejection {
  RejectReason reason;
  std::string message;  // for logs and the dead-letter envelope
  // The device the rejected reading names in its deviceId, else the one the topic names; "" when
  // neither is a valid device id. For logs: which device to fix.
  std::string device_id;
  // Which reading: its place in a JSON array (0 for one object or a payload refused whole), or
  // the line number (from 1) of a line of line protocol or a CSV row.
  std::size_t index = 0;
  // The refused JSON reading, for the dead-letter envelope: the payload itself when it is that one
  // reading, else its element of the array as parsed and written again (so a number keeps its
  // double's value, and of a key held twice one value is left). "" when the payload was refused
  // whole, and for line protocol and CSV.
  std::string reading;
};

struct PayloadOptions {
  // Where the device id sits in the topic; "" = only the payload's "deviceId" names it. When both
  // name one they must agree.
  std::string device_id_topic = "sensors/{deviceId}/readings";
  std::size_t max_payload_bytes = 256u << 10;
  std::size_t max_batch = 1000;  // readings in one JSON array
  // The plausible readingTs window: a reading stamped before min_sort_key (a sort key as
  // storage::NormalizeTimestamp writes it; "" = no lower bound) is kTimestampTooOld, one stamped
  // more than max_future after now() (0 = no upper bound) is kTimestampInFuture.
  std::string min_sort_key = "2000-01-01T00:00:00.000000000Z";
  std::chrono::seconds max_future = std::chrono::hours(24);
  std::function<std::chrono::system_clock::time_point()> now = std::chrono::system_clock::now;
  // The fields a reading's timestamp and device id may come in (ingest.timestamp_fields,
  // ingest.device_id_fields), none of them in both lists: a reading holds at most one of each
  // list. Non-empty names that are not each other's.
  std::vector<std::string> timestamp_fields = {std::string(storage::kReadingTsAttribute)};
  std::vector<std::string> device_id_fields = {std::string(storage::kDeviceIdAttribute)};
};

struct ParsedMessage {
  std::vector<storage::Reading> readings;
  std::vector<Rejection> rejections;
};

// A payload is one JSON object {"deviceId":…,"readingTs":…, attributes…} or an array of them
// (the device id and timestamp under any of PayloadOptions' fields for them). The timestamp is an
// ISO-8601 string (storage::NormalizeTimestamp) or an epoch number, whose digits before any
// fraction tell its unit: 9-11 seconds, 12-14 milliseconds, 15-17 microseconds, 18-20
// nanoseconds since 1970 (each from 1973 on); any other number is kInvalidTimestamp, as
// ambiguous, and so is an exponent, a sign or a fraction finer than a nanosecond.
// Attributes are numbers, strings or booleans; null attributes are dropped; nested objects and
// arrays are refused (kInvalidAttribute), and so is a reading that holds a key twice
// (kDuplicateKey), where JSON parsers differ on which value wins, and one stamped outside the
// plausible window. In a batch, each element stands or falls alone. JSON nested deeper than
// kMaxJsonDepth (json/parse.h) is kMalformedJson and never built.
void ParsePayload(const PayloadOptions& options, std::string_view topic, std::string_view payload,
                  ParsedMessage* out);

// ParsePayload for a payload whose device is named some other way than by a topic (an HTTP
// path): `device_id` "" = only each reading's deviceId names it; else a reading's deviceId, when
// it has one, must be the same (kDeviceIdMismatch).
void ParsePayloadFor(const PayloadOptions& options, std::string_view device_id, std::string_view payload,
                     ParsedMessage* out);

// The checks every reading passes whichever way it came in (MQTT, HTTP, line protocol, import),
// after its device id was validated and its timestamp normalised: the plausible window and the
// attributes. Thread-compatible (immutable once made).
class ReadingChecks {
 public:
  // Takes options.now() once: the window ends there (plus max_future) for every reading checked.
  explicit ReadingChecks(const PayloadOptions& options);
  // True when `reading` passes; else false and *rejection says why. `ts_text` is the timestamp as
  // it was written, for the message.
  bool Check(const storage::Reading& reading, std::string_view ts_text, Rejection* rejection) const;

 private:
  std::string earliest_;  // the lowest sort key accepted; "" = no bound
  std::string latest_;    // the highest; "" = no bound
};

// The device id the topic names under `pattern` ("sensors/{deviceId}/readings"); "" when the
// pattern is empty or the topic does not match it.
std::string DeviceIdFromTopic(std::string_view pattern, std::string_view topic);

}  // namespace readingsd::ingest
