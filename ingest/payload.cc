#include "ingest/payload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "json/parse.h"
#include "storage/key.h"

namespace readingsd::ingest {
namespace {

using nlohmann::json;

void Reject(ParsedMessage* out, RejectReason reason, std::string message) {
  out->rejections.push_back({reason, std::move(message), ""});
}

// Rejection::device_id for `reading` (nullptr: the payload was refused whole).
std::string DeviceNamed(const json* reading, const std::string& topic_device) {
  if (reading != nullptr && reading->is_object()) {
    auto id = reading->find(storage::kDeviceIdAttribute);
    if (id != reading->end() && id->is_string() &&
        storage::ValidateDeviceId(id->get_ref<const std::string&>()).ok()) {
      return id->get<std::string>();
    }
  }
  return storage::ValidateDeviceId(topic_device).ok() ? topic_device : "";
}

// What only the parse itself can tell of a payload's readings: a key held twice (nlohmann's DOM
// keeps the last of equal keys) and the text of each non-integer number (the DOM keeps a double,
// which can round it). Only a reading's own keys count (a nested object is refused as an
// attribute anyway). A payload that is one object is reading 0.
class ReadingSteps : public JsonParseObserver {
 public:
  // A key reading `index` holds twice, nullptr when none.
  const std::string* DuplicateOf(std::size_t index) const {
    auto at = std::lower_bound(found_.begin(), found_.end(), index,
                               [](const auto& f, std::size_t i) { return f.first < i; });
    return at != found_.end() && at->first == index ? &at->second : nullptr;
  }
  // The text of attribute `name` of reading `index`, nullptr when it is not a non-integer number.
  const std::string* NumberTextOf(std::size_t index, std::string_view name) const {
    auto at = std::lower_bound(numbers_.begin(), numbers_.end(), index,
                               [](const NumberSeen& n, std::size_t i) { return n.reading < i; });
    for (; at != numbers_.end() && at->reading == index; ++at) {
      if (at->name == name) return &at->text;
    }
    return nullptr;
  }
  void NumberText(const std::string& text) override {
    if (depth_ == reading_depth_ && keys_used_ > 0) numbers_.push_back({ReadingIndex(), keys_[keys_used_ - 1], text});
  }

  void Value() override {
    if (depth_ == 1 && root_is_array_) ++elements_;
  }
  void StartArray() override {
    Value();
    root_is_array_ = root_is_array_ || depth_ == 0;
    ++depth_;
  }
  void EndArray() override { --depth_; }
  void StartObject() override {
    Value();
    if (depth_ == 0 || (depth_ == 1 && root_is_array_)) {  // a reading
      reading_depth_ = depth_ + 1;
      keys_used_ = 0;
    }
    ++depth_;
  }
  void Key(const std::string& name) override {
    if (depth_ != reading_depth_) return;
    if (keys_used_ == keys_.size()) keys_.emplace_back();
    keys_[keys_used_++] = name;
  }
  void EndObject() override {
    if (depth_ == reading_depth_) {
      if (const std::string* twice = Twice()) found_.emplace_back(ReadingIndex(), *twice);
      reading_depth_ = 0;
    }
    --depth_;
  }

 private:
  struct NumberSeen {
    std::size_t reading;
    std::string name;
    std::string text;
  };

  std::size_t ReadingIndex() const { return root_is_array_ ? elements_ - 1 : 0; }

  // A key the reading holds twice, nullptr when none: pairwise among a reading's usual few keys,
  // else as neighbours once sorted, so a reading with many keys costs n log n, not n^2.
  const std::string* Twice() {
    auto end = keys_.begin() + static_cast<std::ptrdiff_t>(keys_used_);
    if (keys_used_ <= 16) {
      for (auto key = keys_.begin(); key != end; ++key) {
        if (std::find(key + 1, end, *key) != end) return &*key;
      }
      return nullptr;
    }
    std::sort(keys_.begin(), end);
    auto twice = std::adjacent_find(keys_.begin(), end);
    return twice != end ? &*twice : nullptr;
  }

