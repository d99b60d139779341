// The key and value codecs of storage/key.h and storage/reading.h on arbitrary bytes.
//
// Keys: the input is split at its first NUL into a device id and a sort key.
//   - for a valid device id, DecodeKey(EncodeKey(id, sk)) gives back id and sk exactly;
//   - DecodeKey on the whole input never crashes, and when it accepts the input, EncodeKey of its
//     parts rebuilds the input byte for byte.
// Values: DecodeAttributes on the whole input never crashes; when it accepts it,
//   - Decode(Encode(Decode(x))) == Decode(x) (numbers as canonical text), and
//   - Encode is canonical: Encode(Decode(Encode(Decode(x)))) == Encode(Decode(x)).
//   ItemSize of the stored value fails exactly when DecodeAttributes does, and otherwise equals
//   ItemSize of the decoded Reading (pages are billed and rendered from stored bytes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "storage/key.h"
#include "storage/reading.h"

using readingsd::fuzz::AsView;
using readingsd::fuzz::SameAttributes;
namespace storage = readingsd::storage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = AsView(data, size);

  // EncodeKey -> DecodeKey.
  const auto nul = input.find('\0');
  const std::string_view id = input.substr(0, nul);
  const std::string_view sort_key = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  if (storage::ValidateDeviceId(id).ok()) {
    FUZZ_CHECK(id.size() <= storage::kMaxDeviceIdLength);
    const std::string key = storage::EncodeKey(id, sort_key);
    FUZZ_CHECK(key.starts_with(storage::PartitionKey(id)));
    std::string_view id_out, sort_key_out;
    FUZZ_CHECK(storage::DecodeKey(key, &id_out, &sort_key_out));
    FUZZ_CHECK(id_out == id);
    FUZZ_CHECK(sort_key_out == sort_key);
  }

  // DecodeKey -> EncodeKey.
  std::string_view id_any, sort_key_any;
  if (storage::DecodeKey(input, &id_any, &sort_key_any)) {
    FUZZ_CHECK(id_any.find('\0') == std::string_view::npos);
    FUZZ_CHECK(storage::EncodeKey(id_any, sort_key_any) == input);
  } else {
    FUZZ_CHECK(!input.starts_with(storage::kPartitionPrefix) ||
               input.substr(storage::kPartitionPrefix.size()).find('\0') == std::string_view::npos);
  }

  // DecodeAttributes -> EncodeAttributes -> DecodeAttributes.
  std::vector<storage::Attribute> decoded;
  std::vector<storage::AttributeView> read;
  const bool reads = storage::ReadAttributes(input, &read).ok();
  const bool decodes = storage::DecodeAttributes(input, &decoded).ok();
  FUZZ_CHECK(reads == decodes);
  if (!decodes) return 0;
  FUZZ_CHECK(SameAttributes(read, storage::ViewsOf(decoded)));
  const std::size_t stored_size = storage::ItemSize("dev", "2026-06-23T08:00:00.000000000Z", read);
  std::string encoded;
  storage::EncodeAttributes(decoded, &encoded);
  // Canonical varints are never longer; a format-1 input (numbers as doubles) is re-encoded in
  // the current format, where a double's decimal text may take more than its 8 bytes.
  if (input[0] == '\2') FUZZ_CHECK(encoded.size() <= input.size());
  std::vector<storage::Attribute> again;
  FUZZ_CHECK(storage::DecodeAttributes(encoded, &again).ok());
  FUZZ_CHECK(SameAttributes(decoded, again));
  std::string reencoded;
  storage::EncodeAttributes(again, &reencoded);
  FUZZ_CHECK(reencoded == encoded);

  // ItemSize and ValidateAttributes take whatever decoded.
  storage::Reading reading{"dev", "2026-06-23T08:00:00.000000000Z", std::move(decoded)};
  FUZZ_CHECK(storage::ItemSize(reading) == stored_size);
  (void)storage::ValidateAttributes(reading.attributes);
  return 0;
}
