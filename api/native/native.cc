#include "api/native/native.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/native/aggregate.h"
#include "api/native/csv.h"
#include "api/native/index.h"
#include "api/native/request.h"
#include "base/text.h"
#include "cluster/node_map.h"
#include "expr/expr.h"
#include "json/dump.h"
#include "storage/key.h"

namespace readingsd::api::native {
namespace {

using Json = OrderedJson;
using query::FilterExpr;
using query::ItemSink;
using query::QueryRequest;
using query::QueryResult;
using query::SortKeyOp;

constexpr std::size_t kDefaultLatest = 10;

enum class Route {
  kDevices, kReadings, kDeleteReadings, kLatest, kItem, kAggregate, kIndexReadings, kFleetReadings, kHealthz, kReadyz, kMetrics
};

struct EndpointSpec {
  std::string_view name;  // the on_request label
  std::vector<std::string_view> params;
};

const EndpointSpec& SpecOf(Route route) {
  static const EndpointSpec kDevices{"devices", {"prefix", "limit", "cursor", "partitions", "partition_count"}};
  static const EndpointSpec kReadings{
      "readings",
      {"from", "to", "after", "before", "begins_with", "limit", "order", "cursor", "filter", "attributes", "format"}};
  static const EndpointSpec kDeleteReadings{"delete_readings", {"from", "to", "after", "before", "begins_with", "all"}};
  static const EndpointSpec kLatest{"latest", {"n", "attributes", "format"}};
  static const EndpointSpec kItem{"item", {"attributes"}};
  static const EndpointSpec kAggregate{"aggregate", {"from", "to", "after", "before", "step", "fn", "attributes", "format"}};
  static const EndpointSpec kIndexReadings{
      "index_readings",
      {"from", "to", "after", "before", "value", "gt", "ge", "lt", "le", "eq", "limit", "order", "cursor", "filter",
       "attributes", "format", "partitions", "partition_count"}};
  static const EndpointSpec kFleetReadings{
      "fleet_readings", {"from", "to", "after", "before", "limit", "order", "cursor", "filter", "attributes"}};
  static const EndpointSpec kHealthz{"healthz", {}};
  static const EndpointSpec kReadyz{"readyz", {}};
  static const EndpointSpec kMetrics{"metrics", {}};
  switch (route) {
    case Route::kDevices:
      return kDevices;
    case Route::kReadings:
      return kReadings;
    case Route::kDeleteReadings:
      return kDeleteReadings;
    case Route::kLatest:
      return kLatest;
    case Route::kItem:
      return kItem;
    case Route::kAggregate:
      return kAggregate;
    case Route::kIndexReadings:
      return kIndexReadings;
    case Route::kFleetReadings:
      return kFleetReadings;
    case Route::kHealthz:
      return kHealthz;
    case Route::kReadyz:
      return kReadyz;
    case Route::kMetrics:
      return kMetrics;
  }
  return kHealthz;
}

struct Match {
  Route route = Route::kHealthz;
  std::string device_id;  // device routes
  std::string timestamp;  // kItem
  std::string index;      // kIndexReadings
};

http::Response TextResponse(std::string_view content_type, std::string body) {
  http::Response res{http::status::ok, 11};
  res.set(http::field::content_type, std::string(content_type));
  res.body() = std::move(body);
  return res;
}

// NotFound when no route has this path; segments are decoded one by one, so an encoded '/'
// stays inside its segment (and then fails device id validation).
Status MatchPath(std::string_view path, Match* match) {
  if (!path.starts_with('/')) return Status::NotFound("no such endpoint");
  std::vector<std::string> segments;
  for (std::string_view rest = path.substr(1);;) {
    const auto slash = rest.find('/');
    std::string segment;
    if (!PercentDecode(rest.substr(0, slash), false, &segment)) {
      return Status::InvalidArgument("path: malformed percent-encoding");
    }
    if (segment.empty()) return Status::NotFound("no such endpoint");
    segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (segments.size() == 1) {
    if (segments[0] == "healthz")
      match->route = Route::kHealthz;
    else if (segments[0] == "readyz")
      match->route = Route::kReadyz;
    else if (segments[0] == "metrics")
      match->route = Route::kMetrics;
    else
      return Status::NotFound("no such endpoint");
    return Status::OK();
  }
  if (segments.size() == 2 && segments[0] == "v1" && segments[1] == "readings") {
    match->route = Route::kFleetReadings;
    return Status::OK();
  }
  if (segments.size() == 4 && segments[0] == "v1" && segments[1] == "indexes" && segments[3] == "readings") {
    match->route = Route::kIndexReadings;
    match->index = std::move(segments[2]);
    return Status::OK();
  }
  if (segments.size() < 2 || segments.size() == 3 || segments.size() > 5 || segments[0] != "v1" ||
      segments[1] != "devices") {
    return Status::NotFound("no such endpoint");
  }
  if (segments.size() == 2) {
    match->route = Route::kDevices;
    return Status::OK();
  }
  match->device_id = std::move(segments[2]);
  if (segments.size() == 5 && segments[3] == "readings") {
    match->route = Route::kItem;
    match->timestamp = std::move(segments[4]);
  } else if (segments.size() == 4 && segments[3] == "readings") {
    match->route = Route::kReadings;
  } else if (segments.size() == 4 && segments[3] == "latest") {
    match->route = Route::kLatest;
  } else if (segments.size() == 4 && segments[3] == "aggregate") {
    match->route = Route::kAggregate;
  } else {
    return Status::NotFound("no such endpoint");
  }
  return Status::OK();
}

Status ParseQueryString(std::string_view query, const EndpointSpec& spec, Params* params) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (piece.empty()) continue;
    const auto eq = piece.find('=');
    std::string name, value;
    if (!PercentDecode(piece.substr(0, eq), true, &name) ||
        !PercentDecode(eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1), true,
                       &value)) {
      return Status::InvalidArgument("malformed percent-encoding in query parameter " + Quoted(piece));
    }
    if (std::find(spec.params.begin(), spec.params.end(), name) == spec.params.end()) {
      std::string accepted;
      for (std::string_view p : spec.params) accepted += (accepted.empty() ? "" : ", ") + std::string(p);
      return Status::InvalidArgument(
          "unknown query parameter " + Quoted(name) +
          (accepted.empty() ? " (this endpoint takes none)" : " (accepted: " + accepted + ")"));
    }
    if (params->contains(name)) return Status::InvalidArgument(name + ": given more than once");
    params->emplace(std::move(name), std::move(value));
  }
  return Status::OK();
}

}  // namespace

