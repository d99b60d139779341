// Numbers as DynamoDB keeps them (its N type), exactly: up to 38 significant decimal digits and
// a magnitude from 1E-130 to 9.9999999999999999999999999999999999999E+125, or zero. A 64-bit
// counter or a 19-digit fraction comes back digit for digit, never rounded through a double and
// never in exponent form.
//
// A number is held as its canonical text: plain decimal, an optional '-', no leading zeros but
// the one of "0.5", no trailing zeros after the point and no point when integral, "0" for zero
// (so "-0.0", "0e5" and "000" are all "0"). That is the text both APIs answer with and the
// value format stores; CompareNumbers orders it numerically.
#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace readingsd::storage {

inline constexpr int kMaxNumberDigits = 38;

// Parses a JSON number or a DynamoDB N string: [+-] digits [. digits] [(e|E) [+-] digits], with a
// digit on at least one side of the point. InvalidArgument, in DynamoDB's words, for anything
// else, more than 38 significant digits, or a magnitude outside the range.
Status ParseNumber(std::string_view text, std::string* canonical);

// True when `text` has the grammar ParseNumber reads, whether or not it is in range.
bool IsNumberText(std::string_view text);

// True when `text` is canonical: what the value format may hold (a damaged value may hold anything).
bool IsCanonicalNumber(std::string_view text);

// <0, 0 or >0 as `a` is numerically below, equal to or above `b`; both canonical.
std::strong_ordering CompareNumbers(std::string_view a, std::string_view b);

// The double nearest to a canonical number (for arithmetic, never for storing or answering).
double NumberToDouble(std::string_view canonical);

// The canonical text of a double's shortest round-trip decimal: the number a writer of that
// double meant. Not range-checked: stores written before numbers were exact hold any double.
std::string NumberFromDouble(double value);
void AppendNumberFromDouble(double value, std::string* out);  // the same, at the end of `out`

// An owned number.
struct Number {
  Number() = default;
  Number(double value) : text(NumberFromDouble(value)) {}  // NOLINT: a double is a number
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Number(T value) : text(std::to_string(value)) {}  // NOLINT: exact, as is any integer
  // ParseNumber into *out.
  static Status Parse(std::string_view text, Number* out) { return ParseNumber(text, &out->text); }

  std::string text = "0";  // canonical

  bool operator==(const Number&) const = default;  // canonical: equal text, equal number
  friend std::strong_ordering operator<=>(const Number& a, const Number& b) { return CompareNumbers(a.text, b.text); }
};

// A number as read from a stored value, without copying it: its canonical text, or, in a value
// written before numbers were exact (format 1), the double it held. Cheap to copy; a view of
// text must not outlive the text.
class NumberView {
 public:
  NumberView() = default;  // zero
  NumberView(const Number& number) : text_(number.text) {}  // NOLINT: a view of it
  static NumberView OfCanonical(std::string_view text) { return NumberView(text); }
  static NumberView OfLegacyDouble(double value) { return NumberView(value); }

  // At most this many characters are appended by AppendTo.
  std::size_t MaxTextSize() const { return legacy_ ? kMaxLegacyTextSize : text_.size(); }
  void AppendTo(std::string* out) const {
    if (legacy_) {
      AppendLegacyTo(out);
    } else {
      out->append(text_);
    }
  }
  // Writes the canonical text at p (MaxTextSize() bytes of room) and returns its end.
  char* WriteTo(char* p) const {  // inline: every number of a page is written through it
    if (legacy_) return WriteLegacyTo(p);
    std::memcpy(p, text_.data(), text_.size());
    return p + text_.size();
  }
  Number ToNumber() const;
  double ToDouble() const;
  // DynamoDB's size of a number: one byte per two significant digits, plus one.
  std::size_t BilledSize() const;

  friend std::strong_ordering operator<=>(const NumberView& a, const NumberView& b);
  friend bool operator==(const NumberView& a, const NumberView& b) { return a <=> b == 0; }

 private:
  // "-0.000…0005" of the smallest subnormal double, the longest plain decimal of any double.
  static constexpr std::size_t kMaxLegacyTextSize = 330;

  explicit NumberView(std::string_view text) : text_(text) {}
  explicit NumberView(double legacy) : legacy_value_(legacy), legacy_(true) {}
  void AppendLegacyTo(std::string* out) const;
  char* WriteLegacyTo(char* p) const;

  std::string_view text_ = "0";
  double legacy_value_ = 0;
  bool legacy_ = false;
};

// a <=> b for numbers whose nearest doubles (ToDouble) are at hand: those order them unless they
// are equal (rounding to nearest never reverses an order), and only then is the text compared.
inline std::strong_ordering CompareNumbers(double a_value, NumberView a, double b_value, NumberView b) {
  if (a_value < b_value) return std::strong_ordering::less;
  if (a_value > b_value) return std::strong_ordering::greater;
  return a <=> b;
}

}  // namespace readingsd::storage
