// Aggregate: downsampling. The readings of one partition within a window, folded into buckets
// of a fixed step aligned in UTC, in one bounded pass over the window's keys: only the bucket
// being filled is open, and a bucket is closed for good when the first reading past it arrives.
// When the store keeps rollups (storage/rollup.h) and the step is a multiple of their granule,
// each granule wholly inside the window is folded from its record instead of its readings, and
// so is a granule the window cuts when its record shows every reading of it inside the window;
// the answer is the same (docs/native-api.md "Rollups").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/query.h"
#include "storage/number.h"
#include "storage/reading.h"
#include "storage/rollup.h"
#include "storage/store.h"

namespace readingsd::query {

enum class AggregateFn : uint8_t { kAvg, kMin, kMax, kCount, kSum, kFirst, kLast };

// "avg", "min", …: the names the APIs take and answer with.
std::string_view AggregateFnName(AggregateFn fn);
// False when `name` names no function.
bool ParseAggregateFn(std::string_view name, AggregateFn* fn);
// Every name, comma-separated, for messages.
std::string_view AggregateFnNames();

struct AggregateRequest {
  std::string device_id;
  std::string from, to;  // normalised sort keys, both inclusive; from <= to
  // Buckets begin at the multiples of step after 1970-01-01T00:00:00Z, so a step that divides a
  // day (5m, 1h, 1d) begins them at the times a reader expects, whatever the window.
  int64_t step_seconds = 60;
  std::vector<std::string> attributes;  // those aggregated, each at most once
  // Only what these need is kept (no copy of each reading's value for `last` unless asked).
  std::vector<AggregateFn> fns;
  // Caps, each InvalidArgument naming it: buckets the window spans (checked before reading) and
  // readings read (the read stops one past it).
  std::size_t max_buckets = ReadLimits{}.max_aggregate_buckets;
  std::size_t max_scanned = ReadLimits{}.max_aggregate_scan;
  // false: every reading is read, rollups or not (what the rollup path is tested against).
  bool use_rollups = true;
};

// One attribute in one bucket. A number aggregates as itself, a boolean as 0 or 1; a string only
// counts and is kept as first/last, so sum, avg, min and max are over numbers and booleans only.
struct AttributeAggregate {
  std::size_t count = 0;          // readings of the bucket that have the attribute, of any type
  std::size_t numeric_count = 0;  // of those, the ones holding a number or a boolean
  // Numeric values as doubles (NumberView::ToDouble), summed exactly and rounded once, so the
  // order they are added in (readings or rollup records) does not change it.
  double sum = 0;
  storage::ExactSum exact_sum;  // while Aggregate runs; `sum` is its value
  // Exact numbers, the stored text; meaningful when numeric_count > 0.
  storage::Number min, max;
  double min_value = 0, max_value = 0;  // the doubles nearest them, while Aggregate runs
  // The values of the bucket's first and last reading that has the attribute, as stored;
  // meaningful when count > 0.
  storage::AttributeValue first, last;

  double avg() const { return sum / static_cast<double>(numeric_count); }
};

struct Bucket {
  int64_t start_seconds = 0;  // since 1970, a multiple of the step
  std::size_t count = 0;      // readings in the bucket
  std::vector<AttributeAggregate> attributes;  // as AggregateRequest::attributes
};

struct AggregateResult {
  std::vector<Bucket> buckets;  // in time order; a bucket without readings is left out
  // Readings the answer covers: those read and those counted by the rollup records read (the
  // same figure as without rollups).
  std::size_t scanned_count = 0;
  std::size_t read_count = 0;     // of those, the readings read: what max_scanned caps
  std::size_t rollup_count = 0;   // granules folded from their rollup record
  std::size_t scanned_bytes = 0;  // storage::ItemSize of the readings read, plus each record's size
};

// The number of step-aligned buckets that [from, to] touches, whether they hold readings or not:
// what max_buckets is checked against.
std::size_t BucketsSpanned(std::string_view from, std::string_view to, int64_t step_seconds);

// Reads [from, to] once, in order, on the calling thread (with rollups: the records of the
// granules inside it, and the readings of the rest). A damaged value or a store error ends
// it with that error; a cap with InvalidArgument. `result` is reset first. Thread-safe: it keeps
// nothing between calls.
Status Aggregate(const storage::Store& store, const AggregateRequest& request, AggregateResult* result);

}  // namespace readingsd::query
