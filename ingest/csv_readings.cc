#include "ingest/csv_readings.h"

#include <algorithm>
#include <charconv>

#include "storage/key.h"
#include "storage/number.h"

namespace readingsd::ingest {
namespace {

struct Cell {
  std::string text;
  bool quoted = false;
};

// Skips the rest of a malformed record, up to and with the next line end, so that reading goes
// on where WholeRecords would cut.
Status SkipRecord(std::string_view* data, std::size_t from, std::size_t* lines, std::string message) {
  const std::size_t end = data->find('\n', from);
  const std::size_t skipped = end == std::string_view::npos ? data->size() : end + 1;
  *lines += static_cast<std::size_t>(std::count(data->begin() + static_cast<std::ptrdiff_t>(from),
                                                data->begin() + static_cast<std::ptrdiff_t>(skipped), '\n'));
  data->remove_prefix(skipped);
  return Status::InvalidArgument(std::move(message));
}

// Reads one record off the front of *data into *cells; *lines is how many line ends it spans.
// A quote opens a quoted field only at the field's start (elsewhere it is itself). InvalidArgument
// for text after a quoted field's closing quote, or a quote never closed; the record is then
// skipped up to its line end.
Status ReadRecord(std::string_view* data, std::vector<Cell>* cells, std::size_t* lines) {
  cells->assign(1, Cell{});
  *lines = 0;
  std::size_t i = 0;
  const std::string_view d = *data;
  for (;;) {
    Cell& cell = cells->back();
    if (i < d.size() && d[i] == '"' && cell.text.empty() && !cell.quoted) {
      cell.quoted = true;
      // Up to each quote in one piece: it closes the field, or is the first of "" (a quote).
      for (++i;;) {
        const std::size_t quote = d.find('"', i);
        if (quote == std::string_view::npos) return SkipRecord(data, d.size(), lines, "a quoted field is never closed");
        const std::string_view run = d.substr(i, quote - i);
        *lines += static_cast<std::size_t>(std::count(run.begin(), run.end(), '\n'));
        cell.text.append(run);
        i = quote + 1;
        if (i < d.size() && d[i] == '"') {
          cell.text.push_back('"');
          ++i;
          continue;
        }
        break;
      }
      if (i + 1 < d.size() && d[i] == '\r' && d[i + 1] == '\n') ++i;  // CRLF
      if (i < d.size() && d[i] != ',' && d[i] != '\n') {
        return SkipRecord(data, i, lines, "text after a quoted field's closing quote");
      }
    }
    const std::size_t start = i;
    while (i < d.size() && d[i] != ',' && d[i] != '\n') ++i;
    cells->back().text.append(d.substr(start, i - start));
    if (i < d.size() && d[i] == ',') {
      ++i;
      cells->emplace_back();
      continue;
    }
    if (!cells->back().quoted && cells->back().text.ends_with('\r')) cells->back().text.pop_back();
    if (i < d.size()) {  // the line end
      ++i;
      ++*lines;
    }
    data->remove_prefix(i);
    return Status::OK();
  }
}

bool Blank(const std::vector<Cell>& cells) { return cells.size() == 1 && cells[0].text.empty() && !cells[0].quoted; }

bool ParseInteger(std::string_view text, int64_t* value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

void Reject(ParsedMessage* out, RejectReason reason, std::string message, std::string device, std::size_t line) {
  out->rejections.push_back({reason, std::move(message), std::move(device), line});
}

void ParseRecord(const ReadingChecks& checks, Precision precision, const CsvColumns& columns,
                 std::vector<Cell>& cells, std::size_t line, ParsedMessage* out) {
  if (cells.size() != columns.names.size()) {
    return Reject(out, RejectReason::kMalformedLine,
                  "the row has " + std::to_string(cells.size()) + " fields, the header " +
                      std::to_string(columns.names.size()),
                  "", line);
  }
  storage::Reading reading;
  reading.device_id = std::move(cells[columns.device].text);
  if (reading.device_id.empty()) return Reject(out, RejectReason::kMissingDeviceId, "no device id", "", line);
  if (Status s = storage::ValidateDeviceId(reading.device_id); !s.ok()) {
    return Reject(out, RejectReason::kInvalidDeviceId, s.message(), "", line);
  }
  const std::string& ts = cells[columns.timestamp].text;
  if (ts.empty()) return Reject(out, RejectReason::kMissingTimestamp, "no timestamp", reading.device_id, line);
  int64_t epoch = 0;
  if (ParseInteger(ts, &epoch)) {
    if (!EpochSortKey(epoch, precision, &reading.sort_key)) {
      return Reject(out, RejectReason::kInvalidTimestamp, "timestamp " + ts + " is out of range at this precision",
                    reading.device_id, line);
    }
  } else if (Status s = storage::NormalizeTimestamp(ts, &reading.sort_key); !s.ok()) {
    return Reject(out, RejectReason::kInvalidTimestamp, s.message(), reading.device_id, line);
  }
  reading.attributes.reserve(cells.size() - 2);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i == columns.device || i == columns.timestamp || (cells[i].text.empty() && !cells[i].quoted)) continue;
    std::string& text = cells[i].text;
    storage::AttributeValue value;
    if (cells[i].quoted) {
      value = std::move(text);
    } else if (text == "true" || text == "false") {
      value = text == "true";
    } else if (storage::IsNumberText(text)) {
      storage::Number number;
      if (Status s = storage::Number::Parse(text, &number); !s.ok()) {
        return Reject(out, RejectReason::kInvalidAttribute, "column \"" + columns.names[i] + "\": " + s.message(),
                      reading.device_id, line);
      }
      value = std::move(number);
    } else {
      value = std::move(text);
    }
    reading.attributes.push_back({columns.names[i], std::move(value)});
  }
  Rejection rejection;
  if (!checks.Check(reading, ts, &rejection)) {
    rejection.index = line;
    out->rejections.push_back(std::move(rejection));
    return;
  }
  out->readings.push_back(std::move(reading));
}

}  // namespace

