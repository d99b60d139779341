#include "storage/key.h"
#include "storage/number.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include <date/date.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace readingsd::storage {
namespace {

std::string Normalize(std::string_view ts) {
  std::string out;
  Status s = NormalizeTimestamp(ts, &out);
  EXPECT_TRUE(s.ok()) << ts << ": " << s.ToString();
  return out;
}

TEST(NormalizeTimestamp, FixedWidthUtcNanoseconds) {
  EXPECT_EQ(Normalize("2026-06-23T08:00:00Z"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Normalize("2026-06-23T08:00:00.5Z"), "2026-06-23T08:00:00.500000000Z");
  EXPECT_EQ(Normalize("2026-06-23T08:00:00.123456789Z"), "2026-06-23T08:00:00.123456789Z");
  EXPECT_EQ(Normalize("2026-06-23T10:00:00+02:00"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Normalize("2026-06-23T03:30:00-04:30"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Normalize("2026-06-23T10:00:00+02"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Normalize("2026-01-01T00:30:00+01:00"), "2025-12-31T23:30:00.000000000Z");
  EXPECT_EQ(Normalize("2024-02-29T00:00:00Z"), "2024-02-29T00:00:00.000000000Z");
  EXPECT_EQ(Normalize("0000-01-01T00:00:00Z"), "0000-01-01T00:00:00.000000000Z");
  EXPECT_EQ(Normalize("9999-12-31T23:59:59.999999999Z"), "9999-12-31T23:59:59.999999999Z");
  EXPECT_EQ(Normalize("2026-06-23T08:00:00.000000000Z").size(), kSortKeyLength);
}

TEST(NormalizeTimestamp, RejectsEverythingElseWithAReason) {
  for (const char* bad : {"", "2026-06-23", "2026-06-23T08:00:00", "2026-06-23 08:00:00Z", "2026-06-23t08:00:00Z",
                          "2026-06-23T08:00:00z", "2026-6-23T08:00:00Z", "2026-06-23T8:00:00Z",
                          "2026-06-23T08:00:00.Z", "2026-06-23T08:00:00.1234567891Z", "2026-02-30T00:00:00Z",
                          "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-06-23T24:00:00Z",
                          "2026-06-23T08:60:00Z", "2026-06-23T23:59:60Z", "2026-06-23T08:00:00+2:00",
                          "2026-06-23T08:00:00+24:00", "2026-06-23T08:00:00+02:60", "2026-06-23T08:00:00+0200",
                          "2026-06-23T08:00:00Z ", " 2026-06-23T08:00:00Z", "1782201600",
                          "0000-01-01T00:00:00+01:00", "9999-12-31T23:00:00-01:00", "2026-06-23T08:00:00ZZ",
                          "+12026-06-23T08:00:00Z"}) {
    std::string out;
    Status s = NormalizeTimestamp(bad, &out);
    EXPECT_TRUE(s.IsInvalidArgument()) << "accepted: \"" << bad << "\" as " << out;
    EXPECT_NE(s.message().find("invalid timestamp"), std::string::npos) << s.message();
  }
}

TEST(NormalizeTimestamp, ErrorsNameEveryAcceptedForm) {
  std::string out;
  EXPECT_NE(NormalizeTimestamp("2026-06-23", &out).message().find("Z, +hh:mm, -hh:mm, +hh or -hh"), std::string::npos);
  EXPECT_NE(NormalizeTimestamp("2026-06-23T08:00:00+2", &out).message().find("Z, +hh:mm, -hh:mm, +hh or -hh"),
            std::string::npos);
}

std::string Bound(std::string_view text) {
  std::string out;
  Status s = NormalizeBound(text, &out);
  EXPECT_TRUE(s.ok()) << text << ": " << s.ToString();
  return out;
}

TEST(NormalizeBound, ADateOrAShortenedTimeIsItsFirstInstant) {
  EXPECT_EQ(Bound("2026-06-23"), "2026-06-23T00:00:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23Z"), "2026-06-23T00:00:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23T08"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23T08Z"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23T08:30"), "2026-06-23T08:30:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23T08:30Z"), "2026-06-23T08:30:00.000000000Z");
  // A zone after a shortened bound works as after a timestamp.
  EXPECT_EQ(Bound("2026-06-23T10+02"), "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23T10:30+02:00"), "2026-06-23T08:30:00.000000000Z");
  EXPECT_EQ(Bound("2026-06-23-01:00"), "2026-06-23T01:00:00.000000000Z");
  // Full timestamps as NormalizeTimestamp reads them.
  EXPECT_EQ(Bound("2026-06-23T08:00:00.5+01:00"), "2026-06-23T07:00:00.500000000Z");
  EXPECT_EQ(Bound("0000-01-01"), "0000-01-01T00:00:00.000000000Z");
  EXPECT_EQ(Bound("9999-12-31T23:59"), "9999-12-31T23:59:00.000000000Z");
}

TEST(NormalizeBound, RejectsWhatIsNeitherQuotingTheInput) {
  for (const char* bad : {"", "yesterday", "2026", "2026-06", "2026-6-23", "2026-06-23T", "2026-06-23T8",
                          "2026-06-23T08:", "2026-06-23T08:3", "2026-06-23T08:30:", "2026-06-23T08:30:00",
                          "2026-02-30", "2026-06-23T24", "2026-06-23T08:60", "2026-06-23 08", "2026-06-23t08",
                          "2026-06-23z", "2026-06-23T08+2", "2026-06-23T08:30+24:00", "0000-01-01+01",
                          "1782201600"}) {
    std::string out;
    Status s = NormalizeBound(bad, &out);
    EXPECT_TRUE(s.IsInvalidArgument()) << "accepted: \"" << bad << "\" as " << out;
    EXPECT_EQ(s.message().rfind("invalid timestamp \"" + std::string(bad) + "\"", 0), 0u) << s.message();
  }
  std::string out;
  EXPECT_NE(NormalizeBound("yesterday", &out).message().find("YYYY-MM-DD, YYYY-MM-DDTHH or YYYY-MM-DDTHH:MM"),
            std::string::npos);
  // A full timestamp still needs its zone.
  EXPECT_NE(NormalizeBound("2026-06-23T08:30:00", &out).message().find("[.fraction] and a zone"), std::string::npos);
}

// Property: for random instants written in random zones and precisions, byte order of the
// sort keys equals time order, and normalising is idempotent.
TEST(NormalizeTimestamp, ByteOrderIsTimeOrder) {
  std::mt19937_64 rng(42);
  using ns = std::chrono::nanoseconds;
  // 1970..2100 in nanoseconds.
  std::uniform_int_distribution<int64_t> instant(0, int64_t{4102444800} * 1'000'000'000);
  std::uniform_int_distribution<int> offset_minutes(-23 * 60, 23 * 60), digits(0, 9);
  struct Sample { int64_t t; std::string key; };
  std::vector<Sample> samples;
  for (int i = 0; i < 5000; ++i) {
    int d = digits(rng);
    int64_t unit = 1;
    for (int k = d; k < 9; ++k) unit *= 10;
    int64_t t = instant(rng) / unit * unit;  // representable with d fraction digits
    int off = offset_minutes(rng);
    int64_t local = t + int64_t{off} * 60'000'000'000;
    auto tp = date::sys_time<ns>(ns(local));  // local wall clock, formatted as if UTC
    std::string text = date::format("%Y-%m-%dT%H:%M:%S", date::floor<std::chrono::seconds>(tp));
    if (d > 0) {
      char frac[16];
      std::snprintf(frac, sizeof frac, ".%09lld", static_cast<long long>(local % 1'000'000'000));
      text += std::string(frac, 1 + d);
    }
    char zone[32];
    std::snprintf(zone, sizeof zone, "%c%02d:%02d", off < 0 ? '-' : '+', std::abs(off) / 60, std::abs(off) % 60);
    text += (off == 0 && i % 2) ? std::string("Z") : std::string(zone);
    std::string key = Normalize(text);
    EXPECT_EQ(Normalize(key), key);
    // Exactly the UTC instant, as date formats it.
    auto utc = date::sys_time<ns>(ns(t));
    char want_fraction[16];
    std::snprintf(want_fraction, sizeof want_fraction, ".%09lldZ", static_cast<long long>(t % 1'000'000'000));
    ASSERT_EQ(key, date::format("%Y-%m-%dT%H:%M:%S", date::floor<std::chrono::seconds>(utc)) + want_fraction) << text;
    samples.push_back({t, key});
  }
  std::sort(samples.begin(), samples.end(), [](auto& a, auto& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < samples.size(); ++i) {
    ASSERT_LE(samples[i - 1].t, samples[i].t) << samples[i - 1].key << " vs " << samples[i].key;
  }
}

// Seconds since 1970 to about a microsecond, both ways, across the whole range a sort key holds.
TEST(SortKeySeconds, AreTheInstantAndBack) {
  EXPECT_EQ(SortKeySeconds("1970-01-01T00:00:00.000000000Z"), 0.0);
  EXPECT_EQ(SortKeySeconds("1970-01-01T00:00:01.500000000Z"), 1.5);
  EXPECT_EQ(SortKeySeconds("1969-12-31T23:59:59.000000000Z"), -1.0);
  EXPECT_EQ(SortKeyAtSeconds(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(SortKeyAtSeconds(-0.5), "1969-12-31T23:59:59.500000000Z");
  EXPECT_EQ(SortKeyAtSeconds(86400 * 365.0 + 1.25), "1971-01-01T00:00:01.250000000Z");
  for (const char* key : {"2026-06-23T08:05:00.123456000Z", "0000-01-01T00:00:00.000000000Z",
                          "9999-12-31T23:59:59.000000000Z", "2262-04-11T23:47:17.000000000Z"}) {
    EXPECT_EQ(SortKeyAtSeconds(SortKeySeconds(key)).substr(0, 26), std::string(key).substr(0, 26)) << key;
  }
  const double earlier = SortKeySeconds("2026-06-23T08:05:00.000001000Z");
  EXPECT_LT(earlier, SortKeySeconds("2026-06-23T08:05:00.000003000Z"));
  // Beyond years 0000-9999 the nearest sort key, never a malformed one.
  EXPECT_EQ(SortKeyAtSeconds(1e15), "9999-12-31T23:59:59.000000000Z");
  EXPECT_EQ(SortKeyAtSeconds(-1e15), "0000-01-01T00:00:00.000000000Z");
}

// Whole seconds exactly, both ways, and the short form of a bucket start (clamped, never malformed).
TEST(SortKeyWholeSeconds, AreExactAndBack) {
  EXPECT_EQ(SortKeyWholeSeconds("1970-01-01T00:00:00.999999999Z"), 0);
  EXPECT_EQ(SortKeyWholeSeconds("1969-12-31T23:59:59.500000000Z"), -1);
  EXPECT_EQ(SortKeyWholeSeconds("9999-12-31T23:59:59.999999999Z"), 253402300799);
  std::string key;
  ASSERT_TRUE(SortKeyAtWholeSeconds(1782201600, &key));
  EXPECT_EQ(key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(SortKeyWholeSeconds(key), 1782201600);
  EXPECT_FALSE(SortKeyAtWholeSeconds(253402300800, &key));
  EXPECT_FALSE(SortKeyAtWholeSeconds(-62167219201, &key));
  EXPECT_EQ(WholeSecondsTimestamp(1782201600), "2026-06-23T08:00:00Z");
  EXPECT_EQ(WholeSecondsTimestamp(-62167219200 - 86400), "0000-01-01T00:00:00Z");
  EXPECT_EQ(WholeSecondsTimestamp(1'000'000'000'000), "9999-12-31T23:59:59Z");
}

// The civil date and time of a second, as date.h computes it: what the key writers' integer
// arithmetic must agree with.
std::string ReferenceTimestamp(int64_t seconds) {
  const date::sys_seconds utc{std::chrono::seconds(seconds)};
  const auto day = date::floor<date::days>(utc);
  const date::year_month_day ymd{day};
  const date::hh_mm_ss<std::chrono::seconds> tod{utc - day};
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
                static_cast<int>(tod.seconds().count()));
  return text;
}

// Across leap days, centuries, 1970 and before it, and the first and last second of the range.
TEST(WholeSecondsTimestamp, IsTheCivilDateAndTimeAcrossTheRange) {
  const std::pair<int64_t, const char*> known[] = {
      {-62167219200, "0000-01-01T00:00:00Z"},  // year 0 is a leap year
      {-62167219200 + 59 * 86400, "0000-02-29T00:00:00Z"},
      {-62167219200 + 60 * 86400 - 1, "0000-02-29T23:59:59Z"},
      {-62167219200 + 366 * 86400, "0001-01-01T00:00:00Z"},
      {-2203891200 - 86400, "1900-02-28T00:00:00Z"},
      {-2203891200, "1900-03-01T00:00:00Z"},  // 1900 is not a leap year
      {-1, "1969-12-31T23:59:59Z"},
      {-86400, "1969-12-31T00:00:00Z"},
      {-86401, "1969-12-30T23:59:59Z"},
      {0, "1970-01-01T00:00:00Z"},
      {951782400, "2000-02-29T00:00:00Z"},  // 2000 is
      {951868799, "2000-02-29T23:59:59Z"},
      {951868800, "2000-03-01T00:00:00Z"},
      {1782172805, "2026-06-23T00:00:05Z"},
      {4107542400, "2100-03-01T00:00:00Z"},
      {253402300799, "9999-12-31T23:59:59Z"},
  };
  for (const auto& [seconds, text] : known) {
    EXPECT_EQ(WholeSecondsTimestamp(seconds), text) << seconds;
    EXPECT_EQ(ReferenceTimestamp(seconds), text) << seconds;
    std::string key;
    ASSERT_TRUE(SortKeyAtWholeSeconds(seconds, &key)) << seconds;
    EXPECT_EQ(key, std::string(text).substr(0, 19) + ".000000000Z");
    EXPECT_EQ(SortKeyWholeSeconds(key), seconds);
  }
  std::mt19937_64 rng(20261207);
  std::uniform_int_distribution<int64_t> any(-62167219200, 253402300799);
  for (int i = 0; i < 20000; ++i) {
    const int64_t seconds = any(rng);
    ASSERT_EQ(WholeSecondsTimestamp(seconds), ReferenceTimestamp(seconds)) << seconds;
    std::string key;
    ASSERT_TRUE(SortKeyAtWholeSeconds(seconds, &key));
    ASSERT_EQ(SortKeyWholeSeconds(key), seconds) << key;
  }
  // Appended after what the string holds, which stays.
  std::string out = "[\"";
  AppendWholeSecondsTimestamp(-1, &out);
  AppendWholeSecondsTimestamp(int64_t{1} << 62, &out);
  EXPECT_EQ(out, "[\"1969-12-31T23:59:59Z9999-12-31T23:59:59Z");
  // A sort key written over a longer string is the sort key alone.
  std::string key(64, 'x');
  ASSERT_TRUE(SortKeyAtWholeSeconds(0, &key));
  EXPECT_EQ(key, "1970-01-01T00:00:00.000000000Z");
}

// Milliseconds exactly, both ways; a bound for any int64, however far outside years 0000-9999.
TEST(SortKeyMillis, AreExactAndBack) {
  EXPECT_EQ(SortKeyMillis("2026-06-23T08:00:00.123999999Z"), 1782201600123);
  EXPECT_EQ(SortKeyMillis("1969-12-31T23:59:59.999500000Z"), -1);
  EXPECT_EQ(SortKeyAtMillis(1782201600123, false), "2026-06-23T08:00:00.123000000Z");
  EXPECT_EQ(SortKeyAtMillis(1782201600123, true), "2026-06-23T08:00:00.123999999Z");
  EXPECT_EQ(SortKeyAtMillis(-1, false), "1969-12-31T23:59:59.999000000Z");
  EXPECT_EQ(SortKeyMillis(SortKeyAtMillis(-1, true)), -1);
  EXPECT_EQ(SortKeyAtMillis(INT64_MIN, false), "0000-01-01T00:00:00.000000000Z");
  EXPECT_EQ(SortKeyAtMillis(INT64_MAX, true), "9999-12-31T23:59:59.999999999Z");
  EXPECT_EQ(SortKeyAtMillis(INT64_MAX, false), "9999-12-31T23:59:59.999999999Z");
}

// One nanosecond either way, carrying across second, day, leap day and year; false past the
// first and last sort key.
TEST(AdjacentSortKey, StepsOneNanosecondWithCarries) {
  auto next = [](std::string_view key, int step) {
    std::string out;
    EXPECT_TRUE(AdjacentSortKey(key, step, &out)) << key;
    return out;
  };
  EXPECT_EQ(next("2026-06-23T08:05:00.123456789Z", 1), "2026-06-23T08:05:00.123456790Z");
  EXPECT_EQ(next("2026-06-23T08:05:00.123456789Z", -1), "2026-06-23T08:05:00.123456788Z");
  EXPECT_EQ(next("2026-06-23T08:05:00.999999999Z", 1), "2026-06-23T08:05:01.000000000Z");
  EXPECT_EQ(next("2026-06-23T08:05:01.000000000Z", -1), "2026-06-23T08:05:00.999999999Z");
  EXPECT_EQ(next("2026-06-23T23:59:59.999999999Z", 1), "2026-06-24T00:00:00.000000000Z");
  EXPECT_EQ(next("2024-02-28T23:59:59.999999999Z", 1), "2024-02-29T00:00:00.000000000Z");
  EXPECT_EQ(next("2024-03-01T00:00:00.000000000Z", -1), "2024-02-29T23:59:59.999999999Z");
  EXPECT_EQ(next("2025-12-31T23:59:59.999999999Z", 1), "2026-01-01T00:00:00.000000000Z");
  EXPECT_EQ(next("1970-01-01T00:00:00.000000000Z", -1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(next("0000-01-01T00:00:00.000000001Z", -1), "0000-01-01T00:00:00.000000000Z");
  EXPECT_EQ(next("9999-12-31T23:59:59.999999998Z", 1), "9999-12-31T23:59:59.999999999Z");

  std::string out = "unchanged";
  EXPECT_FALSE(AdjacentSortKey("0000-01-01T00:00:00.000000000Z", -1, &out));
  EXPECT_FALSE(AdjacentSortKey("9999-12-31T23:59:59.999999999Z", 1, &out));
  EXPECT_EQ(out, "unchanged");

  // In place, as the native API turns an exclusive bound inclusive.
  std::string key = "2026-06-23T08:05:00.999999999Z";
  ASSERT_TRUE(AdjacentSortKey(key, 1, &key));
  EXPECT_EQ(key, "2026-06-23T08:05:01.000000000Z");
}

TEST(SortKeyAt, IsTheInstantToTheNanosecond) {
  using std::chrono::system_clock;
  EXPECT_EQ(SortKeyAt(system_clock::time_point{}), "1970-01-01T00:00:00.000000000Z");
  const system_clock::time_point t = date::sys_days{date::year{2026} / 6 / 23} + std::chrono::hours(8) +
                                     std::chrono::seconds(5) + std::chrono::nanoseconds(123456789);
  EXPECT_EQ(SortKeyAt(t), "2026-06-23T08:00:05.123456789Z");
  EXPECT_EQ(SortKeyAt(system_clock::time_point{} - std::chrono::nanoseconds(1)), "1969-12-31T23:59:59.999999999Z");
  // The whole range of system_clock is sort keys, each the one NormalizeTimestamp writes.
  for (system_clock::time_point edge : {system_clock::time_point::min(), system_clock::time_point::max()}) {
    const std::string key = SortKeyAt(edge);
    std::string normalised;
    ASSERT_TRUE(NormalizeTimestamp(key, &normalised).ok()) << key;
    EXPECT_EQ(normalised, key);
  }
}

TEST(DeviceId, AllowedCharsetAndLength) {
  EXPECT_TRUE(ValidateDeviceId("a1b2").ok());
  EXPECT_TRUE(ValidateDeviceId("Sensor_01.roof:north-3").ok());
  EXPECT_TRUE(ValidateDeviceId(std::string(kMaxDeviceIdLength, 'x')).ok());
  EXPECT_FALSE(ValidateDeviceId("").ok());
  EXPECT_FALSE(ValidateDeviceId(std::string(kMaxDeviceIdLength + 1, 'x')).ok());
  for (std::string bad : std::vector<std::string>{"a#b", "a/b", "a b", "a+", "é", std::string("a\0b", 3), "a|b", "a\x7f"}) {
    Status s = ValidateDeviceId(bad);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
  }
}

TEST(Key, EncodeDecodeRoundTripAndPartitionsAreDisjoint) {
  std::string sk = Normalize("2026-06-23T08:00:00Z");
  std::string key = EncodeKey("a1", sk);
  EXPECT_EQ(key, std::string("DEV#a1\0", 7) + sk);
  std::string_view device, sort_key;
  ASSERT_TRUE(DecodeKey(key, &device, &sort_key));
  EXPECT_EQ(device, "a1");
  EXPECT_EQ(sort_key, sk);
  EXPECT_FALSE(DecodeKey("META#format", &device, &sort_key));
  EXPECT_EQ(PartitionKey("a1"), "DEV#a1");

  // Every key of partition a10 lies outside [DEV#a1\0, DEV#a1\0\x7f), whatever its sort key.
  std::string lo = EncodeKey("a1", ""), hi = EncodeKey("a1", std::string(1, kSortKeyEnd));
  for (const char* other : {"a10", "a1-x", "a1.", "a", "a0", "A1"}) {
    std::string k = EncodeKey(other, sk);
    EXPECT_FALSE(k >= lo && k < hi) << other;
  }
  EXPECT_TRUE(key >= lo && key < hi);
}

TEST(SortKeyPrefix, MustFitTheShape) {
  for (const char* ok : {"", "2", "2026", "2026-06-23", "2026-06-23T08", "2026-06-23T08:00:00.000000000Z"}) {
    EXPECT_TRUE(ValidateSortKeyPrefix(ok).ok()) << ok;
  }
  for (const char* bad : {"x", "2026/06", "2026-06-23 08", "2026-06-23T08:00:00+02:00", "2026-06-23T08:00:00.000000000Z0"}) {
    EXPECT_TRUE(ValidateSortKeyPrefix(bad).IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace readingsd::storage

namespace readingsd::storage {
namespace {

std::string EncodedNumber(std::string_view text) {
  IndexValue v{true, ""};
  EXPECT_TRUE(ParseNumber(text, &v.text).ok()) << text;
  std::string out;
  AppendIndexValue(v, &out);
  return out;
}

TEST(IndexKeyTest, NumbersSortNumericallyByBytes) {
  const std::vector<std::string> ascending = {
      "-9.9999999999999999999999999999999999999E125", "-1E100", "-123456789012345678901234567890", "-1000",
      "-999.5", "-10", "-9.99", "-1.05", "-1", "-0.5", "-1E-130", "0", "1E-130", "0.000001", "0.5", "1", "1.05",
      "9.99", "10", "10.5", "999.5", "1000", "123456789012345678901234567890", "1E100",
      "9.9999999999999999999999999999999999999E125"};
  for (std::size_t i = 0; i + 1 < ascending.size(); ++i) {
    EXPECT_LT(EncodedNumber(ascending[i]), EncodedNumber(ascending[i + 1])) << ascending[i] << " < " << ascending[i + 1];
  }
}

// Random numbers of every shape (sign, 1..38 digits, the whole exponent range) ordered by their
// encodings exactly as Number orders them, and each encoding read back to its number.
TEST(IndexKeyTest, PropertyRandomNumbersOrderAsNumberDoes) {
  std::mt19937_64 rng(20260623);
  auto random_number = [&rng]() {
    std::string text = rng() % 2 ? "-" : "";
    const int digits = 1 + static_cast<int>(rng() % 38);
    // Few distinct digits and exponents, so equal and near-equal numbers meet often.
    for (int i = 0; i < digits; ++i) text.push_back(static_cast<char>('0' + rng() % (i == 0 ? 9 : 3) + (i == 0)));
    const int exponent = -130 + static_cast<int>(rng() % 256) - (digits - 1);
    text += "e" + std::to_string(rng() % 4 == 0 ? exponent : exponent % 7);
    Number n;
    return Number::Parse(text, &n).ok() ? n : Number(0);
  };
  std::vector<Number> numbers;
  for (int i = 0; i < 2000; ++i) numbers.push_back(random_number());
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) {
    const Number& a = numbers[i];
    const Number& b = numbers[i + 1];
    const std::string ea = EncodedNumber(a.text), eb = EncodedNumber(b.text);
    EXPECT_EQ(ea <=> eb, a <=> b) << a.text << " vs " << b.text;
    std::string_view rest = ea;
    IndexValue back;
    ASSERT_TRUE(ReadIndexValue(&rest, &back)) << a.text;
    EXPECT_TRUE(rest.empty());
    EXPECT_EQ(back.text, a.text);
  }
  std::vector<Number> by_number = numbers, by_bytes = numbers;
  std::sort(by_number.begin(), by_number.end());
  std::sort(by_bytes.begin(), by_bytes.end(),
            [](const Number& a, const Number& b) { return EncodedNumber(a.text) < EncodedNumber(b.text); });
  EXPECT_EQ(by_number, by_bytes);
}

TEST(IndexKeyTest, StringsSortByUtf8BytesAndMayHoldNul) {
  const std::vector<std::string> ascending = {"", std::string("a\0", 2), std::string("a\0b", 3), "a", "ab", "alarm",
                                              "b", "\xc3\xa9t\xc3\xa9"};
  std::vector<std::string> encoded;
  for (const std::string& s : ascending) {
    std::string out;
    AppendIndexValue({false, s}, &out);
    encoded.push_back(out);
  }
  // Sorting the encodings gives the encodings of the sorted strings (std::string compares bytes).
  std::vector<std::string> sorted = ascending;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> sorted_encoded = encoded;
  std::sort(sorted_encoded.begin(), sorted_encoded.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    std::string out;
    AppendIndexValue({false, sorted[i]}, &out);
    EXPECT_EQ(out, sorted_encoded[i]) << i;
  }
}

// ReadIndexValue without a value to fill (what IndexQuery does for every entry) stops where
// reading it does, and refuses what reading refuses but a number out of range.
TEST(IndexKeyTest, PassingOverAValueStopsWhereReadingItDoes) {
  for (const IndexValue& v : std::vector<IndexValue>{{false, "ok"}, {false, std::string("a\0b", 3)}, {false, ""},
                                                     {true, "0"}, {true, "-12.5"}, {true, "7"}, {true, "0.0125"},
                                                     {true, "-123456789012345678901234567890123456.78"}}) {
    std::string encoded;
    AppendIndexValue(v, &encoded);
    const std::string followed = encoded + "dev-1";
    std::string_view read = followed, passed = followed;
    IndexValue back;
    ASSERT_TRUE(ReadIndexValue(&read, &back)) << v.text;
    EXPECT_EQ(back, v);
    ASSERT_TRUE(ReadIndexValue(&passed, nullptr)) << v.text;
    EXPECT_EQ(passed, "dev-1") << v.text;
    for (std::size_t cut = 0; cut < encoded.size(); ++cut) {  // no value ends early
      std::string_view part = std::string_view(encoded).substr(0, cut);
      EXPECT_FALSE(ReadIndexValue(&part, nullptr)) << v.text << " cut at " << cut;
    }
  }
  // A leading zero pair ("05"), a trailing zero pair ("50" then "00"), no digits: not canonical.
  for (const std::string& bad : {std::string("\x04\x82\x07\x01"), std::string("\x04\x82\x34\x02\x01"),
                                 std::string("\x04\x82\x01")}) {
    std::string_view read = bad, passed = bad;
    IndexValue back;
    EXPECT_FALSE(ReadIndexValue(&read, &back));
    EXPECT_FALSE(ReadIndexValue(&passed, nullptr));
  }
}

TEST(IndexKeyTest, KeysRoundTripAndAPartitionIsOnePrefix) {
  const std::string key = EncodeIndexKey("hot_by_hour", "2026-06-23T08#3", {true, "-12.5"}, "dev-1",
                                         "2026-06-23T08:00:00.000000000Z");
  EXPECT_TRUE(key.starts_with(IndexPartitionPrefix("hot_by_hour", "2026-06-23T08#3")));
  EXPECT_TRUE(key.starts_with(IndexPrefix("hot_by_hour")));
  EXPECT_FALSE(key.starts_with(IndexPartitionPrefix("hot_by_hour", "2026-06-23T08#")));
  IndexKey parts;
  ASSERT_TRUE(DecodeIndexKey(key, &parts));
  EXPECT_EQ(parts.index_name, "hot_by_hour");
  EXPECT_EQ(parts.partition, "2026-06-23T08#3");
  EXPECT_EQ(parts.sort, (IndexValue{true, "-12.5"}));
  EXPECT_EQ(parts.device_id, "dev-1");
  EXPECT_EQ(parts.sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_FALSE(DecodeIndexKey(EncodeKey("dev-1", "2026-06-23T08:00:00.000000000Z"), &parts));
  EXPECT_FALSE(DecodeIndexKey(key.substr(0, 20), &parts));
}

}  // namespace
}  // namespace readingsd::storage
