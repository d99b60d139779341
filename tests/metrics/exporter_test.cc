#include "metrics/exporter.h"

#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/metrics/fake_clock.h"

namespace readingsd::metrics {
namespace {

constexpr std::size_t kReadingBytes = 120;

std::string Device(int i) { return "DEV#" + std::to_string(i); }

// gtest only: gmock is not a dependency of the tree.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"" << part << "\" in:\n" << text;
}

// Sample lines (not # HELP / # TYPE) that start with `prefix`.
int CountSamples(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += line.rfind(prefix, 0) == 0;
  return count;
}

class ExporterTest : public ::testing::Test {
 protected:
  FakeClock clock_;
};

TEST_F(ExporterTest, SerializesEveryMetric) {
  Exporter exporter(HotnessOptions{}, clock_.AsFunction());
  exporter.hotness().RecordWrite(Device(1), kReadingBytes);
  exporter.hotness().RecordRead(Device(1), 3, 500);
  exporter.readings_ingested().Increment();
  exporter.readings_rejected("bad_payload").Increment(2);
  exporter.mqtt_connected().Set(1);
  exporter.mqtt_reconnects().Increment();
  exporter.write_batch_size().Observe(64);
  exporter.write_batch_seconds().Observe(0.003);
  exporter.query_seconds("readings").Observe(0.02);
  exporter.http_connections_shed().Increment(3);
  exporter.http_connections_refused().Increment();
  exporter.SetBrokerDroppedMessages(5);
  exporter.SetStoreFiguresSource([] {
    StoreFigures figures;
    figures.sst_bytes = 123'456;
    figures.estimated_keys = 42;
    figures.block_cache_misses = 7;
    figures.block_cache_bytes = 5'000;
    figures.block_cache_capacity_bytes = 8'192;
    figures.wal_syncs = 11;
    return figures;
  });

  const std::string text = exporter.Serialize();
  for (const char* name :
       {"readingsd_partition_writes", "readingsd_partition_write_units_per_second",
        "readingsd_partition_hot", "readingsd_partition_reads",
        "readingsd_partition_read_units_per_second", "readingsd_partition_read_hot",
        "readingsd_partitions_distinct", "readingsd_partition_top_share",
        "readingsd_partition_topk_share", "readingsd_partition_concentration_index",
        "readingsd_low_cardinality_partition_key", "readingsd_readings_ingested_total",
        "readingsd_readings_rejected_total", "readingsd_mqtt_connected",
        "readingsd_mqtt_reconnects_total", "readingsd_write_batch_size",
        "readingsd_write_batch_seconds", "readingsd_query_seconds",
        "readingsd_http_connections_shed_total", "readingsd_http_connections_refused_total",
        "readingsd_broker_dropped_messages_total", "readingsd_rocksdb_sst_bytes",
        "readingsd_rocksdb_memtable_bytes", "readingsd_rocksdb_pending_compaction_bytes",
        "readingsd_rocksdb_stall_micros", "readingsd_rocksdb_estimated_keys",
        "readingsd_rocksdb_block_cache_misses", "readingsd_rocksdb_block_cache_bytes",
        "readingsd_rocksdb_block_cache_capacity_bytes", "readingsd_rocksdb_wal_syncs"}) {
    EXPECT_TRUE(Contains(text, std::string("# TYPE ") + name + " "));
  }
  EXPECT_TRUE(Contains(text, "readingsd_partition_writes{partition=\"DEV#1\"} 1\n"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_reads{partition=\"DEV#1\"} 3\n"));
  EXPECT_TRUE(Contains(text, "readingsd_readings_rejected_total{reason=\"bad_payload\"} 2\n"));
  EXPECT_TRUE(Contains(text, "readingsd_query_seconds_count{endpoint=\"readings\"} 1\n"));
  EXPECT_TRUE(Contains(text, "readingsd_http_connections_shed_total 3\n"));
  EXPECT_TRUE(Contains(text, "readingsd_http_connections_refused_total 1\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_sst_bytes 123456\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_estimated_keys 42\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_block_cache_misses 7\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_block_cache_bytes 5000\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_block_cache_capacity_bytes 8192\n"));
  EXPECT_TRUE(Contains(text, "readingsd_rocksdb_wal_syncs 11\n"));
  EXPECT_TRUE(Contains(text, "readingsd_mqtt_connected 1\n"));
}

// The broker's count, mirrored: absent until reported, then its value; a lower value (the
// broker restarted) is a counter reset.
TEST_F(ExporterTest, BrokerDroppedMessagesFollowTheBrokersCount) {
  Exporter exporter(HotnessOptions{}, clock_.AsFunction());
  EXPECT_EQ(CountSamples(exporter.Serialize(), "readingsd_broker_dropped_messages_total"), 0);
  exporter.SetBrokerDroppedMessages(0);
  EXPECT_TRUE(Contains(exporter.Serialize(), "\nreadingsd_broker_dropped_messages_total 0\n"));
  exporter.SetBrokerDroppedMessages(1301);
  exporter.SetBrokerDroppedMessages(1301);
  EXPECT_TRUE(Contains(exporter.Serialize(), "\nreadingsd_broker_dropped_messages_total 1301\n"));
  exporter.SetBrokerDroppedMessages(1500);
  EXPECT_TRUE(Contains(exporter.Serialize(), "\nreadingsd_broker_dropped_messages_total 1500\n"));
  exporter.SetBrokerDroppedMessages(7);
  const std::string text = exporter.Serialize();
  EXPECT_TRUE(Contains(text, "\nreadingsd_broker_dropped_messages_total 7\n"));
  EXPECT_EQ(CountSamples(text, "readingsd_broker_dropped_messages_total"), 1);
}

TEST_F(ExporterTest, PartitionSeriesAreBoundedByTopK) {
  Exporter exporter(HotnessOptions{}, clock_.AsFunction());
  for (int i = 0; i < 20'000; ++i) {
    exporter.hotness().RecordWrite(Device(i % 1'000), kReadingBytes);
    exporter.hotness().RecordRead(Device(i % 1'000), 1, 200);
  }
  const std::string text = exporter.Serialize();
  const int top_k = exporter.hotness().options().top_k;
  EXPECT_GT(CountSamples(text, "readingsd_partition_writes{"), 0);
  EXPECT_LE(CountSamples(text, "readingsd_partition_writes{"), top_k);
  EXPECT_LE(CountSamples(text, "readingsd_partition_write_units_per_second{"), top_k);
  EXPECT_LE(CountSamples(text, "readingsd_partition_hot{"), top_k);
  EXPECT_LE(CountSamples(text, "readingsd_partition_reads{"), top_k);
  EXPECT_TRUE(Contains(text, "readingsd_low_cardinality_partition_key 0\n"));
}

TEST_F(ExporterTest, PartitionLeavingTheTopKLosesItsSeries) {
  HotnessOptions options;
  options.top_k = 2;
  Exporter exporter(options, clock_.AsFunction());
  for (int i = 0; i < 500; ++i) exporter.hotness().RecordWrite("DEV#old", kReadingBytes);
  std::string text = exporter.Serialize();
  EXPECT_TRUE(Contains(text, "readingsd_partition_writes{partition=\"DEV#old\"} 500\n"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_hot{partition=\"DEV#old\"} 0\n"));
  EXPECT_TRUE(Contains(text, "readingsd_low_cardinality_partition_key 1\n"));

  clock_.Advance(options.window);
  for (const char* partition : {"DEV#new1", "DEV#new2"}) {
    for (int i = 0; i < 10; ++i) exporter.hotness().RecordWrite(partition, kReadingBytes);
  }
  text = exporter.Serialize();
  EXPECT_FALSE(Contains(text, "DEV#old"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_writes{partition=\"DEV#new1\"} 10\n"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_writes{partition=\"DEV#new2\"} 10\n"));
  EXPECT_EQ(CountSamples(text, "readingsd_partition_writes{"), 2);
}

// An index's partitions are judged apart from the table's: one hour funnelling every device's
// writes raises the index's flag, labelled with its name, while the table's stays 0.
TEST_F(ExporterTest, EachIndexHasItsOwnHotnessLabelledWithItsName) {
  Exporter exporter(HotnessOptions{}, clock_.AsFunction(), {"by_hour", "by_hour_sharded"});
  EXPECT_EQ(exporter.index_hotness("undeclared"), nullptr);
  ASSERT_NE(exporter.index_hotness("by_hour"), nullptr);
  ASSERT_NE(exporter.index_hotness("by_hour_sharded"), nullptr);
  for (int i = 0; i < 1'000; ++i) {
    exporter.hotness().RecordWrite(Device(i), kReadingBytes);
    exporter.index_hotness("by_hour")->RecordWrite("2026-06-23T08", kReadingBytes);
    exporter.index_hotness("by_hour_sharded")->RecordWrite("2026-06-23T08#" + std::to_string(i % 100), kReadingBytes);
  }
  const std::string text = exporter.Serialize();
  EXPECT_TRUE(Contains(text, "\nreadingsd_low_cardinality_partition_key 0\n"));
  EXPECT_TRUE(Contains(text, "readingsd_low_cardinality_partition_key{index=\"by_hour\"} 1\n"));
  EXPECT_TRUE(Contains(text, "readingsd_low_cardinality_partition_key{index=\"by_hour_sharded\"} 0\n"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_writes{index=\"by_hour\",partition=\"2026-06-23T08\"} 1000\n"));
  EXPECT_TRUE(Contains(text, "readingsd_partition_top_share{index=\"by_hour\"} 1\n"));
  // The table's series are the ones without the label, untouched by index writes.
  EXPECT_EQ(CountSamples(text, "readingsd_partition_writes{partition="), exporter.hotness().options().top_k);
  EXPECT_LE(CountSamples(text, "readingsd_partition_writes{index=\"by_hour_sharded\""),
            exporter.hotness().options().top_k);
}

TEST_F(ExporterTest, LabelledSeriesAreCreatedOnce) {
  Exporter exporter(HotnessOptions{}, clock_.AsFunction());
  EXPECT_EQ(&exporter.readings_rejected("bad_payload"), &exporter.readings_rejected("bad_payload"));
  EXPECT_NE(&exporter.readings_rejected("bad_payload"), &exporter.readings_rejected("too_old"));
  EXPECT_EQ(&exporter.query_seconds("readings"), &exporter.query_seconds("readings"));
}

}  // namespace
}  // namespace readingsd::metrics
