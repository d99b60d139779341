#include "ingest/line_readings.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "lineproto/line_protocol.h"
#include "storage/key.h"

namespace readingsd::ingest {
namespace {

// One piece of a device template: literal text, the measurement, or a tag's value.
struct Piece {
  enum Kind { kText, kMeasurement, kTag } kind;
  std::string text;  // the literal, or the tag's name
};

Status ParseTemplate(std::string_view text, std::vector<Piece>* pieces) {
  constexpr std::string_view kTag = "tag:";
  bool placeholder = false;
  while (!text.empty()) {
    const auto open = text.find('{');
    const auto close = text.find('}');
    if (close < open) return Status::InvalidArgument("a '}' without its '{'");
    if (open > 0) pieces->push_back({Piece::kText, std::string(text.substr(0, open))});
    if (open == std::string_view::npos) break;
    if (close == std::string_view::npos) return Status::InvalidArgument("a '{' without its '}'");
    const std::string_view name = text.substr(open + 1, close - open - 1);
    if (name == "measurement") {
      pieces->push_back({Piece::kMeasurement, ""});
    } else if (name.starts_with(kTag) && name.size() > kTag.size() && name.find('{') == std::string_view::npos) {
      pieces->push_back({Piece::kTag, std::string(name.substr(kTag.size()))});
    } else {
      return Status::InvalidArgument("unknown placeholder {" + std::string(name) +
                                     "}: use {measurement} or {tag:NAME}");
    }
    placeholder = true;
    text.remove_prefix(close + 1);
  }
  if (!placeholder) return Status::InvalidArgument("no {measurement} or {tag:NAME}: every point would name one device");
  return Status::OK();
}

int64_t NanosPer(Precision precision) {
  switch (precision) {
    case Precision::kNanoseconds: return 1;
    case Precision::kMicroseconds: return 1'000;
    case Precision::kMilliseconds: return 1'000'000;
    case Precision::kSeconds: return 1'000'000'000;
    case Precision::kMinutes: return 60'000'000'000;
    case Precision::kHours: return 3'600'000'000'000;
  }
  return 1;
}

// The index of tag `name` in the point, or npos.
std::size_t TagIndex(const lineproto::Point& point, std::string_view name) {
  for (std::size_t i = 0; i < point.tags.size(); ++i) {
    if (point.tags[i].first == name) return i;
  }
  return std::string::npos;
}

// Everything a body's points are mapped and checked with.
struct Mapping {
  std::vector<Piece> pieces;
  Precision precision;
  ReadingChecks checks;
  std::string now_key;  // for points without a timestamp: one instant per body, as InfluxDB
};

bool Refuse(Rejection* rejection, RejectReason reason, std::string message) {
  *rejection = {reason, std::move(message), ""};
  return false;
}

// The reading of one parsed point, or false with *rejection set.
bool ToReading(const Mapping& m, const lineproto::Point& point, storage::Reading* reading, Rejection* rejection) {
  // The tags the template used, which are not attributes: a bit each for the first 64, beyond
  // them (a point that has so many) a vector.
  uint64_t used_mask = 0;
  std::vector<bool> used_more;
  const auto use = [&](std::size_t i) {
    if (i < 64) {
      used_mask |= uint64_t{1} << i;
      return;
    }
    if (used_more.empty()) used_more.resize(point.tags.size());
    used_more[i] = true;
  };
  const auto used = [&](std::size_t i) { return i < 64 ? (used_mask >> i & 1) != 0 : !used_more.empty() && used_more[i]; };
  for (const Piece& piece : m.pieces) {
    if (piece.kind == Piece::kText) {
      reading->device_id += piece.text;
    } else if (piece.kind == Piece::kMeasurement) {
      reading->device_id += point.measurement;
    } else if (std::size_t i = TagIndex(point, piece.text); i != std::string::npos) {
      reading->device_id += point.tags[i].second;
      use(i);
    } else {
      return Refuse(rejection, RejectReason::kMissingDeviceId, "no tag \"" + piece.text + "\" to name the device with");
    }
  }
  if (Status s = storage::ValidateDeviceId(reading->device_id); !s.ok()) {
    return Refuse(rejection, RejectReason::kInvalidDeviceId, s.message());
  }
  rejection->device_id = reading->device_id;

  // The timestamp as the messages of a refusal quote it, in a buffer: most points pass.
  char ts_buffer[24];
  std::string_view ts_text = "(none: the server's clock)";
  if (!point.timestamp) {
    reading->sort_key = m.now_key;
  } else {
    const auto [end, error] = std::to_chars(ts_buffer, ts_buffer + sizeof ts_buffer, *point.timestamp);
    ts_text = std::string_view(ts_buffer, static_cast<std::size_t>(end - ts_buffer));
    if (!EpochSortKey(*point.timestamp, m.precision, &reading->sort_key)) {
      return Refuse(rejection, RejectReason::kInvalidTimestamp,
                    "timestamp " + std::string(ts_text) + " is out of range at this precision");
    }
  }

  reading->attributes.reserve(point.fields.size() + point.tags.size());
  for (const lineproto::Field& field : point.fields) {
    storage::AttributeValue value;
    switch (field.type) {
      case lineproto::FieldType::kString: value = field.value; break;
      case lineproto::FieldType::kBoolean: value = field.value == "true"; break;
      default: {
        storage::Number number;
        if (Status s = storage::Number::Parse(field.value, &number); !s.ok()) {
          return Refuse(rejection, RejectReason::kInvalidAttribute, "field \"" + field.key + "\": " + s.message());
        }
        value = std::move(number);
      }
    }
    reading->attributes.push_back({field.key, std::move(value)});
  }
  for (std::size_t i = 0; i < point.tags.size(); ++i) {
    if (!used(i)) reading->attributes.push_back({point.tags[i].first, point.tags[i].second});
  }
  for (std::size_t i = 0; i < reading->attributes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (reading->attributes[i].name == reading->attributes[j].name) {
        return Refuse(rejection, RejectReason::kDuplicateKey,
                      "\"" + reading->attributes[i].name + "\" is more than one field or tag of the point");
      }
    }
  }
  return m.checks.Check(*reading, ts_text, rejection);
}

// Adds `reading` to the one already read for its device and instant: a host's measurements of
// one instant (cpu, mem, ...) arrive as separate lines and are one reading. A name both hold with
// different values refuses the later line; one with equal values (a shared tag) is kept once.
bool Merge(storage::Reading&& reading, storage::Reading* into, Rejection* rejection) {
  std::size_t kept = into->attributes.size();
  for (storage::Attribute& a : reading.attributes) {
    bool seen = false;
    for (std::size_t j = 0; j < kept; ++j) {
      if (into->attributes[j].name != a.name) continue;
      if (!(into->attributes[j].value == a.value)) {
        into->attributes.resize(kept);
        *rejection = {RejectReason::kDuplicateKey,
                      "\"" + a.name + "\" was given another value by an earlier line of the same device and time",
                      reading.device_id};
        return false;
      }
      seen = true;
    }
    if (!seen) into->attributes.push_back(std::move(a));
  }
  return true;
}

// The readings of a body by device and instant, so that a later line of the same ones merges
// into its reading: open addressing over their places in the body's readings, sized for every
// point of the body (at most half full), with no allocation per reading.
class ReadingsByKey {
 public:
  explicit ReadingsByKey(std::size_t points) : slots_(std::bit_ceil(2 * points + 1), kEmpty) {}