// `name` as an integer in [1, max]; min(fallback, max) when absent.
Status CountParam(const Params& params, std::string_view name, std::size_t fallback, std::size_t max,
                  std::size_t* out) {
  const std::string* text = Find(params, name);
  if (!text) {
    *out = std::min(fallback, max);
    return Status::OK();
  }
  std::size_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < 1 || value > max) {
    return Status::InvalidArgument(std::string(name) + ": expected an integer from 1 to " +
                                   std::to_string(max) + ", got " + Quoted(*text));
  }
  *out = value;
  return Status::OK();
}


// The attributes of `all` that `projection` keeps, in stored order: `all` itself when it is unset.
std::span<const storage::AttributeView> Project(std::span<const storage::AttributeView> all,
                                                const Projection& projection,
                                                std::vector<storage::AttributeView>* kept) {
  if (!projection) return all;
  kept->clear();
  for (const storage::AttributeView& a : all) {
    if (std::find(projection->begin(), projection->end(), a.name) != projection->end()) kept->push_back(a);
  }
  return *kept;
}

constexpr std::string_view kBase64UrlAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out;
  uint32_t bits = 0;
  int held = 0;
  for (unsigned char c : bytes) {
    bits = bits << 8 | c;
    held += 8;
    while (held >= 6) {
      held -= 6;
      out.push_back(kBase64UrlAlphabet[(bits >> held) & 0x3f]);
    }
  }
  if (held > 0) out.push_back(kBase64UrlAlphabet[(bits << (6 - held)) & 0x3f]);
  return out;
}

