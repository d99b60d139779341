// What the native API's endpoints share: their query parameters as parsed, the parameters more
// than one endpoint takes, and the JSON answers and errors. Internal to api/native/.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/node_map.h"
#include "http/handler.h"
#include "query/key_condition.h"
#include "storage/reading.h"

namespace readingsd::api::native {

// A request's query parameters, decoded, each given at most once.
using Params = std::map<std::string, std::string, std::less<>>;

// User input echoed in a message, cut short so an error never grows with the request.
std::string Quoted(std::string_view s);
// `s` as InvalidArgument whose message begins with the parameter it is about.
Status Named(std::string_view param, const Status& s);
// nullptr when the parameter is absent.
const std::string* Find(const Params& params, std::string_view name);
// `name` as an integer in [1, max]; min(fallback, max) when absent.
Status CountParam(const Params& params, std::string_view name, std::size_t fallback, std::size_t max,
                  std::size_t* out);
inline constexpr std::size_t kDefaultLimit = 100;  // a page's items when limit is not given

// partitions and partition_count (together): only the devices of those partitions, a node's
// share of a request merged across nodes (cluster::Forwarder); unset when both are absent.
Status PartitionSetParam(const Params& params, std::optional<cluster::PartitionSet>* share);

http::Response JsonResponse(http::status status, std::string body);
// InvalidArgument is the client's mistake, NotFound an absent item; anything else is the
// store failing, the only cause of a 500.
http::Response ErrorFromStatus(const Status& s);

// attributes=a,b: the attributes an item keeps besides its key (deviceId and readingTs, which
// every item has), as DynamoDB's ProjectionExpression; unset keeps all. Only what is sent is
// cut: a filter still sees every attribute, and reads are billed for whole items. A name that
// holds ',' cannot be listed here; the DynamoDB API can name it through ExpressionAttributeNames.
// An aggregate takes the same list for the attributes it aggregates.
using Projection = std::optional<std::vector<std::string>>;
Status ProjectionParam(const Params& params, Projection* projection);
// format=rows (the default): a page's items as objects; format=columns: the same page
// transposed, one array per field, a missing value null at its position; format=csv (only where
// `csv`: a device's readings): the page as RFC 4180 text (csv.h, docs/native-api.md).
enum class Format { kRows, kColumns, kCsv };
Status FormatParam(const Params& params, bool csv, Format* format);

// The attributes of `all` that `projection` keeps, in stored order: `all` itself when it is unset.
std::span<const storage::AttributeView> Project(std::span<const storage::AttributeView> all,
                                                const Projection& projection,
                                                std::vector<storage::AttributeView>* kept);
// An item as every endpoint answers it: {"deviceId":…,"readingTs":…, attributes…}.
void AppendItem(std::string_view device_id, std::string_view sort_key,
                std::span<const storage::AttributeView> attributes, std::string* out);

// Copies `s` to p and returns its end: 8 to 32 bytes (names, numbers' and timestamps' text, short
// strings: most of a page) as two overlapping words or pairs of words, without a call to memcpy.
inline char* CopyText(std::string_view s, char* p) {
  const std::size_t n = s.size();
  if (n >= 16 && n <= 32) {
    std::memcpy(p, s.data(), 16);
    std::memcpy(p + n - 16, s.data() + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    std::memcpy(p, s.data(), 8);
    std::memcpy(p + n - 8, s.data() + n - 8, 8);
  } else if (n > 0) {
    std::memcpy(p, s.data(), n);
  }
  return p + n;
}

// a == b, short texts (attribute names) compared as CopyText copies them.
inline bool SameText(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n >= 8 && n <= 16) {
    uint64_t a0, a1, b0, b1;
    std::memcpy(&a0, a.data(), 8);
    std::memcpy(&a1, a.data() + n - 8, 8);
    std::memcpy(&b0, b.data(), 8);
    std::memcpy(&b1, b.data() + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  return a == b;
}

// Text appended a few bytes at a time, many times per reading (a format=columns page's columns):
// its appends are inline and growing it never zero-fills, where std::string's push_back and
// append were calls of their own and resize writes zeros before the text does.
class TextBuffer {
 public:
  std::size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }
  void reserve(std::size_t n) {
    if (n > capacity_) Grow(n - size_);
  }
  // Room for `n` more bytes at the end: write there, then Commit the end of what was written.
  char* Room(std::size_t n) {
    if (capacity_ - size_ < n) Grow(n);
    return data_.get() + size_;
  }
  void Commit(char* end) { size_ = static_cast<std::size_t>(end - data_.get()); }
  void push_back(char c) { *Room(1) = c, ++size_; }
  void append(std::string_view s) {
    char* p = Room(s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    size_ += s.size();
  }
  // `text` in quotes, after a comma unless it is the first item: for device ids and sort keys,
  // which never need escaping.
  void AppendQuotedItem(std::string_view text, bool first) {
    char* p = Room(text.size() + 3);
    if (!first) *p++ = ',';
    *p++ = '"';
    p = CopyText(text, p);
    *p++ = '"';
    Commit(p);
  }

 private:
  void Grow(std::size_t n);  // capacity for `n` more bytes, at least doubled

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// The attributes of a format=columns page (a device's readings, an index's): a column per
// attribute its rows hold, in the order they first appear, each as long as the rows, null where
// a row lacks it. Each column is rendered as its rows arrive, padded with nulls only when its
// next value (or the end) comes. Not thread-safe: one per page (or part of a page).
class Columns {
 public:
  // A `part` (of a page read in two parts, query::ItemSink::NewPart) keeps where each of its
  // rows ends, so that Append can take its first rows.
  // `expected_rows`: room for that many values is reserved in each column as it first appears,
  // so that a long page's columns are not copied over as they grow.
  explicit Columns(bool part = false, std::size_t expected_rows = 0) : expected_rows_(expected_rows), part_(part) {}

  // The next row's attributes, and `extra` after them when set (an index page's readingHour,
  // so the row is not copied to hold it); a name twice in it keeps its first value.
  void AddRow(std::span<const storage::AttributeView> attributes, const storage::AttributeView* extra = nullptr);
  // The first `n` rows of `part` after these rows.
  void Append(const Columns& part, std::size_t n);
  std::size_t rows() const { return rows_; }
  // The most bytes AppendTo adds.
  std::size_t MaxSize() const;
  // "columns":{"name":[…],…}, every column padded to rows().
  void AppendTo(std::string* body);

 private:
  struct Column {
    std::string name;
    TextBuffer values;              // comma-separated, rows 0 .. rows-1
    std::size_t rows = 0;           // values held, nulls included
    std::size_t first_row = 0;      // of its first value that is not a padding null
    std::vector<std::size_t> ends;  // a part's: where each row's value ends in values
  };
  Column& ColumnOf(std::string_view name) {
    // Rows mostly hold the same attributes in the same order: try the column after the last, and
    // after the last column the first (a row's first attribute follows the last row's last).
    if (next_ == columns_.size()) next_ = 0;
    if (next_ < columns_.size() && SameText(columns_[next_].name, name)) return columns_[next_++];
    return FindColumn(name);
  }
  Column& FindColumn(std::string_view name);  // ColumnOf past its guess, adding the column when new
  void AddValue(const storage::AttributeView& a);
  void PadTo(Column* column, std::size_t rows) const;
  void EndRow(Column* column) const;

  std::vector<Column> columns_;                            // in the order the rows first hold them
  std::map<std::string, std::size_t, std::less<>> index_;  // name to its place in columns_
  std::size_t next_ = 0;                                   // the column ColumnOf tries first
  std::size_t rows_ = 0;
  std::size_t expected_rows_ = 0;
  bool part_ = false;
};
// A readings page's cursor: where the next page of `device_id` resumes, after `sort_key`.
std::string EncodeCursor(std::string_view device_id, std::string_view sort_key);
// Cursors: unpadded base64url; Decode is false for any other byte or a non-canonical tail.
std::string Base64UrlEncode(std::string_view bytes);
bool Base64UrlDecode(std::string_view text, std::string* bytes);

// The range of from, to (inclusive), after, before (exclusive) and begins_with as the engine's
// single-operator KeyCondition. `*empty` is set for a range that holds no possible sort key
// (after=X&before=X+1ns), which needs no read.
Status NativeKeyCondition(const std::string& device_id, const Params& params, query::KeyCondition* key,
                          bool* empty);

}  // namespace readingsd::api::native
