// Exporter: readingsd's Prometheus metrics, rendered as text by Serialize() for whatever HTTP
// server the daemon runs (prometheus-cpp core only, no server here).
//
// Partition hotness comes from the owned HotnessTrackers and is published at Serialize() time:
// one for the table (device partitions; its series carry no index label) and one per declared
// secondary index (its partitions; series labelled {index="name"}), so that an index whose key
// funnels every write into a few partitions raises its own low-cardinality flag without hiding
// the table's. Per-partition series exist only for the current top-K: a partition that drops out
// has its series removed, so series stay at most (1 + indexes) * (2 * 3 * top_k + 5) plus a
// fixed set, whatever the fleet.
//
// Operational metrics are plain prometheus-cpp objects handed out by reference; the references
// stay valid for the Exporter's lifetime and are safe to use from any thread. The labelled ones
// (rejection reason, query endpoint) create a series on first use: callers must pass a small
// fixed set of values and should keep the reference rather than look it up per event.
//
// Nothing here throws for valid use; metric and label names are fixed and valid.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "metrics/hotness.h"

namespace readingsd::metrics {

// What the daemon reads from its store for export; metrics does not depend on storage.
struct StoreFigures {
  std::uint64_t sst_bytes = 0;
  std::uint64_t memtable_bytes = 0;
  std::uint64_t pending_compaction_bytes = 0;
  std::uint64_t stall_micros = 0;  // cumulative, so rate() it
  std::uint64_t estimated_keys = 0;
  std::uint64_t block_cache_misses = 0;  // cumulative
  std::uint64_t block_cache_bytes = 0;
  std::uint64_t block_cache_capacity_bytes = 0;
  std::uint64_t corruption_errors = 0;  // cumulative: checksum mismatches met while serving
  std::uint64_t wal_syncs = 0;  // cumulative
};

class Exporter {
 public:
  // `indexes`: the names of the declared secondary indexes, each with its own hotness.
  explicit Exporter(const HotnessOptions& hotness_options = {},
                    std::function<HotnessTracker::Clock::time_point()> now =
                        HotnessTracker::Clock::now,
                    const std::vector<std::string>& indexes = {});

  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The table's partitions ("DEV#" + device id).
  HotnessTracker& hotness() { return table_hotness_.tracker; }
  // The partitions of a declared index (partition values with their shard suffix); null for a
  // name not given to the constructor.
  HotnessTracker* index_hotness(std::string_view index);

  // readingsd_readings_ingested_total
  prometheus::Counter& readings_ingested() { return readings_ingested_; }
  // readingsd_readings_deleted_total: removed by DELETE /v1/devices/{id}/readings
  prometheus::Counter& readings_deleted() { return readings_deleted_; }
  // readingsd_readings_rejected_total{reason}
  prometheus::Counter& readings_rejected(const std::string& reason);
  // readingsd_index_built_ratio{index}: share of the readings a declared secondary index holds
  // entries of (1 once built; below 1 while it is backfilled).
  prometheus::Gauge& index_built(const std::string& index);
  // readingsd_mqtt_connected: 1 while connected to the broker, else 0.
  prometheus::Gauge& mqtt_connected() { return mqtt_connected_; }
  // readingsd_nats_connected: 1 while connected to a NATS server (with [nats]), else 0.
  prometheus::Gauge& nats_connected() { return nats_connected_; }
  // readingsd_mqtt_reconnects_total: connections the broker accepted after the first, i.e. each
  // lost connection that was re-established; attempts that fail are logged, not counted.
  prometheus::Counter& mqtt_reconnects() { return mqtt_reconnects_; }
  // readingsd_broker_dropped_messages_total: the broker's own count of the messages it dropped
  // for full client queues, all clients, since it started (mosquitto's
  // $SYS/broker/publish/messages/dropped), as last reported. The series appears with the first
  // report, so a readingsd restart does not look like a reset; a lower count (the broker
  // restarted) starts the series again, which Prometheus reads as the reset it is.
  void SetBrokerDroppedMessages(std::uint64_t total);
  // readingsd_write_batch_size: readings per RocksDB write batch.
  prometheus::Histogram& write_batch_size() { return write_batch_size_; }
  // readingsd_write_batch_seconds: time to commit one write batch.
  prometheus::Histogram& write_batch_seconds() { return write_batch_seconds_; }
  // readingsd_query_seconds{endpoint}. Called once per HTTP request, so the series is looked up
  // by the endpoint name alone, not by building a label set as Family::Add does.
  prometheus::Histogram& query_seconds(std::string_view endpoint);
  // readingsd_http_connections_shed_total: connections closed to make room for a new one.
  prometheus::Counter& http_connections_shed() { return http_connections_shed_; }
  // readingsd_http_connections_refused_total: new connections answered 503, every one busy.
  prometheus::Counter& http_connections_refused() { return http_connections_refused_; }

