#include "storage/number.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "storage/reading.h"
#include "tests/support/random_numbers.h"

namespace readingsd::storage {
namespace {

std::string Canonical(std::string_view text) {
  std::string canonical;
  const Status s = ParseNumber(text, &canonical);
  EXPECT_TRUE(s.ok()) << text << ": " << s.message();
  return canonical;
}

std::string Rejection(std::string_view text) {
  std::string canonical;
  const Status s = ParseNumber(text, &canonical);
  EXPECT_FALSE(s.ok()) << text << " was accepted as " << canonical;
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  return s.message();
}

TEST(Number, KeepsEveryDigitAndNeverAnExponent) {
  // The values of issue #22 that doubles rounded or printed in exponent form.
  EXPECT_EQ(Canonical("123456789012345678"), "123456789012345678");
  EXPECT_EQ(Canonical("0.1234567890123456789"), "0.1234567890123456789");
  EXPECT_EQ(Canonical("1000000000000000000000"), "1000000000000000000000");
  EXPECT_EQ(Canonical("1e21"), "1000000000000000000000");
  EXPECT_EQ(Canonical("0.00000015"), "0.00000015");
  EXPECT_EQ(Canonical("1.5E-7"), "0.00000015");
  EXPECT_EQ(Canonical("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(Canonical("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(Canonical("12345678901234567890123456789012345678"), "12345678901234567890123456789012345678");
}

TEST(Number, OneTextPerValue) {
  for (const char* zero : {"0", "-0", "+0", "0.0", "-0.000", "0e99", "000", ".0", "0."}) EXPECT_EQ(Canonical(zero), "0") << zero;
  EXPECT_EQ(Canonical("1.50"), "1.5");
  EXPECT_EQ(Canonical("001.5"), "1.5");
  EXPECT_EQ(Canonical("+5"), "5");
  EXPECT_EQ(Canonical(".5"), "0.5");
  EXPECT_EQ(Canonical("5."), "5");
  EXPECT_EQ(Canonical("1e2"), "100");
  EXPECT_EQ(Canonical("100e-2"), "1");
  EXPECT_EQ(Canonical("-12.3400e1"), "-123.4");
  EXPECT_EQ(Canonical("0.05e1"), "0.5");
}

TEST(Number, DynamoDbLimitsWithItsMessages) {
  const std::string digits38(38, '9');
  EXPECT_EQ(Canonical(digits38), digits38);
  EXPECT_EQ(Canonical("1" + std::string(37, '0') + "000"), "1" + std::string(40, '0'));  // trailing zeros are free
  EXPECT_EQ(Rejection(digits38 + "1"), "Attempting to store more than 38 significant digits in a Number");
  EXPECT_EQ(Rejection("-1.23456789012345678901234567890123456789"),
            "Attempting to store more than 38 significant digits in a Number");
  EXPECT_EQ(Canonical("9.9999999999999999999999999999999999999E+125"), "99999999999999999999999999999999999999" + std::string(88, '0'));
  EXPECT_EQ(Canonical("1e-130"), "0." + std::string(129, '0') + "1");
  for (const char* big : {"1e126", "-1e126", "1e999999999999999999999"}) {
    EXPECT_EQ(Rejection(big), "Number overflow. Attempting to store a number with magnitude larger than supported range");
  }
  for (const char* small : {"1e-131", "-1e-131", "0.1e-130", "1e-999999999999999999999"}) {
    EXPECT_EQ(Rejection(small),
              "Number underflow. Attempting to store a number with magnitude smaller than supported range");
  }
}

TEST(Number, RejectsWhatIsNotANumber) {
  for (const char* text : {"", "-", "+", ".", "-.", "e5", "1e", "1e+", "1.2.3", " 1", "1 ", "0x10", "inf", "NaN",
                           "1,5", "--1", "1e5.5", "١"}) {
    EXPECT_EQ(Rejection(text), "The parameter cannot be converted to a numeric value: " + std::string(text));
    EXPECT_FALSE(IsNumberText(text)) << text;
  }
  EXPECT_TRUE(IsNumberText("1e999"));  // the grammar, whatever the range
  // Without writing the number out: its plain form would take a terabyte (a fuzz_native_filter find).
  EXPECT_TRUE(IsNumberText("1e999999999999"));
  EXPECT_TRUE(IsNumberText("-1e-999999999999"));
}

TEST(Number, CanonicalCheckOfStoredText) {
  for (const char* ok : {"0", "1", "-1", "0.5", "-0.005", "10", "120.25"}) EXPECT_TRUE(IsCanonicalNumber(ok)) << ok;
  for (const char* bad : {"", "-", "-0", "00", "01", "1.", "1.50", ".5", "0.", "+1", "1e5", "a", "0.0", "-0.0"}) {
    EXPECT_FALSE(IsCanonicalNumber(bad)) << bad;
  }
  for (const char* ok : {"-0.5", "100", "0.05", "-10.01", "9", "123456789012345678901234567890.123"}) {
    EXPECT_TRUE(IsCanonicalNumber(ok)) << ok;
  }
  for (const char* bad : {"-01", "00.5", "-00.5", "1.2.3", "1..2", "0.-1", "-.5", "1.5a", "- 1", "--1", "1-",
                          "1 ", " 1", "0x1", "inf", "nan", "-", "1.0", "10.10", "1e+05"}) {
    EXPECT_FALSE(IsCanonicalNumber(bad)) << bad;
  }
  // Whatever ParseNumber writes is canonical, and what it would change is not.
  for (const char* text : {"0", "-0", "007", "1.500", "1e3", "-2.5E-3", "0.000", "12.34", "-5"}) {
    const std::string canonical = Canonical(text);
    EXPECT_TRUE(IsCanonicalNumber(canonical)) << canonical;
    EXPECT_EQ(IsCanonicalNumber(text), canonical == text) << text;
  }
}

TEST(Number, DoublesAsTheirShortestDecimal) {
  EXPECT_EQ(NumberFromDouble(21.5), "21.5");
  EXPECT_EQ(NumberFromDouble(0.1), "0.1");
  EXPECT_EQ(NumberFromDouble(-0.0), "0");
  EXPECT_EQ(NumberFromDouble(1e21), "1000000000000000000000");
  EXPECT_EQ(NumberFromDouble(1.5e-7), "0.00000015");
  EXPECT_EQ(NumberFromDouble(22.0), "22");
  EXPECT_EQ(NumberToDouble("0.1"), 0.1);
  EXPECT_EQ(NumberToDouble("-123456789012345678"), -123456789012345678.0);
  EXPECT_EQ(Number(uint64_t{18446744073709551615u}).text, "18446744073709551615");
  EXPECT_EQ(Number(int64_t{-42}).text, "-42");
}

// Shortest round-trip text in exponent form, -0, NaN and infinity take the long way; plain text
// is its own canonical form. Appended after what the string holds.
TEST(Number, DoublesAppendedInEveryForm) {
  const std::pair<double, std::string> cases[] = {
      {21.5, "21.5"},
      {-0.25, "-0.25"},
      {100, "100"},
      {1e5, "100000"},  // "1e+05" is shorter than its plain form
      {-1e5, "-100000"},
      {1e21, "1000000000000000000000"},
      {1.5e-7, "0.00000015"},
      {-1e-5, "-0.00001"},
      {1.25e-5, "0.0000125"},
      {123456789e10, "1234567890000000000"},
      {1.7976931348623157e308, "17976931348623157" + std::string(292, '0')},
      {std::numeric_limits<double>::denorm_min(), "0." + std::string(323, '0') + "5"},
      {0.0, "0"},
      {-0.0, "0"},
      {std::numeric_limits<double>::quiet_NaN(), "0"},
      {-std::numeric_limits<double>::quiet_NaN(), "0"},
      {std::numeric_limits<double>::infinity(), "0"},
      {-std::numeric_limits<double>::infinity(), "0"},
  };
  for (const auto& [value, text] : cases) {
    std::string out = "x,";
    AppendNumberFromDouble(value, &out);
    EXPECT_EQ(out, "x," + text) << value;
    EXPECT_EQ(NumberFromDouble(value), text) << value;
  }
  // Any double whose decimal ParseNumber accepts reads as that decimal, whichever form to_chars
  // picked for it.
  std::mt19937_64 rng(20261207);
  std::uniform_int_distribution<int> exponent(-120, 120);
  std::uniform_real_distribution<double> mantissa(-10, 10);
  for (int i = 0; i < 20000; ++i) {
    const double value = i % 2 == 0 ? mantissa(rng) * std::pow(10.0, exponent(rng))
                                    : std::round(mantissa(rng) * 1000) / std::pow(10.0, i % 7);
    char buffer[32];
    const std::string shortest(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
    std::string out;
    AppendNumberFromDouble(value, &out);
    ASSERT_EQ(out, Canonical(shortest)) << shortest;
    ASSERT_TRUE(IsCanonicalNumber(out)) << out;
    ASSERT_EQ(NumberToDouble(out), value == 0 ? 0.0 : value) << out;
  }
}

TEST(Number, PropertyAnyAcceptedNumberRoundTripsAndOrders) {
  std::mt19937_64 rng(20261205);
  std::vector<test::DrawnNumber> drawn;
  for (int i = 0; i < 20000; ++i) {
    const test::DrawnNumber d = test::DrawNumber(rng);
    const std::string written = d.Json(rng);
    const std::string canonical = Canonical(written);
    ASSERT_EQ(canonical, d.Plain()) << written;
    ASSERT_EQ(Canonical(canonical), canonical);
    ASSERT_TRUE(IsCanonicalNumber(canonical)) << canonical;
    // Through the value format, as owned values and as views.
    std::string encoded;
    Number number;
    ASSERT_TRUE(Number::Parse(written, &number).ok());
    EncodeAttributes({{"n", number}}, &encoded);
    std::vector<Attribute> decoded;
    ASSERT_TRUE(DecodeAttributes(encoded, &decoded).ok());
    ASSERT_EQ(std::get<Number>(decoded.at(0).value).text, canonical);
    drawn.push_back(d);
  }
  for (std::size_t i = 0; i + 1 < drawn.size(); ++i) {
    const test::DrawnNumber& a = drawn[i];
    const test::DrawnNumber& b = rng() % 8 == 0 ? a : drawn[i + 1];
    const std::string ta = a.Plain(), tb = b.Plain();
    const auto order = CompareNumbers(ta, tb);
    const int got = order < 0 ? -1 : order > 0 ? 1 : 0;
    ASSERT_EQ(got, a.ReferenceCompare(b)) << ta << " vs " << tb;
    // The same order with the doubles nearest them at hand (rollup records keep both).
    ASSERT_EQ(CompareNumbers(NumberToDouble(ta), NumberView::OfCanonical(ta), NumberToDouble(tb),
                             NumberView::OfCanonical(tb)),
              order)
        << ta << " vs " << tb;
  }
}

TEST(Number, ComparedByTheirDoublesThenByTextWhereThoseAreEqual) {
  // Each pair rounds to one double: only the text orders it.
  const std::pair<std::string, std::string> ties[] = {
      {"3.1415926535897932384", "3.14159265358979323846"},
      {"0.1", "0.10000000000000000001"},
      {"-12345678901234567890.25", "-12345678901234567890.2"},
      {"12345678901234567890123456789", "12345678901234567890123456789.5"},
  };
  for (const auto& [low, high] : ties) {
    const double d = NumberToDouble(low);
    ASSERT_EQ(d, NumberToDouble(high)) << low << " vs " << high;
    const NumberView a = NumberView::OfCanonical(low), b = NumberView::OfCanonical(high);
    EXPECT_EQ(CompareNumbers(d, a, d, b), std::strong_ordering::less) << low << " vs " << high;
    EXPECT_EQ(CompareNumbers(d, b, d, a), std::strong_ordering::greater) << low << " vs " << high;
    EXPECT_EQ(CompareNumbers(d, a, d, a), std::strong_ordering::equal) << low;
  }
  EXPECT_EQ(CompareNumbers(-0.5, NumberView::OfCanonical("-0.5"), 0.0, NumberView()), std::strong_ordering::less);
}

TEST(Number, ComparesNumericallyNotAsText) {
  const std::vector<std::string> ascending = {"-100", "-99.5", "-2", "-1.05", "-1", "-0.5", "-0.05", "0",
                                              "0.0001", "0.05", "0.5", "1", "1.05", "2", "9.99", "10", "100"};
  for (std::size_t i = 0; i < ascending.size(); ++i) {
    for (std::size_t j = 0; j < ascending.size(); ++j) {
      EXPECT_EQ(CompareNumbers(ascending[i], ascending[j]), i <=> j) << ascending[i] << " vs " << ascending[j];
    }
  }
}

TEST(Number, LegacyDoublesReadAsTheirDecimal) {
  const NumberView legacy = NumberView::OfLegacyDouble(0.1);
  EXPECT_EQ(legacy.ToNumber().text, "0.1");
  const Number tenth(0.1);
  EXPECT_EQ(legacy, NumberView(tenth));
  std::string out;
  legacy.AppendTo(&out);
  EXPECT_EQ(out, "0.1");
  const NumberView huge = NumberView::OfLegacyDouble(-std::numeric_limits<double>::denorm_min());
  std::string text(huge.MaxTextSize(), '\0');
  text.resize(static_cast<std::size_t>(huge.WriteTo(text.data()) - text.data()));
  EXPECT_EQ(text, "-0." + std::string(323, '0') + "5");
}

TEST(Number, BilledAsDynamoDbCountsIt) {
  EXPECT_EQ(NumberView(Number(0)).BilledSize(), 1u);
  EXPECT_EQ(NumberView(Number(7)).BilledSize(), 2u);        // 1 digit
  EXPECT_EQ(NumberView(Number(1000)).BilledSize(), 2u);     // trailing zeros trimmed
  EXPECT_EQ(NumberView(Number(21.37)).BilledSize(), 3u);    // 4 digits
  EXPECT_EQ(NumberView(Number(0.005)).BilledSize(), 2u);    // leading zeros trimmed
  EXPECT_EQ(NumberView(Number(-123.45)).BilledSize(), 4u);  // 5 digits
  const std::pair<const char*, std::size_t> more[] = {
      {"-0.5", 2},         // 1 digit
      {"100.5", 3},        // 4 digits, the zeros between counted
      {"10.01", 3},        // 4
      {"0.10203", 4},      // 5: leading zeros trimmed, inner ones counted
      {"1200", 2},         // 2: trailing zeros of the integer trimmed
      {"120.25", 4},       // 5
      {"1234567", 5},      // 7
      {"-0.000001", 2},    // 1
      {"900000.000009", 7},  // 12
  };
  for (const auto& [text, billed] : more) EXPECT_EQ(NumberView::OfCanonical(text).BilledSize(), billed) << text;
  EXPECT_EQ(NumberView::OfLegacyDouble(21.37).BilledSize(), 3u);
  EXPECT_EQ(NumberView::OfLegacyDouble(-0.0).BilledSize(), 1u);
}

}  // namespace
}  // namespace readingsd::storage
