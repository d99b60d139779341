// InfluxDB line protocol on arbitrary bytes: the grammar (lineproto::ParsePoint, LineReader) and
// the mapping to readings (ingest::ParseLineProtocol). Properties:
//   - a parsed point has a measurement and at least one field, none of them with an empty key;
//   - a point whose names and values hold no backslash, written back with InfluxDB's escapes,
//     parses to the same point (names holding a backslash are ambiguous in InfluxDB's grammar too);
//   - every line of a body is accounted for: a reading (several lines of one device and instant
//     are one), or a rejection naming that line; or the body is refused whole by one rejection;
//   - every reading has a valid device id and a 30-byte sort key, and no attribute name twice.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_util.h"
#include "ingest/line_readings.h"
#include "lineproto/line_protocol.h"
#include "storage/key.h"

using readingsd::fuzz::AsView;
namespace lineproto = readingsd::lineproto;
namespace ingest = readingsd::ingest;
namespace storage = readingsd::storage;

namespace {

std::string Escaped(const std::string& text, std::string_view specials) {
  std::string out;
  for (char c : text) {
    if (specials.find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool HasBackslash(const lineproto::Point& p) {
  bool any = p.measurement.find('\\') != std::string::npos;
  for (const auto& [k, v] : p.tags) any = any || (k + v).find('\\') != std::string::npos;
  for (const auto& f : p.fields) any = any || (f.key + f.value).find('\\') != std::string::npos;
  return any;
}

std::string Written(const lineproto::Point& p) {
  std::string line = Escaped(p.measurement, ", ");
  for (const auto& [k, v] : p.tags) line += "," + Escaped(k, ",= ") + "=" + Escaped(v, ",= ");
  for (std::size_t i = 0; i < p.fields.size(); ++i) {
    const lineproto::Field& f = p.fields[i];
    line += (i ? "," : " ") + Escaped(f.key, ",= ") + "=";
    switch (f.type) {
      case lineproto::FieldType::kString: line += "\"" + Escaped(f.value, "\"\\") + "\""; break;
      case lineproto::FieldType::kInteger: line += f.value + "i"; break;
      case lineproto::FieldType::kUnsigned: line += f.value + "u"; break;
      default: line += f.value;
    }
  }
  if (p.timestamp) line += " " + std::to_string(*p.timestamp);
  return line;
}

bool Same(const lineproto::Point& a, const lineproto::Point& b) {
  if (a.measurement != b.measurement || a.tags != b.tags || a.timestamp != b.timestamp ||
      a.fields.size() != b.fields.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.fields.size(); ++i) {
    if (a.fields[i].key != b.fields[i].key || a.fields[i].type != b.fields[i].type ||
        a.fields[i].value != b.fields[i].value) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view body = AsView(data, size);
  std::size_t lines = 0, number = 0;
  std::set<std::size_t> numbers;
  std::string_view line;
  lineproto::Point point, again;
  for (lineproto::LineReader reader(body); reader.Next(&line, &number);) {
    ++lines;
    numbers.insert(number);
    if (!lineproto::ParsePoint(line, &point).ok()) continue;
    FUZZ_CHECK(!point.measurement.empty() && !point.fields.empty());
    for (const auto& [k, v] : point.tags) FUZZ_CHECK(!k.empty() && !v.empty());
    for (const auto& f : point.fields) FUZZ_CHECK(!f.key.empty());
    if (HasBackslash(point)) continue;
    const std::string written = Written(point);
    FUZZ_CHECK(lineproto::ParsePoint(written, &again).ok());
    FUZZ_CHECK(Same(point, again));
  }

  ingest::PayloadOptions checks;
  checks.min_sort_key.clear();
  checks.max_future = std::chrono::seconds(0);
  checks.max_batch = 1000;
  ingest::LineProtocolOptions options;
  options.device_template = size % 2 ? "{tag:device}" : "{measurement}.{tag:site}";
  options.precision = static_cast<ingest::Precision>(size % 6);
  ingest::ParsedMessage out;
  ingest::ParseLineProtocol(checks, options, body, &out);
  if (lines == 0 || lines > checks.max_batch) {
    FUZZ_CHECK(out.readings.empty() && out.rejections.size() == 1);
    return 0;
  }
  FUZZ_CHECK(out.readings.size() + out.rejections.size() <= lines);
  FUZZ_CHECK(!out.readings.empty() || out.rejections.size() == lines);
  for (const ingest::Rejection& r : out.rejections) FUZZ_CHECK(numbers.count(r.index) == 1);
  for (const storage::Reading& r : out.readings) {
    FUZZ_CHECK(storage::ValidateDeviceId(r.device_id).ok());
    FUZZ_CHECK(r.sort_key.size() == storage::kSortKeyLength);
    FUZZ_CHECK(storage::ValidateAttributes(r.attributes).ok());
  }
  return 0;
}