  // Called at every Serialize() to set the readingsd_rocksdb_* gauges; they read 0 until a
  // source is set. The source runs on the scraping thread and must not throw.
  void SetStoreFiguresSource(std::function<StoreFigures()> source);

  // All metrics in the Prometheus text exposition format (version 0.0.4).
  std::string Serialize();

 private:
  // The per-partition series of one direction, kept equal to the current top-K.
  class PartitionSeries {
   public:
    // `labels`: what every series carries besides its partition.
    PartitionSeries(prometheus::Family<prometheus::Gauge>& items,
                    prometheus::Family<prometheus::Gauge>& units_per_second,
                    prometheus::Family<prometheus::Gauge>& hot, prometheus::Labels labels);
    void Publish(const std::vector<PartitionLoad>& top);

   private:
    struct Gauges {
      prometheus::Gauge* items;
      prometheus::Gauge* units_per_second;
      prometheus::Gauge* hot;
    };
    prometheus::Family<prometheus::Gauge>& items_;
    prometheus::Family<prometheus::Gauge>& units_per_second_;
    prometheus::Family<prometheus::Gauge>& hot_;
    prometheus::Labels labels_;
    std::unordered_map<std::string, Gauges> by_partition_;
  };

  // The hotness metric families, shared by the table and the indexes.
  struct HotnessFamilies {
    explicit HotnessFamilies(prometheus::Registry& registry);
    prometheus::Family<prometheus::Gauge>& writes;
    prometheus::Family<prometheus::Gauge>& write_units_per_second;
    prometheus::Family<prometheus::Gauge>& write_hot;
    prometheus::Family<prometheus::Gauge>& reads;
    prometheus::Family<prometheus::Gauge>& read_units_per_second;
    prometheus::Family<prometheus::Gauge>& read_hot;
    prometheus::Family<prometheus::Gauge>& distinct;
    prometheus::Family<prometheus::Gauge>& top_share;
    prometheus::Family<prometheus::Gauge>& topk_share;
    prometheus::Family<prometheus::Gauge>& concentration_index;
    prometheus::Family<prometheus::Gauge>& low_cardinality;
  };

  // One key's tracker and series: the table's (labels {}) or an index's ({index="name"}).
  struct KeyHotness {
    KeyHotness(HotnessFamilies& families, const prometheus::Labels& labels, const HotnessOptions& options,
               std::function<HotnessTracker::Clock::time_point()> now);
    void Publish(const HotnessReport& report);

    HotnessTracker tracker;
    PartitionSeries write_series;
    PartitionSeries read_series;
    prometheus::Gauge& distinct;
    prometheus::Gauge& top_share;
    prometheus::Gauge& topk_share;
    prometheus::Gauge& concentration_index;
    prometheus::Gauge& low_cardinality;
  };

  struct StoreGauges {
    prometheus::Gauge& sst_bytes;
    prometheus::Gauge& memtable_bytes;
    prometheus::Gauge& pending_compaction_bytes;
    prometheus::Gauge& stall_micros;
    prometheus::Gauge& estimated_keys;
    prometheus::Gauge& block_cache_misses;
    prometheus::Gauge& block_cache_bytes;
    prometheus::Gauge& block_cache_capacity_bytes;
    prometheus::Counter& corruption_errors;
    prometheus::Gauge& wal_syncs;
  };

  void Publish(const StoreFigures& figures);

  prometheus::Registry registry_;  // first: everything below lives in it
  HotnessFamilies hotness_families_;
  KeyHotness table_hotness_;
  // Filled by the constructor, unchanged after: lookups need no lock.
  std::map<std::string, KeyHotness, std::less<>> index_hotness_;

  prometheus::Counter& readings_ingested_;
  prometheus::Counter& readings_deleted_;
  prometheus::Family<prometheus::Counter>& readings_rejected_;
  prometheus::Family<prometheus::Gauge>& index_built_;
  prometheus::Gauge& mqtt_connected_;
  prometheus::Gauge& nats_connected_;
  prometheus::Counter& mqtt_reconnects_;
  prometheus::Histogram& write_batch_size_;
  prometheus::Histogram& write_batch_seconds_;
  prometheus::Family<prometheus::Histogram>& query_seconds_;
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  std::mutex query_seconds_mutex_;
  std::unordered_map<std::string, prometheus::Histogram*, NameHash, std::equal_to<>> query_seconds_by_endpoint_;
  prometheus::Counter& http_connections_shed_;
  prometheus::Counter& http_connections_refused_;
  prometheus::Family<prometheus::Counter>& broker_dropped_messages_;
  std::mutex broker_dropped_mutex_;
  prometheus::Counter* broker_dropped_series_ = nullptr;  // until the first report
  std::uint64_t broker_dropped_total_ = 0;

  StoreGauges store_;

  std::mutex publish_mutex_;  // one scrape at a time updates series and reads the store source
  std::function<StoreFigures()> store_figures_;
};

}  // namespace readingsd::metrics
