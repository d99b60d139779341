#include "api/native/index.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "expr/expr.h"
#include "query/index_query.h"
#include "query/index_share.h"
#include "storage/index.h"
#include "storage/key.h"

namespace readingsd::api::native {
namespace {

constexpr std::size_t kMaxBuckets = 10000;
constexpr std::string_view kSortParams[] = {"gt", "ge", "lt", "le", "eq"};

// A cursor: the index's name, SEP, then the partition value and the entry's tail as stored
// (storage/key.h's value(...) is self-delimiting), so it cannot resume another index.
std::string EncodeIndexCursor(std::string_view index, const query::IndexPosition& at) {
  std::string raw(index);
  raw += storage::kSeparator;
  storage::AppendIndexValue({false, at.value}, &raw);
  return Base64UrlEncode(raw + at.tail);
}

Status DecodeIndexCursor(std::string_view index, std::string_view cursor, query::IndexPosition* at) {
  const Status bad = Status::InvalidArgument("cursor: not a cursor returned by this API for index " + Quoted(index));
  std::string raw;
  if (!Base64UrlDecode(cursor, &raw)) return bad;
  std::string_view rest = raw;
  if (!rest.starts_with(std::string(index) + storage::kSeparator)) return bad;
  rest.remove_prefix(index.size() + 1);
  storage::IndexValue value;
  if (!storage::ReadIndexValue(&rest, &value) || value.is_number) return bad;
  *at = {std::move(value.text), std::string(rest)};
  return Status::OK();
}

// The sort condition of gt, ge, lt, le, eq: one of them, or ge with le.
Status SortCondition(const storage::IndexSpec& spec, const Params& params, query::IndexSortCondition* out) {
  std::vector<std::pair<std::string_view, const std::string*>> given;
  for (std::string_view name : kSortParams) {
    if (const std::string* v = Find(params, name)) given.emplace_back(name, v);
  }
  if (given.empty()) return Status::OK();
  auto value = [&spec](std::string_view name, const std::string& text, storage::IndexValue* v) -> Status {
    if (spec.sort == storage::IndexSort::kNumber) {
      v->is_number = true;
      Status s = storage::ParseNumber(text, &v->text);
      return s.ok() ? s : Named(name, s);
    }
    v->text = text;
    if (spec.sort == storage::IndexSort::kReadingTs) {
      Status s = storage::NormalizeBound(text, &v->text);
      return s.ok() ? s : Named(name, s);
    }
    return Status::OK();
  };
  if (given.size() == 2 && given[0].first == "ge" && given[1].first == "le") {
    out->op = query::SortKeyOp::kBetween;
    if (Status s = value("ge", *given[0].second, &out->a); !s.ok()) return s;
    return value("le", *given[1].second, &out->b);
  }
  if (given.size() > 1) return Status::InvalidArgument("gt, ge, lt, le, eq: give one of them, or ge with le");
  const std::string_view name = given[0].first;
  out->op = name == "gt" ? query::SortKeyOp::kGt
            : name == "ge" ? query::SortKeyOp::kGe
            : name == "lt" ? query::SortKeyOp::kLt
            : name == "le" ? query::SortKeyOp::kLe
                           : query::SortKeyOp::kEq;
  return value(name, *given[0].second, &out->a);
}

// The buckets (readingHour / readingDay values) of [from, to], in time order.
Status Buckets(const storage::IndexSpec& spec, const std::string& from, const std::string& to,
               std::vector<std::string>* out) {
  const int64_t step = spec.partition == storage::IndexPartition::kReadingDay ? 86400 : 3600;
  const int64_t first = storage::SortKeyWholeSeconds(from) / step * step;
  const int64_t last = storage::SortKeyWholeSeconds(to);
  if ((last - first) / step >= static_cast<int64_t>(kMaxBuckets)) {
    return Status::InvalidArgument("from, to: the window spans more than " + std::to_string(kMaxBuckets) + " " +
                                   std::string(spec.PartitionName()) + " buckets");
  }
  std::string sort_key;
  for (int64_t t = first; t <= last; t += step) {
    if (storage::SortKeyAtWholeSeconds(t, &sort_key)) out->push_back(storage::TimeBucket(spec.partition, sort_key));
  }
  return Status::OK();
}

// What follows a page's items in either format: its counts, its cursor while more follow, '}'.
void AppendIndexPageEnd(const storage::IndexSpec& spec, const query::IndexQueryResult& result, std::string* body) {
  body->append(",\"count\":").append(std::to_string(result.count));
  body->append(",\"scannedCount\":").append(std::to_string(result.scanned_count));
  if (result.last_evaluated) {
    body->append(",\"nextCursor\":\"").append(EncodeIndexCursor(spec.name, *result.last_evaluated)).push_back('"');
  }
  body->push_back('}');
}

// Room reserved for a page of `limit` items, so that a long page is not copied over as it grows
// (at most `most` items' worth: a page also ends at max_page_bytes).
std::size_t ExpectedItems(const query::IndexQueryRequest& request, std::size_t most = 1000) {
  return std::min<std::size_t>(request.limit == 0 ? 1000 : request.limit, most);
}

// A columns page reserves more: about 100 bytes an item, in buffers that are never zero-filled.
constexpr std::size_t kMostColumnsItems = 10000;

// format=rows: {"index":…,"items":[…],"count":…,"scannedCount":…,"nextCursor":…}.
class IndexPage final : public query::IndexItemSink {
 public:
  IndexPage(const storage::IndexSpec& spec, const Projection& projection, std::size_t expected_items)
      : spec_(spec), projection_(projection) {
    body_.reserve(128 + expected_items * kItemBytes);
    body_.append("{\"index\":\"").append(spec.name).append("\",\"items\":[");
  }
  void Add(const query::IndexItem& item) override {
    if (!first_) body_.push_back(',');
    first_ = false;
    AppendItem(item.device_id, item.sort_key, Project(item.attributes, projection_, &kept_), &body_);
    if (spec_.partition != storage::IndexPartition::kAttribute) {
      body_.pop_back();  // '}'
      body_.append(",\"").append(spec_.PartitionName()).append("\":\"").append(item.partition).append("\"}");
    }
  }
  std::string Finish(const query::IndexQueryResult& result) && {
    body_.push_back(']');
    AppendIndexPageEnd(spec_, result, &body_);
    return std::move(body_);
  }

