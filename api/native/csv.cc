#include "api/native/csv.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "base/csv.h"
#include "storage/reading.h"

namespace readingsd::api::native {
namespace {

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

}  // namespace

http::Response CsvPage(const Context& context, const query::QueryRequest& request, const Projection& projection,
                       bool empty_range) {
  const std::string& device_id = request.key.device_id;
  query::QueryResult result;
  if (!empty_range) {
    if (Status s = query::Query(context.read.store, request, &result); !s.ok()) return ErrorFromStatus(s);
  }
  context.read.ReportPartitionRead(device_id, result.scanned_count, result.scanned_bytes);

  // The header precedes every row, so each item is decoded first (views into result.items) and
  // the columns gathered; then the rows are written.
  std::vector<std::string_view> columns;
  std::unordered_map<std::string_view, std::size_t> column_of;
  if (projection) {
    for (const std::string& name : *projection) {
      column_of.emplace(name, columns.size());
      columns.push_back(name);
    }
  }
  std::vector<std::vector<storage::AttributeView>> rows(result.items.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (Status s = storage::ReadAttributes(result.items[i].encoded_attributes, &rows[i]); !s.ok()) {
      return ErrorFromStatus(s);
    }
    if (projection) continue;
    for (const storage::AttributeView& a : rows[i]) {
      if (!column_of.emplace(a.name, columns.size()).second) continue;
      if (columns.size() == kMaxCsvColumns) {
        return ErrorFromStatus(Status::InvalidArgument(
            "format: the readings of this page hold more than " + std::to_string(kMaxCsvColumns) +
            " distinct attributes, too many columns for csv: name the columns with attributes="));
      }
      columns.push_back(a.name);
    }
  }

  std::string body = "deviceId,readingTs";
  for (std::string_view name : columns) {
    body.push_back(',');
    AppendCsvField(name, &body);
  }
  body.append("\r\n");
  std::vector<const storage::AttributeView*> cells;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    cells.assign(columns.size(), nullptr);
    for (const storage::AttributeView& a : rows[i]) {
      if (auto it = column_of.find(a.name); it != column_of.end()) cells[it->second] = &a;
    }
    AppendCsvField(device_id, &body);
    body.push_back(',');
    body.append(result.items[i].sort_key);
    for (const storage::AttributeView* cell : cells) {
      body.push_back(',');
      if (cell) AppendValue(*cell, &body);
    }
    body.append("\r\n");
  }

  http::Response res{http::status::ok, 11};
  res.set(http::field::content_type, "text/csv; charset=utf-8; header=present");
  res.set("X-Count", std::to_string(result.count));
  res.set("X-Scanned-Count", std::to_string(result.scanned_count));
  if (result.last_evaluated_sort_key) res.set("X-Next-Cursor", EncodeCursor(device_id, *result.last_evaluated_sort_key));
  res.body() = std::move(body);
  return res;
}

}  // namespace readingsd::api::native
