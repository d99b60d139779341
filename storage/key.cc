#include "storage/key.h"

#include <chrono>
#include <sstream>

#include <date/date.h>

namespace readingsd::storage {
namespace {

bool IsDeviceIdByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The shape of a sort key, position by position: 'D' is a digit, anything else itself.
constexpr std::string_view kSortKeyShape = "DDDD-DD-DDTDD:DD:DD.DDDDDDDDDZ";
static_assert(kSortKeyShape.size() == kSortKeyLength);

bool MatchesShape(std::string_view text, std::string_view shape) {
  if (text.size() > shape.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (shape[i] == 'D' ? !IsDigit(text[i]) : text[i] != shape[i]) return false;
  }
  return true;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
    if (out.size() > 80) {
      out += "...";
      break;
    }
  }
  return out + "\"";
}

Status BadTimestamp(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("invalid timestamp " + Quote(text) + ": " + std::string(why));
}

}  // namespace

Status ValidateDeviceId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("device id is empty");
  if (id.size() > kMaxDeviceIdLength) {
    return Status::InvalidArgument("device id is longer than " + std::to_string(kMaxDeviceIdLength) +
                                   " bytes");
  }
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (!IsDeviceIdByte(id[i])) {
      return Status::InvalidArgument("device id " + Quote(id) + " has a byte outside [A-Za-z0-9._:-] at offset " +
                                     std::to_string(i));
    }
  }
  return Status::OK();
}

Status NormalizeTimestamp(std::string_view text, std::string* sort_key) {
  // The fixed part: YYYY-MM-DDTHH:MM:SS, checked by shape first so date::parse never accepts a
  // short field ("2026-6-3") that would still normalise but is not ISO-8601.
  constexpr std::size_t kSecondsEnd = 19;
  if (text.size() < kSecondsEnd + 1 || !MatchesShape(text.substr(0, kSecondsEnd), kSortKeyShape)) {
    return BadTimestamp(text, "expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)");
  }
  std::size_t pos = kSecondsEnd;
  std::size_t fraction_digits = 0;
  if (text[pos] == '.') {
    ++pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos, ++fraction_digits;
    if (fraction_digits == 0) return BadTimestamp(text, "'.' must be followed by fractional digits");
    if (fraction_digits > 9) {
      return BadTimestamp(text, "more than 9 fractional digits (finer than nanoseconds would be truncated)");
    }
  }
  std::string_view zone = text.substr(pos);
  std::chrono::minutes offset{0};
  if (zone != "Z") {
    bool shaped = (zone.size() == 6 && zone[3] == ':' && IsDigit(zone[4]) && IsDigit(zone[5])) || zone.size() == 3;
    if (!shaped || (zone[0] != '+' && zone[0] != '-') || !IsDigit(zone[1]) || !IsDigit(zone[2])) {
      return BadTimestamp(text, "expected a zone: Z, +hh:mm or -hh:mm");
    }
    int hours = (zone[1] - '0') * 10 + (zone[2] - '0');
    int minutes = zone.size() == 6 ? (zone[4] - '0') * 10 + (zone[5] - '0') : 0;
    if (hours > 23 || minutes > 59) return BadTimestamp(text, "zone offset out of range");
    offset = std::chrono::hours(hours) + std::chrono::minutes(minutes);
    if (zone[0] == '-') offset = -offset;
  }

  // Whole seconds go through date (int64 nanoseconds would overflow past year 2262); the
  // fraction is carried as digits, padded to nine, so it is never rounded.
  std::istringstream in{std::string(text.substr(0, kSecondsEnd))};
  date::local_seconds local;
  in >> date::parse("%Y-%m-%dT%H:%M:%S", local);
  if (in.fail() || in.peek() != std::char_traits<char>::eof()) {
    return BadTimestamp(text, "not a valid calendar date and time");
  }
  // date::parse takes second 60 (a leap second) and rolls it into the next minute; a sort key
  // cannot hold it, so refuse rather than silently move the reading.
  if (text.substr(17, 2) > "59") return BadTimestamp(text, "second 60 (leap second) is not supported");

  date::sys_seconds utc{local.time_since_epoch() - offset};
  date::year_month_day utc_ymd{date::floor<date::days>(utc)};
  if (utc_ymd.year() < date::year{0} || utc_ymd.year() > date::year{9999}) {
    return BadTimestamp(text, "the UTC instant is outside years 0000-9999");
  }
  std::string fraction(text.substr(kSecondsEnd + 1, fraction_digits));
  fraction.resize(9, '0');
  *sort_key = date::format("%Y-%m-%dT%H:%M:%S.", utc) + fraction + "Z";
  if (sort_key->size() != kSortKeyLength) return BadTimestamp(text, "cannot be represented as a sort key");
  return Status::OK();
}

Status ValidateSortKeyPrefix(std::string_view prefix) {
  if (!MatchesShape(prefix, kSortKeyShape)) {
    return Status::InvalidArgument("begins_with prefix " + Quote(prefix) +
                                   " cannot begin a sort key of the form YYYY-MM-DDTHH:MM:SS.fffffffffZ (UTC)");
  }
  return Status::OK();
}

std::string PartitionKey(std::string_view device_id) {
  std::string key(kPartitionPrefix);
  key += device_id;
  return key;
}

std::string EncodeKey(std::string_view device_id, std::string_view sort_key) {
  std::string key = PartitionKey(device_id);
  key += kSeparator;
  key += sort_key;
  return key;
}

bool DecodeKey(std::string_view key, std::string_view* device_id, std::string_view* sort_key) {
  if (!key.starts_with(kPartitionPrefix)) return false;
  key.remove_prefix(kPartitionPrefix.size());
  auto sep = key.find(kSeparator);
  if (sep == std::string_view::npos) return false;
  *device_id = key.substr(0, sep);
  *sort_key = key.substr(sep + 1);
  return true;
}

}  // namespace readingsd::storage
