// Payload: turns one MQTT message into readings, or into rejections that say why.
#pragma once

#include <cstddef>
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
};
inline constexpr RejectReason kAllRejectReasons[] = {
    RejectReason::kOversize,         RejectReason::kMalformedJson,    RejectReason::kNotAnObject,
    RejectReason::kEmptyBatch,       RejectReason::kBatchTooLarge,    RejectReason::kMissingDeviceId,
    RejectReason::kInvalidDeviceId,  RejectReason::kDeviceIdMismatch, RejectReason::kMissingTimestamp,
    RejectReason::kInvalidTimestamp, RejectReason::kInvalidAttribute, RejectReason::kDuplicateKey,
};
std::string_view ReasonName(RejectReason reason);

struct Rejection {
  RejectReason reason;
  std::string message;  // for logs and the dead-letter envelope
};

struct PayloadOptions {
  // Where the device id sits in the topic; "" = only the payload's "deviceId" names it. When both
  // name one they must agree.
  std::string device_id_topic = "sensors/{deviceId}/readings";
  std::size_t max_payload_bytes = 256u << 10;
  std::size_t max_batch = 1000;  // readings in one JSON array
};

struct ParsedMessage {
  std::vector<storage::Reading> readings;
  std::vector<Rejection> rejections;
};

// A payload is one JSON object {"deviceId":…,"readingTs":…, attributes…} or an array of them.
// Attributes are numbers, strings or booleans; null attributes are dropped; nested objects and
// arrays are refused (kInvalidAttribute), and so is a reading that holds a key twice
// (kDuplicateKey), where JSON parsers differ on which value wins. In a batch, each element stands
// or falls alone. JSON nested deeper than kMaxJsonDepth (json/parse.h) is kMalformedJson and
// never built.
void ParsePayload(const PayloadOptions& options, std::string_view topic, std::string_view payload,
                  ParsedMessage* out);

// The device id the topic names under `pattern` ("sensors/{deviceId}/readings"); "" when the
// pattern is empty or the topic does not match it.
std::string DeviceIdFromTopic(std::string_view pattern, std::string_view topic);

}  // namespace readingsd::ingest
