#include "storage/number.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace readingsd::storage {
namespace {

// DynamoDB's range: a most significant digit at 10^-130 .. 10^125.
constexpr int64_t kMinExponent = -130;
constexpr int64_t kMaxExponent = 125;
// An exponent is read up to this and no further: far past any digit count a request can hold.
constexpr int64_t kExponentCap = int64_t{1} << 40;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The canonical text of digits × 10^exponent, negated when `negative`. `digits` has no leading or
// trailing zeros and is not empty.
std::string PlainDecimal(bool negative, std::string_view digits, int64_t exponent) {
  std::string out;
  if (negative) out.push_back('-');
  const int64_t before_point = static_cast<int64_t>(digits.size()) + exponent;
  if (exponent >= 0) {
    out.append(digits);
    out.append(static_cast<std::size_t>(exponent), '0');
  } else if (before_point > 0) {
    out.append(digits.substr(0, static_cast<std::size_t>(before_point)));
    out.push_back('.');
    out.append(digits.substr(static_cast<std::size_t>(before_point)));
  } else {
    out.append("0.");
    out.append(static_cast<std::size_t>(-before_point), '0');
    out.append(digits);
  }
  return out;
}

// A number read from text: `significant` × 10^`exponent`, negated when `negative`; zero when
// `significant` is empty. `significant` has no leading or trailing zeros.
struct Decimal {
  bool negative = false;
  std::string significant;
  int64_t exponent = 0;
};

// False when `text` is not a number of the grammar ParseNumber reads.
bool ReadDecimal(std::string_view text, Decimal* out) {
  std::size_t i = 0;
  out->negative = i < text.size() && text[i] == '-';
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  std::string digits;  // integer and fraction digits together
  int64_t exponent = 0;  // of the last digit in `digits`
  bool any_digit = false;
  for (; i < text.size() && IsDigit(text[i]); ++i, any_digit = true) digits.push_back(text[i]);
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && IsDigit(text[i]); ++i, any_digit = true) {
      digits.push_back(text[i]);
      --exponent;
    }
  }
  if (!any_digit) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative_exponent = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (i == text.size() || !IsDigit(text[i])) return false;
    int64_t e = 0;
    for (; i < text.size() && IsDigit(text[i]); ++i) e = std::min(e * 10 + (text[i] - '0'), kExponentCap);
    exponent += negative_exponent ? -e : e;
  }
  if (i != text.size()) return false;
  const std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    out->significant.clear();
    out->exponent = 0;
    return true;
  }
  const std::size_t last = digits.find_last_not_of('0');
  out->exponent = exponent + static_cast<int64_t>(digits.size() - 1 - last);
  out->significant = digits.substr(first, last + 1 - first);
  return true;
}

std::string CanonicalText(const Decimal& d) {
  return d.significant.empty() ? "0" : PlainDecimal(d.negative, d.significant, d.exponent);
}

// Magnitudes of canonical texts without sign: a longer integer part is larger ("0." counts as
// none); with integer parts of one length, the digits decide in order, a prefix being smaller.
std::strong_ordering CompareMagnitudes(std::string_view a, std::string_view b) {
  const auto integer_digits = [](std::string_view s) {
    return s.starts_with("0.") ? std::size_t{0} : std::min(s.find('.'), s.size());
  };
  if (auto order = integer_digits(a) <=> integer_digits(b); order != 0) return order;
  std::size_t i = 0, j = 0;
  for (;; ++i, ++j) {
    if (i < a.size() && a[i] == '.') ++i;
    if (j < b.size() && b[j] == '.') ++j;
    if (i == a.size() || j == b.size()) return (a.size() - i) <=> (b.size() - j);
    if (a[i] != b[j]) return a[i] <=> b[j];
  }
}

int Sign(std::string_view canonical) {
  if (canonical.starts_with('-')) return -1;
  return canonical == "0" ? 0 : 1;
}

}  // namespace

Status ParseNumber(std::string_view text, std::string* canonical) {
  Decimal d;
  if (!ReadDecimal(text, &d)) {
    return Status::InvalidArgument("The parameter cannot be converted to a numeric value: " + std::string(text));
  }
  if (!d.significant.empty()) {
    if (d.significant.size() > static_cast<std::size_t>(kMaxNumberDigits)) {
      return Status::InvalidArgument("Attempting to store more than 38 significant digits in a Number");
    }
    const int64_t leading = d.exponent + static_cast<int64_t>(d.significant.size()) - 1;
    if (leading > kMaxExponent) {
      return Status::InvalidArgument(
          "Number overflow. Attempting to store a number with magnitude larger than supported range");
    }
    if (leading < kMinExponent) {
      return Status::InvalidArgument(
          "Number underflow. Attempting to store a number with magnitude smaller than supported range");
    }
  }
  *canonical = CanonicalText(d);
  return Status::OK();
}

