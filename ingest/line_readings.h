// Line protocol points as readings: which device a point names, its attributes and its sort key,
// then the same checks as every other way in (ReadingChecks) and the same rejection reasons.
//
// Mapping:
//   device id   the template `device` expands: "{tag:device}" (the default) is the value of tag
//               `device`; "{measurement}.{tag:site}.{tag:sensor}" joins the measurement and two
//               tags. It must pass the device id charset (storage/key.h).
//   attributes  each field by its key: floats and integers as exact numbers (storage/number.h),
//               strings, booleans; and each tag the template does not use, as a string. The
//               measurement is kept only through the template.
//   sort key    the timestamp at the request's precision, to the nanosecond; a point without one
//               is stamped with the server's clock (PayloadOptions::now), as InfluxDB does.
// A line that does not parse is kMalformedLine; one whose template tag is absent
// kMissingDeviceId; a field and a tag (or two of either) of one name kDuplicateKey.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ingest/payload.h"

namespace readingsd::ingest {

enum class Precision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// InfluxDB's precision names: 1.x's n, ns, u, µ, us, ms, s, m, h and 2.x's ns, us, ms, s; ""
// is nanoseconds. False for any other.
bool ParsePrecision(std::string_view text, Precision* precision);

// The sort key of `value` units of `precision` since 1970; false when out of range.
bool EpochSortKey(int64_t value, Precision precision, std::string* sort_key);

// OK when `device_template` is literal text and {measurement} or {tag:NAME} placeholders, with
// at least one placeholder; else InvalidArgument saying what is wrong.
Status ValidateDeviceTemplate(std::string_view device_template);

struct LineProtocolOptions {
  std::string device_template = "{tag:device}";  // passes ValidateDeviceTemplate
  Precision precision = Precision::kNanoseconds;
};

// Each point of `body` as a reading or a rejection whose index is its line number (from 1).
// `checks` bounds the body (max_payload_bytes, kOversize) and its points (max_batch,
// kBatchTooLarge: nothing of the body is read then) and holds the plausible window; its
// device_id_topic is not used. A body without a point is kEmptyBatch. Thread-safe.
void ParseLineProtocol(const PayloadOptions& checks, const LineProtocolOptions& options, std::string_view body,
                       ParsedMessage* out);

}  // namespace readingsd::ingest
