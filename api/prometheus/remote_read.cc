// POST /api/v1/read: the request decoded, the series selected and read, the answer encoded.
#include <snappy.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/prometheus/devices.h"
#include "api/prometheus/prometheus.h"
#include "api/prometheus/remote_read.pb.h"
#include "cluster/node_map.h"
#include "query/key_condition.h"
#include "storage/key.h"

namespace readingsd::api::prometheus {
namespace {

using prompb::Label;
using prompb::LabelMatcher;
using prompb::Query;
using prompb::QueryResult;
using prompb::ReadRequest;
using prompb::ReadResponse;
using prompb::Sample;
using prompb::TimeSeries;

constexpr std::string_view kDeviceLabel = "device";
constexpr std::string_view kAttributeLabel = "attribute";
constexpr std::string_view kNameLabel = "__name__";

// The answer: `response` encoded and compressed.
http::Response Encoded(const ReadResponse& response);

http::Response TextResponse(http::status status, std::string body) {
  http::Response res{status, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

MatchType TypeOf(LabelMatcher::Type type) {
  switch (type) {
    case LabelMatcher::NEQ: return MatchType::kNotEqual;
    case LabelMatcher::RE: return MatchType::kRegex;
    case LabelMatcher::NRE: return MatchType::kNotRegex;
    default: return MatchType::kEqual;
  }
}

// An attribute as a series name, decided once per query for every attribute name met.
struct SeriesName {
  std::string metric;
  bool renamed = false;
  bool selected = false;  // by every matcher on a label other than device
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using NameEntry = std::pair<const std::string, SeriesName>;

// One series being filled: a device's attribute.
struct Series {
  std::string device_id;
  const NameEntry* name;  // in Selection's names, which never move
  TimeSeries series;      // its samples; the labels are added once sorted

  std::string_view attribute_label() const { return name->second.renamed ? name->first : std::string_view(); }
};

// The caps on the answer's size (the scan cap is each node's).
Status CheckAnswerCaps(const RemoteReadLimits& limits, std::size_t series, std::size_t samples) {
  if (samples > limits.max_samples) {
    return Status::InvalidArgument("max samples: the request selects more than " +
                                   std::to_string(limits.max_samples) + " samples; narrow the time range");
  }
  if (series > limits.max_series) {
    return Status::InvalidArgument("max series: the request selects more than " + std::to_string(limits.max_series) +
                                   " series; narrow the matchers");
  }
  return Status::OK();
}

// What one request selects and has read so far, across its queries (the caps are per request).
class Selection {
 public:
  explicit Selection(const RemoteReadLimits& limits) : limits_(limits) {}

  // The query's series of `device_id` read into `series` (appended); InvalidArgument past a cap.
  Status ReadDevice(const query::ReadContext& read, const SeriesQuery& query, const std::string& device_id,
                    std::vector<Series>* series);
  // The series name of an attribute in `query`; nullptr when the query does not select it.
  const NameEntry* Name(const SeriesQuery& query, std::string_view attribute);

 private:
  const RemoteReadLimits& limits_;
  const SeriesQuery* names_query_ = nullptr;  // the query names_ was decided for
  std::unordered_map<std::string, SeriesName, StringHash, std::equal_to<>> names_;
  std::size_t series_ = 0, samples_ = 0, scanned_ = 0;
};

const NameEntry* Selection::Name(const SeriesQuery& query, std::string_view attribute) {
  if (names_query_ != &query) {
    names_.clear();
    names_query_ = &query;
  }
  auto it = names_.find(attribute);
  if (it == names_.end()) {
    SeriesName name;
    name.metric = MetricNameOf(attribute, &name.renamed);
    name.selected = std::ranges::all_of(query.matchers, [&](const Matcher& m) {
      if (m.name() == kDeviceLabel) return true;  // decided per device
      if (m.name() == kNameLabel) return m.Matches(name.metric);
      if (m.name() == kAttributeLabel) return m.Matches(name.renamed ? attribute : std::string_view());
      return m.Matches("");
    });
    it = names_.emplace(std::string(attribute), std::move(name)).first;
  }
  return it->second.selected ? &*it : nullptr;
}

// Turns a device's readings into samples of its series while Query reads them.
class SampleSink final : public query::ItemSink {
 public:
  SampleSink(Selection* selection, const SeriesQuery& query, const std::string& device_id,
             std::vector<Series>* series, std::size_t max_samples)
      : selection_(selection), query_(query), device_id_(device_id), series_(series), first_(series->size()),
        max_samples_(max_samples) {}

  void Add(std::string_view sort_key, std::string_view, std::span<const storage::AttributeView> attributes) override {
    const int64_t ms = storage::SortKeyMillis(sort_key);
    // A range beyond years 0000-9999 was clamped to the first or last sort key, whose reading
    // may then lie outside it.
    if (ms < query_.start_ms || ms > query_.end_ms) return;
    for (const storage::AttributeView& attribute : attributes) {
      double value = 0;
      if (const auto* n = std::get_if<storage::NumberView>(&attribute.value)) {
        value = n->ToDouble();
      } else if (const auto* b = std::get_if<bool>(&attribute.value)) {
        value = *b ? 1 : 0;
      } else {
        continue;  // strings are no samples
      }
      const NameEntry* name = selection_->Name(query_, attribute.name);
      if (!name) continue;
      TimeSeries& ts = Find(name)->series;
      if (ts.samples_size() > 0 && ts.samples(ts.samples_size() - 1).timestamp() == ms) {
        ts.mutable_samples(ts.samples_size() - 1)->set_value(value);  // the later reading of one millisecond wins
        continue;
      }
      if (samples_ == max_samples_) {
        over_cap_ = true;
        continue;
      }
      ++samples_;
      Sample* sample = ts.add_samples();
      sample->set_timestamp(ms);
      sample->set_value(value);
    }
  }

  std::size_t samples() const { return samples_; }
  bool over_cap() const { return over_cap_; }

 private:
  // The device's series of `name`, made on first use (a device has few attributes).
  Series* Find(const NameEntry* name) {
    for (std::size_t i = first_; i < series_->size(); ++i) {
      if ((*series_)[i].name == name) return &(*series_)[i];
    }
    return &series_->emplace_back(Series{device_id_, name, {}});
  }

  Selection* const selection_;
  const SeriesQuery& query_;
  const std::string& device_id_;
  std::vector<Series>* const series_;
  const std::size_t first_;
  const std::size_t max_samples_;
  std::size_t samples_ = 0;
  bool over_cap_ = false;
};

Status Selection::ReadDevice(const query::ReadContext& read, const SeriesQuery& query, const std::string& device_id,
                             std::vector<Series>* series) {
  query::QueryRequest request;
  if (Status s = query::MakeKeyCondition(device_id, query::SortKeyOp::kBetween,
                                         storage::SortKeyAtMillis(query.start_ms, false),
                                         storage::SortKeyAtMillis(query.end_ms, true), &request.key);
      !s.ok()) {
    return s;
  }
  request.limit = limits_.max_scanned - scanned_ + 1;  // one past the cap tells it was passed
  request.max_page_bytes = 0;                          // bounded by the limit
  const std::size_t before = series->size();
  SampleSink sink(this, query, device_id, series, limits_.max_samples - samples_);
  query::QueryResult result;
  const Status s = query::Query(read.store, request, &result, &sink);
  read.ReportPartitionRead(device_id, result.scanned_count, result.scanned_bytes);
  if (!s.ok()) return s;
  scanned_ += result.scanned_count;
  samples_ += sink.samples();
  series_ += series->size() - before;
  if (scanned_ > limits_.max_scanned) {
    return Status::InvalidArgument("max scan: the request reads more than " + std::to_string(limits_.max_scanned) +
                                   " readings; narrow the time range or the device matchers");
  }
  return CheckAnswerCaps(limits_, series_, sink.over_cap() ? limits_.max_samples + 1 : samples_);
}

// The devices the query's device matchers select (of `share` only, when set), in id order.
Status SelectDevices(const storage::Store& store, const SeriesQuery& query,
                     const std::optional<cluster::PartitionSet>& share, std::vector<std::string>* devices) {
  std::string lower, upper;
  for (const Matcher& m : query.matchers) {
    std::string l, u;
    if (m.name() != kDeviceLabel || !m.Bounds(&l, &u)) continue;
    if (lower.empty() || l > lower) lower = l;
    if (upper.empty() || u < upper) upper = u;
  }
  if (!upper.empty() && lower > upper) return Status::OK();
  const auto selected = [&](std::string_view device_id) {
    return (!share || share->Holds(device_id)) &&
           std::ranges::all_of(query.matchers,
                               [&](const Matcher& m) { return m.name() != kDeviceLabel || m.Matches(device_id); });
  };
  if (!lower.empty() && lower == upper) {  // one device named: no walk over the others
    if (storage::ValidateDeviceId(lower).ok() && selected(lower)) devices->push_back(lower);
    return Status::OK();
  }
  return ForEachDevice(store, lower, upper, [&](std::string_view device_id) {
    if (selected(device_id)) devices->emplace_back(device_id);
    return true;
  });
}

void AddLabel(TimeSeries* series, std::string_view name, std::string_view value) {
  Label* label = series->add_labels();
  label->set_name(std::string(name));
  label->set_value(std::string(value));
}

// The query's series, sorted by their labels as Prometheus sorts them.
Status ReadQuery(const query::ReadContext& read, const SeriesQuery& query,
                 const std::optional<cluster::PartitionSet>& share, Selection* selection, QueryResult* out) {
  std::vector<std::string> devices;
  if (Status s = SelectDevices(read.store, query, share, &devices); !s.ok()) return s;
  std::vector<Series> series;
  for (const std::string& device_id : devices) {
    if (Status s = selection->ReadDevice(read, query, device_id, &series); !s.ok()) return s;
  }
  // As Prometheus orders label sets, label by label: the labels are __name__, then attribute
  // (renamed attributes only), then device, and "attribute" < "device".
  const auto labels = [](const Series& s) {
    return std::tuple<std::string_view, bool, std::string_view, std::string_view>(
        s.name->second.metric, !s.name->second.renamed, s.attribute_label(), s.device_id);
  };
  std::ranges::sort(series, [&](const Series& a, const Series& b) { return labels(a) < labels(b); });
  for (Series& s : series) {
    AddLabel(&s.series, kNameLabel, s.name->second.metric);
    if (s.name->second.renamed) AddLabel(&s.series, kAttributeLabel, s.name->first);
    AddLabel(&s.series, kDeviceLabel, s.device_id);
    out->mutable_timeseries()->Add(std::move(s.series));
  }
  return Status::OK();
}

}  // namespace

Status DecodeReadRequest(std::string_view body, const RemoteReadLimits& limits, std::vector<SeriesQuery>* queries,
                         bool* too_large) {
  *too_large = false;
  queries->clear();
  std::size_t size = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &size)) {
    return Status::InvalidArgument("the body is not snappy-compressed (block format)");
  }
  if (size > limits.max_request_bytes) {
    *too_large = true;
    return Status::InvalidArgument("the request decompresses to " + std::to_string(size) + " bytes, more than " +
                                   std::to_string(limits.max_request_bytes));
  }
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw)) {
    return Status::InvalidArgument("the body is not valid snappy-compressed data");
  }
  ReadRequest request;
  if (!request.ParseFromString(raw)) return Status::InvalidArgument("the body is not a protobuf ReadRequest");
  if (!request.accepted_response_types().empty() &&
      std::ranges::find(request.accepted_response_types(), ReadRequest::SAMPLES) ==
          request.accepted_response_types().end()) {
    return Status::InvalidArgument("only the SAMPLES response type is served; accept it in accepted_response_types");
  }
  if (static_cast<std::size_t>(request.queries_size()) > limits.max_queries) {
    return Status::InvalidArgument("max queries: more than " + std::to_string(limits.max_queries) +
                                   " queries in one request");
  }
  for (const Query& q : request.queries()) {
    if (static_cast<std::size_t>(q.matchers_size()) > limits.max_matchers) {
      return Status::InvalidArgument("max matchers: more than " + std::to_string(limits.max_matchers) +
                                     " matchers in one query");
    }
    if (q.start_timestamp_ms() > q.end_timestamp_ms()) {
      return Status::InvalidArgument("a query's start_timestamp_ms is after its end_timestamp_ms");
    }
    SeriesQuery& query = queries->emplace_back();
    query.start_ms = q.start_timestamp_ms();
    query.end_ms = q.end_timestamp_ms();
    for (const LabelMatcher& m : q.matchers()) {
      if (!LabelMatcher::Type_IsValid(m.type())) {
        return Status::InvalidArgument("a matcher's type is " + std::to_string(m.type()) + ", not one of = != =~ !~");
      }
      Matcher& matcher = query.matchers.emplace_back();
      if (Status s = Matcher::Make(TypeOf(m.type()), m.name(), m.value(), &matcher); !s.ok()) return s;
    }
  }
  return Status::OK();
}

