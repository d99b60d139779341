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

bool IsOneOf(std::string_view name, const std::vector<std::string>& fields) {
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}

// The fields of a list for a message: "readingTs", or "ts, time or readingTs".
std::string FieldNames(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == fields.size() ? " or " : ", ") + fields[i];
  }
  return out;
}

// Rejection::device_id for `reading` (nullptr: the payload was refused whole).
std::string DeviceNamed(const json* reading, const std::vector<std::string>& device_id_fields,
                        const std::string& topic_device) {
  if (reading != nullptr && reading->is_object()) {
    for (const std::string& field : device_id_fields) {
      auto id = reading->find(field);
      if (id != reading->end() && id->is_string() &&
          storage::ValidateDeviceId(id->get_ref<const std::string&>()).ok()) {
        return id->get<std::string>();
      }
    }
  }
  return storage::ValidateDeviceId(topic_device).ok() ? topic_device : "";
}

// The sort key of an epoch number as written (`text`): its integer digits tell its unit
// (PayloadOptions' comment); a fraction may go down to the nanosecond.
Status EpochNumberSortKey(std::string_view text, std::string* sort_key) {
  const auto point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view() : text.substr(point + 1);
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || !digits(whole) || !digits(fraction) || (point != std::string_view::npos && fraction.empty())) {
    return Status::InvalidArgument("epoch timestamp " + std::string(text) +
                                   " must be plain digits, with an optional fraction (no sign, no exponent)");
  }
  // Seconds, ms, us, ns: 10^9, 10^6, 10^3, 1 nanoseconds each, for 9-11, 12-14, 15-17, 18-20 digits.
  const std::size_t width = whole.size();
  if (width < 9 || width > 20) {
    return Status::InvalidArgument(
        "epoch timestamp " + std::string(text) + " has " + std::to_string(width) +
        " digits, so its unit is ambiguous: seconds, milliseconds, microseconds and nanoseconds since 1970 "
        "have 9-11, 12-14, 15-17 and 18-20 digits (from 1973 on)");
  }
  const std::size_t unit_digits = 9 - 3 * ((width - 9) / 3);  // of a nanosecond count per unit
  if (fraction.size() > unit_digits) {
    return Status::InvalidArgument("epoch timestamp " + std::string(text) + " is finer than a nanosecond");
  }
  int64_t nanos = 0;
  for (char c : std::string(whole) + std::string(fraction) + std::string(unit_digits - fraction.size(), '0')) {
    if (__builtin_mul_overflow(nanos, 10, &nanos) || __builtin_add_overflow(nanos, c - '0', &nanos)) {
      return Status::InvalidArgument("epoch timestamp " + std::string(text) + " is after 2262, the last year it can hold");
    }
  }
  *sort_key = storage::SortKeyAt(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(nanos))));
  return Status::OK();
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
  const PayloadOptions& options;
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
  std::string device_field, ts_field;
  for (const auto& [name, value] : object.items()) {
    if (IsOneOf(name, checks.options.device_id_fields)) {
      if (device != nullptr) {
        Reject(out, RejectReason::kInvalidDeviceId,
               "both \"" + device_field + "\" and \"" + name + "\" name the device; send one");
        return;
      }
      device = &value;
      device_field = name;
    } else if (IsOneOf(name, checks.options.timestamp_fields)) {
      if (ts != nullptr) {
        Reject(out, RejectReason::kInvalidTimestamp,
               "both \"" + ts_field + "\" and \"" + name + "\" hold a timestamp; send one");
        return;
      }
      ts = &value;
      ts_field = name;
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
    Reject(out, RejectReason::kInvalidDeviceId, device_field + " must be a string");
    return;
  }
  if (device != nullptr) {
    reading.device_id = device->get<std::string>();
    if (!checks.topic_device.empty() && reading.device_id != checks.topic_device) {
      Reject(out, RejectReason::kDeviceIdMismatch,
             device_field + " \"" + reading.device_id + "\" differs from \"" + checks.topic_device +
                 "\" that the topic or path names");
      return;
    }
  } else if (!checks.topic_device.empty()) {
    reading.device_id = checks.topic_device;
  } else {
    Reject(out, RejectReason::kMissingDeviceId,
           "no " + FieldNames(checks.options.device_id_fields) + " in the payload, the topic or the path");
    return;
  }
  if (Status s = storage::ValidateDeviceId(reading.device_id); !s.ok()) {
    Reject(out, RejectReason::kInvalidDeviceId, s.message());
    return;
  }

  if (ts == nullptr) {
    Reject(out, RejectReason::kMissingTimestamp, "no " + FieldNames(checks.options.timestamp_fields));
    return;
  }
  std::string ts_text;
  Status normalised;
  if (ts->is_string()) {
    ts_text = ts->get<std::string>();
    normalised = storage::NormalizeTimestamp(ts_text, &reading.sort_key);
  } else if (ts->is_number()) {
    const std::string* text = steps.NumberTextOf(index, ts_field);
    ts_text = text != nullptr ? *text : ts->dump();  // the parse told the text of every non-integer
    normalised = EpochNumberSortKey(ts_text, &reading.sort_key);
  } else {
    normalised = Status::InvalidArgument(ts_field + " must be an ISO-8601 string or an epoch number");
  }
  if (!normalised.ok()) {
    Reject(out, RejectReason::kInvalidTimestamp, normalised.message());
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
  const Checks checks{options, topic_device, ReadingChecks(options)};
  const std::size_t readings = doc.is_array() ? doc.size() : 1;
  for (std::size_t i = 0; i < readings; ++i) {
    const json& reading = doc.is_array() ? doc[i] : doc;
    const std::size_t rejected = out->rejections.size();
    ParseOne(reading, checks, steps, i, out);
    if (out->rejections.size() > rejected) {
      Rejection& rejection = out->rejections.back();
      rejection.device_id = DeviceNamed(&reading, options.device_id_fields, topic_device);
      rejection.index = i;
      rejection.reading = doc.is_array() ? reading.dump(-1, ' ', false, json::error_handler_t::replace)
                                         : std::string(payload);
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
    if (rejection.device_id.empty()) rejection.device_id = DeviceNamed(nullptr, options.device_id_fields, named);
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
