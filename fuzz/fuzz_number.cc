// The number codec of storage/number.h on arbitrary bytes. The input is split at its first NUL
// into two texts a and b. Properties:
//   - ParseNumber never crashes; what it accepts is canonical (IsCanonicalNumber), parses back to
//     itself, has at most 38 significant digits and agrees with IsNumberText;
//   - the canonical text of a value is unique: the order of a and b is 0 exactly when their
//     canonical texts are equal, and swapping them reverses it;
//   - the value format stores it verbatim: Decode(Encode(n)) == n, as an owned value and a view;
//   - NumberToDouble agrees in sign with the text.
// IsCanonicalNumber and NumberFromDouble are also run on the raw input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "storage/number.h"
#include "storage/reading.h"

using readingsd::fuzz::AsView;
namespace storage = readingsd::storage;

namespace {

bool Accepted(std::string_view text, std::string* canonical) {
  const bool ok = storage::ParseNumber(text, canonical).ok();
  if (ok) {
    FUZZ_CHECK(storage::IsNumberText(text));
    FUZZ_CHECK(storage::IsCanonicalNumber(*canonical));
    std::string again;
    FUZZ_CHECK(storage::ParseNumber(*canonical, &again).ok() && again == *canonical);
    std::size_t digits = 0;
    const std::size_t first = canonical->find_first_of("123456789");
    const std::size_t last = canonical->find_last_of("123456789");
    if (first != std::string::npos) {
      for (std::size_t i = first; i <= last; ++i) digits += (*canonical)[i] != '.';
    }
    FUZZ_CHECK(digits <= storage::kMaxNumberDigits);
    const double d = storage::NumberToDouble(*canonical);
    FUZZ_CHECK(canonical->starts_with('-') ? d <= 0 : d >= 0);
  }
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = AsView(data, size);
  (void)storage::IsCanonicalNumber(input);
  if (size >= sizeof(double)) {
    double d;
    std::memcpy(&d, data, sizeof d);
    FUZZ_CHECK(storage::IsCanonicalNumber(storage::NumberFromDouble(d)));
  }

  const auto nul = input.find('\0');
  const std::string_view a = input.substr(0, nul);
  const std::string_view b = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  std::string ca, cb;
  if (!Accepted(a, &ca)) return 0;

  std::string encoded;
  storage::Number number;
  number.text = ca;
  storage::EncodeAttributes({{"n", number}}, &encoded);
  std::vector<storage::Attribute> decoded;
  FUZZ_CHECK(storage::DecodeAttributes(encoded, &decoded).ok());
  FUZZ_CHECK(std::get<storage::Number>(decoded.at(0).value) == number);
  std::vector<storage::AttributeView> views;
  FUZZ_CHECK(storage::ReadAttributes(encoded, &views).ok());
  FUZZ_CHECK(std::get<storage::NumberView>(views.at(0).value) == storage::NumberView(number));

  if (!Accepted(b, &cb)) return 0;
  const auto ab = storage::CompareNumbers(ca, cb);
  const auto ba = storage::CompareNumbers(cb, ca);
  FUZZ_CHECK((ab == 0) == (ca == cb));
  FUZZ_CHECK((ab < 0) == (ba > 0));
  return 0;
}
