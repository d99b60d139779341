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
// In the enum's order, so a function's name is at its index: an answer names one per value.
static_assert([] {
  for (std::size_t i = 0; i < kFnNames.size(); ++i) {
    if (static_cast<std::size_t>(kFnNames[i].first) != i) return false;
  }
  return true;
}());

// `number` into `*kept`, reusing its string.
void KeepNumber(storage::NumberView number, storage::Number* kept) {
  kept->text.clear();
  number.AppendTo(&kept->text);
}

// `value` into `*kept`, reusing the string it holds when it can: `last` is kept this way once
// per reading.
void Keep(const decltype(storage::AttributeView::value)& value, storage::AttributeValue* kept) {
  if (const auto* n = std::get_if<storage::NumberView>(&value)) {
    if (auto* number = std::get_if<storage::Number>(kept)) {
      KeepNumber(*n, number);
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

// Folds each reading Query hands it, and each rollup record, into the last bucket of `result`,
// opening the next bucket when one lies past the open one's end (they come in time order). One
// per Aggregate call, on its thread: it keeps no part for a helper (NewPart), since the fold
// depends on the readings before.
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
    if (sort_key >= OpenEnd()) {
      Open(storage::FloorToMultiple(storage::SortKeyWholeSeconds(sort_key), request_.step_seconds));
    }
    Bucket& bucket = result_->buckets.back();
    ++bucket.count;
    for (const storage::AttributeView& a : attributes) {
      const auto it = std::ranges::find(request_.attributes, a.name);
      if (it != request_.attributes.end()) Fold(a, &bucket.attributes[it - request_.attributes.begin()]);
    }
  }

  // A granule's record, `granule` the second it starts at.
  Status AddRollup(int64_t granule, const storage::RollupView& rollup) {
    if (result_->buckets.empty() || granule >= open_end_seconds_) {
      Open(storage::FloorToMultiple(granule, request_.step_seconds));
    }
    Bucket& bucket = result_->buckets.back();
    bucket.count += rollup.readings;
    for (const storage::RollupAttributeView& a : rollup.attributes) {
      const auto it = std::ranges::find(request_.attributes, a.name);
      if (it == request_.attributes.end() || a.count == 0) continue;
      AttributeAggregate& aggregate = bucket.attributes[it - request_.attributes.begin()];
      if (want_first_ && aggregate.count == 0) Keep(a.first, &aggregate.first);
      if (want_last_) Keep(a.last, &aggregate.last);
      aggregate.count += a.count;
      if (a.numeric_count == 0) continue;
      const bool first_number = aggregate.numeric_count == 0;
      aggregate.numeric_count += a.numeric_count;
      if (want_sum_ && !aggregate.exact_sum.AddEncoded(a.sum)) {
        return Status::Corruption("a rollup record's sum does not decode");
      }
      using storage::CompareNumbers;
      if (want_min_ && (first_number || CompareNumbers(a.min_value, a.min, aggregate.min_value, aggregate.min) < 0)) {
        KeepNumber(a.min, &aggregate.min);
        aggregate.min_value = a.min_value;
      }
      if (want_max_ && (first_number || CompareNumbers(a.max_value, a.max, aggregate.max_value, aggregate.max) > 0)) {
        KeepNumber(a.max, &aggregate.max);
        aggregate.max_value = a.max_value;
      }
    }
    return Status::OK();
  }

 private:
  // The sort key just past the open bucket, written when a reading first needs it: records
  // compare by their seconds, so a bucket folded from records alone never writes it.
  const std::string& OpenEnd() {
    if (!open_end_written_) {
      // A bucket that would end after year 9999 ends after every sort key.
      if (!storage::SortKeyAtWholeSeconds(open_end_seconds_, &open_end_)) open_end_.assign(1, storage::kSortKeyEnd);
      open_end_written_ = true;
    }
    return open_end_;
  }

  void Open(int64_t start) {
    open_end_seconds_ = start + request_.step_seconds;
    open_end_written_ = false;
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
    if (want_sum_) aggregate->exact_sum.Add(number.ToDouble());
    // The doubles of min and max are for the rollup records folded beside them (AddRollup).
    if (want_min_ && (first_number || number < storage::NumberView(aggregate->min))) {
      KeepNumber(number, &aggregate->min);
      aggregate->min_value = number.ToDouble();
    }
    if (want_max_ && (first_number || number > storage::NumberView(aggregate->max))) {
      KeepNumber(number, &aggregate->max);
      aggregate->max_value = number.ToDouble();
    }
  }

  const AggregateRequest& request_;
  AggregateResult* result_;
  int64_t open_end_seconds_ = 0;  // just past the open bucket, when one is open
  std::string open_end_;          // its sort key when written; empty before the first bucket
  bool open_end_written_ = true;
  bool want_sum_, want_min_, want_max_, want_first_, want_last_;
};

}  // namespace

