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
};
inline constexpr RejectReason kAllRejectReasons[] = {
    RejectReason::kOversize,         RejectReason::kMalformedJson,    RejectReason::kNotAnObject,
    RejectReason::kEmptyBatch,       RejectReason::kBatchTooLarge,    RejectReason::kMissingDeviceId,
    RejectReason::kInvalidDeviceId,  RejectReason::kDeviceIdMismatch, RejectReason::kMissingTimestamp,
    RejectReason::kInvalidTimestamp, RejectReason::kInvalidAttribute, RejectReason::kDuplicateKey,
    RejectReason::kTimestampTooOld,  RejectReason::kTimestampInFuture,
};
std::string_view ReasonName(RejectReason reason);

struct Rejection {
  RejectReason reason;
  std::string message;  // for logs and the dead-letter envelope
  // The device the rejected reading names in its deviceId, else the one the topic names; "" when
  // neither is a valid device id. For logs: which device to fix.
  std::string device_id;
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
};

struct ParsedMessage {
  std::vector<storage::Reading> readings;
  std::vector<Rejection> rejections;
};

// A payload is one JSON object {"deviceId":…,"readingTs":…, attributes…} or an array of them.
// Attributes are numbers, strings or booleans; null attributes are dropped; nested objects and
// arrays are refused (kInvalidAttribute), and so is a reading that holds a key twice
// (kDuplicateKey), where JSON parsers differ on which value wins, and one stamped outside the
// plausible window. In a batch, each element stands or falls alone. JSON nested deeper than
// kMaxJsonDepth (json/parse.h) is kMalformedJson and never built.
void ParsePayload(const PayloadOptions& options, std::string_view topic, std::string_view payload,
                  ParsedMessage* out);

// The device id the topic names under `pattern` ("sensors/{deviceId}/readings"); "" when the
// pattern is empty or the topic does not match it.
std::string DeviceIdFromTopic(std::string_view pattern, std::string_view topic);

}  // namespace readingsd::ingest
