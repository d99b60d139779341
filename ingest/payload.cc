#include "ingest/payload.h"

#include <nlohmann/json.hpp>

#include "json/parse.h"
#include "storage/key.h"

namespace readingsd::ingest {
namespace {

using nlohmann::json;

void Reject(ParsedMessage* out, RejectReason reason, std::string message) {
  out->rejections.push_back({reason, std::move(message)});
}

void ParseOne(const json& object, std::string_view topic_device, ParsedMessage* out) {
  if (!object.is_object()) {
    Reject(out, RejectReason::kNotAnObject, "a reading must be a JSON object");
    return;
  }
  storage::Reading reading;
  const json* device = nullptr;
  const json* ts = nullptr;
  for (const auto& [name, value] : object.items()) {
    if (name == storage::kDeviceIdAttribute) {
      device = &value;
    } else if (name == storage::kReadingTsAttribute) {
      ts = &value;
    } else if (value.is_number()) {
      reading.attributes.push_back({name, value.get<double>()});
    } else if (value.is_string()) {
      reading.attributes.push_back({name, value.get<std::string>()});
    } else if (value.is_boolean()) {
      reading.attributes.push_back({name, value.get<bool>()});
    } else if (!value.is_null()) {
      Reject(out, RejectReason::kInvalidAttribute,
             "attribute \"" + name + "\" is an object or array; only numbers, strings and booleans are stored");
      return;
    }
  }

  if (device != nullptr && !device->is_string()) {
    Reject(out, RejectReason::kInvalidDeviceId, "deviceId must be a string");
    return;
  }
  if (device != nullptr) {
    reading.device_id = device->get<std::string>();
    if (!topic_device.empty() && reading.device_id != topic_device) {
      Reject(out, RejectReason::kDeviceIdMismatch,
             "deviceId \"" + reading.device_id + "\" differs from the topic's \"" + std::string(topic_device) + "\"");
      return;
    }
  } else if (!topic_device.empty()) {
    reading.device_id = topic_device;
  } else {
    Reject(out, RejectReason::kMissingDeviceId, "no deviceId in the payload or the topic");
    return;
  }
  if (Status s = storage::ValidateDeviceId(reading.device_id); !s.ok()) {
    Reject(out, RejectReason::kInvalidDeviceId, s.message());
    return;
  }

  if (ts == nullptr) {
    Reject(out, RejectReason::kMissingTimestamp, "no readingTs");
    return;
  }
  if (!ts->is_string()) {
    Reject(out, RejectReason::kInvalidTimestamp, "readingTs must be an ISO-8601 string");
    return;
  }
  if (Status s = storage::NormalizeTimestamp(ts->get_ref<const std::string&>(), &reading.sort_key); !s.ok()) {
    Reject(out, RejectReason::kInvalidTimestamp, s.message());
    return;
  }
  if (Status s = storage::ValidateAttributes(reading.attributes); !s.ok()) {
    Reject(out, RejectReason::kInvalidAttribute, s.message());
    return;
  }
  out->readings.push_back(std::move(reading));
}

}  // namespace

std::string_view ReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kOversize: return "oversize";
    case RejectReason::kMalformedJson: return "malformed_json";
    case RejectReason::kNotAnObject: return "not_an_object";
    case RejectReason::kEmptyBatch: return "empty_batch";
    case RejectReason::kBatchTooLarge: return "batch_too_large";
    case RejectReason::kMissingDeviceId: return "missing_device_id";
    case RejectReason::kInvalidDeviceId: return "invalid_device_id";
    case RejectReason::kDeviceIdMismatch: return "device_id_mismatch";
    case RejectReason::kMissingTimestamp: return "missing_timestamp";
    case RejectReason::kInvalidTimestamp: return "invalid_timestamp";
    case RejectReason::kInvalidAttribute: return "invalid_attribute";
  }
  return "unknown";
}

std::string DeviceIdFromTopic(std::string_view pattern, std::string_view topic) {
  constexpr std::string_view kField = "{deviceId}";
  auto at = pattern.find(kField);
  if (at == std::string_view::npos) return "";
  std::string_view head = pattern.substr(0, at), tail = pattern.substr(at + kField.size());
  if (topic.size() <= head.size() + tail.size() || !topic.starts_with(head) || !topic.ends_with(tail)) return "";
  std::string_view id = topic.substr(head.size(), topic.size() - head.size() - tail.size());
  // One topic level only: "sensors/a/b/readings" does not name device "a/b".
  if (id.find('/') != std::string_view::npos) return "";
  return std::string(id);
}

void ParsePayload(const PayloadOptions& options, std::string_view topic, std::string_view payload,
                  ParsedMessage* out) {
  out->readings.clear();
  out->rejections.clear();
  if (payload.size() > options.max_payload_bytes) {
    Reject(out, RejectReason::kOversize,
           "payload of " + std::to_string(payload.size()) + " bytes exceeds " +
               std::to_string(options.max_payload_bytes));
    return;
  }
  json doc;
  if (JsonParseError error = ParseJson(payload, &doc); error != JsonParseError::kNone) {
    Reject(out, RejectReason::kMalformedJson,
           error == JsonParseError::kTooDeep
               ? "payload nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"
               : "payload is not valid JSON");
    return;
  }
  std::string topic_device = DeviceIdFromTopic(options.device_id_topic, topic);
  if (!doc.is_array()) {
    ParseOne(doc, topic_device, out);
    return;
  }
  if (doc.empty()) {
    Reject(out, RejectReason::kEmptyBatch, "payload is an empty array");
    return;
  }
  if (doc.size() > options.max_batch) {
    Reject(out, RejectReason::kBatchTooLarge,
           "batch of " + std::to_string(doc.size()) + " readings exceeds " + std::to_string(options.max_batch));
    return;
  }
  for (const json& element : doc) ParseOne(element, topic_device, out);
}

}  // namespace readingsd::ingest
