// The CSV reader of `readingsd import` on arbitrary bytes: ParseCsvHeader on the first record,
// ParseCsvRecords on the rest, and WholeRecords, which cuts a file into the blocks the importer
// parses. Properties:
//   - WholeRecords cuts after a line end (or nothing), and all of the data at its end;
//   - readings have a valid device id, a 30-byte sort key and valid attributes; every rejection
//     names a line at or after the first;
//   - parsing the records in the two blocks WholeRecords cuts them into gives what parsing them
//     at once gives, malformed records included: the importer's blocks change nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "ingest/csv_readings.h"
#include "storage/key.h"

using readingsd::fuzz::AsView;
namespace ingest = readingsd::ingest;
namespace storage = readingsd::storage;

namespace {

ingest::ParsedMessage Parse(const ingest::CsvColumns& columns, std::string_view records, std::size_t first_line) {
  ingest::PayloadOptions checks;
  checks.min_sort_key.clear();
  checks.max_future = std::chrono::seconds(0);
  ingest::ParsedMessage out;
  ingest::ParseCsvRecords(checks, ingest::Precision::kSeconds, columns, records, first_line, &out);
  return out;
}

std::string Flat(const ingest::ParsedMessage& m) {
  std::string text;
  for (const storage::Reading& r : m.readings) {
    std::string value;
    storage::EncodeAttributes(r.attributes, &value);
    text += r.device_id + '\0' + r.sort_key + '\0' + value + '\n';
  }
  for (const ingest::Rejection& r : m.rejections) {
    text += std::to_string(static_cast<int>(r.reason)) + ":" + std::to_string(r.index) + '\n';
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view input = AsView(data, size);
  const std::size_t whole = ingest::WholeRecords(input, false);
  FUZZ_CHECK(whole <= size && (whole == 0 || input[whole - 1] == '\n'));
  FUZZ_CHECK(ingest::WholeRecords(input, true) == size);

  ingest::CsvColumns columns;
  std::size_t header_lines = 0;
  if (!ingest::ParseCsvHeader(&input, &columns, &header_lines).ok()) return 0;
  FUZZ_CHECK(columns.device < columns.names.size() && columns.timestamp < columns.names.size() &&
             columns.device != columns.timestamp);
  const std::size_t first = 1 + header_lines;
  const ingest::ParsedMessage all = Parse(columns, input, first);
  for (const storage::Reading& r : all.readings) {
    FUZZ_CHECK(storage::ValidateDeviceId(r.device_id).ok());
    FUZZ_CHECK(r.sort_key.size() == storage::kSortKeyLength);
    FUZZ_CHECK(storage::ValidateAttributes(r.attributes).ok());
  }
  for (const ingest::Rejection& r : all.rejections) FUZZ_CHECK(r.index >= first);
  const std::size_t cut = ingest::WholeRecords(input, false);
  const std::string_view head = input.substr(0, cut);
  ingest::ParsedMessage blocks = Parse(columns, head, first);
  const ingest::ParsedMessage tail =
      Parse(columns, input.substr(cut), first + static_cast<std::size_t>(std::count(head.begin(), head.end(), '\n')));
  blocks.readings.insert(blocks.readings.end(), tail.readings.begin(), tail.readings.end());
  blocks.rejections.insert(blocks.rejections.end(), tail.rejections.begin(), tail.rejections.end());
  FUZZ_CHECK(Flat(blocks) == Flat(all));
  return 0;
}