std::size_t WholeRecords(std::string_view data, bool at_end) {
  if (at_end) return data.size();
  // Where ReadRecord is: a quote opens a quoted field only at a field's start, and text after a
  // closing quote makes the record malformed up to the next line end.
  enum { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted, kMalformed } state = kFieldStart;
  std::size_t whole = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const char c = data[i];
    if (state == kQuoted) {
      if (c == '"') state = kQuoteInQuoted;
    } else if (c == '\n') {
      state = kFieldStart;
      whole = i + 1;
    } else if (state == kMalformed) {
      // skipped up to the line end, as ReadRecord skips it
    } else if (state == kQuoteInQuoted) {
      if (c == '"') state = kQuoted;  // "" inside a quoted field
      else if (c == ',') state = kFieldStart;
      else if (c != '\r' || i + 1 == data.size() || data[i + 1] != '\n') state = kMalformed;
    } else if (c == ',') {
      state = kFieldStart;
    } else {
      state = state == kFieldStart && c == '"' ? kQuoted : kUnquoted;
    }
  }
  return whole;
}

Status ParseCsvHeader(std::string_view* data, CsvColumns* columns, std::size_t* lines) {
  std::vector<Cell> cells;
  if (Status s = ReadRecord(data, &cells, lines); !s.ok()) return Status::InvalidArgument("header: " + s.message());
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  columns->names.clear();
  columns->device = columns->timestamp = kNone;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string& name = cells[i].text;
    if (name.empty()) return Status::InvalidArgument("header: column " + std::to_string(i + 1) + " has no name");
    if (std::find(columns->names.begin(), columns->names.end(), name) != columns->names.end()) {
      return Status::InvalidArgument("header: column \"" + name + "\" appears twice");
    }
    columns->names.push_back(name);
    if (name == storage::kDeviceIdAttribute || name == "device") {
      if (columns->device != kNone) return Status::InvalidArgument("header: two device id columns");
      columns->device = i;
    } else if (name == storage::kReadingTsAttribute || name == "timestamp" || name == "time") {
      if (columns->timestamp != kNone) return Status::InvalidArgument("header: two timestamp columns");
      columns->timestamp = i;
    }
  }
  if (columns->device == kNone) return Status::InvalidArgument("header: no deviceId (or device) column");
  if (columns->timestamp == kNone) return Status::InvalidArgument("header: no readingTs (or timestamp, time) column");
  return Status::OK();
}

void ParseCsvRecords(const PayloadOptions& checks, Precision precision, const CsvColumns& columns,
                     std::string_view records, std::size_t first_line, ParsedMessage* out) {
  out->readings.clear();
  out->rejections.clear();
  const ReadingChecks reading_checks(checks);
  std::vector<Cell> cells;
  std::size_t line = first_line;
  while (!records.empty()) {
    std::size_t spanned = 0;
    if (Status s = ReadRecord(&records, &cells, &spanned); !s.ok()) {
      Reject(out, RejectReason::kMalformedLine, s.message(), "", line);
    } else if (!Blank(cells)) {
      ParseRecord(reading_checks, precision, columns, cells, line, out);
    }
    line += spanned;
  }
}

}  // namespace readingsd::ingest
