// Deterministic synthetic readings for load tests and benchmarks.
//
// The same options always produce the same messages, so a test can compute exactly which
// (deviceId, readingTs) pairs a run of readingsd-publish sent and compare them with what arrived.
//
// Message m goes to device m % devices (or, with a seed, to a pseudo-random device) and carries
// that device's next `batch` readings; a device's k-th reading has readingTs = start + k * step.
// With batch = 1 and no seed this is: reading i goes to device i % D with
// ts = start + (i / D) * step. Every (device, ts) pair is produced at most once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace readingsd::tools {

// 2026-06-23T00:00:00Z in milliseconds since the Unix epoch.
inline constexpr std::int64_t kDefaultStartMs = 1782172800000;

struct GeneratorOptions {
  std::uint64_t count = 1000;  // readings in total (not messages)
  int devices = 10;            // device ids dev00001, dev00002, ...
  // Readings per message. 1 sends one JSON object per message, the format devices use; more
  // sends a JSON array of one device's consecutive readings.
  int batch = 1;
  // Unset: messages go to the devices round-robin. Set: each message picks a device by hashing
  // (seed, message index), so the spread is random-looking yet reproducible.
  std::optional<std::uint64_t> seed;
  std::int64_t start_ms = kDefaultStartMs;  // readingTs of every device's first reading
  std::int64_t step_ms = 1000;              // readingTs distance between a device's readings
  // "{deviceId}" is replaced by the message's device id.
  std::string topic_template = "sensors/{deviceId}/readings";
  // Length of an extra string attribute "pad", to bring payloads to realistic sizes.
  std::size_t payload_pad = 0;
};

// One reading as it appears in a payload.
struct GeneratedReading {
  std::string device_id;
  std::string reading_ts;
  double temperature;
  double humidity;
};

struct GeneratedMessage {
  std::string topic;
  std::string payload;
  std::vector<GeneratedReading> readings;  // what `payload` carries, in payload order
};

class ReadingGenerator {
 public:
  explicit ReadingGenerator(GeneratorOptions options);

  // Fills *message with the next message, reusing its buffers; false once `count` readings were
  // produced. The last message may carry fewer than `batch` readings.
  bool Next(GeneratedMessage* message);

 private:
  // The next reading of `device`; advances the reading and per-device counters.
  GeneratedReading MakeReading(int device);
  void AppendJson(const GeneratedReading& reading, std::string* payload) const;

  GeneratorOptions options_;
  std::uint64_t next_reading_ = 0;  // global reading index: drives the attribute values
  std::uint64_t next_message_ = 0;
  std::vector<std::int64_t> next_step_;  // per device: the next reading's multiple of step_ms
  std::string pad_;
};

// All readings the options produce, in publishing order.
std::vector<GeneratedReading> ExpectedReadings(const GeneratorOptions& options);

// Device index 0 -> "dev00001".
std::string DeviceId(int device);

// Strict UTC ISO-8601 with up to millisecond precision: "2026-06-23T00:00:00Z" or
// "2026-06-23T00:00:00.250Z". Returns false for anything else (including impossible dates).
bool ParseTimestamp(std::string_view iso8601, std::int64_t* ms_since_epoch);
// Inverse of ParseTimestamp; the fraction is written only when the instant has milliseconds.
std::string FormatTimestamp(std::int64_t ms_since_epoch);

}  // namespace readingsd::tools