// Unpadded base64url; false for any other byte or a non-canonical tail.
bool Base64UrlDecode(std::string_view text, std::string* bytes) {
  bytes->clear();
  uint32_t bits = 0;
  int held = 0;
  for (char c : text) {
    const auto pos = kBase64UrlAlphabet.find(c);
    if (pos == std::string_view::npos) return false;
    bits = bits << 6 | static_cast<uint32_t>(pos);
    held += 6;
    if (held >= 8) {
      held -= 8;
      bytes->push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  return held < 6 && (bits & ((1u << held) - 1)) == 0;
}

// A cursor is the last evaluated sort key followed by the device id: opaque to clients, yet it
// cannot resume another device's partition.
std::string EncodeCursor(std::string_view device_id, std::string_view sort_key) {
  return Base64UrlEncode(std::string(sort_key) + std::string(device_id));
}

namespace {

Status DecodeCursor(std::string_view device_id, std::string_view cursor, std::string* sort_key) {
  std::string raw, normalised;
  const Status bad = Status::InvalidArgument("cursor: not a cursor returned by this API");
  if (!Base64UrlDecode(cursor, &raw) || raw.size() <= storage::kSortKeyLength) return bad;
  const std::string_view key = std::string_view(raw).substr(0, storage::kSortKeyLength);
  if (!storage::NormalizeTimestamp(key, &normalised).ok() || normalised != key) return bad;
  if (std::string_view(raw).substr(storage::kSortKeyLength) != device_id) {
    return Status::InvalidArgument("cursor: belongs to another device's readings");
  }
  *sort_key = normalised;
  return Status::OK();
}

// A device listing's cursor is the last device id listed after a '#', which no device id and
// no readings cursor (it begins with a sort key) holds.
std::string EncodeDeviceCursor(std::string_view device_id) { return Base64UrlEncode("#" + std::string(device_id)); }

Status DecodeDeviceCursor(std::string_view cursor, std::string_view prefix, std::string* device_id) {
  std::string raw;
  if (!Base64UrlDecode(cursor, &raw) || !raw.starts_with('#') || !storage::ValidateDeviceId(raw.substr(1)).ok()) {
    return Status::InvalidArgument("cursor: not a cursor returned by this API's device listing");
  }
  if (!raw.substr(1).starts_with(prefix)) {
    return Status::InvalidArgument("cursor: belongs to a listing with another prefix");
  }
  *device_id = raw.substr(1);
  return Status::OK();
}

Status ParseReadingsQuery(const Context& context, const std::string& device_id, const Params& params,
                          QueryRequest* request, std::unique_ptr<FilterExpr>* filter, bool* empty) {
  if (Status s = NativeKeyCondition(device_id, params, &request->key, empty); !s.ok()) return s;
  if (Status s = CountParam(params, "limit", kDefaultLimit, context.read.limits.max_limit, &request->limit);
      !s.ok()) {
    return s;
  }
  if (const std::string* order = Find(params, "order")) {
    if (*order != "asc" && *order != "desc") {
      return Status::InvalidArgument("order: expected asc or desc, got " + Quoted(*order));
    }
    request->scan_forward = *order == "asc";
  }
  if (const std::string* cursor = Find(params, "cursor")) {
    if (Status s = DecodeCursor(device_id, *cursor, &request->exclusive_start); !s.ok()) return s;
  }
  if (const std::string* text = Find(params, "filter")) {
    if (Status s = expr::ParseNativeFilter(*text, filter); !s.ok()) return s;  // its message names "filter"
    request->filter = filter->get();
  }
  request->max_page_bytes = context.read.limits.max_page_bytes;
  request->helpers = context.read.helpers;
  return Status::OK();
}

// Pages are written straight into the body: building an ordered_json DOM per item and dumping
// it was 4/5 of a 600-item answer (bench/README.md, profile finding 4). Each item is written
// through a pointer into room reserved for its longest possible rendering, as one std::string
// call per piece was most of what remained. Device ids, sort keys and cursors are validated
// ASCII that never needs escaping; any other string that holds a byte JSON might escape goes
// through nlohmann's serializer, so escaping is not written twice.
char* Write(std::string_view s, char* p) { return CopyText(s, p); }

// The bytes a JSON string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> kPlainByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

// 16 bytes at a time from 16 on (GCC's vector extensions: SSE2 on x86-64, NEON on arm64): every
// string value and attribute name of a page is checked, byte by byte it was most of its cost.
bool IsPlain(std::string_view s) {
  if (s.size() < 8) {
    return std::all_of(s.begin(), s.end(), [](char c) { return kPlainByte[static_cast<unsigned char>(c)]; });
  }
  if (s.size() < 16) {  // two words, overlapping: an index page's every readingHour value is 15 bytes
    auto plain = [](const char* at) {
      constexpr uint64_t kOnes = 0x0101010101010101, kHigh = kOnes * 0x80;
      uint64_t x;
      std::memcpy(&x, at, sizeof x);
      // Whether any byte is below n (n <= 0x80): exact for "any", as the word tricks go.
      auto below = [x](uint64_t n) { return (x - kOnes * n) & ~x & kHigh; };
      auto zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
      return (below(0x20) | (x & kHigh) | zero(x ^ (kOnes * '"')) | zero(x ^ (kOnes * '\\'))) == 0;
    };
    return plain(s.data()) && plain(s.data() + s.size() - 8);
  }
  using Bytes = signed char __attribute__((vector_size(16)));
  auto plain = [](const char* at) {
    Bytes b;
    std::memcpy(&b, at, sizeof b);
    const Bytes bad = (b < 0x20) | (b == '"') | (b == '\\');  // a byte from 0x80 on is negative: below 0x20
    uint64_t lanes[2];
    std::memcpy(lanes, &bad, sizeof lanes);
    return (lanes[0] | lanes[1]) == 0;
  };
  const char* end = s.data() + s.size();
  for (const char* p = s.data(); end - p > 16; p += 16) {
    if (!plain(p)) return false;
  }
  return plain(end - 16);  // the last 16 bytes, overlapping what the loop checked
}

char* WriteString(std::string_view s, char* p) {
  if (!IsPlain(s)) return Write(DumpJson(Json(s)), p);
  *p++ = '"';
  p = Write(s, p);
  *p++ = '"';
  return p;
}

// The most an attribute's value can take: a string with every byte escaped as \u00XX (6
// characters) and its quotes, a number its text, a boolean 5.
std::size_t ValueRoom(const storage::AttributeView& a) {
  if (const auto* s = std::get_if<std::string_view>(&a.value)) return 6 * s->size() + 2;
  if (const auto* n = std::get_if<storage::NumberView>(&a.value)) return n->MaxTextSize();
  return 5;
}

// About what an attribute's value takes when nothing in it needs escaping: room to reserve.
std::size_t ValueSize(const storage::AttributeView& a) {
  if (const auto* s = std::get_if<std::string_view>(&a.value)) return s->size() + 2;
  if (const auto* n = std::get_if<storage::NumberView>(&a.value)) return n->MaxTextSize();
  return 5;
}

// The most an attribute can take in an item: its name escaped as its value could be, its
// quotes, ',' and ':', and its value.
std::size_t AttributeRoom(const storage::AttributeView& a) { return 6 * a.name.size() + 4 + ValueRoom(a); }

char* WriteValue(const storage::AttributeView& a, char* p) {
  if (const auto* n = std::get_if<storage::NumberView>(&a.value)) return n->WriteTo(p);
  if (const auto* b = std::get_if<bool>(&a.value)) return Write(*b ? "true" : "false", p);
  return WriteString(std::get<std::string_view>(a.value), p);
}

}  // namespace

// An item rendered from its attributes as read (Query has read them whole, so they are
// well-formed here).
void AppendItem(std::string_view device_id, std::string_view sort_key,
                std::span<const storage::AttributeView> attributes, std::string* out) {
  constexpr std::size_t kFixed = 32;  // {"deviceId":"","readingTs":""}
  std::size_t room = kFixed + device_id.size() + sort_key.size();
  for (const storage::AttributeView& a : attributes) room += AttributeRoom(a);
  const std::size_t begin = out->size();
  out->resize(begin + room);
  char* p = out->data() + begin;
  p = Write("{\"deviceId\":\"", p);
  p = Write(device_id, p);
  p = Write("\",\"readingTs\":\"", p);
  p = Write(sort_key, p);
  *p++ = '"';
  for (const storage::AttributeView& a : attributes) {
    *p++ = ',';
    p = WriteString(a.name, p);
    *p++ = ':';
    p = WriteValue(a, p);
  }
  *p++ = '}';
  assert(p <= out->data() + begin + room);
  out->resize(static_cast<std::size_t>(p - out->data()));
}

namespace {

// What follows a page's items in either format: its counts, its cursor while more follow, '}'.
void AppendPageEnd(std::string_view device_id, const QueryResult& result, std::string* body) {
  body->append(",\"count\":").append(std::to_string(result.count));
  body->append(",\"scannedCount\":").append(std::to_string(result.scanned_count));
  if (result.last_evaluated_sort_key) {
    body->append(",\"nextCursor\":\"").append(EncodeCursor(device_id, *result.last_evaluated_sort_key));
    body->push_back('"');
  }
  body->push_back('}');
}

// The one rendering of a page, for /readings and /latest alike (a /latest cursor continues with
// /readings?order=desc&cursor=…). Query hands it each item while the iterator still holds it, so
// items are rendered without being copied first; on an error the partial body is dropped.
class PageWriter final : public ItemSink {
 public:
  // Room for `expected_items` of ~130 bytes, so a full page is not copied over as it grows.
  PageWriter(std::string_view device_id, std::size_t expected_items, const Projection& projection)
      : PageWriter(device_id, projection) {
    body_.reserve(128 + expected_items * kItemBytes);
    body_.append("{\"deviceId\":\"").append(device_id).append("\",\"items\":[");
  }
  PageWriter(std::string_view device_id, const Projection& projection)
      : device_id_(device_id), projection_(projection) {}

  void Add(std::string_view sort_key, std::string_view /*encoded*/,
           std::span<const storage::AttributeView> attributes) override {
    if (!first_) body_.push_back(',');
    first_ = false;
    AppendItem(device_id_, sort_key, Project(attributes, projection_, &kept_), &body_);
    if (part_) item_ends_.push_back(body_.size());
  }

  // A part holds only its items, comma-separated, and where each ends.
  std::unique_ptr<ItemSink> NewPart(std::size_t expected_items) const override {
    auto part = std::make_unique<PageWriter>(device_id_, projection_);
    part->part_ = true;
    part->body_.reserve(expected_items * kItemBytes);
    part->item_ends_.reserve(expected_items);
    return part;
  }

  void AppendPart(ItemSink* sink, std::size_t n) override {
    if (n == 0) return;
    const auto& part = static_cast<const PageWriter&>(*sink);
    if (!first_) body_.push_back(',');
    first_ = false;
    body_.append(part.body_, 0, part.item_ends_[n - 1]);
  }

  std::string Finish(const QueryResult& result) && {
    body_.push_back(']');
    AppendPageEnd(device_id_, result, &body_);
    return std::move(body_);
  }

 private:
  static constexpr std::size_t kItemBytes = 160;  // room reserved per item

  std::string_view device_id_;
  const Projection& projection_;
  std::vector<storage::AttributeView> kept_;  // reused for every item
  std::string body_;
  bool first_ = true;
  bool part_ = false;
  std::vector<std::size_t> item_ends_;  // of a part's items in body_
};

}  // namespace

void TextBuffer::Grow(std::size_t n) {
  const std::size_t capacity = std::max({2 * capacity_, size_ + n, std::size_t{64}});
  auto data = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

Columns::Column& Columns::FindColumn(std::string_view name) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    it = index_.emplace(std::string(name), columns_.size()).first;
    columns_.push_back(Column{.name = std::string(name), .first_row = rows_});
  }
  next_ = it->second + 1;
  return columns_[it->second];
}

void Columns::AddRow(std::span<const storage::AttributeView> attributes, const storage::AttributeView* extra) {
  for (const storage::AttributeView& a : attributes) AddValue(a);
  if (extra) AddValue(*extra);
  ++rows_;
}

void Columns::AddValue(const storage::AttributeView& a) {
  Column& column = ColumnOf(a.name);
  if (column.rows > rows_) return;  // a name twice in one row: its first value, as a JSON reader keeps one
  if (column.rows == 0 && expected_rows_ > 0) {
    column.values.reserve(expected_rows_ * (1 + std::max<std::size_t>(ValueSize(a), 4)) + 1 + ValueRoom(a));
  }
  if (column.rows < rows_) PadTo(&column, rows_);
  const bool comma = column.rows > 0;
  char* p;
  if (const auto* n = std::get_if<storage::NumberView>(&a.value)) {  // most values: one look at the type
    p = column.values.Room(1 + n->MaxTextSize());
    if (comma) *p++ = ',';
    p = n->WriteTo(p);
  } else {
    p = column.values.Room(1 + ValueRoom(a));
    if (comma) *p++ = ',';
    p = WriteValue(a, p);
  }
  column.values.Commit(p);
  EndRow(&column);
}

void Columns::Append(const Columns& part, std::size_t n) {
  if (n == 0) return;
  for (const Column& from : part.columns_) {
    if (from.first_row >= n) continue;  // no value in the rows taken: no column, as rows would show
    Column& column = ColumnOf(from.name);
    PadTo(&column, rows_);
    const std::size_t taken = std::min(n, from.rows);  // the rest are nulls, padded later
    if (column.rows > 0) column.values.push_back(',');
    column.values.append(from.values.view().substr(0, from.ends[taken - 1]));
    column.rows += taken;
  }
  rows_ += n;
}

std::size_t Columns::MaxSize() const {
  std::size_t size = 16;
  for (const Column& column : columns_) size += column.values.size() + 6 * column.name.size() + 4 + 5 * (rows_ - column.rows);
  return size;
}

void Columns::AppendTo(std::string* body) {
  body->append("\"columns\":{");
  for (Column& column : columns_) {
    PadTo(&column, rows_);
    if (&column != &columns_.front()) body->push_back(',');
    const std::size_t begin = body->size();
    body->resize(begin + 6 * column.name.size() + 2);
    body->resize(static_cast<std::size_t>(WriteString(column.name, body->data() + begin) - body->data()));
    body->append(":[").append(column.values.view()).push_back(']');
  }
  body->push_back('}');
}

void Columns::PadTo(Column* column, std::size_t rows) const {
  while (column->rows < rows) {
    column->values.append(column->rows > 0 ? ",null" : "null");
    EndRow(column);
  }
}

void Columns::EndRow(Column* column) const {
  ++column->rows;
  if (part_) column->ends.push_back(column->values.size());
}

namespace {

// format=columns: the page PageWriter renders, transposed, in the same one pass over its items:
// {"deviceId":…,"readingTs":[…],"columns":{"temperature":[…],…},"count":…,…} (Columns).
class ColumnsWriter final : public ItemSink {
 public:
  ColumnsWriter(std::string_view device_id, std::size_t expected_items, const Projection& projection)
      : ColumnsWriter(device_id, projection, /*part=*/false) {
    timestamps_.reserve(expected_items * (storage::kSortKeyLength + 3));
  }
  ColumnsWriter(std::string_view device_id, const Projection& projection, bool part)
      : device_id_(device_id), projection_(projection), columns_(part), part_(part) {}

  void Add(std::string_view sort_key, std::string_view /*encoded*/,
           std::span<const storage::AttributeView> attributes) override {
    timestamps_.AppendQuotedItem(sort_key, columns_.rows() == 0);
    columns_.AddRow(Project(attributes, projection_, &kept_));
    if (part_) timestamp_ends_.push_back(timestamps_.size());
  }

  // A part is a page of its own, whose rows are numbered from 0; it keeps where each row of
  // readingTs and of every column ends, so AppendPart can take its first n rows.
  std::unique_ptr<ItemSink> NewPart(std::size_t expected_items) const override {
    auto part = std::make_unique<ColumnsWriter>(device_id_, projection_, /*part=*/true);
    part->timestamps_.reserve(expected_items * (storage::kSortKeyLength + 3));
    part->timestamp_ends_.reserve(expected_items);
    return part;
  }

  void AppendPart(ItemSink* sink, std::size_t n) override {
    if (n == 0) return;
    const auto& part = static_cast<const ColumnsWriter&>(*sink);
    if (columns_.rows() > 0) timestamps_.push_back(',');
    timestamps_.append(part.timestamps_.view().substr(0, part.timestamp_ends_[n - 1]));
    columns_.Append(part.columns_, n);
  }

  std::string Finish(const QueryResult& result) && {
    std::string body;
    body.reserve(128 + timestamps_.size() + columns_.MaxSize());
    body.append("{\"deviceId\":\"").append(device_id_).append("\",\"readingTs\":[").append(timestamps_.view()).append("],");
    columns_.AppendTo(&body);
    AppendPageEnd(device_id_, result, &body);
    return body;
  }

 private:
  std::string_view device_id_;
  const Projection& projection_;
  std::vector<storage::AttributeView> kept_;  // reused for every item
  TextBuffer timestamps_;                     // readingTs' items, comma-separated
  std::vector<std::size_t> timestamp_ends_;   // a part's: where each row's timestamp ends
  Columns columns_;
  bool part_;
};

template <typename Page>
http::Response RunQuery(const Context& context, const QueryRequest& request, bool empty_range, Page& page) {
  QueryResult result;
  if (!empty_range) {
    if (Status s = query::Query(context.read.store, request, &result, &page); !s.ok()) return ErrorFromStatus(s);
  }
  context.read.ReportPartitionRead(request.key.device_id, result.scanned_count, result.scanned_bytes);
  return JsonResponse(http::status::ok, std::move(page).Finish(result));
}

http::Response RunQuery(const Context& context, const QueryRequest& request, const Projection& projection,
                        Format format, bool empty_range) {
  const std::size_t expected_items = std::min<std::size_t>(request.limit == 0 ? 1000 : request.limit, 1000);
  if (format == Format::kColumns) {
    ColumnsWriter page(request.key.device_id, expected_items, projection);
    return RunQuery(context, request, empty_range, page);
  }
  PageWriter page(request.key.device_id, expected_items, projection);
  return RunQuery(context, request, empty_range, page);
}

http::Response Readings(const Context& context, const Match& match, const Params& params) {
  QueryRequest request;
  std::unique_ptr<FilterExpr> filter;
  bool empty = false;
  Projection projection;
  if (Status s = ParseReadingsQuery(context, match.device_id, params, &request, &filter, &empty); !s.ok()) {
    return ErrorFromStatus(s);
  }
  if (Status s = ProjectionParam(params, &projection); !s.ok()) return ErrorFromStatus(s);
  Format format;
  if (Status s = FormatParam(params, /*csv=*/true, &format); !s.ok()) return ErrorFromStatus(s);
  if (format == Format::kCsv) return CsvPage(context, request, projection, empty);
  return RunQuery(context, request, projection, format, empty);
}

http::Response Latest(const Context& context, const Match& match, const Params& params) {
  QueryRequest request;
  Projection projection;
  Format format;
  if (Status s = CountParam(params, "n", kDefaultLatest, context.read.limits.max_limit, &request.limit);
      !s.ok()) {
    return ErrorFromStatus(s);
  }
  if (Status s = ProjectionParam(params, &projection); !s.ok()) return ErrorFromStatus(s);
  if (Status s = FormatParam(params, /*csv=*/false, &format); !s.ok()) return ErrorFromStatus(s);
  if (Status s = query::MakeKeyCondition(match.device_id, SortKeyOp::kAll, "", "", &request.key); !s.ok()) {
    return ErrorFromStatus(Named("deviceId", s));
  }
  request.scan_forward = false;
  request.max_page_bytes = context.read.limits.max_page_bytes;
  request.helpers = context.read.helpers;
  return RunQuery(context, request, projection, format, false);
}

// A device listing's page as a node answered it (Devices): each device's id and its JSON.
struct DevicePart {
  std::vector<std::pair<std::string_view, std::string_view>> devices;
  bool more = false;  // it had a nextCursor
};

// False when `body` is not a listing Devices renders.
bool SliceDevicePage(std::string_view body, DevicePart* part) {
  constexpr std::string_view kHead = "{\"devices\":[";
  constexpr std::string_view kId = "{\"deviceId\":\"";
  if (!body.starts_with(kHead)) return false;
  std::size_t i = kHead.size();
  while (i < body.size() && body[i] != ']') {
    if (part->devices.size() > 0 && body[i++] != ',') return false;
    if (body.substr(i, kId.size()) != kId) return false;
    const std::size_t id_end = body.find('"', i + kId.size());  // a device id needs no escape
    // The device's end: its braces balanced, outside strings.
    int depth = 0;
    bool in_string = false;
    std::size_t j = i;
    for (; j < body.size(); ++j) {
      const char c = body[j];
      if (in_string) {
        if (c == '\\') ++j;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        break;
      }
    }
    if (id_end == std::string_view::npos || j >= body.size()) return false;
    part->devices.emplace_back(body.substr(i + kId.size(), id_end - i - kId.size()), body.substr(i, j + 1 - i));
    i = j + 1;
  }
  if (i >= body.size()) return false;
  part->more = body.substr(i).starts_with("],\"nextCursor\":");
  return true;
}

// GET /v1/devices: the device registry, paged like the readings: at most `limit` devices and
// about max_page_bytes (the device crossing it is included); nextCursor while more follow.
http::Response Devices(const Context& context, const Params& params) {
  std::size_t limit = 0;
  if (Status s = CountParam(params, "limit", kDefaultLimit, context.read.limits.max_limit, &limit); !s.ok()) {
    return ErrorFromStatus(s);
  }
  const std::string* prefix_param = Find(params, "prefix");
  const std::string prefix = prefix_param ? *prefix_param : "";
  if (!prefix.empty()) {
    if (Status s = storage::ValidateDeviceId(prefix); !s.ok()) return ErrorFromStatus(Named("prefix", s));
  }
  std::string after;
  if (const std::string* cursor = Find(params, "cursor")) {
    if (Status s = DecodeDeviceCursor(*cursor, prefix, &after); !s.ok()) return ErrorFromStatus(s);
  }
  std::optional<cluster::PartitionSet> share;  // unset: every device
  if (Status s = PartitionSetParam(params, &share); !s.ok()) return ErrorFromStatus(s);
  std::vector<storage::DeviceSummary> devices, chunk;
  // One more than the page: a cursor only when another device follows. With partitions, read on
  // until that many are of them or the registry ends.
  for (std::string from = after; devices.size() < limit + 1;) {
    chunk.clear();
    if (Status s = context.read.store.ListDevices(prefix, from, limit + 1, &chunk); !s.ok()) return ErrorFromStatus(s);
    if (chunk.empty()) break;
    from = chunk.back().device_id;
    for (storage::DeviceSummary& d : chunk) {
      if (!share || share->Holds(d.device_id)) devices.push_back(std::move(d));
    }
    if (chunk.size() < limit + 1) break;
  }
  std::string body = "{\"devices\":[";
  std::vector<storage::AttributeView> attributes;
  std::size_t listed = 0;
  for (; listed < devices.size() && listed < limit && (listed == 0 || body.size() < context.read.limits.max_page_bytes);
       ++listed) {
    const storage::DeviceSummary& d = devices[listed];
    if (Status s = storage::ReadAttributes(d.latest, &attributes); !s.ok()) return ErrorFromStatus(s);
    if (listed > 0) body.push_back(',');
    body.append("{\"deviceId\":\"").append(d.device_id);
    body.append("\",\"firstReadingTs\":\"").append(d.first_sort_key);
    body.append("\",\"lastReadingTs\":\"").append(d.last_sort_key);
    body.append("\",\"readings\":").append(std::to_string(d.readings)).append(",\"latest\":");
    AppendItem(d.device_id, d.last_sort_key, attributes, &body);
    body.push_back('}');
  }
  body.push_back(']');
  if (listed < devices.size()) {
    body.append(",\"nextCursor\":\"").append(EncodeDeviceCursor(devices[listed - 1].device_id)).push_back('"');
  }
  body.push_back('}');
  return JsonResponse(http::status::ok, std::move(body));
}

http::Response Item(const Context& context, const Match& match, const Params& params) {
  Projection projection;
  if (Status s = ProjectionParam(params, &projection); !s.ok()) return ErrorFromStatus(s);
  std::string sort_key;
  if (Status s = storage::NormalizeTimestamp(match.timestamp, &sort_key); !s.ok()) {
    return ErrorFromStatus(Named("timestamp", s));
  }
  storage::Reading reading;
  Status s = context.read.store.Get(match.device_id, sort_key, &reading);
  if (s.IsNotFound()) {
    context.read.ReportPartitionRead(match.device_id, 0, 0);
    return Error(http::status::not_found, "NotFound",
                       "no reading of device " + match.device_id + " at " + sort_key);
  }
  if (!s.ok()) return Error(http::status::internal_server_error, "InternalError", s.ToString());
  context.read.ReportPartitionRead(match.device_id, 1, storage::ItemSize(reading));
  const std::vector<storage::AttributeView> attributes = storage::ViewsOf(reading.attributes);
  std::vector<storage::AttributeView> kept;
  std::string body;
  AppendItem(reading.device_id, reading.sort_key, Project(attributes, projection, &kept), &body);
  return JsonResponse(http::status::ok, std::move(body));
}

// DELETE /v1/devices/{id}/readings: a range, or every reading with all=true. A delete with
// neither is refused, so that a forgotten parameter cannot empty a device.
http::Response DeleteReadings(const Context& context, const Match& match, const Params& params) {
  if (!context.remove) {
    return Error(http::status::service_unavailable, "ReadOnly", "this daemon serves a read-only store; nothing is deleted");
  }
  const std::string* all = Find(params, "all");
  if (all && *all != "true") return ErrorFromStatus(Status::InvalidArgument("all: expected true, got " + Quoted(*all)));
  const bool ranged = std::any_of(params.begin(), params.end(), [](const auto& p) { return p.first != "all"; });
  if (all && ranged) {
    return ErrorFromStatus(Status::InvalidArgument("all: cannot be combined with from, to, after, before or begins_with"));
  }
  if (!all && !ranged) {
    return ErrorFromStatus(Status::InvalidArgument(
        "give the range to delete (from, to, after, before or begins_with), or all=true to delete every reading of "
        "device " + match.device_id));
  }
  query::KeyCondition key;
  bool empty = false;
  if (Status s = NativeKeyCondition(match.device_id, params, &key, &empty); !s.ok()) return ErrorFromStatus(s);
  DeleteOutcome outcome;
  // An empty range is not published either: it deletes nothing wherever it goes.
  if (!empty) {
    if (Status s = context.remove(match.device_id, query::RangeOf(key), &outcome); !s.ok()) {
      if (s.IsInvalidArgument()) return ErrorFromStatus(Named("deviceId", s));
      if (s.code() == Status::Code::kUnavailable) {  // the stream's: the store never says it
        return Error(http::status::service_unavailable, "StreamUnavailable",
                     "the stream did not acknowledge the delete, so it is not claimed: " + s.ToString() +
                         "; ask again (a delete applied twice deletes the same readings)");
      }
      return Error(http::status::internal_server_error, "InternalError",
                   s.ToString() + "; " + std::to_string(outcome.deleted) +
                       " readings were deleted before it, the rest of the range is intact: ask again");
    }
  }
  Json body = Json::object();
  body["deviceId"] = match.device_id;
  if (outcome.stream_sequence) {
    body["streamSequence"] = *outcome.stream_sequence;
    return JsonResponse(http::status::accepted, DumpJson(body));
  }
  body["deleted"] = outcome.deleted;
  return JsonResponse(http::status::ok, DumpJson(body));
}

http::Response Ready(const Context& context) {
  std::string detail;
  const bool ready = !context.ops.ready || context.ops.ready(&detail);
  Json body = Json::object();
  body["ready"] = ready;
  body["detail"] = detail;
  return JsonResponse(ready ? http::status::ok : http::status::service_unavailable, DumpJson(body));
}

http::Response Metrics(const Context& context) {
  if (!context.ops.metrics) {
    return Error(http::status::not_found, "NotFound", "no metrics exporter is configured");
  }
  return TextResponse("text/plain; version=0.0.4", context.ops.metrics());
}

}  // namespace

http::Response Error(http::status status, std::string_view code, std::string_view message) {
  Json body = Json::object();
  body["error"]["code"] = code;
  body["error"]["message"] = message;
  return JsonResponse(status, DumpJson(body));
}

cluster::Reach ReachOf(const http::Request& request, std::string* device_id) {
  const std::string_view target = http::ToStd(request.target());
  Match match;
  if (!MatchPath(target.substr(0, target.find('?')), &match).ok()) return cluster::Reach::kLocal;
  const bool get = request.method() == http::verb::get;
  switch (match.route) {
    case Route::kReadings:  // a DELETE is kLocal: the node publishes it into the stream (DeleteOutcome)
    case Route::kLatest:
    case Route::kItem:
    case Route::kAggregate:
      if (!get || !storage::ValidateDeviceId(match.device_id).ok()) return cluster::Reach::kLocal;
      *device_id = std::move(match.device_id);
      return cluster::Reach::kDevice;
    case Route::kDevices:
    case Route::kIndexReadings:
      return get ? cluster::Reach::kMerged : cluster::Reach::kLocal;
    default:
      return cluster::Reach::kLocal;
  }
}

http::Response HandleRequest(const Context& context, const http::Request& request,
                                 std::string_view* endpoint) {
  *endpoint = "other";
  const std::string_view target = http::ToStd(request.target());
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  Match match;
  if (Status s = MatchPath(path, &match); !s.ok()) {
    return s.IsNotFound()
               ? Error(http::status::not_found, "NotFound", "no such endpoint: " + Quoted(path))
               : ErrorFromStatus(s);
  }
  if (match.route == Route::kReadings && request.method() == http::verb::delete_) match.route = Route::kDeleteReadings;
  if (request.method() != http::verb::get && match.route != Route::kDeleteReadings) {
    const bool deletable = match.route == Route::kReadings;
    http::Response res = Error(http::status::method_not_allowed, "MethodNotAllowed",
                               "method " + std::string(http::ToStd(request.method_string())) +
                                   " is not allowed here; use GET" + (deletable ? " or DELETE" : ""));
    res.set(http::field::allow, deletable ? "GET, DELETE" : "GET");
    return res;
  }
  const EndpointSpec& spec = SpecOf(match.route);
  *endpoint = spec.name;
  Params params;
  if (Status s = ParseQueryString(query, spec, &params); !s.ok()) return ErrorFromStatus(s);
  if (!match.device_id.empty()) {
    if (Status s = storage::ValidateDeviceId(match.device_id); !s.ok())
      return ErrorFromStatus(Named("deviceId", s));
  }
  switch (match.route) {
    case Route::kDevices:
      return Devices(context, params);
    case Route::kReadings:
      return Readings(context, match, params);
    case Route::kDeleteReadings:
      return DeleteReadings(context, match, params);
    case Route::kLatest:
      return Latest(context, match, params);
    case Route::kItem:
      return Item(context, match, params);
    case Route::kAggregate:
      return Aggregate(context, match.device_id, params);
    case Route::kIndexReadings:
      return IndexReadings(context, match.index, params);
    case Route::kFleetReadings:
      return FleetReadings(context, params);
    case Route::kHealthz:
      return TextResponse("text/plain", "ok");
    case Route::kReadyz:
      return Ready(context);
    case Route::kMetrics:
      return Metrics(context);
  }
  return Error(http::status::not_found, "NotFound", "no such endpoint: " + Quoted(path));
}

http::Response Merge(const Context& context, const http::Request& request, std::span<const std::string> shares) {
  const std::string_view target = http::ToStd(request.target());
  const auto question = target.find('?');
  Match match;
  if (Status s = MatchPath(target.substr(0, question), &match); !s.ok() || match.route != Route::kIndexReadings) {
    return MergeDevicePages(context.read.limits, request, shares);
  }
  Params params;
  if (Status s = ParseQueryString(question == std::string_view::npos ? "" : target.substr(question + 1),
                                  SpecOf(match.route), &params);
      !s.ok()) {
    return ErrorFromStatus(s);
  }
  return IndexReadings(context, match.index, params, shares);
}

http::Response MergeDevicePages(const query::ReadLimits& limits, const http::Request& request,
                                std::span<const std::string> parts) {
  const std::string_view target = http::ToStd(request.target());
  const auto question = target.find('?');
  Params params;
  if (Status s = ParseQueryString(question == std::string_view::npos ? "" : target.substr(question + 1),
                                  SpecOf(Route::kDevices), &params);
      !s.ok()) {
    return ErrorFromStatus(s);
  }
  std::size_t limit = 0;
  if (Status s = CountParam(params, "limit", kDefaultLimit, limits.max_limit, &limit); !s.ok()) return ErrorFromStatus(s);
  std::vector<std::pair<std::string_view, std::string_view>> all;
  // A part that has more devices than it gave knows none past its last: the page ends there.
  std::optional<std::string_view> bound;
  bool more = false;
  for (const std::string& body : parts) {
    DevicePart part;
    if (!SliceDevicePage(body, &part)) {
      return Error(http::status::bad_gateway, "BadGateway", "a node's part of the device listing is not one");
    }
    if (part.more && !part.devices.empty()) {
      more = true;
      if (!bound || part.devices.back().first < *bound) bound = part.devices.back().first;
    }
    all.insert(all.end(), part.devices.begin(), part.devices.end());
  }
  std::sort(all.begin(), all.end());  // the parts' partitions, so their devices, are disjoint
  std::string body = "{\"devices\":[";
  std::size_t listed = 0;
  for (; listed < all.size() && listed < limit && (!bound || all[listed].first <= *bound) &&
         (listed == 0 || body.size() < limits.max_page_bytes);
       ++listed) {
    if (listed > 0) body.push_back(',');
    body.append(all[listed].second);
  }
  body.push_back(']');
  if (listed < all.size() || more) {
    body.append(",\"nextCursor\":\"").append(EncodeDeviceCursor(all[listed - 1].first)).push_back('"');
  }
  body.push_back('}');
  return JsonResponse(http::status::ok, std::move(body));
}

}  // namespace readingsd::api::native
