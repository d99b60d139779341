#include "api/native/aggregate.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <utility>
#include <vector>

#include "json/dump.h"
#include "query/aggregate.h"
#include "storage/key.h"

namespace readingsd::api::native {
namespace {

using query::AggregateFn;

constexpr int64_t kMaxStepSeconds = int64_t{10000} * 86400;
constexpr std::size_t kMaxAttributes = 16;

Status StepParam(const Params& params, int64_t* seconds) {
  const std::string* text = Find(params, "step");
  if (!text) return Status::InvalidArgument("step: required, e.g. step=5m (units s, m, h, d)");
  const Status bad = Status::InvalidArgument(
      "step: expected a whole number of s, m, h or d from 1s to 10000d, e.g. 5m, got " + Quoted(*text));
  if (text->size() < 2) return bad;
  int64_t unit = 0;
  switch (text->back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return bad;
  }
  int64_t count = 0;
  const char* end = text->data() + text->size() - 1;
  auto [ptr, ec] = std::from_chars(text->data(), end, count);
  if (ec != std::errc() || ptr != end || count < 1 || count > kMaxStepSeconds / unit) return bad;
  *seconds = count * unit;
  return Status::OK();
}

Status FnParam(const Params& params, std::vector<AggregateFn>* fns) {
  const std::string* text = Find(params, "fn");
  const std::string_view list = text ? std::string_view(*text) : "avg,min,max,count";
  for (std::string_view rest = list;;) {
    const auto comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    AggregateFn fn{};
    if (!query::ParseAggregateFn(name, &fn)) {
      return Status::InvalidArgument("fn: expected a comma-separated list of " +
                                     std::string(query::AggregateFnNames()) + ", got " + Quoted(name));
    }
    if (std::ranges::find(*fns, fn) != fns->end()) {
      return Status::InvalidArgument("fn: " + Quoted(name) + " is listed twice");
    }
    fns->push_back(fn);
    if (comma == std::string_view::npos) return Status::OK();
    rest.remove_prefix(comma + 1);
  }
}

Status AttributesParam(const Params& params, std::vector<std::string>* attributes) {
  Projection list;
  if (Status s = ProjectionParam(params, &list); !s.ok()) return s;
  if (!list) return Status::InvalidArgument("attributes: required, e.g. attributes=temperature,humidity");
  if (list->size() > kMaxAttributes) {
    return Status::InvalidArgument("attributes: at most " + std::to_string(kMaxAttributes) +
                                   " in one aggregate, got " + std::to_string(list->size()));
  }
  for (const std::string& name : *list) {
    if (name == "start" || name == "count") {
      return Status::InvalidArgument("attributes: " + Quoted(name) +
                                     " would clash with the bucket's own field of that name");
    }
  }
  *attributes = std::move(*list);
  return Status::OK();
}

void AppendValue(const storage::AttributeValue& value, std::string* out) {
  if (const auto* n = std::get_if<storage::Number>(&value)) {
    out->append(n->text);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out->append(*b ? "true" : "false");
  } else {
    out->append(DumpJson(OrderedJson(std::get<std::string>(value))));
  }
}

// Whether a bucket's attribute has a value of `fn`: it has readings, and numbers or booleans
// among them for the functions over numbers.
bool HasValue(const query::AttributeAggregate& a, AggregateFn fn) {
  const bool numeric =
      fn == AggregateFn::kAvg || fn == AggregateFn::kSum || fn == AggregateFn::kMin || fn == AggregateFn::kMax;
  return a.count > 0 && (!numeric || a.numeric_count > 0);
}

void AppendCount(std::size_t n, std::string* out) {
  char buffer[24];
  const char* const end = std::to_chars(buffer, buffer + sizeof buffer, n).ptr;
  // A count has a few digits: pushed one by one, they cost less than a call to copy them.
  for (const char* p = buffer; p != end; ++p) out->push_back(*p);
}

void AppendFn(const query::AttributeAggregate& a, AggregateFn fn, std::string* out) {
  switch (fn) {
    case AggregateFn::kAvg: storage::AppendNumberFromDouble(a.avg(), out); break;
    case AggregateFn::kSum: storage::AppendNumberFromDouble(a.sum, out); break;
    case AggregateFn::kMin: out->append(a.min.text); break;
    case AggregateFn::kMax: out->append(a.max.text); break;
    case AggregateFn::kCount: AppendCount(a.count, out); break;
    case AggregateFn::kFirst: AppendValue(a.first, out); break;
    case AggregateFn::kLast: AppendValue(a.last, out); break;
  }
}

// The key written before each function's value, when it is the first of its object and when
// not: `"avg":` and `,"avg":`, made once per answer instead of piece by piece for every value.
struct FnKeys {
  std::vector<std::string> first, later;  // as AggregateRequest::fns
};

FnKeys MakeFnKeys(const std::vector<AggregateFn>& fns) {
  FnKeys keys;
  for (AggregateFn fn : fns) {
    keys.first.push_back("\"" + std::string(query::AggregateFnName(fn)) + "\":");
    keys.later.push_back("," + keys.first.back());
  }
  return keys;
}

// One attribute's object in a bucket after its opening brace: the functions asked for, in the
// order asked, leaving out those with nothing to compute.
void AppendAttribute(const query::AttributeAggregate& a, const std::vector<AggregateFn>& fns, const FnKeys& keys,
                     std::string* out) {
  bool first = true;
  for (std::size_t f = 0; f < fns.size(); ++f) {
    if (!HasValue(a, fns[f])) continue;
    out->append(first ? keys.first[f] : keys.later[f]);
    first = false;
    AppendFn(a, fns[f], out);
  }
  out->push_back('}');
}

// format=columns: the buckets transposed, {"deviceId":…,"step":…,"start":[…],"count":[…],
// "columns":{"temperature":{"avg":[…],…},…},"scannedCount":N}: an attribute and a function
// where some bucket has a value, in the order asked, null in the buckets without one.
std::string RenderColumns(const query::AggregateRequest& request, const std::string& step,
                          const query::AggregateResult& result) {
  const std::vector<query::Bucket>& buckets = result.buckets;
  std::string body = "{\"deviceId\":\"" + request.device_id + "\",\"step\":" + DumpJson(OrderedJson(step)) +
                     ",\"start\":[";
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    body.append(b > 0 ? ",\"" : "\"");
    storage::AppendWholeSecondsTimestamp(buckets[b].start_seconds, &body);
    body.push_back('"');
  }
  body.append("],\"count\":[");
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (b > 0) body.push_back(',');
    AppendCount(buckets[b].count, &body);
  }
  body.append("],\"columns\":{");
  bool first_attribute = true;
  for (std::size_t i = 0; i < request.attributes.size(); ++i) {
    const auto has = [&](AggregateFn fn) {
      return std::ranges::any_of(buckets, [&](const query::Bucket& b) { return HasValue(b.attributes[i], fn); });
    };
    if (!std::ranges::any_of(request.fns, has)) continue;
    body.append(first_attribute ? "" : ",").append(DumpJson(OrderedJson(request.attributes[i]))).append(":{");
    first_attribute = false;
    bool first_fn = true;
    for (AggregateFn fn : request.fns) {
      if (!has(fn)) continue;
      body.append(first_fn ? "\"" : ",\"").append(query::AggregateFnName(fn)).append("\":[");
      first_fn = false;
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        if (b > 0) body.push_back(',');
        if (HasValue(buckets[b].attributes[i], fn)) {
          AppendFn(buckets[b].attributes[i], fn, &body);
        } else {
          body.append("null");
        }
      }
      body.push_back(']');
    }
    body.push_back('}');
  }
  body.append("},\"scannedCount\":").append(std::to_string(result.scanned_count)).append("}");
  return body;
}

