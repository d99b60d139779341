// Random numbers across DynamoDB's whole N range for property tests: drawn as sign, digits and
// exponent, so the expected canonical text and order are known without the code under test.
#pragma once

#include <random>
#include <string>

namespace readingsd::test {

struct DrawnNumber {
  bool negative = false;
  std::string digits;  // 1..38, no leading or trailing zeros
  int exponent = 0;    // of the last digit; the leading one is at 10^-130 .. 10^125

  // The canonical text (storage/number.h): plain decimal.
  std::string Plain() const {
    const std::string sign = negative ? "-" : "";
    const int before_point = static_cast<int>(digits.size()) + exponent;
    if (exponent >= 0) return sign + digits + std::string(static_cast<std::size_t>(exponent), '0');
    if (before_point > 0) {
      return sign + digits.substr(0, static_cast<std::size_t>(before_point)) + "." +
             digits.substr(static_cast<std::size_t>(before_point));
    }
    return sign + "0." + std::string(static_cast<std::size_t>(-before_point), '0') + digits;
  }

  // A valid JSON number text of it (hence also a DynamoDB N): d[.ddd][0]e±X, with the digits
  // sometimes shifted across the point and a trailing zero sometimes added.
  std::string Json(std::mt19937_64& rng) const {
    std::string mantissa = digits;
    const int shift = static_cast<int>(rng() % 3);  // zeros appended, taken back by the exponent
    mantissa.append(static_cast<std::size_t>(shift), '0');
    std::string text = negative ? "-" : "";
    text += mantissa.substr(0, 1);
    if (mantissa.size() > 1) text += "." + mantissa.substr(1);
    text += rng() % 2 ? "e" : "E";
    text += std::to_string(exponent - shift + static_cast<int>(mantissa.size()) - 1);
    return text;
  }

  // Ordered by sign, then the leading digit's position, then the digits.
  int ReferenceCompare(const DrawnNumber& other) const {
    if (negative != other.negative) return negative ? -1 : 1;
    const int sign = negative ? -1 : 1;
    const int lead = exponent + static_cast<int>(digits.size());
    const int other_lead = other.exponent + static_cast<int>(other.digits.size());
    if (lead != other_lead) return sign * (lead < other_lead ? -1 : 1);
    const int c = digits.compare(other.digits);
    return sign * (c < 0 ? -1 : c > 0 ? 1 : 0);
  }
};

inline DrawnNumber DrawNumber(std::mt19937_64& rng) {
  DrawnNumber d;
  d.negative = rng() % 2;
  const int count = 1 + static_cast<int>(rng() % 38);
  for (int i = 0; i < count; ++i) d.digits.push_back(static_cast<char>('0' + rng() % 10));
  d.digits.front() = static_cast<char>('1' + rng() % 9);
  d.digits.back() = static_cast<char>('1' + rng() % 9);
  const int leading = -130 + static_cast<int>(rng() % 256);
  d.exponent = leading - (count - 1);
  return d;
}

}  // namespace readingsd::test
