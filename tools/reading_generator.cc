#include "tools/reading_generator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace readingsd::tools {
namespace {

// SplitMix64's finaliser: a cheap, well-mixed, platform-independent hash (std:: distributions
// are not: their output differs between standard libraries, which would break reproducibility).
std::uint64_t Mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Values are tenths built from integers, so each is the double nearest its one-decimal text and
// survives the "%.1f" -> JSON -> double round trip exactly.
double Temperature(std::uint64_t reading) { return static_cast<double>(150 + reading * 37 % 250) / 10.0; }
double Humidity(std::uint64_t reading) { return static_cast<double>(300 + reading * 53 % 600) / 10.0; }

// Reads `width` decimal digits at s[pos]; false if any is not a digit.
bool ReadDigits(std::string_view s, std::size_t pos, std::size_t width, int* value) {
  *value = 0;
  for (std::size_t i = pos; i < pos + width; ++i) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    *value = *value * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::string DeviceId(int device) {
  char id[32];
  std::snprintf(id, sizeof(id), "dev%05d", device + 1);
  return id;
}

bool ParseTimestamp(std::string_view s, std::int64_t* ms_since_epoch) {
  // Fixed layout "YYYY-MM-DDTHH:MM:SS", then an optional fraction, then 'Z'.
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || !ReadDigits(s, 0, 4, &y) || s[4] != '-' || !ReadDigits(s, 5, 2, &mo) || s[7] != '-' ||
      !ReadDigits(s, 8, 2, &d) || s[10] != 'T' || !ReadDigits(s, 11, 2, &h) || s[13] != ':' ||
      !ReadDigits(s, 14, 2, &mi) || s[16] != ':' || !ReadDigits(s, 17, 2, &sec)) {
    return false;
  }
  int ms = 0;
  if (s[19] == '.') {
    const std::size_t digits = s.size() - 21;  // between the '.' and the final 'Z'
    if (digits < 1 || digits > 3 || !ReadDigits(s, 20, digits, &ms)) return false;
    for (std::size_t i = digits; i < 3; ++i) ms *= 10;
  } else if (s.size() != 20) {
    return false;
  }
  if (s.back() != 'Z') return false;

  using namespace std::chrono;
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || sec > 59) return false;
  const auto instant = sys_days{date} + hours{h} + minutes{mi} + seconds{sec} + milliseconds{ms};
  *ms_since_epoch = duration_cast<milliseconds>(instant.time_since_epoch()).count();
  return true;
}

std::string FormatTimestamp(std::int64_t ms_since_epoch) {
  using namespace std::chrono;
  const sys_time<milliseconds> instant{milliseconds{ms_since_epoch}};
  const auto midnight = floor<days>(instant);
  const year_month_day date{midnight};
  const hh_mm_ss time{instant - midnight};
  char text[40];
  int n = std::snprintf(text, sizeof(text), "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(date.year()),
                        static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                        static_cast<int>(time.hours().count()), static_cast<int>(time.minutes().count()),
                        static_cast<int>(time.seconds().count()));
  if (const auto ms = time.subseconds().count(); ms != 0) {
    n += std::snprintf(text + n, sizeof(text) - static_cast<std::size_t>(n), ".%03d", static_cast<int>(ms));
  }
  return std::string(text, static_cast<std::size_t>(n)) + 'Z';
}

ReadingGenerator::ReadingGenerator(GeneratorOptions options)
    : options_(std::move(options)), pad_(options_.payload_pad, 'x') {
  if (options_.devices < 1 || options_.batch < 1 || options_.step_ms < 1) {
    throw std::invalid_argument("ReadingGenerator: devices, batch and step_ms must be at least 1");
  }
  next_step_.assign(static_cast<std::size_t>(options_.devices), 0);
}

bool ReadingGenerator::Next(GeneratedMessage* message) {
  if (next_reading_ >= options_.count) return false;
  const auto devices = static_cast<std::uint64_t>(options_.devices);
  const std::uint64_t message_index = next_message_++;
  const int device = static_cast<int>(
      options_.seed ? Mix64(*options_.seed + (message_index + 1) * 0x9e3779b97f4a7c15ULL) % devices
                    : message_index % devices);

  message->topic = options_.topic_template;
  const std::string device_id = DeviceId(device);
  constexpr std::string_view kPlaceholder = "{deviceId}";
  for (auto at = message->topic.find(kPlaceholder); at != std::string::npos;
       at = message->topic.find(kPlaceholder, at + device_id.size())) {
    message->topic.replace(at, kPlaceholder.size(), device_id);
  }

  const std::uint64_t batch =
      std::min(options_.count - next_reading_, static_cast<std::uint64_t>(options_.batch));
  message->readings.clear();
  message->payload.clear();
  if (options_.batch > 1) message->payload += '[';
  for (std::uint64_t r = 0; r < batch; ++r) {
    if (r > 0) message->payload += ',';
    message->readings.push_back(MakeReading(device));
    AppendJson(message->readings.back(), &message->payload);
  }
  if (options_.batch > 1) message->payload += ']';
  return true;
}

GeneratedReading ReadingGenerator::MakeReading(int device) {
  const std::uint64_t reading = next_reading_++;
  const std::int64_t ts_ms = options_.start_ms + next_step_[static_cast<std::size_t>(device)]++ * options_.step_ms;
  return GeneratedReading{DeviceId(device), FormatTimestamp(ts_ms), Temperature(reading), Humidity(reading)};
}

void ReadingGenerator::AppendJson(const GeneratedReading& reading, std::string* payload) const {
  char json[192];
  const int n = std::snprintf(json, sizeof(json),
                              R"({"deviceId":"%s","readingTs":"%s","temperature":%.1f,"humidity":%.1f)",
                              reading.device_id.c_str(), reading.reading_ts.c_str(), reading.temperature,
                              reading.humidity);
  payload->append(json, static_cast<std::size_t>(n));
  if (!pad_.empty()) {
    payload->append(R"(,"pad":")");
    payload->append(pad_);
    payload->push_back('"');
  }
  payload->push_back('}');
}

std::vector<GeneratedReading> ExpectedReadings(const GeneratorOptions& options) {
  std::vector<GeneratedReading> readings;
  readings.reserve(options.count);
  ReadingGenerator generator(options);
  GeneratedMessage message;
  while (generator.Next(&message)) {
    for (auto& reading : message.readings) readings.push_back(std::move(reading));
  }
  return readings;
}

}  // namespace readingsd::tools
