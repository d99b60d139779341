#include "query/aggregate.h"

#include <algorithm>
#include <array>
#include <span>
#include <utility>
#include <variant>

#include "query/key_condition.h"
#include "storage/key.h"

namespace readingsd::query {
namespace {

constexpr std::array<std::pair<AggregateFn, std::string_view>, 7> kFnNames = {{
    {AggregateFn::kAvg, "avg"},
    {AggregateFn::kMin, "min"},
    {AggregateFn::kMax, "max"},
    {AggregateFn::kCount, "count"},
    {AggregateFn::kSum, "sum"},
    {AggregateFn::kFirst, "first"},
    {AggregateFn::kLast, "last"},
}};

// Rounds toward minus infinity: a second before 1970 belongs to the bucket that begins before it.
int64_t FloorToStep(int64_t seconds, int64_t step) {
  int64_t q = seconds / step;
  if (seconds % step != 0 && seconds < 0) --q;
  return q * step;
}

// `value` into `*kept`, reusing the string it holds when it can: `last` is kept this way once
// per reading.
void Keep(const decltype(storage::AttributeView::value)& value, storage::AttributeValue* kept) {
  if (const auto* n = std::get_if<storage::NumberView>(&value)) {
    if (auto* number = std::get_if<storage::Number>(kept)) {
      number->text.clear();
      n->AppendTo(&number->text);
    } else {
      *kept = n->ToNumber();
    }
  } else if (const auto* s = std::get_if<std::string_view>(&value)) {
    if (auto* text = std::get_if<std::string>(kept)) {
      text->assign(*s);
    } else {
      *kept = std::string(*s);
    }
  } else {
    *kept = std::get<bool>(value);
  }
}

// Folds each reading Query hands it into the last bucket of `result`, opening the next bucket
// when a reading lies past the open one's end. One per Aggregate call, on its thread: it keeps
// no part for a helper (NewPart), since the fold depends on the readings before.
class BucketSink final : public ItemSink {
 public:
  BucketSink(const AggregateRequest& request, AggregateResult* result) : request_(request), result_(result) {
    auto wants = [&](AggregateFn fn) { return std::ranges::find(request.fns, fn) != request.fns.end(); };
    want_sum_ = wants(AggregateFn::kSum) || wants(AggregateFn::kAvg);
    want_min_ = wants(AggregateFn::kMin);
    want_max_ = wants(AggregateFn::kMax);
    want_first_ = wants(AggregateFn::kFirst);
    want_last_ = wants(AggregateFn::kLast);
  }

  void Add(std::string_view sort_key, std::string_view /*encoded*/,
           std::span<const storage::AttributeView> attributes) override {
    // Sort keys compare as time, so one comparison per reading tells whether its bucket is open.
    if (sort_key >= open_end_) Open(sort_key);
    Bucket& bucket = result_->buckets.back();
    ++bucket.count;
    for (const storage::AttributeView& a : attributes) {
      const auto it = std::ranges::find(request_.attributes, a.name);
      if (it != request_.attributes.end()) Fold(a, &bucket.attributes[it - request_.attributes.begin()]);
    }
  }

 private:
  void Open(std::string_view sort_key) {
    const int64_t start = FloorToStep(storage::SortKeyWholeSeconds(sort_key), request_.step_seconds);
    // A bucket that would end after year 9999 ends after every sort key.
    if (!storage::SortKeyAtWholeSeconds(start + request_.step_seconds, &open_end_)) {
      open_end_.assign(1, storage::kSortKeyEnd);
    }
    Bucket& bucket = result_->buckets.emplace_back();
    bucket.start_seconds = start;
    bucket.attributes.resize(request_.attributes.size());
  }

  void Fold(const storage::AttributeView& a, AttributeAggregate* aggregate) const {
    ++aggregate->count;
    if (want_first_ && aggregate->count == 1) Keep(a.value, &aggregate->first);
    if (want_last_) Keep(a.value, &aggregate->last);
    storage::NumberView number;
    if (const auto* n = std::get_if<storage::NumberView>(&a.value)) {
      number = *n;
    } else if (const auto* b = std::get_if<bool>(&a.value)) {
      number = storage::NumberView::OfCanonical(*b ? "1" : "0");
    } else {
      return;  // a string: counted and kept, nothing to compute
    }
    const bool first_number = aggregate->numeric_count++ == 0;
    if (want_sum_) aggregate->sum += number.ToDouble();
    if (want_min_ && (first_number || number < storage::NumberView(aggregate->min))) aggregate->min = number.ToNumber();
    if (want_max_ && (first_number || number > storage::NumberView(aggregate->max))) aggregate->max = number.ToNumber();
  }

  const AggregateRequest& request_;
  AggregateResult* result_;
  std::string open_end_;  // sort key just past the open bucket; empty before the first reading
  bool want_sum_, want_min_, want_max_, want_first_, want_last_;
};

}  // namespace

std::string_view AggregateFnName(AggregateFn fn) {
  for (const auto& [f, name] : kFnNames) {
    if (f == fn) return name;
  }
  return "?";
}

bool ParseAggregateFn(std::string_view name, AggregateFn* fn) {
  for (const auto& [f, n] : kFnNames) {
    if (n == name) {
      *fn = f;
      return true;
    }
  }
  return false;
}

std::string_view AggregateFnNames() { return "avg, min, max, count, sum, first, last"; }

std::size_t BucketsSpanned(std::string_view from, std::string_view to, int64_t step_seconds) {
  const int64_t first = FloorToStep(storage::SortKeyWholeSeconds(from), step_seconds);
  const int64_t last = FloorToStep(storage::SortKeyWholeSeconds(to), step_seconds);
  return static_cast<std::size_t>((last - first) / step_seconds) + 1;
}

Status Aggregate(const storage::Store& store, const AggregateRequest& request, AggregateResult* result) {
  *result = AggregateResult();
  if (request.step_seconds < 1) return Status::InvalidArgument("step_seconds: must be at least 1");
  const std::size_t buckets = BucketsSpanned(request.from, request.to, request.step_seconds);
  if (buckets > request.max_buckets) {
    return Status::InvalidArgument("max buckets: the window spans " + std::to_string(buckets) + " buckets of " +
                                   std::to_string(request.step_seconds) + " s, more than the " +
                                   std::to_string(request.max_buckets) +
                                   " an aggregate may answer with; widen step or narrow the window");
  }
  QueryRequest query;
  if (Status s = MakeKeyCondition(request.device_id, SortKeyOp::kBetween, request.from, request.to, &query.key);
      !s.ok()) {
    return s;
  }
  // The cap is the page's limit: Query reads one reading ahead to tell whether more remain.
  query.limit = request.max_scanned;
  query.max_page_bytes = 0;
  QueryResult read;
  BucketSink sink(request, result);
  Status s = Query(store, query, &read, &sink);
  result->scanned_count = read.scanned_count;
  result->scanned_bytes = read.scanned_bytes;
  if (!s.ok()) return s;
  if (read.last_evaluated_sort_key) {
    return Status::InvalidArgument("max scan: the window holds more than " + std::to_string(request.max_scanned) +
                                   " readings, the most an aggregate may read; narrow the window");
  }
  return Status::OK();
}

}  // namespace readingsd::query