  // The place in `readings` of the reading of `r`'s device and instant; when there is none,
  // `next` (recorded as its place) and *added.
  std::size_t FindOrAdd(const std::vector<storage::Reading>& readings, const storage::Reading& r, std::size_t next,
                        bool* added) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = (std::hash<std::string_view>()(r.device_id) * 31 + std::hash<std::string_view>()(r.sort_key)) & mask;
    for (;; i = (i + 1) & mask) {
      if (slots_[i] == kEmpty) {
        slots_[i] = next;
        *added = true;
        return next;
      }
      const storage::Reading& other = readings[slots_[i]];
      if (other.device_id == r.device_id && other.sort_key == r.sort_key) {
        *added = false;
        return slots_[i];
      }
    }
  }

 private:
  static constexpr std::size_t kEmpty = static_cast<std::size_t>(-1);
  std::vector<std::size_t> slots_;
};

}  // namespace

bool EpochSortKey(int64_t value, Precision precision, std::string* sort_key) {
  int64_t nanos = 0;
  if (__builtin_mul_overflow(value, NanosPer(precision), &nanos)) return false;
  *sort_key = storage::SortKeyAt(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(nanos))));
  return true;
}

bool ParsePrecision(std::string_view text, Precision* precision) {
  if (text.empty() || text == "n" || text == "ns") {
    *precision = Precision::kNanoseconds;
  } else if (text == "u" || text == "us" || text == "\xC2\xB5") {
    *precision = Precision::kMicroseconds;
  } else if (text == "ms") {
    *precision = Precision::kMilliseconds;
  } else if (text == "s") {
    *precision = Precision::kSeconds;
  } else if (text == "m") {
    *precision = Precision::kMinutes;
  } else if (text == "h") {
    *precision = Precision::kHours;
  } else {
    return false;
  }
  return true;
}

