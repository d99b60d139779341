// NormalizeTimestamp on arbitrary bytes. Properties of every accepted input:
//   - the sort key is exactly 30 bytes of the shape YYYY-MM-DDTHH:MM:SS.fffffffffZ;
//   - normalising is idempotent: NormalizeTimestamp(key) == key;
//   - the key and each of its prefixes is a valid begins_with prefix;
//   - an input already in canonical form (30 bytes, 'Z') is its own sort key;
//   - the fractional digits are carried over verbatim (never rounded).
// ValidateSortKeyPrefix is also run on the raw input (it must never crash), and so is
// NormalizeBound: it accepts every timestamp NormalizeTimestamp accepts, with the same key, and
// whatever else it accepts is a sort key too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "storage/key.h"

using readingsd::fuzz::AsView;
namespace storage = readingsd::storage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = AsView(data, size);
  (void)storage::ValidateSortKeyPrefix(input);

  std::string bound;
  const bool is_bound = storage::NormalizeBound(input, &bound).ok();
  if (is_bound) {
    std::string again;
    FUZZ_CHECK(storage::NormalizeTimestamp(bound, &again).ok() && again == bound);
  }

  std::string key;
  if (!storage::NormalizeTimestamp(input, &key).ok()) return 0;
  FUZZ_CHECK(is_bound && bound == key);

  FUZZ_CHECK(key.size() == storage::kSortKeyLength);
  FUZZ_CHECK(key[4] == '-' && key[7] == '-' && key[10] == 'T' && key[13] == ':' && key[16] == ':' &&
             key[19] == '.' && key[29] == 'Z');
  for (std::size_t n = 0; n <= key.size(); ++n) {
    FUZZ_CHECK(storage::ValidateSortKeyPrefix(std::string_view(key).substr(0, n)).ok());
  }

  std::string again;
  FUZZ_CHECK(storage::NormalizeTimestamp(key, &again).ok());
  FUZZ_CHECK(again == key);

  if (input.size() == storage::kSortKeyLength && input.back() == 'Z') FUZZ_CHECK(key == input);

  // The fraction as written, padded with zeros, whatever the zone did to the seconds.
  if (input.size() > 20 && input[19] == '.') {
    std::size_t digits = 0;
    while (20 + digits < input.size() && input[20 + digits] >= '0' && input[20 + digits] <= '9') ++digits;
    std::string fraction(input.substr(20, digits));
    fraction.resize(9, '0');
    FUZZ_CHECK(key.substr(20, 9) == fraction);
  } else {
    FUZZ_CHECK(key.substr(20, 9) == "000000000");
  }
  return 0;
}