  std::size_t depth_ = 0;          // containers open
  std::size_t reading_depth_ = 0;  // depth_ inside the reading being read; 0 = none
  bool root_is_array_ = false;
  std::size_t elements_ = 0;       // of the top-level array, so far
  std::vector<std::string> keys_;  // the reading's keys are keys_[0, keys_used_)
  std::size_t keys_used_ = 0;
  std::vector<std::pair<std::size_t, std::string>> found_;  // (reading, key), in reading order
  std::vector<NumberSeen> numbers_;                         // in reading order
};

// A JSON number as stored: integers of 64 bits exactly as they are, any other number from its text.
Status ToNumber(const json& value, const std::string* text, storage::Number* number) {
  if (value.is_number_unsigned()) {
    *number = storage::Number(value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    *number = storage::Number(value.get<int64_t>());
  } else if (text != nullptr) {
    return storage::Number::Parse(*text, number);
  } else {
    *number = storage::Number(value.get<double>());  // unreachable: the parse told every text
  }
  return Status::OK();
}

// What every reading of one message is checked against.
struct Checks {
  std::string topic_device;  // "" = the topic names none
  ReadingChecks readings;
};

void ParseOne(const json& object, const Checks& checks, const ReadingSteps& steps, std::size_t index,
              ParsedMessage* out) {
  if (!object.is_object()) {
    Reject(out, RejectReason::kNotAnObject, "a reading must be a JSON object");
    return;
  }
  if (const std::string* duplicate_key = steps.DuplicateOf(index); duplicate_key != nullptr) {
    Reject(out, RejectReason::kDuplicateKey, "key \"" + *duplicate_key + "\" appears more than once");
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
      storage::Number number;
      if (Status s = ToNumber(value, steps.NumberTextOf(index, name), &number); !s.ok()) {
        Reject(out, RejectReason::kInvalidAttribute, "attribute \"" + name + "\": " + s.message());
        return;
      }
      reading.attributes.push_back({name, std::move(number)});
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
    if (!checks.topic_device.empty() && reading.device_id != checks.topic_device) {
      Reject(out, RejectReason::kDeviceIdMismatch,
             "deviceId \"" + reading.device_id + "\" differs from \"" + checks.topic_device + "\" that the topic or path names");
      return;
    }
  } else if (!checks.topic_device.empty()) {
    reading.device_id = checks.topic_device;
  } else {
    Reject(out, RejectReason::kMissingDeviceId, "no deviceId in the payload, the topic or the path");
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
  const std::string& ts_text = ts->get_ref<const std::string&>();
  if (Status s = storage::NormalizeTimestamp(ts_text, &reading.sort_key); !s.ok()) {
    Reject(out, RejectReason::kInvalidTimestamp, s.message());
    return;
  }
  if (Rejection rejection; !checks.readings.Check(reading, ts_text, &rejection)) {
    out->rejections.push_back(std::move(rejection));
    return;
  }
  out->readings.push_back(std::move(reading));
}

// ParsePayload's work, each rejected reading naming its device.
void ParseDocument(const PayloadOptions& options, const std::string& topic_device, std::string_view payload,
                   ParsedMessage* out) {
  if (payload.size() > options.max_payload_bytes) {
    Reject(out, RejectReason::kOversize,
           "payload of " + std::to_string(payload.size()) + " bytes exceeds " +
               std::to_string(options.max_payload_bytes));
    return;
  }
  json doc;
  ReadingSteps steps;
  if (JsonParseError error = ParseJson(payload, &doc, &steps); error != JsonParseError::kNone) {
    Reject(out, RejectReason::kMalformedJson,
           error == JsonParseError::kTooDeep
               ? "payload nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"
               : "payload is not valid JSON");
    return;
  }
  if (doc.is_array() && doc.empty()) {
    Reject(out, RejectReason::kEmptyBatch, "payload is an empty array");
    return;
  }
  if (doc.is_array() && doc.size() > options.max_batch) {
    Reject(out, RejectReason::kBatchTooLarge,
           "batch of " + std::to_string(doc.size()) + " readings exceeds " + std::to_string(options.max_batch));
    return;
  }
  const Checks checks{topic_device, ReadingChecks(options)};
  const std::size_t readings = doc.is_array() ? doc.size() : 1;
  for (std::size_t i = 0; i < readings; ++i) {
    const json& reading = doc.is_array() ? doc[i] : doc;
    const std::size_t rejected = out->rejections.size();
    ParseOne(reading, checks, steps, i, out);
    if (out->rejections.size() > rejected) {
      out->rejections.back().device_id = DeviceNamed(&reading, topic_device);
      out->rejections.back().index = i;
    }
  }
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
    case RejectReason::kDuplicateKey: return "duplicate_key";
    case RejectReason::kTimestampTooOld: return "timestamp_too_old";
    case RejectReason::kTimestampInFuture: return "timestamp_in_future";
    case RejectReason::kMalformedLine: return "malformed_line";
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
  ParsePayloadFor(options, DeviceIdFromTopic(options.device_id_topic, topic), payload, out);
}

void ParsePayloadFor(const PayloadOptions& options, std::string_view device_id, std::string_view payload,
                     ParsedMessage* out) {
  out->readings.clear();
  out->rejections.clear();
  const std::string named(device_id);
  ParseDocument(options, named, payload, out);
  // A payload refused whole (oversize, malformed, ...) names the topic's device.
  for (Rejection& rejection : out->rejections) {
    if (rejection.device_id.empty()) rejection.device_id = DeviceNamed(nullptr, named);
  }
}

ReadingChecks::ReadingChecks(const PayloadOptions& options) : earliest_(options.min_sort_key) {
  if (options.max_future.count() > 0) {
    latest_ = storage::SortKeyAtSeconds(
        std::chrono::duration<double>(options.now().time_since_epoch() + options.max_future).count());
  }
}

bool ReadingChecks::Check(const storage::Reading& reading, std::string_view ts_text, Rejection* rejection) const {
  if (!earliest_.empty() && reading.sort_key < earliest_) {
    *rejection = {RejectReason::kTimestampTooOld,
                  "readingTs " + std::string(ts_text) + " is before " + earliest_ +
                      " (ingest.min_timestamp): is the device's clock set?",
                  reading.device_id};
    return false;
  }
  if (!latest_.empty() && reading.sort_key > latest_) {
    *rejection = {RejectReason::kTimestampInFuture,
                  "readingTs " + std::string(ts_text) + " is after " + latest_ + ", now plus ingest.max_future",
                  reading.device_id};
    return false;
  }
  if (Status s = storage::ValidateAttributes(reading.attributes); !s.ok()) {
    *rejection = {RejectReason::kInvalidAttribute, s.message(), reading.device_id};
    return false;
  }
  return true;
}

}  // namespace readingsd::ingest