Status ValidateDeviceTemplate(std::string_view device_template) {
  std::vector<Piece> pieces;
  return ParseTemplate(device_template, &pieces);
}

void ParseLineProtocol(const PayloadOptions& checks, const LineProtocolOptions& options, std::string_view body,
                       ParsedMessage* out) {
  out->readings.clear();
  out->rejections.clear();
  auto refuse_whole = [out](RejectReason reason, std::string message) {
    out->rejections.push_back({reason, std::move(message), ""});
  };
  if (body.size() > checks.max_payload_bytes) {
    return refuse_whole(RejectReason::kOversize, "body of " + std::to_string(body.size()) + " bytes exceeds " +
                                                     std::to_string(checks.max_payload_bytes));
  }
  Mapping m{{}, options.precision, ReadingChecks(checks),
            storage::SortKeyAt(checks.now())};
  if (Status s = ParseTemplate(options.device_template, &m.pieces); !s.ok()) {
    return refuse_whole(RejectReason::kMissingDeviceId, "device template: " + s.message());
  }
  std::size_t points = 0, number = 0;
  std::string_view line;
  for (lineproto::LineReader lines(body); lines.Next(&line, &number);) ++points;
  if (points == 0) return refuse_whole(RejectReason::kEmptyBatch, "the body holds no line of line protocol");
  if (points > checks.max_batch) {
    return refuse_whole(RejectReason::kBatchTooLarge, "body of " + std::to_string(points) + " points exceeds " +
                                                          std::to_string(checks.max_batch));
  }
  ReadingsByKey read(points);
  out->readings.reserve(points);
  lineproto::Point point;
  for (lineproto::LineReader lines(body); lines.Next(&line, &number);) {
    Rejection rejection;
    storage::Reading reading;
    bool ok = false;
    if (Status s = lineproto::ParsePoint(line, &point); !s.ok()) {
      rejection = {RejectReason::kMalformedLine, s.message(), ""};
    } else if (ToReading(m, point, &reading, &rejection)) {
      bool added = false;
      const std::size_t at = read.FindOrAdd(out->readings, reading, out->readings.size(), &added);
      ok = added || Merge(std::move(reading), &out->readings[at], &rejection);
      if (added) out->readings.push_back(std::move(reading));
    }
    if (!ok) {
      rejection.index = number;
      out->rejections.push_back(std::move(rejection));
    }
  }
}

}  // namespace readingsd::ingest