std::string Render(const query::AggregateRequest& request, const std::string& step,
                   const query::AggregateResult& result) {
  std::vector<std::string> names;  // `,"temperature":{`: escaped once, with what surrounds them
  for (const std::string& name : request.attributes) names.push_back("," + DumpJson(OrderedJson(name)) + ":{");
  const FnKeys keys = MakeFnKeys(request.fns);
  std::string body;
  // Room for a bucket's start and count, and each function of each attribute: grown once or never.
  body.reserve(std::min<std::size_t>(
      128 + result.buckets.size() * (48 + names.size() * (16 + 24 * request.fns.size())), std::size_t{1} << 20));
  body.append("{\"deviceId\":\"").append(request.device_id).append("\",\"step\":").append(DumpJson(OrderedJson(step)));
  body.append(",\"buckets\":[");
  for (std::size_t b = 0; b < result.buckets.size(); ++b) {
    const query::Bucket& bucket = result.buckets[b];
    body.append(b > 0 ? ",{\"start\":\"" : "{\"start\":\"");
    storage::AppendWholeSecondsTimestamp(bucket.start_seconds, &body);
    body.append("\",\"count\":");
    AppendCount(bucket.count, &body);
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (bucket.attributes[i].count == 0) continue;
      body.append(names[i]);
      AppendAttribute(bucket.attributes[i], request.fns, keys, &body);
    }
    body.push_back('}');
  }
  body.append("],\"scannedCount\":");
  AppendCount(result.scanned_count, &body);
  body.push_back('}');
  return body;
}

}  // namespace

http::Response Aggregate(const Context& context, const std::string& device_id, const Params& params) {
  if (!Find(params, "from") && !Find(params, "after")) {
    return ErrorFromStatus(Status::InvalidArgument("from: required (or after): an aggregate reads a bounded window"));
  }
  if (!Find(params, "to") && !Find(params, "before")) {
    return ErrorFromStatus(Status::InvalidArgument("to: required (or before): an aggregate reads a bounded window"));
  }
  query::KeyCondition key;
  bool empty = false;
  query::AggregateRequest request;
  if (Status s = NativeKeyCondition(device_id, params, &key, &empty); !s.ok()) return ErrorFromStatus(s);
  if (Status s = StepParam(params, &request.step_seconds); !s.ok()) return ErrorFromStatus(s);
  if (Status s = FnParam(params, &request.fns); !s.ok()) return ErrorFromStatus(s);
  if (Status s = AttributesParam(params, &request.attributes); !s.ok()) return ErrorFromStatus(s);
  Format format;
  if (Status s = FormatParam(params, /*csv=*/false, &format); !s.ok()) return ErrorFromStatus(s);
  request.device_id = device_id;
  request.max_buckets = context.read.limits.max_aggregate_buckets;
  request.max_scanned = context.read.limits.max_aggregate_scan;
  query::AggregateResult result;
  // A window no sort key can lie in (after=X&before=X+1ns) has no bucket and needs no read.
  if (!empty) {
    request.from = std::move(key.a);
    request.to = std::move(key.b);
    if (Status s = query::Aggregate(context.read.store, request, &result); !s.ok()) return ErrorFromStatus(s);
  }
  context.read.ReportPartitionRead(device_id, result.scanned_count, result.scanned_bytes);
  const std::string& step = *Find(params, "step");
  return JsonResponse(http::status::ok, format == Format::kColumns ? RenderColumns(request, step, result)
                                                                   : Render(request, step, result));
}

}  // namespace readingsd::api::native