std::string_view AggregateFnName(AggregateFn fn) {
  const auto i = static_cast<std::size_t>(fn);
  return i < kFnNames.size() ? kFnNames[i].second : "?";
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
  const int64_t first = storage::FloorToMultiple(storage::SortKeyWholeSeconds(from), step_seconds);
  const int64_t last = storage::FloorToMultiple(storage::SortKeyWholeSeconds(to), step_seconds);
  return static_cast<std::size_t>((last - first) / step_seconds) + 1;
}

namespace {

// One Aggregate call: the readings of sort key ranges, and rollup records, folded into `sink` in
// time order.
class WindowReader {
 public:
  WindowReader(const storage::Store& store, const AggregateRequest& request, AggregateResult* result)
      : store_(store), request_(request), result_(result), sink_(request, result) {}

  // The window's rollup records where they apply, its readings elsewhere.
  Status Run() {
    const int64_t granule = request_.use_rollups ? store_.RollupSeconds() : 0;
    if (granule == 0 || request_.step_seconds % granule != 0) return Read(request_.from, request_.to);
    // The granules [first, end) lie wholly inside [from, to]: each begins at or after `from`
    // and ends at or before the instant just past `to`.
    const int64_t head = storage::FloorToMultiple(storage::SortKeyWholeSeconds(request_.from), granule);
    int64_t first = head;
    if (SortKeyOf(first) < request_.from) first += granule;
    std::string after;
    const bool bounded = storage::AdjacentSortKey(request_.to, 1, &after);
    const int64_t end = storage::FloorToMultiple(storage::SortKeyWholeSeconds(bounded ? after : request_.to), granule);
    if (first >= end) return Read(request_.from, request_.to);
    // The granules `from` and `to` lie in, where the window covers only part of them, are read
    // from their records too when these show every reading of the granule inside the window
    // (Within): a window of whole days between two whole seconds ends a second short of its
    // last granule, which its readings would otherwise be read for.
    const int64_t tail = storage::FloorToMultiple(storage::SortKeyWholeSeconds(request_.to), granule);
    std::string upper;  // just past the granule `to` lies in
    if (!storage::SortKeyAtWholeSeconds(tail + granule, &upper)) upper.assign(1, storage::kSortKeyEnd);
    std::unique_ptr<storage::PartitionIterator> it = store_.NewRollupIterator(request_.device_id, "", upper);
    if (it == nullptr) return Read(request_.from, request_.to);
    // The floor record: granules from it on have a record for every granule holding a reading.
    it->SeekToFirst();
    if (!it->Valid() || !it->sort_key().empty()) {
      if (Status s = it->status(); !s.ok()) return s;
      return Read(request_.from, request_.to);  // no granule of the device is summarised
    }
    int64_t floor = 0;
    if (Status s = storage::ReadRollupFloor(it->encoded_attributes(), &floor); !s.ok()) return s;
    first = std::max(first, floor);
    if (first >= end) return Read(request_.from, request_.to);
    const std::string whole_first = SortKeyOf(first), whole_end = SortKeyOf(end);

    // [unread, unread_end): readings not read yet that precede the next record used. A granule
    // without a record (at or after the floor) holds no reading, so reading it costs a seek.
    std::string unread = request_.from, unread_end = SortKeyOf(head >= floor ? head : first);
    bool pending = true;
    storage::RollupView rollup;
    const bool first_last = std::ranges::any_of(
        request_.fns, [](AggregateFn fn) { return fn == AggregateFn::kFirst || fn == AggregateFn::kLast; });
    for (it->Seek(unread_end); it->Valid(); it->Next()) {
      const std::string_view start = it->sort_key();
      const int64_t seconds = storage::SortKeyWholeSeconds(start);
      const bool edge = start < whole_first || start >= whole_end;
      // An edge record is read whole: the attribute that shows where its readings lie may be
      // one the request does not aggregate.
      if (Status s = storage::ReadRollup(it->encoded_attributes(), &rollup,
                                         edge ? std::span<const std::string>() : request_.attributes,
                                         first_last || edge);
          !s.ok()) {
        return s;
      }
      if (rollup.stale || (edge && !Within(rollup))) {
        if (!pending) unread.assign(start);
        pending = true;
        unread_end = SortKeyOf(seconds + granule);
        continue;
      }
      if (pending) {
        if (Status s = ReadBefore(unread, unread_end); !s.ok()) return s;
        pending = false;
      }
      if (Status s = sink_.AddRollup(seconds, rollup); !s.ok()) return s;
      result_->scanned_count += rollup.readings;
      result_->scanned_bytes += it->encoded_attributes().size();
      ++result_->rollup_count;
    }
    if (Status s = it->status(); !s.ok()) return s;
    return Read(pending ? unread : upper, request_.to);
  }

