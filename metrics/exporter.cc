#include "metrics/exporter.h"

#include <algorithm>
#include <utility>

#include <prometheus/text_serializer.h>

namespace readingsd::metrics {

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Registry;

// Readings per batch: 1-2-5 steps from a single reading to the largest batch ingest is expected
// to build.
const Histogram::BucketBoundaries kBatchSizeBuckets = {1,   2,   5,    10,   20,   50,
                                                       100, 200, 500, 1000, 2000, 5000};
// A RocksDB batch commit: from 100 us (memtable only) up to 10 s, to see write stalls.
const Histogram::BucketBoundaries kBatchSecondsBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                          0.005,  0.01,    0.025,  0.05,  0.1,
                                                          0.25,   0.5,     1,      2.5,   10};
// An HTTP query: from a 1 ms point lookup up to a 10 s scan of a long range.
const Histogram::BucketBoundaries kQuerySecondsBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                          0.05,  0.1,    0.25,  0.5,  1,
                                                          2.5,   5,      10};

Family<Gauge>& GaugeFamily(Registry& registry, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

Gauge& SingleGauge(Registry& registry, const std::string& name, const std::string& help) {
  return GaugeFamily(registry, name, help).Add({});
}

Family<Counter>& CounterFamily(Registry& registry, const std::string& name,
                               const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

Family<Histogram>& HistogramFamily(Registry& registry, const std::string& name,
                                   const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

}  // namespace

Exporter::PartitionSeries::PartitionSeries(Family<Gauge>& items, Family<Gauge>& units_per_second,
                                           Family<Gauge>& hot, prometheus::Labels labels)
    : items_(items), units_per_second_(units_per_second), hot_(hot), labels_(std::move(labels)) {}

void Exporter::PartitionSeries::Publish(const std::vector<PartitionLoad>& top) {
  // Remove before adding, so the number of series never exceeds top_k.
  for (auto it = by_partition_.begin(); it != by_partition_.end();) {
    const bool still_top = std::any_of(top.begin(), top.end(), [&](const PartitionLoad& load) {
      return load.partition == it->first;
    });
    if (still_top) {
      ++it;
      continue;
    }
    items_.Remove(it->second.items);
    units_per_second_.Remove(it->second.units_per_second);
    hot_.Remove(it->second.hot);
    it = by_partition_.erase(it);
  }
  for (const PartitionLoad& load : top) {
    auto [it, inserted] = by_partition_.try_emplace(load.partition);
    if (inserted) {
      prometheus::Labels labels = labels_;
      labels.emplace("partition", load.partition);
      it->second = {&items_.Add(labels), &units_per_second_.Add(labels), &hot_.Add(labels)};
    }
    it->second.items->Set(static_cast<double>(load.items));
    it->second.units_per_second->Set(load.units_per_second);
    it->second.hot->Set(load.hot ? 1 : 0);
  }
}

Exporter::HotnessFamilies::HotnessFamilies(Registry& registry)
    : writes(GaugeFamily(registry, "readingsd_partition_writes",
                         "Writes to the partition in the window (estimate), top-K partitions only.")),
      write_units_per_second(GaugeFamily(registry, "readingsd_partition_write_units_per_second",
                                         "Write capacity units per second on the partition (estimate).")),
      write_hot(GaugeFamily(registry, "readingsd_partition_hot",
                            "1 when the partition surely exceeds the per-partition WCU/s limit.")),
      reads(GaugeFamily(registry, "readingsd_partition_reads",
                        "Items read from the partition in the window (estimate), top-K only.")),
      read_units_per_second(GaugeFamily(registry, "readingsd_partition_read_units_per_second",
                                        "Read capacity units per second on the partition (estimate).")),
      read_hot(GaugeFamily(registry, "readingsd_partition_read_hot",
                           "1 when the partition surely exceeds the per-partition RCU/s limit.")),
      distinct(GaugeFamily(registry, "readingsd_partitions_distinct",
                           "Distinct partitions written in the window (estimate).")),
      top_share(GaugeFamily(registry, "readingsd_partition_top_share",
                            "Share of window write units on the hottest partition (lower bound).")),
      topk_share(GaugeFamily(registry, "readingsd_partition_topk_share",
                             "Share of window write units on the top-K partitions (lower bound).")),
      concentration_index(GaugeFamily(registry, "readingsd_partition_concentration_index",
                                      "Herfindahl-Hirschman index of write-unit shares over the top-K (lower "
                                      "bound).")),
      low_cardinality(GaugeFamily(registry, "readingsd_low_cardinality_partition_key",
                                  "1 when the partition key concentrates writes on few partitions.")) {}

Exporter::KeyHotness::KeyHotness(HotnessFamilies& families, const prometheus::Labels& labels,
                                 const HotnessOptions& options,
                                 std::function<HotnessTracker::Clock::time_point()> now)
    : tracker(options, std::move(now)),
      write_series(families.writes, families.write_units_per_second, families.write_hot, labels),
      read_series(families.reads, families.read_units_per_second, families.read_hot, labels),
      distinct(families.distinct.Add(labels)),
      top_share(families.top_share.Add(labels)),
      topk_share(families.topk_share.Add(labels)),
      concentration_index(families.concentration_index.Add(labels)),
      low_cardinality(families.low_cardinality.Add(labels)) {}

void Exporter::KeyHotness::Publish(const HotnessReport& report) {
  write_series.Publish(report.writes.top);
  read_series.Publish(report.reads.top);
  distinct.Set(report.writes.distinct_partitions);
  top_share.Set(report.writes.top_share);
  topk_share.Set(report.writes.topk_share);
  concentration_index.Set(report.writes.concentration_index);
  low_cardinality.Set(report.low_cardinality_partition_key ? 1 : 0);
}

Exporter::Exporter(const HotnessOptions& hotness_options,
                   std::function<HotnessTracker::Clock::time_point()> now,
                   const std::vector<std::string>& indexes)
    : hotness_families_(registry_),
      table_hotness_(hotness_families_, {}, hotness_options, now),
      readings_ingested_(CounterFamily(registry_, "readingsd_readings_ingested_total",
                                       "Readings accepted from MQTT and written to the store.")
                             .Add({})),
      readings_deleted_(CounterFamily(registry_, "readingsd_readings_deleted_total",
                                      "Readings deleted (DELETE /v1/devices/{id}/readings, readingsd delete).")
                            .Add({})),
      readings_rejected_(CounterFamily(registry_, "readingsd_readings_rejected_total",
                                       "Readings dropped before the store, by reason.")),
      index_built_(GaugeFamily(registry_, "readingsd_index_built_ratio",
                               "Share of the readings a declared secondary index holds (below 1 while it is "
                               "backfilled).")),
      mqtt_connected_(SingleGauge(registry_, "readingsd_mqtt_connected",
                                  "1 while connected to the MQTT broker, else 0.")),
      nats_connected_(SingleGauge(registry_, "readingsd_nats_connected",
                                  "1 while connected to a NATS server (readings from JetStream), else 0.")),
      mqtt_reconnects_(CounterFamily(registry_, "readingsd_mqtt_reconnects_total",
                                     "Connections to the MQTT broker re-established after one was lost "
                                     "(the broker accepted us again); failed attempts are not counted.")
                           .Add({})),
      write_batch_size_(HistogramFamily(registry_, "readingsd_write_batch_size",
                                        "Readings per store write batch.")
                            .Add({}, kBatchSizeBuckets)),
      write_batch_seconds_(HistogramFamily(registry_, "readingsd_write_batch_seconds",
                                           "Time to commit one store write batch.")
                               .Add({}, kBatchSecondsBuckets)),
      query_seconds_(HistogramFamily(registry_, "readingsd_query_seconds",
                                     "Time to answer one HTTP query, by endpoint.")),
      http_connections_shed_(
          CounterFamily(registry_, "readingsd_http_connections_shed_total",
                        "HTTP connections closed while waiting for a request, to make room for a new one.")
              .Add({})),
      http_connections_refused_(CounterFamily(registry_, "readingsd_http_connections_refused_total",
                                              "HTTP connections answered 503: every connection was busy.")
                                    .Add({})),
      broker_dropped_messages_(CounterFamily(
          registry_, "readingsd_broker_dropped_messages_total",
          "Messages the MQTT broker dropped for full client queues, all clients, since it started, as it "
          "reports them ($SYS/broker/publish/messages/dropped); absent until it does.")),
      store_{SingleGauge(registry_, "readingsd_rocksdb_sst_bytes", "Total size of SST files."),
             SingleGauge(registry_, "readingsd_rocksdb_memtable_bytes",
                         "Size of active and unflushed memtables."),
             SingleGauge(registry_, "readingsd_rocksdb_pending_compaction_bytes",
                         "Bytes compaction still has to rewrite."),
             SingleGauge(registry_, "readingsd_rocksdb_stall_micros",
                         "Cumulative microseconds writes were stalled."),
             SingleGauge(registry_, "readingsd_rocksdb_estimated_keys",
                         "Estimated number of keys."),
             SingleGauge(registry_, "readingsd_rocksdb_block_cache_misses",
                         "Cumulative blocks (data, index, filter) read from files, not the cache."),
             SingleGauge(registry_, "readingsd_rocksdb_block_cache_bytes",
                         "Block cache in use, index and filter blocks included; it fills towards its "
                         "capacity as data is written."),
             SingleGauge(registry_, "readingsd_rocksdb_block_cache_capacity_bytes",
                         "Block cache capacity (storage.block_cache_mb)."),
             CounterFamily(registry_, "readingsd_store_corruption_errors_total",
                           "Corruption (checksum mismatches) the store met while serving; /readyz is "
                           "degraded after the first.")
                 .Add({}),
             SingleGauge(registry_, "readingsd_rocksdb_wal_syncs",
                         "Cumulative fsyncs of the write-ahead log: one per group commit with "
                         "storage.sync = true.")} {
  for (const std::string& index : indexes) {
    index_hotness_.try_emplace(index, hotness_families_, prometheus::Labels{{"index", index}}, hotness_options, now);
  }
}

HotnessTracker* Exporter::index_hotness(std::string_view index) {
  auto it = index_hotness_.find(index);
  return it == index_hotness_.end() ? nullptr : &it->second.tracker;
}

Counter& Exporter::readings_rejected(const std::string& reason) {
  return readings_rejected_.Add({{"reason", reason}});
}

Gauge& Exporter::index_built(const std::string& index) { return index_built_.Add({{"index", index}}); }

Histogram& Exporter::query_seconds(std::string_view endpoint) {
  std::lock_guard lock(query_seconds_mutex_);
  auto it = query_seconds_by_endpoint_.find(endpoint);
  if (it == query_seconds_by_endpoint_.end()) {
    std::string name(endpoint);
    Histogram* series = &query_seconds_.Add({{"endpoint", name}}, kQuerySecondsBuckets);
    it = query_seconds_by_endpoint_.emplace(std::move(name), series).first;
  }
  return *it->second;
}

void Exporter::SetBrokerDroppedMessages(std::uint64_t total) {
  std::lock_guard lock(broker_dropped_mutex_);
  if (broker_dropped_series_ != nullptr && total < broker_dropped_total_) {
    broker_dropped_messages_.Remove(broker_dropped_series_);
    broker_dropped_series_ = nullptr;
  }
  if (broker_dropped_series_ == nullptr) {
    broker_dropped_series_ = &broker_dropped_messages_.Add({});
    broker_dropped_total_ = 0;
  }
  broker_dropped_series_->Increment(static_cast<double>(total - broker_dropped_total_));
  broker_dropped_total_ = total;
}

void Exporter::SetStoreFiguresSource(std::function<StoreFigures()> source) {
  std::lock_guard lock(publish_mutex_);
  store_figures_ = std::move(source);
}

std::string Exporter::Serialize() {
  {
    std::lock_guard lock(publish_mutex_);
    table_hotness_.Publish(table_hotness_.tracker.Report());
    for (auto& [name, key] : index_hotness_) key.Publish(key.tracker.Report());
    if (store_figures_) Publish(store_figures_());
  }
  return prometheus::TextSerializer().Serialize(registry_.Collect());
}

void Exporter::Publish(const StoreFigures& figures) {
  store_.sst_bytes.Set(static_cast<double>(figures.sst_bytes));
  store_.memtable_bytes.Set(static_cast<double>(figures.memtable_bytes));
  store_.pending_compaction_bytes.Set(static_cast<double>(figures.pending_compaction_bytes));
  store_.stall_micros.Set(static_cast<double>(figures.stall_micros));
  store_.estimated_keys.Set(static_cast<double>(figures.estimated_keys));
  store_.block_cache_misses.Set(static_cast<double>(figures.block_cache_misses));
  store_.block_cache_bytes.Set(static_cast<double>(figures.block_cache_bytes));
  store_.block_cache_capacity_bytes.Set(static_cast<double>(figures.block_cache_capacity_bytes));
  // The store counts; the counter follows it (a counter only goes up, and so does the count).
  double corruption = static_cast<double>(figures.corruption_errors);
  if (corruption > store_.corruption_errors.Value()) {
    store_.corruption_errors.Increment(corruption - store_.corruption_errors.Value());
  }
  store_.wal_syncs.Set(static_cast<double>(figures.wal_syncs));
}

}  // namespace readingsd::metrics
