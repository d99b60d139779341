#include "api/native/request.h"

#include <algorithm>
#include <utility>

#include "api/native/native.h"
#include "storage/key.h"
#include "storage/reading.h"

namespace readingsd::api::native {
namespace {

using query::KeyCondition;
using query::SortKeyOp;

struct Bound {
  std::string param;
  std::string sort_key;  // normalised
  bool exclusive = false;
};

// At most one of an inclusive and an exclusive parameter for one side of the range.
Status OneBound(const Params& params, std::string_view inclusive, std::string_view exclusive,
                std::optional<Bound>* bound) {
  const std::string* inc = Find(params, inclusive);
  const std::string* exc = Find(params, exclusive);
  if (inc && exc) {
    return Status::InvalidArgument(std::string(inclusive) + ", " + std::string(exclusive) +
                                   ": give at most one of them");
  }
  if (!inc && !exc) return Status::OK();
  Bound b{std::string(inc ? inclusive : exclusive), "", exc != nullptr};
  // A '+' typed by hand (from=…T10:00:00+02:00) arrived as a space; no timestamp holds a space,
  // so reading it back as the offset's sign cannot change what an encoded value means.
  std::string text = inc ? *inc : *exc;
  std::replace(text.begin(), text.end(), ' ', '+');
  if (Status s = storage::NormalizeBound(text, &b.sort_key); !s.ok()) return Named(b.param, s);
  *bound = std::move(b);
  return Status::OK();
}

}  // namespace

std::string Quoted(std::string_view s) {
  constexpr std::size_t kMax = 64;
  return "\"" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...\"" : "\"");
}

Status Named(std::string_view param, const Status& s) {
  return Status::InvalidArgument(std::string(param) + ": " + s.message());
}

http::Response JsonResponse(http::status status, std::string body) {
  http::Response res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

const std::string* Find(const Params& params, std::string_view name) {
  auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

http::Response ErrorFromStatus(const Status& s) {
  if (s.IsInvalidArgument()) return Error(http::status::bad_request, "InvalidParameter", s.message());
  if (s.IsNotFound()) return Error(http::status::not_found, "NotFound", s.message());
  return Error(http::status::internal_server_error, "InternalError", s.ToString());
}

Status ProjectionParam(const Params& params, Projection* projection) {
  const std::string* text = Find(params, "attributes");
  if (!text) return Status::OK();
  projection->emplace();
  for (std::string_view rest = *text;;) {
    const auto comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (name.empty() || name.size() > storage::kMaxAttributeNameLength) {
      return Status::InvalidArgument("attributes: expected comma-separated names of 1 to " +
                                     std::to_string(storage::kMaxAttributeNameLength) + " bytes, got " +
                                     Quoted(*text));
    }
    if (std::find((*projection)->begin(), (*projection)->end(), name) != (*projection)->end()) {
      return Status::InvalidArgument("attributes: " + Quoted(name) + " is listed twice");
    }
    (*projection)->emplace_back(name);
    if (comma == std::string_view::npos) return Status::OK();
    rest.remove_prefix(comma + 1);
  }
}

Status FormatParam(const Params& params, bool csv, Format* format) {
  const std::string* text = Find(params, "format");
  if (!text || *text == "rows") {
    *format = Format::kRows;
  } else if (*text == "columns") {
    *format = Format::kColumns;
  } else if (csv && *text == "csv") {
    *format = Format::kCsv;
  } else {
    return Status::InvalidArgument("format: expected rows" + std::string(csv ? ", columns or csv" : " or columns") +
                                   ", got " + Quoted(*text));
  }
  return Status::OK();
}

Status NativeKeyCondition(const std::string& device_id, const Params& params, KeyCondition* key,
                          bool* empty) {
  *empty = false;
  std::optional<Bound> lower, upper;
  if (Status s = OneBound(params, "from", "after", &lower); !s.ok()) return s;
  if (Status s = OneBound(params, "to", "before", &upper); !s.ok()) return s;
  if (const std::string* prefix = Find(params, "begins_with")) {
    if (lower || upper) {
      return Status::InvalidArgument("begins_with: cannot be combined with from, to, after or before");
    }
    Status s = query::MakeKeyCondition(device_id, SortKeyOp::kBeginsWith, *prefix, "", key);
    return s.ok() ? s : Named("begins_with", s);
  }
  if (lower && upper && lower->sort_key > upper->sort_key) {
    return Status::InvalidArgument(lower->param + ": " + lower->sort_key + " is later than " + upper->param +
                                   ": " + upper->sort_key);
  }
  // The engine has one operator per condition, so "> a AND < b" has no direct form. Every sort
  // key is a whole nanosecond, so an exclusive bound is exactly the inclusive bound one
  // nanosecond inside it; then any combination is >=, <= or BETWEEN.
  for (auto [bound, step] : {std::pair{&lower, 1}, std::pair{&upper, -1}}) {
    if (*bound && (*bound)->exclusive && !storage::AdjacentSortKey((*bound)->sort_key, step, &(*bound)->sort_key)) {
      *empty = true;  // after the last possible key, or before the first
    }
  }
  if (!*empty && lower && upper && lower->sort_key > upper->sort_key) *empty = true;
  if (*empty) {
    key->device_id = device_id;
    return Status::OK();
  }
  if (lower && upper)
    return query::MakeKeyCondition(device_id, SortKeyOp::kBetween, lower->sort_key, upper->sort_key, key);
  if (lower) return query::MakeKeyCondition(device_id, SortKeyOp::kGe, lower->sort_key, "", key);
  if (upper) return query::MakeKeyCondition(device_id, SortKeyOp::kLe, upper->sort_key, "", key);
  return query::MakeKeyCondition(device_id, SortKeyOp::kAll, "", "", key);
}

Status PartitionSetParam(const Params& params, std::optional<cluster::PartitionSet>* share) {
  return cluster::ParsePartitionSet(Find(params, "partitions"), Find(params, "partition_count"), share);
}

}  // namespace readingsd::api::native
