#include "api/native/csv.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/csv.h"
#include "storage/reading.h"

namespace readingsd::api::native {
namespace {

// A part of the body is cut after the row that takes it past this size: small enough that
// neither the rendered page nor its compressed copy is ever held whole, large enough that a
// chunk's framing and zlib's flush marker are noise.
constexpr std::size_t kPartBytes = 32u << 10;

void AppendValue(const storage::AttributeView& attribute, std::string* out) {
  if (const auto* n = std::get_if<storage::NumberView>(&attribute.value)) {
    n->AppendTo(out);
  } else if (const auto* b = std::get_if<bool>(&attribute.value)) {
    out->append(*b ? "true" : "false");
  } else if (const auto s = std::get<std::string_view>(attribute.value); s.empty()) {
    out->append("\"\"");  // an empty string, told apart from a missing attribute's empty cell
  } else {
    AppendCsvField(s, out);
  }
}

// A page read whole as stored (result_.items, bounded by limit and max_page_bytes as a JSON
// page is), which fixes its counts and cursor before the header is sent; its text is rendered
// part by part while the server sends it, never whole. Touched by one thread at a time.
class CsvRows final : public http::BodyStream {
 public:
  CsvRows(std::string device_id, Projection projection)
      : device_id_(std::move(device_id)), projection_(std::move(projection)) {}

  // Reads the page and names its columns; InvalidArgument for too many.
  Status Read(const Context& context, const query::QueryRequest& request, bool empty_range) {
    if (!empty_range) {
      if (Status s = query::Query(context.read.store, request, &result_); !s.ok()) return s;
    }
    context.read.ReportPartitionRead(device_id_, result_.scanned_count, result_.scanned_bytes);
    if (projection_) {
      for (const std::string& name : *projection_) AddColumn(name);
      return Status::OK();
    }
    // The header precedes every row: the union of the page's names is gathered first.
    for (std::size_t i = 0; i < result_.items.size(); ++i) {
      if (Status s = storage::ReadAttributes(result_.items[i].encoded_attributes, &attributes_); !s.ok()) return s;
      for (const storage::AttributeView& a : attributes_) {
        if (column_of_.contains(a.name)) continue;
        if (columns_.size() == kMaxCsvColumns) {
          return Status::InvalidArgument(
              "format: the readings of this page hold more than " + std::to_string(kMaxCsvColumns) +
              " distinct attributes, too many columns for csv: name the columns with attributes=");
        }
        AddColumn(a.name);  // a view into result_.items, which stays put
      }
    }
    return Status::OK();
  }

  const query::QueryResult& result() const { return result_; }

  Status Next(std::string* out, bool* done) override {
    const std::size_t begin = out->size();
    if (!header_sent_) {
      header_sent_ = true;
      out->append("deviceId,readingTs");
      for (std::string_view name : columns_) {
        out->push_back(',');
        AppendCsvField(name, out);
      }
      out->append("\r\n");
    }
    for (; next_row_ < result_.items.size() && out->size() - begin < kPartBytes; ++next_row_) {
      const query::Items::Item item = result_.items[next_row_];
      if (Status s = storage::ReadAttributes(item.encoded_attributes, &attributes_); !s.ok()) return s;
      cells_.assign(columns_.size(), nullptr);
      for (const storage::AttributeView& a : attributes_) {
        if (auto it = column_of_.find(a.name); it != column_of_.end()) cells_[it->second] = &a;
      }
      AppendCsvField(device_id_, out);
      out->push_back(',');
      out->append(item.sort_key);
      for (const storage::AttributeView* cell : cells_) {
        out->push_back(',');
        if (cell) AppendValue(*cell, out);
      }
      out->append("\r\n");
    }
    *done = next_row_ == result_.items.size();
    return Status::OK();
  }

 private:
  void AddColumn(std::string_view name) {
    if (column_of_.emplace(name, columns_.size()).second) columns_.push_back(name);
  }

  const std::string device_id_;
  const Projection projection_;  // columns_ may point into it
  query::QueryResult result_;
  std::vector<std::string_view> columns_;  // into projection_ or result_.items
  std::unordered_map<std::string_view, std::size_t> column_of_;
  std::vector<storage::AttributeView> attributes_;  // the row being rendered, reused
  std::vector<const storage::AttributeView*> cells_;
  bool header_sent_ = false;
  std::size_t next_row_ = 0;
};

}  // namespace

http::Response CsvPage(const Context& context, const query::QueryRequest& request, const Projection& projection,
                       bool empty_range) {
  auto rows = std::make_unique<CsvRows>(request.key.device_id, projection);
  if (Status s = rows->Read(context, request, empty_range); !s.ok()) return ErrorFromStatus(s);
  const query::QueryResult& result = rows->result();
  http::Response res{http::status::ok, 11};
  res.set(http::field::content_type, "text/csv; charset=utf-8; header=present");
  res.set("X-Count", std::to_string(result.count));
  res.set("X-Scanned-Count", std::to_string(result.scanned_count));
  if (result.last_evaluated_sort_key) {
    res.set("X-Next-Cursor", EncodeCursor(request.key.device_id, *result.last_evaluated_sort_key));
  }
  res.stream = std::move(rows);
  return res;
}

}  // namespace readingsd::api::native
