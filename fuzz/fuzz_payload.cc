// ParsePayload: one MQTT message (topic + payload) into readings and rejections.
//
// Input layout: the topic is the bytes before the first '\n' when one occurs within the first
// 128 bytes, the payload is the rest; without such a '\n' the whole input is the payload and the
// topic is "sensors/fuzz-dev/readings". So seeds read as
//     sensors/th-01/readings
//     {"readingTs":"2026-06-23T08:00:00Z","temperature":21.5}
// A first byte 0x01-0x06 (not part of the topic) picks other PayloadOptions (device id only from
// the payload, a small batch limit, a 64-byte size limit, other topic patterns, no plausible
// timestamp window) so those branches are reached; any other input runs with the defaults. (The
// options used to follow the topic's first byte % 8, which put every "sensors/…" topic under the
// 64-byte limit.) The clock is fixed, so an input means the same on every run.
//
// Properties:
//   - every reading has a valid device id, a normalised 30-byte sort key that normalises to
//     itself, and valid attributes that survive the value codec;
//   - a reading's device id agrees with the one the topic names, when the topic names one;
//   - a non-array payload (or an empty or oversized batch) yields exactly one reading or one
//     rejection, a batch exactly one per element; malformed JSON, and JSON nested deeper than
//     kMaxJsonDepth, is kMalformedJson;
//   - within that depth, ParseJson parses exactly what nlohmann::json::parse does, alike;
//   - DeviceIdFromTopic never returns an id containing '/'.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_util.h"
#include "ingest/payload.h"
#include "json/parse.h"
#include "storage/key.h"
#include "storage/reading.h"

using readingsd::fuzz::AsView;
using readingsd::fuzz::SameAttributes;
namespace ingest = readingsd::ingest;
namespace storage = readingsd::storage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view input = AsView(data, size);
  ingest::PayloadOptions options;
  options.now = [] { return std::chrono::sys_days{std::chrono::year{2026} / 6 / 23} + std::chrono::hours(12); };
  if (!input.empty() && input[0] >= 0x01 && input[0] <= 0x06) {
    switch (input[0]) {
      case 0x01: options.device_id_topic = ""; break;
      case 0x02: options.max_batch = 3; break;
      case 0x03: options.max_payload_bytes = 64; break;
      case 0x04: options.device_id_topic = "{deviceId}"; break;
      case 0x05: options.device_id_topic = "site/{deviceId}"; break;
      default:
        options.min_sort_key = "";
        options.max_future = std::chrono::seconds(0);
        break;
    }
    input.remove_prefix(1);
  }
  std::string_view topic = "sensors/fuzz-dev/readings";
  const auto newline = input.substr(0, 129).find('\n');
  if (newline != std::string_view::npos) {
    topic = input.substr(0, newline);
    input.remove_prefix(newline + 1);
  }

  const std::string topic_device = ingest::DeviceIdFromTopic(options.device_id_topic, topic);
  FUZZ_CHECK(topic_device.find('/') == std::string::npos);

  ingest::ParsedMessage out;
  out.readings.resize(2);  // ParsePayload must reset what it is handed
  ingest::ParsePayload(options, topic, input, &out);

  const std::size_t outputs = out.readings.size() + out.rejections.size();
  FUZZ_CHECK(outputs >= 1);
  if (input.size() > options.max_payload_bytes) {
    FUZZ_CHECK(out.readings.empty() && out.rejections.size() == 1 &&
               out.rejections[0].reason == ingest::RejectReason::kOversize);
  }
  for (const ingest::Rejection& r : out.rejections) {
    FUZZ_CHECK(!ingest::ReasonName(r.reason).empty() && ingest::ReasonName(r.reason) != "unknown");
    FUZZ_CHECK(!r.message.empty());
  }
  if (!out.readings.empty()) FUZZ_CHECK(outputs <= options.max_batch);
  if (input.size() <= options.max_payload_bytes) {
    nlohmann::json doc;
    const readingsd::JsonParseError error = readingsd::ParseJson(input, &doc);
    const bool parsed = error == readingsd::JsonParseError::kNone;
    if (!parsed || !doc.is_array() || doc.empty() || doc.size() > options.max_batch) {
      FUZZ_CHECK(outputs == 1);
    } else {
      FUZZ_CHECK(outputs == doc.size());
    }
    if (!parsed) FUZZ_CHECK(out.rejections[0].reason == ingest::RejectReason::kMalformedJson);
    // Within the depth limit, ParseJson is nlohmann's parse.
    if (error != readingsd::JsonParseError::kTooDeep) {
      const nlohmann::json plain = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
      FUZZ_CHECK(plain.is_discarded() == !parsed);
      if (parsed) FUZZ_CHECK(plain == doc);
    }
  }

  for (const storage::Reading& reading : out.readings) {
    FUZZ_CHECK(storage::ValidateDeviceId(reading.device_id).ok());
    if (!topic_device.empty()) FUZZ_CHECK(reading.device_id == topic_device);
    FUZZ_CHECK(reading.sort_key.size() == storage::kSortKeyLength);
    std::string again;
    FUZZ_CHECK(storage::NormalizeTimestamp(reading.sort_key, &again).ok() && again == reading.sort_key);
    FUZZ_CHECK(storage::ValidateAttributes(reading.attributes).ok());

    std::string encoded;
    storage::EncodeAttributes(reading.attributes, &encoded);
    std::vector<storage::Attribute> decoded;
    FUZZ_CHECK(storage::DecodeAttributes(encoded, &decoded).ok());
    FUZZ_CHECK(SameAttributes(decoded, reading.attributes));
    (void)storage::ItemSize(reading);
  }
  return 0;
}
