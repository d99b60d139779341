// CSV with a header row as readings, for `readingsd import`: RFC 4180 records (quoted fields may
// hold commas, doubled quotes and line ends), then the same checks as every other way in.
//
// The header names the columns: the device id's is `deviceId` or `device`, the timestamp's
// `readingTs`, `timestamp` or `time`; every other column is an attribute of that name. A cell
// becomes: nothing when empty; a string when quoted; true/false; a number (exact, storage/
// number.h) when it has a number's form; else a string. A timestamp is ISO-8601 as readingTs, or
// an integer at the import's precision.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/line_readings.h"
#include "ingest/payload.h"

namespace readingsd::ingest {

struct CsvColumns {
  std::vector<std::string> names;
  std::size_t device = 0;
  std::size_t timestamp = 0;
};

// The length of the longest prefix of `data` that holds whole records (up to a line end outside
// quotes, as ParseCsvRecords reads them); all of `data` when `at_end`. Lets a reader feed a file
// in blocks: records parsed block by block are the records parsed at once.
std::size_t WholeRecords(std::string_view data, bool at_end);

// Reads the header record off the front of *data. InvalidArgument when it is malformed, names
// no device or timestamp column, or a column twice.
Status ParseCsvHeader(std::string_view* data, CsvColumns* columns, std::size_t* lines);

// Each record of `records` (whole records, as WholeRecords cuts them) as a reading or a
// rejection whose index is the line its record starts on, counting from `first_line`. Blank
// lines are skipped; a malformed record (kMalformedLine) up to its line end. `checks` holds the plausible window; its caps are not used. Thread-safe.
void ParseCsvRecords(const PayloadOptions& checks, Precision precision, const CsvColumns& columns,
                     std::string_view records, std::size_t first_line, ParsedMessage* out);

}  // namespace readingsd::ingest