 private:
  static std::string SortKeyOf(int64_t seconds) {
    std::string sort_key;
    storage::SortKeyAtWholeSeconds(seconds, &sort_key);  // a granule's start: inside years 0000-9999
    return sort_key;
  }

  // Whether every reading a record summarises lies in [from, to]: an attribute that each of them
  // has (its count is the record's) holds the first and the last of them.
  bool Within(const storage::RollupView& rollup) const {
    for (const storage::RollupAttributeView& a : rollup.attributes) {
      if (a.count == rollup.readings) return a.first_key >= request_.from && a.last_key <= request_.to;
    }
    return false;
  }

  // The readings in [lower, upper).
  Status ReadBefore(const std::string& lower, const std::string& upper) {
    std::string last;
    if (lower >= upper || !storage::AdjacentSortKey(upper, -1, &last)) return Status::OK();
    return Read(lower, last);
  }

  // The readings in [lower, upper], within what is left of max_scanned.
  Status Read(const std::string& lower, const std::string& upper) {
    if (lower > upper) return Status::OK();
    QueryRequest query;
    if (Status s = MakeKeyCondition(request_.device_id, SortKeyOp::kBetween, lower, upper, &query.key); !s.ok()) {
      return s;
    }
    // The cap is the page's limit: Query reads one reading ahead to tell whether more remain.
    // With none left, one reading read is one too many.
    const std::size_t cap = request_.max_scanned;
    const std::size_t left = cap == 0 ? 0 : cap - std::min(cap, result_->read_count);
    query.limit = cap == 0 ? 0 : std::max<std::size_t>(left, 1);
    query.max_page_bytes = 0;
    QueryResult read;
    Status s = Query(store_, query, &read, &sink_);
    result_->read_count += read.scanned_count;
    result_->scanned_count += read.scanned_count;
    result_->scanned_bytes += read.scanned_bytes;
    if (!s.ok()) return s;
    if (read.last_evaluated_sort_key || (cap > 0 && result_->read_count > cap)) {
      return Status::InvalidArgument("max scan: the window holds more than " + std::to_string(cap) +
                                     " readings to read, the most an aggregate may read; narrow the window");
    }
    return Status::OK();
  }

  const storage::Store& store_;
  const AggregateRequest& request_;
  AggregateResult* result_;
  BucketSink sink_;
};

}  // namespace

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
  result->buckets.reserve(std::min<std::size_t>(buckets, 4096));  // no copies of buckets as they open
  if (Status s = WindowReader(store, request, result).Run(); !s.ok()) return s;
  for (Bucket& bucket : result->buckets) {
    for (AttributeAggregate& a : bucket.attributes) a.sum = a.exact_sum.Value();
  }
  return Status::OK();
}

}  // namespace readingsd::query