 private:
  static constexpr std::size_t kItemBytes = 192;  // room reserved per item (its partition value included)

  const storage::IndexSpec& spec_;
  const Projection& projection_;
  std::vector<storage::AttributeView> kept_;
  std::string body_;
  bool first_ = true;
};

// format=columns: the page IndexPage renders, transposed (request.h Columns), its device ids a
// column of their own: {"index":…,"deviceId":[…],"readingTs":[…],"columns":{…},"count":…,…};
// readingHour / readingDay is a column where the rows carry it as an attribute.
class IndexColumnsPage final : public query::IndexItemSink {
 public:
  IndexColumnsPage(const storage::IndexSpec& spec, const Projection& projection, std::size_t expected_items)
      : spec_(spec), projection_(projection), columns_(/*part=*/false, expected_items) {
    device_ids_.reserve(expected_items * 16);
    timestamps_.reserve(expected_items * (storage::kSortKeyLength + 3));
  }
  void Add(const query::IndexItem& item) override {
    const bool first = columns_.rows() == 0;
    device_ids_.AppendQuotedItem(item.device_id, first);
    timestamps_.AppendQuotedItem(item.sort_key, first);
    const std::span<const storage::AttributeView> attributes = Project(item.attributes, projection_, &kept_);
    if (spec_.partition == storage::IndexPartition::kAttribute) {
      columns_.AddRow(attributes);
      return;
    }
    const storage::AttributeView partition{spec_.PartitionName(), item.partition};
    columns_.AddRow(attributes, &partition);
  }
  std::string Finish(const query::IndexQueryResult& result) && {
    std::string body;
    body.reserve(128 + spec_.name.size() + device_ids_.size() + timestamps_.size() + columns_.MaxSize());
    body.append("{\"index\":\"").append(spec_.name).append("\",\"deviceId\":[").append(device_ids_.view());
    body.append("],\"readingTs\":[").append(timestamps_.view()).append("],");
    columns_.AppendTo(&body);
    AppendIndexPageEnd(spec_, result, &body);
    return body;
  }

