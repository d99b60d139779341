// The index key codec of storage/key.h (indexKey, value) on arbitrary bytes.
//   - DecodeIndexKey on the input never crashes; when it accepts it, EncodeIndexKey of its parts
//     rebuilds the input byte for byte (one encoding per key).
//   - ReadIndexValue likewise: AppendIndexValue of what it read is exactly the bytes it consumed.
//   - The input split at its first NUL into a and b: as numbers (when both parse), their
//     encodings compare bytewise as CompareNumbers orders them; as strings, as the strings do.
//     Each encoding reads back to its value, and a byte after it does not change the order.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "storage/key.h"
#include "storage/number.h"

using readingsd::fuzz::AsView;
namespace storage = readingsd::storage;

namespace {

std::string Encode(const storage::IndexValue& v) {
  std::string out;
  storage::AppendIndexValue(v, &out);
  storage::IndexValue back;
  std::string_view rest = out;
  FUZZ_CHECK(storage::ReadIndexValue(&rest, &back) && rest.empty() && back == v);
  return out;
}

int Sign(std::strong_ordering o) { return o < 0 ? -1 : o > 0 ? 1 : 0; }

void CheckOrder(const storage::IndexValue& a, const storage::IndexValue& b, std::strong_ordering expected) {
  const std::string ea = Encode(a), eb = Encode(b);
  FUZZ_CHECK(Sign(ea <=> eb) == Sign(expected));
  // What follows a value in a key (the base key) never outweighs the value itself.
  if (expected != 0) FUZZ_CHECK(Sign((ea + "\xff\xff") <=> (eb + std::string(1, '\0'))) == Sign(expected));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = AsView(data, size);

  storage::IndexKey key;
  if (storage::DecodeIndexKey(input, &key)) {
    FUZZ_CHECK(storage::EncodeIndexKey(key.index_name, key.partition, key.sort, key.device_id, key.sort_key) == input);
  }

  std::string_view rest = input;
  storage::IndexValue value;
  if (storage::ReadIndexValue(&rest, &value)) {
    std::string again;
    storage::AppendIndexValue(value, &again);
    FUZZ_CHECK(again == input.substr(0, input.size() - rest.size()));
  }

  const auto nul = input.find('\0');
  const std::string_view a = input.substr(0, nul);
  const std::string_view b = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  CheckOrder({false, std::string(a)}, {false, std::string(b)}, a <=> b);
  std::string na, nb;
  if (storage::ParseNumber(a, &na).ok() && storage::ParseNumber(b, &nb).ok()) {
    CheckOrder({true, na}, {true, nb}, storage::CompareNumbers(na, nb));
  }
  return 0;
}
