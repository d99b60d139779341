#include "metrics/hotness.h"

#include <algorithm>
#include <utility>

namespace readingsd::metrics {

namespace {

std::uint64_t UnitsFor(std::size_t bytes, std::size_t unit_bytes) {
  return std::max<std::uint64_t>(1, (bytes + unit_bytes - 1) / unit_bytes);
}

HotnessOptions Sanitized(HotnessOptions options) {
  options.top_k = std::max(options.top_k, 1);
  options.window = std::max(options.window, std::chrono::seconds{1});
  return options;
}

SpaceSavingOptions SketchOptions(const HotnessOptions& options) {
  SpaceSavingOptions sketch;
  sketch.top_k = static_cast<std::size_t>(options.top_k);
  return sketch;
}

}  // namespace

HotnessTracker::Traffic::Traffic(const SpaceSavingOptions& sketch_options, double limit)
    : slices(kWindowSlices, Slice(sketch_options)), units_limit(limit) {}

HotnessTracker::HotnessTracker(const HotnessOptions& options,
                               std::function<Clock::time_point()> now)
    : options_(Sanitized(options)),
      // An empty clock would throw at the first call; fall back to the real one instead.
      now_(now ? std::move(now) : std::function<Clock::time_point()>(Clock::now)),
      origin_(now_()),
      slice_width_(std::chrono::duration_cast<Clock::duration>(options_.window) / kWindowSlices),
      writes_(SketchOptions(options_), options_.partition_wcu_limit),
      reads_(SketchOptions(options_), options_.partition_rcu_limit) {}

void HotnessTracker::RecordWrite(std::string_view partition, std::size_t item_bytes) {
  Record(writes_, partition, 1, UnitsFor(item_bytes, 1024));
}

void HotnessTracker::RecordRead(std::string_view partition, std::size_t items, std::size_t bytes) {
  Record(reads_, partition, items, UnitsFor(bytes, 4096));
}

std::int64_t HotnessTracker::EpochOf(Clock::time_point now) const {
  // A clock reading before construction counts as the first slice.
  return std::max(now - origin_, Clock::duration::zero()) / slice_width_;
}

void HotnessTracker::Record(Traffic& traffic, std::string_view partition, std::uint64_t items,
                            std::uint64_t units) {
  const std::int64_t epoch = EpochOf(now_());
  std::lock_guard lock(traffic.mutex);
  Slice& slice = traffic.slices[static_cast<std::size_t>(epoch % kWindowSlices)];
  if (slice.epoch != epoch) {
    slice.epoch = epoch;
    slice.items.Clear();
    slice.units.Clear();
    slice.partitions.Clear();
  }
  slice.items.Add(partition, items);
  slice.units.Add(partition, units);
  slice.partitions.Add(partition);
}

HotnessReport HotnessTracker::Report() const {
  const Clock::time_point now = now_();
  HotnessReport report;
  report.writes = Summarize(writes_, now);
  report.reads = Summarize(reads_, now);
  const TrafficReport& writes = report.writes;
  report.low_cardinality_partition_key =
      writes.total_items >= options_.low_cardinality_min_writes &&
      (writes.distinct_partitions < options_.low_cardinality_min_partitions ||
       writes.topk_share > options_.low_cardinality_top_share);
  return report;
}

TrafficReport HotnessTracker::Summarize(const Traffic& traffic, Clock::time_point now) const {
  const std::int64_t epoch = EpochOf(now);
  const std::int64_t oldest_epoch = std::max<std::int64_t>(0, epoch - kWindowSlices + 1);
  TrafficReport report;
  report.window_seconds = std::chrono::duration<double>(
                              std::max(now - (origin_ + oldest_epoch * slice_width_), slice_width_))
                              .count();

  std::vector<const SpaceSaving*> items;
  std::vector<const SpaceSaving*> units;
  HyperLogLog partitions;
  {
    std::lock_guard lock(traffic.mutex);
    for (const Slice& slice : traffic.slices) {
      if (slice.epoch < oldest_epoch) continue;
      items.push_back(&slice.items);
      units.push_back(&slice.units);
      report.total_items += slice.items.total();
      report.total_units += slice.units.total();
      // Same default precision on both sides, so the merge cannot fail.
      (void)partitions.Merge(slice.partitions);
    }
    report.distinct_partitions = partitions.Estimate();
    for (SpaceSavingEntry& by_units : TopKAcross(units, static_cast<std::size_t>(options_.top_k))) {
      const SpaceSavingEntry by_items = EstimateAcross(items, by_units.key);
      PartitionLoad load;
      load.items = by_items.count;
      load.items_error = by_items.error;
      load.units = by_units.count;
      load.units_error = by_units.error;
      load.units_per_second = static_cast<double>(by_units.count) / report.window_seconds;
      load.hot = static_cast<double>(by_units.count - by_units.error) / report.window_seconds >
                 traffic.units_limit;
      load.partition = std::move(by_units.key);
      report.top.push_back(std::move(load));
    }
  }

  if (report.total_units == 0) return report;
  for (const PartitionLoad& load : report.top) {
    const double share = static_cast<double>(load.units - load.units_error) /
                         static_cast<double>(report.total_units);
    report.top_share = std::max(report.top_share, share);
    report.topk_share += share;
    report.concentration_index += share * share;
  }
  return report;
}

}  // namespace readingsd::metrics
