// HotnessTracker: which partitions carry the traffic, over a sliding window, in bounded memory.
//
// The point is to show an operator that the partition key does not spread load (say `region`
// instead of the device id) before one partition runs out of throughput. Memory and the number of
// partitions reported are bounded by the options, whatever the number of devices.
//
// Load is measured in DynamoDB capacity units, because that is what a partition runs out of:
//   write: WCU = ceil(item_bytes / 1024), at least 1 per write;
//   read:  RCU = ceil(bytes / 4096), at least 1 per read call (strongly consistent; the bytes of
//          all items a call returns are summed before rounding, as for a Query).
// Readings are far below 1 KB, so for this daemon one write is one WCU and write shares equal
// WCU shares.
//
// Sliding window: the window is cut into kWindowSlices slices of window / kWindowSlices, each
// with its own Space-Saving sketches and HyperLogLog; a slice is reused, after clearing, once
// it is a whole window old. A report combines the slices of the last window (see TopKAcross), so
// it covers between (kWindowSlices - 1) and kWindowSlices slices: traffic ages out one slice at
// a time instead of continuously. Rates divide by the time actually covered (at least one slice,
// so a burst right after start-up does not read as an enormous rate).
//
// Error bounds, with N the window's total units and m = 4 * top_k counters per sketch (the
// SpaceSavingOptions default): every per-partition estimate overestimates by at most its
// `error`, error <= N / m, and every partition with more than N / m units in the window is a
// candidate for the top-K. Shares, the concentration index and the hot flag are computed from
// the guaranteed lower bounds (estimate - error): sketch error can hide a hot partition only
// when N / m is comparable to its load, and it never raises a false alarm.
//
// Low-cardinality rule, judged on writes only (reads follow whatever dashboards look at, which
// says nothing about the key):
//   low_cardinality_partition_key = writes in window >= low_cardinality_min_writes
//       && (distinct partitions < low_cardinality_min_partitions
//           || top-K share of WCU > low_cardinality_top_share)
// Rationale: a key that spreads load has many partitions each carrying a small share, so the
// K hottest carry little; if they carry most of it, table throughput is capped near
// K / share * partition limit however many devices are added. The distinct-count arm catches
// a key with only a handful of values even when top_k is set very small. The minimum write
// count keeps an idle or just-started daemon from being judged on a few writes.
//
// Thread-safe; RecordWrite/RecordRead cost a mutex, a clock read and O(log m) sketch work.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/hyperloglog.h"
#include "metrics/space_saving.h"

namespace readingsd::metrics {

struct HotnessOptions {
  // Partitions reported per direction; values below 1 are treated as 1.
  int top_k = 20;
  // Sliding window; values below 1 s are treated as 1 s.
  std::chrono::seconds window{60};
  // Per-partition throughput limits (DynamoDB's: 1000 WCU/s, 3000 RCU/s). A partition is hot when
  // its guaranteed lower-bound rate exceeds the limit.
  double partition_wcu_limit = 1000;
  double partition_rcu_limit = 3000;
  // See the low-cardinality rule above.
  double low_cardinality_top_share = 0.5;
  int low_cardinality_min_partitions = 10;
  std::uint64_t low_cardinality_min_writes = 100;

  bool operator==(const HotnessOptions&) const = default;
};

// One partition in a top-K table. For writes "items" are writes, for reads the items returned.
struct PartitionLoad {
  std::string partition;
  std::uint64_t items = 0;        // estimate over the window, overestimates by <= items_error
  std::uint64_t items_error = 0;
  std::uint64_t units = 0;        // WCU or RCU, overestimates by <= units_error
  std::uint64_t units_error = 0;
  double units_per_second = 0;    // units / window_seconds
  bool hot = false;               // (units - units_error) / window_seconds > partition limit
};

// One direction (writes or reads) over the window.
struct TrafficReport {
  std::vector<PartitionLoad> top;     // at most top_k, by units descending
  std::uint64_t total_items = 0;      // exact
  std::uint64_t total_units = 0;      // exact
  double window_seconds = 0;          // time the report covers; rates divide by it
  double distinct_partitions = 0;     // HyperLogLog estimate, 0.81 % standard error
  // Lower bounds on shares of total_units: of the hottest partition, of the K hottest together,
  // and the Herfindahl-Hirschman index (sum of squared shares; 1 = one partition, 1/n = n equal
  // partitions) restricted to the K hottest.
  double top_share = 0;
  double topk_share = 0;
  double concentration_index = 0;
};

struct HotnessReport {
  TrafficReport writes;
  TrafficReport reads;
  bool low_cardinality_partition_key = false;
};

class HotnessTracker {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kWindowSlices = 6;

  // `now` is injectable so tests can move time without sleeping.
  explicit HotnessTracker(const HotnessOptions& options = {},
                          std::function<Clock::time_point()> now = Clock::now);

  HotnessTracker(const HotnessTracker&) = delete;
  HotnessTracker& operator=(const HotnessTracker&) = delete;

  // One item of item_bytes written to the partition.
  void RecordWrite(std::string_view partition, std::size_t item_bytes);
  // One read call that returned `items` items of `bytes` in total from the partition.
  void RecordRead(std::string_view partition, std::size_t items, std::size_t bytes);

  // A snapshot of the last window. Combines every slice, so it belongs at scrape time.

  HotnessReport Report() const;

  const HotnessOptions& options() const { return options_; }

 private:
  struct Slice {
    explicit Slice(const SpaceSavingOptions& sketch_options)
        : items(sketch_options), units(sketch_options) {}
    std::int64_t epoch = -1;  // which slice of time it holds; -1 = never used
    SpaceSaving items;
    SpaceSaving units;
    HyperLogLog partitions;
  };
  struct Traffic {
    Traffic(const SpaceSavingOptions& sketch_options, double units_limit);
    mutable std::mutex mutex;
    std::vector<Slice> slices;  // ring indexed by epoch % kWindowSlices
    double units_limit;
  };

  void Record(Traffic& traffic, std::string_view partition, std::uint64_t items,
              std::uint64_t units);
  TrafficReport Summarize(const Traffic& traffic, Clock::time_point now) const;
  std::int64_t EpochOf(Clock::time_point now) const;

  HotnessOptions options_;
  std::function<Clock::time_point()> now_;
  Clock::time_point origin_;
  Clock::duration slice_width_;
  Traffic writes_;
  Traffic reads_;
};

}  // namespace readingsd::metrics
