#include "storage/key.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <date/date.h>

#include "storage/number.h"

namespace readingsd::storage {
namespace {

// [A-Za-z0-9._:-], as a table: every index entry a query reads has its device id checked.
constexpr std::array<bool, 256> kDeviceIdByte = [] {
  std::array<bool, 256> ok{};
  for (int c = 0; c < 256; ++c) {
    ok[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
            c == ':' || c == '-';
  }
  return ok;
}();

bool IsDeviceIdByte(char c) { return kDeviceIdByte[static_cast<unsigned char>(c)]; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The shape of a sort key, position by position: 'D' is a digit, anything else itself.
constexpr std::string_view kSortKeyShape = "DDDD-DD-DDTDD:DD:DD.DDDDDDDDDZ";
static_assert(kSortKeyShape.size() == kSortKeyLength);

// The number written by `width` ASCII digits at `at` (the caller checked they are digits).
int Digits(std::string_view text, std::size_t at, std::size_t width) {
  int n = 0;
  for (std::size_t i = at; i < at + width; ++i) n = n * 10 + (text[i] - '0');
  return n;
}

void PutDigits(char* out, int width, int value) {
  for (int i = width - 1; i >= 0; --i, value /= 10) out[i] = static_cast<char>('0' + value % 10);
}

// "00", "01", … "99": two digits written at once.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (int i = 0; i < 100; ++i) {
    pairs[2 * i] = static_cast<char>('0' + i / 10);
    pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return pairs;
}();

void PutTwoDigits(char* out, int value) { std::memcpy(out, kDigitPairs.data() + 2 * value, 2); }

// The first and last whole seconds a sort key can hold.
const date::sys_seconds kFirstSortKeySecond = date::sys_days{date::year{0} / 1 / 1};
const date::sys_seconds kLastSortKeySecond =
    date::sys_days{date::year{9999} / 12 / 31} + std::chrono::hours(23) + std::chrono::minutes(59) +
    std::chrono::seconds(59);

// YYYY-MM-DDTHH:MM:SS of `utc` (within the two above) at `out`, 19 bytes, two digits at a time:
// aggregates write a sort key per bucket and a timestamp per bucket answered.
void PutDateTime(int64_t utc, char* out) {
  const date::sys_days days = date::floor<date::days>(date::sys_seconds{std::chrono::seconds(utc)});
  const date::year_month_day ymd{days};
  const auto second_of_day = static_cast<int>(utc - int64_t{days.time_since_epoch().count()} * 86400);
  const int year = static_cast<int>(ymd.year());
  const auto month = static_cast<int>(static_cast<unsigned>(ymd.month()));
  const auto day = static_cast<int>(static_cast<unsigned>(ymd.day()));
  PutTwoDigits(out, year / 100);
  PutTwoDigits(out + 2, year % 100);
  out[4] = '-';
  PutTwoDigits(out + 5, month);
  out[7] = '-';
  PutTwoDigits(out + 8, day);
  out[10] = 'T';
  PutTwoDigits(out + 11, second_of_day / 3600);
  out[13] = ':';
  PutTwoDigits(out + 14, second_of_day / 60 % 60);
  out[16] = ':';
  PutTwoDigits(out + 17, second_of_day % 60);
}

// `utc` (within the two above) and up to nine fractional digits, padded with zeros.
void WriteSortKey(date::sys_seconds utc, std::string_view fraction, std::string* sort_key) {
  sort_key->resize(kSortKeyLength);
  char* out = sort_key->data();
  PutDateTime(utc.time_since_epoch().count(), out);
  out[19] = '.';
  std::copy(fraction.begin(), fraction.end(), out + 20);
  std::fill(out + 20 + fraction.size(), out + 29, '0');
  out[29] = 'Z';
}

// The whole seconds of a sort key as NormalizeTimestamp writes it (the fraction aside).
date::sys_seconds WholeSeconds(std::string_view sort_key) {
  const date::year_month_day ymd{date::year{Digits(sort_key, 0, 4)},
                                 date::month(static_cast<unsigned>(Digits(sort_key, 5, 2))),
                                 date::day(static_cast<unsigned>(Digits(sort_key, 8, 2)))};
  return date::sys_days{ymd} + std::chrono::hours(Digits(sort_key, 11, 2)) +
         std::chrono::minutes(Digits(sort_key, 14, 2)) + std::chrono::seconds(Digits(sort_key, 17, 2));
}

// `utc` and a fraction of `nanos` nanoseconds (0..999999999), all nine digits written.
void WriteSortKeyNanos(date::sys_seconds utc, int nanos, std::string* sort_key) {
  char fraction[9];
  PutDigits(fraction, 9, nanos);
  WriteSortKey(utc, {fraction, 9}, sort_key);
}

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

constexpr std::string_view kTimestampForm =
    "expected YYYY-MM-DDTHH:MM:SS[.fraction] and a zone: Z, +hh:mm, -hh:mm, +hh or -hh";
constexpr std::string_view kBoundForms =
    "expected YYYY-MM-DD, YYYY-MM-DDTHH or YYYY-MM-DDTHH:MM (UTC unless a zone follows), or "
    "YYYY-MM-DDTHH:MM:SS[.fraction] and a zone: Z, +hh:mm, -hh:mm, +hh or -hh";

// NormalizeTimestamp's work on `text`. Messages quote `shown`, what was typed, and say
// `expected` when the text does not have a timestamp's shape.
Status Normalize(std::string_view text, std::string_view shown, std::string_view expected, std::string* sort_key) {
  // The fixed part: YYYY-MM-DDTHH:MM:SS, checked by shape first, so a short field ("2026-6-3")
  // that would still normalise but is not ISO-8601 is refused.
  constexpr std::size_t kSecondsEnd = 19;
  if (text.size() < kSecondsEnd + 1 || !MatchesShape(text.substr(0, kSecondsEnd), kSortKeyShape)) {
    return BadTimestamp(shown, expected);
  }
  std::size_t pos = kSecondsEnd;
  std::size_t fraction_digits = 0;
  if (text[pos] == '.') {
    ++pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos, ++fraction_digits;
    if (fraction_digits == 0) return BadTimestamp(shown, "'.' must be followed by fractional digits");
    if (fraction_digits > 9) {
      return BadTimestamp(shown, "more than 9 fractional digits (finer than nanoseconds would be truncated)");
    }
  }
  std::string_view zone = text.substr(pos);
  std::chrono::minutes offset{0};
  if (zone != "Z") {
    bool shaped = (zone.size() == 6 && zone[3] == ':' && IsDigit(zone[4]) && IsDigit(zone[5])) || zone.size() == 3;
    if (!shaped || (zone[0] != '+' && zone[0] != '-') || !IsDigit(zone[1]) || !IsDigit(zone[2])) {
      return BadTimestamp(shown, "expected a zone: Z, +hh:mm, -hh:mm, +hh or -hh");
    }
    int hours = (zone[1] - '0') * 10 + (zone[2] - '0');
    int minutes = zone.size() == 6 ? (zone[4] - '0') * 10 + (zone[5] - '0') : 0;
    if (hours > 23 || minutes > 59) return BadTimestamp(shown, "zone offset out of range");
    offset = std::chrono::hours(hours) + std::chrono::minutes(minutes);
    if (zone[0] == '-') offset = -offset;
  }

  // The fields are fixed-width digits (checked above); date's civil calendar validates the day
  // and does the arithmetic. Whole seconds only: int64 nanoseconds would overflow past 2262, so
  // the fraction is carried as its digits, padded to nine, and never rounded. No streams: this
  // runs once per reading, and the profile of ingest showed iostream-based parse/format on top.
  int year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  int hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  date::year_month_day ymd{date::year{year}, date::month(static_cast<unsigned>(month)),
                           date::day(static_cast<unsigned>(day))};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) {
    return BadTimestamp(shown, "not a valid calendar date and time");
  }
  // A sort key cannot hold second 60, and rolling it into the next minute would move the reading.
  if (second == 60) return BadTimestamp(shown, "second 60 (leap second) is not supported");

  date::sys_seconds utc = date::sys_days{ymd} + std::chrono::hours(hour) + std::chrono::minutes(minute) +
                          std::chrono::seconds(second) - offset;
  if (utc < kFirstSortKeySecond || utc > kLastSortKeySecond) {
    return BadTimestamp(shown, "the UTC instant is outside years 0000-9999");
  }
  WriteSortKey(utc, text.substr(kSecondsEnd + 1, fraction_digits), sort_key);
  return Status::OK();
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
  return Normalize(text, text, kTimestampForm, sort_key);
}

Status NormalizeBound(std::string_view text, std::string* sort_key) {
  // A shortened bound ends after the day, the hour or the minute, where a full timestamp would
  // go on with 'T' or ':'; it is completed with zeros (and Z when no zone follows) and parsed
  // as a timestamp.
  constexpr std::string_view kMidnight = "T00:00:00";
  for (std::size_t end : {std::size_t{10}, std::size_t{13}, std::size_t{16}}) {
    if (text.size() < end || !MatchesShape(text.substr(0, end), kSortKeyShape)) break;
    if (text.size() > end && text[end] == kSortKeyShape[end]) continue;
    std::string full(text.substr(0, end));
    full += kMidnight.substr(end - 10);
    full += text.size() > end ? text.substr(end) : "Z";
    return Normalize(full, text, kBoundForms, sort_key);
  }
  return Normalize(text, text, kBoundForms, sort_key);
}

double SortKeySeconds(std::string_view sort_key) {
  return static_cast<double>(WholeSeconds(sort_key).time_since_epoch().count()) + Digits(sort_key, 20, 9) * 1e-9;
}

std::string SortKeyAtSeconds(double seconds) {
  const auto first = static_cast<double>(kFirstSortKeySecond.time_since_epoch().count());
  const auto last = static_cast<double>(kLastSortKeySecond.time_since_epoch().count());
  seconds = std::clamp(seconds, first, last);
  const double whole = std::floor(seconds);
  const int nanos = std::min(static_cast<int>((seconds - whole) * 1e9), 999'999'999);
  std::string sort_key;
  WriteSortKeyNanos(date::sys_seconds{std::chrono::seconds(static_cast<int64_t>(whole))}, nanos, &sort_key);
  return sort_key;
}

int64_t SortKeyWholeSeconds(std::string_view sort_key) {
  return WholeSeconds(sort_key).time_since_epoch().count();
}

bool SortKeyAtWholeSeconds(int64_t seconds, std::string* sort_key) {
  const date::sys_seconds utc{std::chrono::seconds(seconds)};
  if (utc < kFirstSortKeySecond || utc > kLastSortKeySecond) return false;
  WriteSortKey(utc, "", sort_key);  // a fraction of zeros
  return true;
}

int64_t SortKeyMillis(std::string_view sort_key) {
  return WholeSeconds(sort_key).time_since_epoch().count() * 1000 + Digits(sort_key, 20, 3);
}

std::string SortKeyAtMillis(int64_t ms, bool last) {
  // Floor division: millisecond -1 is in second -1.
  int64_t seconds = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const date::sys_seconds utc{std::chrono::seconds(seconds)};
  int nanos = static_cast<int>(millis) * 1'000'000 + (last ? 999'999 : 0);
  std::string sort_key;
  if (utc < kFirstSortKeySecond) {
    WriteSortKeyNanos(kFirstSortKeySecond, 0, &sort_key);
  } else if (utc > kLastSortKeySecond) {
    WriteSortKeyNanos(kLastSortKeySecond, 999'999'999, &sort_key);
  } else {
    WriteSortKeyNanos(utc, nanos, &sort_key);
  }
  return sort_key;
}

std::string WholeSecondsTimestamp(int64_t seconds) {
  std::string text;
  AppendWholeSecondsTimestamp(seconds, &text);
  return text;
}

void AppendWholeSecondsTimestamp(int64_t seconds, std::string* out) {
  const int64_t utc = std::clamp(seconds, kFirstSortKeySecond.time_since_epoch().count(),
                                 kLastSortKeySecond.time_since_epoch().count());
  char text[20];  // written here and appended: resizing `out` first would zero-fill it
  PutDateTime(utc, text);
  text[19] = 'Z';
  out->append(text, sizeof text);
}

std::string SortKeyAt(std::chrono::system_clock::time_point t) {
  // Whole seconds and nanoseconds apart: going back from seconds to nanoseconds would overflow
  // at the ends of system_clock's range.
  const int64_t since_epoch = std::chrono::nanoseconds(t.time_since_epoch()).count();
  int64_t seconds = since_epoch / 1'000'000'000;
  int64_t nanos = since_epoch % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --seconds;
  }
  std::string sort_key;
  WriteSortKeyNanos(date::sys_seconds{std::chrono::seconds(seconds)}, static_cast<int>(nanos), &sort_key);
  return sort_key;
}

bool AdjacentSortKey(std::string_view sort_key, int step, std::string* out) {
  // Both read before `out` is written: it may be the string `sort_key` views.
  date::sys_seconds whole = WholeSeconds(sort_key);
  int nanos = Digits(sort_key, 20, 9) + step;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    whole -= std::chrono::seconds(1);
  } else if (nanos >= 1'000'000'000) {
    nanos -= 1'000'000'000;
    whole += std::chrono::seconds(1);
  }
  if (whole < kFirstSortKeySecond || whole > kLastSortKeySecond) return false;
  WriteSortKeyNanos(whole, nanos, out);
  return true;
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
  std::string key;
  EncodeKey(device_id, sort_key, &key);
  return key;
}

void EncodeKey(std::string_view device_id, std::string_view sort_key, std::string* out) {
  out->clear();
  out->reserve(kPartitionPrefix.size() + device_id.size() + 1 + sort_key.size());
  out->append(kPartitionPrefix);
  out->append(device_id);
  out->push_back(kSeparator);
  out->append(sort_key);
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

std::string RegistryKey(std::string_view device_id) {
  std::string key(kRegistryPrefix);
  key += device_id;
  return key;
}

bool DecodeRegistryKey(std::string_view key, std::string_view* device_id) {
  if (!key.starts_with(kRegistryPrefix)) return false;
  *device_id = key.substr(kRegistryPrefix.size());
  return true;
}

int64_t FloorToMultiple(int64_t seconds, int64_t step) {
  int64_t q = seconds / step;
  if (seconds % step != 0 && seconds < 0) --q;
  return q * step;
}

Status ValidateRollupSeconds(int64_t seconds) {
  if (seconds == 0 || (seconds > 0 && seconds <= 86400 && 86400 % seconds == 0)) return Status::OK();
  return Status::InvalidArgument("rollup_seconds: must be 0 (off) or divide a day (86400), e.g. 60, got " +
                                 std::to_string(seconds));
}

std::string RollupKey(std::string_view device_id, std::string_view granule) {
  std::string key(kRollupPrefix);
  key.append(device_id).push_back(kSeparator);
  key.append(granule);
  return key;
}

bool DecodeRollupKey(std::string_view key, std::string_view* device_id, std::string_view* granule) {
  if (!key.starts_with(kRollupPrefix)) return false;
  key.remove_prefix(kRollupPrefix.size());
  const auto sep = key.find(kSeparator);
  if (sep == std::string_view::npos) return false;
  *device_id = key.substr(0, sep);
  *granule = key.substr(sep + 1);
  return granule->empty() || granule->size() == kSortKeyLength;
}

namespace {

constexpr char kNegativeTag = '\x02';
constexpr char kZeroTag = '\x03';
constexpr char kPositiveTag = '\x04';
constexpr char kStringTag = '\x06';
constexpr char kDigitsEnd = '\x01';  // below every digit pair (2..101)
constexpr int kExponentBias = 130;

// A nonzero canonical number's significant digits (no trailing zeros) and the power of ten of
// the first.
void SignificantDigits(std::string_view magnitude, std::string* digits, int* exponent) {
  const std::size_t point = magnitude.find('.');
  std::string_view whole = magnitude.substr(0, point);
  std::string_view fraction = point == std::string_view::npos ? std::string_view() : magnitude.substr(point + 1);
  if (whole != "0") {
    *exponent = static_cast<int>(whole.size()) - 1;
    digits->assign(whole).append(fraction);
  } else {
    const std::size_t zeros = fraction.find_first_not_of('0');
    *exponent = -static_cast<int>(zeros) - 1;
    digits->assign(fraction.substr(zeros));
  }
  digits->erase(digits->find_last_not_of('0') + 1);
}

}  // namespace

void AppendIndexValue(const IndexValue& v, std::string* out) {
  if (!v.is_number) {
    out->push_back(kStringTag);
    for (char c : v.text) {
      out->push_back(c);
      if (c == '\0') out->push_back('\xff');
    }
    out->push_back('\0');
    out->push_back('\x01');
    return;
  }
  if (v.text == "0") {
    out->push_back(kZeroTag);
    return;
  }
  const bool negative = v.text.front() == '-';
  std::string digits;
  int exponent = 0;
  SignificantDigits(std::string_view(v.text).substr(negative ? 1 : 0), &digits, &exponent);
  const auto flip = [negative](int byte) { return static_cast<char>(negative ? 0xff - byte : byte); };
  out->push_back(negative ? kNegativeTag : kPositiveTag);
  out->push_back(flip(exponent + kExponentBias));
  for (std::size_t i = 0; i < digits.size(); i += 2) {
    const int a = digits[i] - '0';
    const int b = i + 1 < digits.size() ? digits[i + 1] - '0' : 0;
    out->push_back(flip(2 + 10 * a + b));
  }
  out->push_back(flip(kDigitsEnd));
}

bool ReadIndexValue(std::string_view* in, IndexValue* v) {
  if (in->empty()) return false;
  const char tag = in->front();
  if (tag == kStringTag) {
    std::string text;
    for (std::size_t i = 1; i + 1 < in->size(); ++i) {
      if ((*in)[i] != '\0') {
        if (v) text.push_back((*in)[i]);
      } else if ((*in)[i + 1] == '\xff') {
        if (v) text.push_back('\0');
        ++i;
      } else if ((*in)[i + 1] == '\x01') {
        in->remove_prefix(i + 2);
        if (v) *v = {false, std::move(text)};
        return true;
      } else {
        return false;
      }
    }
    return false;
  }
  if (tag == kZeroTag) {
    in->remove_prefix(1);
    if (v) *v = {true, "0"};
    return true;
  }
  if (tag != kPositiveTag && tag != kNegativeTag) return false;
  const bool negative = tag == kNegativeTag;
  const auto unflip = [negative](char c) {
    const int byte = static_cast<unsigned char>(c);
    return negative ? 0xff - byte : byte;
  };
  // The digit pair (0..99) the byte at i holds; out of range for a byte that holds none.
  const auto pair_at = [&](std::size_t i) { return unflip((*in)[i]) - 2; };
  if (in->size() < 3) return false;
  std::size_t end = 2;  // of the digit pairs, at kDigitsEnd
  for (; end < in->size() && pair_at(end) != kDigitsEnd - 2; ++end) {
    if (pair_at(end) < 0 || pair_at(end) > 99) return false;
  }
  if (end == in->size()) return false;
  // Only the canonical encoding reads back: some digits, no leading zero, no trailing zero but
  // the pad of an odd last digit.
  if (end == 2 || pair_at(2) < 10 || pair_at(end - 1) == 0) return false;
  if (!v) {
    in->remove_prefix(end + 1);
    return true;
  }
  const int exponent = unflip((*in)[1]) - kExponentBias;
  std::string digits;
  for (std::size_t i = 2; i < end; ++i) {
    digits.push_back(static_cast<char>('0' + pair_at(i) / 10));
    digits.push_back(static_cast<char>('0' + pair_at(i) % 10));
  }
  if (digits.back() == '0') digits.pop_back();  // the pad of an odd last digit
  std::string canonical;
  if (!ParseNumber((negative ? "-0." : "0.") + digits + "e" + std::to_string(exponent + 1), &canonical).ok()) {
    return false;
  }
  in->remove_prefix(end + 1);
  *v = {true, std::move(canonical)};
  return true;
}

std::string IndexPrefix(std::string_view index_name) {
  std::string key(kIndexPrefix);
  key += index_name;
  key += kSeparator;
  return key;
}

std::string IndexPartitionPrefix(std::string_view index_name, std::string_view partition) {
  std::string key = IndexPrefix(index_name);
  AppendIndexValue({false, std::string(partition)}, &key);
  return key;
}

std::string EncodeIndexKey(std::string_view index_name, std::string_view partition, const IndexValue& sort,
                           std::string_view device_id, std::string_view sort_key) {
  std::string key = IndexPartitionPrefix(index_name, partition);
  AppendIndexValue(sort, &key);
  key += device_id;
  key += kSeparator;
  key += sort_key;
  return key;
}

bool DecodeIndexKey(std::string_view key, IndexKey* out) {
  if (!key.starts_with(kIndexPrefix)) return false;
  key.remove_prefix(kIndexPrefix.size());
  const std::size_t name_end = key.find(kSeparator);
  if (name_end == std::string_view::npos) return false;
  out->index_name = key.substr(0, name_end);
  key.remove_prefix(name_end + 1);
  IndexValue partition;
  if (!ReadIndexValue(&key, &partition) || partition.is_number || !ReadIndexValue(&key, &out->sort)) return false;
  out->partition = std::move(partition.text);
  const std::size_t sep = key.find(kSeparator);
  if (sep == std::string_view::npos) return false;
  out->device_id = key.substr(0, sep);
  out->sort_key = key.substr(sep + 1);
  return true;
}

}  // namespace readingsd::storage