 private:
  const storage::IndexSpec& spec_;
  const Projection& projection_;
  std::vector<storage::AttributeView> kept_;  // reused for every item
  TextBuffer device_ids_, timestamps_;        // comma-separated
  Columns columns_;
};

Status ParseIndexRequest(const Context& context, const storage::IndexSpec& spec, const Params& params,
                         query::IndexQueryRequest* request, std::unique_ptr<query::FilterExpr>* filter, bool* empty) {
  request->index = spec.name;
  // The window, as /readings takes it (a placeholder device: only the bounds are wanted).
  query::KeyCondition window;
  if (Status s = NativeKeyCondition("fleet", params, &window, empty); !s.ok()) return s;
  const bool has_lower = window.op == query::SortKeyOp::kGe || window.op == query::SortKeyOp::kBetween;
  const bool has_upper = window.op == query::SortKeyOp::kLe || window.op == query::SortKeyOp::kBetween;
  if (window.op == query::SortKeyOp::kBeginsWith) return Status::InvalidArgument("begins_with: not taken here");
  const std::string from = has_lower ? window.a : "";
  const std::string to = window.op == query::SortKeyOp::kBetween ? window.b : has_upper ? window.a : "";
  if (Status s = SortCondition(spec, params, &request->sort); !s.ok()) return s;
  const std::string* value = Find(params, "value");
  if (spec.partition == storage::IndexPartition::kAttribute) {
    if (!value || value->empty()) {
      return Status::InvalidArgument("value: required, the " + std::string(spec.PartitionName()) + " to read");
    }
    request->values = {*value};
  } else if (value) {
    request->values = {*value};
  } else if (!*empty) {
    if (from.empty() || to.empty()) {
      return Status::InvalidArgument("from, to: index " + spec.name + " is partitioned by " +
                                     std::string(spec.PartitionName()) + ": give both ends of the window (or value)");
    }
    if (Status s = Buckets(spec, from, to, &request->values); !s.ok()) return s;
  }
  request->readings_from = from;
  request->readings_to = to;
  if (Status s = CountParam(params, "limit", kDefaultLimit, context.read.limits.max_limit, &request->limit); !s.ok()) {
    return s;
  }
  if (const std::string* order = Find(params, "order")) {
    if (*order != "asc" && *order != "desc") return Status::InvalidArgument("order: expected asc or desc, got " + Quoted(*order));
    request->scan_forward = *order == "asc";
  }
  if (!request->scan_forward) std::reverse(request->values.begin(), request->values.end());
  if (const std::string* cursor = Find(params, "cursor")) {
    request->exclusive_start.emplace();
    if (Status s = DecodeIndexCursor(spec.name, *cursor, &*request->exclusive_start); !s.ok()) return s;
  }
  if (const std::string* text = Find(params, "filter")) {
    if (Status s = expr::ParseNativeFilter(*text, filter); !s.ok()) return s;
    request->filter = filter->get();
  }
  request->max_page_bytes = context.read.limits.max_page_bytes;
  return Status::OK();
}

// The page from this node's store, or with `shares` from the nodes' shares of it.
template <typename Page>
http::Response RunIndexQuery(const Context& context, const storage::IndexSpec& spec,
                             const query::IndexQueryRequest& request, bool empty,
                             std::optional<std::span<const std::string>> shares, Page& page) {
  query::IndexQueryResult result;
  if (!empty) {
    Status s = shares ? query::MergeIndexShares(request, *shares, &page, &result)
                      : query::IndexQuery(context.read.store, request, &page, &result);
    for (const query::IndexPartitionRead& read : result.partitions_read) {
      context.read.ReportIndexPartitionRead(spec.name, read.partition, read.items, read.bytes);
    }
    if (!s.ok()) return ErrorFromStatus(s);
  }
  return JsonResponse(http::status::ok, std::move(page).Finish(result));
}

}  // namespace

http::Response IndexReadings(const Context& context, std::string_view index, const Params& params,
                             std::optional<std::span<const std::string>> shares) {
  storage::IndexSpec spec;
  if (Status s = query::FindIndex(context.read.store, index, &spec); !s.ok()) {
    if (s.code() == Status::Code::kUnavailable) return Error(http::status::service_unavailable, "IndexNotReady", s.message());
    return Error(http::status::not_found, "NotFound", "no index " + Quoted(index) + " is declared ([[index]] in the config)");
  }
  query::IndexQueryRequest request;
  std::unique_ptr<query::FilterExpr> filter;
  bool empty = false;
  Projection projection;
  if (Status s = ParseIndexRequest(context, spec, params, &request, &filter, &empty); !s.ok()) return ErrorFromStatus(s);
  if (Status s = ProjectionParam(params, &projection); !s.ok()) return ErrorFromStatus(s);
  Format format;
  if (Status s = FormatParam(params, /*csv=*/false, &format); !s.ok()) return ErrorFromStatus(s);
  std::optional<cluster::PartitionSet> share;
  if (Status s = PartitionSetParam(params, &share); !s.ok()) return ErrorFromStatus(s);
  if (share) {
    request.device_wanted = [&share](std::string_view device_id) { return share->Holds(device_id); };
    query::IndexShareWriter writer;
    http::Response res = RunIndexQuery(context, spec, request, empty, std::nullopt, writer);
    if (res.result() == http::status::ok) res.set(http::field::content_type, "application/octet-stream");
    return res;
  }
  if (format == Format::kColumns) {
    IndexColumnsPage page(spec, projection, ExpectedItems(request, kMostColumnsItems));
    return RunIndexQuery(context, spec, request, empty, shares, page);
  }
  IndexPage page(spec, projection, ExpectedItems(request));
  return RunIndexQuery(context, spec, request, empty, shares, page);
}

http::Response FleetReadings(const Context& context, const Params& params) {
  // The attribute the question is about: the first one its filter names, else a placeholder.
  std::string attribute = "temperature";
  if (const std::string* text = Find(params, "filter")) {
    std::unique_ptr<query::FilterExpr> filter;
    if (Status s = expr::ParseNativeFilter(*text, &filter); !s.ok()) return ErrorFromStatus(s);
    for (const query::FilterExpr* f = filter.get(); f != nullptr; f = f->children.empty() ? nullptr : f->children[0].get()) {
      if (!f->operands.empty() && f->operands[0].is_attribute) {
        attribute = f->operands[0].attribute;
        break;
      }
    }
  }
  for (const storage::IndexStatus& index : context.read.store.Indexes()) {
    if (index.spec.partition != storage::IndexPartition::kAttribute && index.spec.SortName() == attribute) {
      return Error(http::status::bad_request, "IndexRequired",
                   "a question across every device is answered through an index, never by reading every "
                   "partition: use GET /v1/indexes/" + index.spec.name + "/readings");
    }
  }
  return Error(http::status::bad_request, "IndexRequired",
               "a question across every device needs a secondary index, never a read of every partition: declare "
               "[[index]] name = \"" + attribute + "_by_hour\", partition = \"readingHour\", sort = \"" + attribute +
               "\" in the config and ask GET /v1/indexes/" + attribute + "_by_hour/readings");
}

}  // namespace readingsd::api::native
