// InfluxDB line protocol, the grammar alone: a line into its measurement, tags, fields and
// timestamp, with the escapes InfluxDB 1.x and 2.x read. What a point means to readingsd (its
// device, attributes and sort key) is ingest/line_readings.h.
//
//   measurement[,tag=value...] field=value[,field=value...] [timestamp]
//
// Measurements escape ',' and ' '; tag keys, tag values and field keys escape ',', '=' and ' '
// (a backslash before anything else is itself). Field values: floats (1, -1.5, 2e10), integers
// (42i), unsigned integers (42u), strings ("…" with \" and \\ escapes) and booleans
// (t, T, true, True, TRUE, f, F, false, False, FALSE). The timestamp is a signed integer in the
// request's precision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace readingsd::lineproto {

enum class FieldType { kFloat, kInteger, kUnsigned, kString, kBoolean };

struct Field {
  std::string key;
  FieldType type = FieldType::kFloat;
  // Numbers as written, without an i or u suffix; strings unescaped; booleans "true" or "false".
  std::string value;
};

struct Point {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;  // in line order
  std::vector<Field> fields;                              // in line order, at least one
  std::optional<int64_t> timestamp;                       // absent: the server's clock
};

// Parses one line (without its line end). InvalidArgument naming the column (from 1) and what
// was expected there; *out is then unspecified. Thread-safe.
Status ParsePoint(std::string_view line, Point* out);

// The lines of a body that hold points, with their line numbers (from 1): blank lines and
// comments (# first) are skipped, a CR before the LF dropped. Not thread-safe; one per body.
class LineReader {
 public:
  explicit LineReader(std::string_view body) : rest_(body) {}
  // False at the end of the body.
  bool Next(std::string_view* line, std::size_t* number);

 private:
  std::string_view rest_;
  std::size_t number_ = 0;
};

}  // namespace readingsd::lineproto