http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint) {
  *endpoint = "prometheus.read";
  if (request.method() != http::verb::post) {
    http::Response res = TextResponse(http::status::method_not_allowed, "remote read takes POST\n");
    res.set(http::field::allow, "POST");
    return res;
  }
  std::vector<SeriesQuery> queries;
  bool too_large = false;
  if (Status s = DecodeReadRequest(request.body(), context.limits, &queries, &too_large); !s.ok()) {
    return TextResponse(too_large ? http::status::payload_too_large : http::status::bad_request, s.message() + "\n");
  }
  // partitions=…&partition_count=… on the target: a node's share of a request merged across nodes.
  std::optional<cluster::PartitionSet> share;
  if (Status s = cluster::PartitionSetOf(http::ToStd(request.target()), &share); !s.ok()) {
    return TextResponse(http::status::bad_request, s.message() + "\n");
  }
  ReadResponse response;
  Selection selection(context.limits);
  for (const SeriesQuery& query : queries) {
    if (Status s = ReadQuery(context.read, query, share, &selection, response.add_results()); !s.ok()) {
      return TextResponse(s.IsInvalidArgument() ? http::status::bad_request : http::status::internal_server_error,
                          s.message() + "\n");
    }
  }
  return Encoded(response);
}

http::Response Merge(const Context& context, std::span<const std::string> shares) {
  ReadResponse merged;
  std::size_t series = 0, samples = 0;
  for (const std::string& share : shares) {
    std::string raw;
    ReadResponse part;
    if (!snappy::Uncompress(share.data(), share.size(), &raw) || !part.ParseFromString(raw) ||
        (&share != &shares.front() && part.results_size() != merged.results_size())) {
      return TextResponse(http::status::bad_gateway, "a node's share of the remote read is not one\n");
    }
    if (&share == &shares.front()) {
      merged = std::move(part);
    } else {
      for (int i = 0; i < part.results_size(); ++i) {
        auto* from = part.mutable_results(i)->mutable_timeseries();
        auto* to = merged.mutable_results(i)->mutable_timeseries();
        while (!from->empty()) to->AddAllocated(from->ReleaseLast());
      }
    }
  }
  // The shares hold different devices, so different series: the union, in Prometheus' order.
  for (QueryResult& result : *merged.mutable_results()) {
    auto* all = result.mutable_timeseries();
    std::sort(all->pointer_begin(), all->pointer_end(), [](const TimeSeries* a, const TimeSeries* b) {
      return std::lexicographical_compare(
          a->labels().begin(), a->labels().end(), b->labels().begin(), b->labels().end(),
          [](const Label& x, const Label& y) { return std::tie(x.name(), x.value()) < std::tie(y.name(), y.value()); });
    });
    for (const TimeSeries& ts : *all) samples += static_cast<std::size_t>(ts.samples_size());
    series += static_cast<std::size_t>(all->size());
  }
  if (Status s = CheckAnswerCaps(context.limits, series, samples); !s.ok()) {
    return TextResponse(http::status::bad_request, s.message() + "\n");
  }
  return Encoded(merged);
}

namespace {

http::Response Encoded(const ReadResponse& response) {
  const std::string raw = response.SerializeAsString();
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  http::Response res{http::status::ok, 11};
  res.set(http::field::content_type, "application/x-protobuf");
  res.set(http::field::content_encoding, "snappy");
  res.body() = std::move(compressed);
  return res;
}

}  // namespace

}  // namespace readingsd::api::prometheus