bool IsCanonicalNumber(std::string_view text) {
  // One pass, byte by byte: every rollup record read checks two numbers, every double answered one.
  const char* p = text.data();
  const char* const end = p + text.size();
  if (p != end && *p == '-') ++p;
  if (p == end || !IsDigit(*p)) return false;
  const bool zero = *p == '0';
  const char* const integer = p;
  while (p != end && IsDigit(*p)) ++p;
  if (p == end) return !zero || (p - integer == 1 && text.size() == 1);  // "0" but not "-0", "01"
  if (*p != '.' || (zero && p - integer > 1)) return false;
  const char* const fraction = ++p;
  while (p != end && IsDigit(*p)) ++p;
  return p == end && p != fraction && p[-1] != '0';
}

bool IsNumberText(std::string_view text) {
  Decimal d;
  return ReadDecimal(text, &d);
}

std::strong_ordering CompareNumbers(std::string_view a, std::string_view b) {
  const int sign_a = Sign(a), sign_b = Sign(b);
  if (sign_a != sign_b || sign_a == 0) return sign_a <=> sign_b;
  if (sign_a > 0) return CompareMagnitudes(a, b);
  return CompareMagnitudes(b.substr(1), a.substr(1));
}

double NumberToDouble(std::string_view canonical) {
  double value = 0;
  std::from_chars(canonical.data(), canonical.data() + canonical.size(), value);
  return value;
}

std::string NumberFromDouble(double value) {
  std::string text;
  AppendNumberFromDouble(value, &text);
  return text;
}

void AppendNumberFromDouble(double value, std::string* out) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  const std::string_view text(buffer, result.ptr);
  // Shortest round-trip text in plain form (most doubles an answer holds: no exponent, no
  // trailing zero, no -0) is already canonical, and canonical text is its own canonical form.
  if (IsCanonicalNumber(text)) {
    out->append(text);
    return;
  }
  // Else it is a plain or exponent decimal of at most 17 digits and an exponent of at most 324,
  // so its plain form is bounded; NaN and infinity, which no JSON payload can carry, are not
  // numbers and read as 0.
  Decimal d;
  out->append(ReadDecimal(text, &d) ? CanonicalText(d) : "0");
}

void NumberView::AppendLegacyTo(std::string* out) const { AppendNumberFromDouble(legacy_value_, out); }

char* NumberView::WriteLegacyTo(char* p) const {
  const std::string text = NumberFromDouble(legacy_value_);
  return std::copy(text.begin(), text.end(), p);
}

Number NumberView::ToNumber() const {
  Number number;
  number.text = legacy_ ? NumberFromDouble(legacy_value_) : std::string(text_);
  return number;
}

std::size_t NumberView::BilledSize() const {
  if (legacy_) return NumberView::OfCanonical(NumberFromDouble(legacy_value_)).BilledSize();
  // The significant digits, from the first nonzero one to the last, the point not counted: found
  // from both ends, as every reading read is billed and its digits mostly begin and end it.
  auto significant = [](char c) { return c >= '1' && c <= '9'; };
  const char* first = text_.data();
  const char* const end = first + text_.size();
  while (first != end && !significant(*first)) ++first;
  if (first == end) return 1;  // zero
  const char* last = end - 1;
  while (!significant(*last)) --last;
  std::size_t digits = static_cast<std::size_t>(last - first) + 1;
  for (const char* p = first + 1; p < last; ++p) {
    if (*p == '.') {
      --digits;
      break;
    }
  }
  return (digits + 1) / 2 + 1;
}

double NumberView::ToDouble() const { return legacy_ ? legacy_value_ : NumberToDouble(text_); }

std::strong_ordering operator<=>(const NumberView& a, const NumberView& b) {
  if (!a.legacy_ && !b.legacy_) return CompareNumbers(a.text_, b.text_);
  return CompareNumbers(a.ToNumber().text, b.ToNumber().text);
}

}  // namespace readingsd::storage
