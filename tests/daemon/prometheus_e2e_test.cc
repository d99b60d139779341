// End to end with a real Prometheus server (Debian package `prometheus`): the test starts it with
// a scrape config pointing at the real readingsd binary, publishes through mosquitto, and reads
// the partition-hotness metrics back through Prometheus's own HTTP API. So what is checked is
// what an operator's dashboard would see: the exposition parses, the series are scraped, a
// partition that drops out of the top-K goes stale, and the series count stays bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/prometheus_server.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

using std::chrono::seconds;

constexpr int kTopK = 20;

std::vector<std::string> MetricsArgs() {
  return {"--metrics.top_k=" + std::to_string(kTopK), "--metrics.window_seconds=60"};
}

// Waits until Prometheus has scraped the target up and reporting `ingested` readings.
void WaitForIngested(const PrometheusServer& prometheus, const Daemon& daemon, double ingested) {
  ASSERT_TRUE(WaitUntil([&] { return prometheus.Value("readingsd_readings_ingested_total") == ingested; },
                        seconds(30)))
      << "Prometheus saw " << prometheus.Value("readingsd_readings_ingested_total").value_or(-1)
      << " readings ingested, want " << ingested << "\n"
      << daemon.log() << "\n"
      << prometheus.log();
}

// The target is up in Prometheus (its first scrape succeeded).
void WaitForTargetUp(const PrometheusServer& prometheus, const Daemon& daemon) {
  ASSERT_TRUE(WaitUntil([&] { return prometheus.Value(R"(up{job="readingsd"})") == 1.0; }, seconds(20)))
      << "target never up\n"
      << daemon.log() << "\n"
      << prometheus.log();
}

TEST(PrometheusE2E, SkewedStreamShowsHotPartitionAndLowCardinalityFlag) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = MetricsArgs()});
  daemon.Start();
  PrometheusServer prometheus(PrometheusServer::ScrapeConfig(daemon.http_port()));
  WaitForTargetUp(prometheus, daemon);
  ASSERT_EQ(prometheus.Value("readingsd_low_cardinality_partition_key"), 0.0);

  // 5,000 readings, 3,000 (60 %) of them on dev00001: 2,990 with --devices 1, then 2,010
  // round-robin over dev00001..dev00201, which adds 10 to dev00001 and 10 to each of 200 others.
  // The second run starts 10^8 ms later, so dev00001's (device, ts) pairs do not collide.
  tools::GeneratorOptions hot;
  hot.count = 2990;
  hot.devices = 1;
  tools::GeneratorOptions spread;
  spread.count = 2010;
  spread.devices = 201;
  spread.start_ms = tools::kDefaultStartMs + 100'000'000;
  PublishResult published = RunPublisher({.port = broker.port(), .generator = hot, .client_id = "hot-publisher"});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  ASSERT_EQ(published.acked, 2990u);
  published = RunPublisher({.port = broker.port(), .generator = spread, .client_id = "spread-publisher"});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  ASSERT_EQ(published.acked, 2010u);

  WaitForIngested(prometheus, daemon, 5000);
  EXPECT_TRUE(WaitUntil([&] { return prometheus.Value("readingsd_low_cardinality_partition_key") == 1.0; },
                        seconds(30)))
      << "flag = " << prometheus.Value("readingsd_low_cardinality_partition_key").value_or(-1) << "\n"
      << Get(daemon.http_port(), "/metrics").second;

  // The hottest partition series is the hot device's, with its 3,000 writes (Space-Saving
  // overestimates by at most N / (4 K) = 5000 / 80 = 62.5).
  const std::string hot_partition = "DEV#" + tools::DeviceId(0);
  auto writes = prometheus.Query("readingsd_partition_writes");
  ASSERT_TRUE(writes.has_value()) << prometheus.log();
  ASSERT_FALSE(writes->empty());
  EXPECT_LE(writes->size(), static_cast<std::size_t>(kTopK));
  std::string max_partition;
  double max_value = -1;
  bool hot_seen = false;
  for (const auto& sample : *writes) {
    EXPECT_EQ(sample["metric"].value("job", ""), "readingsd");
    const std::string partition = sample["metric"].value("partition", "");
    const double value = std::stod(sample["value"][1].get<std::string>());
    if (partition == hot_partition) hot_seen = true;
    if (value > max_value) {
      max_value = value;
      max_partition = partition;
    }
  }
  EXPECT_TRUE(hot_seen) << writes->dump();
  EXPECT_EQ(max_partition, hot_partition) << writes->dump();
  EXPECT_GE(max_value, 3000);
  EXPECT_LE(max_value, 3000 + 63);

  auto top_share = prometheus.Value("readingsd_partition_top_share");
  ASSERT_TRUE(top_share.has_value());
  EXPECT_NEAR(*top_share, 0.6, 0.1);
  auto distinct = prometheus.Value("readingsd_partitions_distinct");
  ASSERT_TRUE(distinct.has_value());
  EXPECT_NEAR(*distinct, 201, 201 * 0.05);
  // 3,000 writes are at most 300 WCU/s (rates divide by the time covered, at least one 10 s
  // slice of the 60 s window), below the 1,000 WCU/s partition limit.
  EXPECT_EQ(prometheus.Value("readingsd_partition_hot{partition=\"" + hot_partition + "\"}"), 0.0);
}

TEST(PrometheusE2E, UniformStreamOverThousandDevicesKeepsFlagZeroAndSeriesBounded) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = MetricsArgs()});
  daemon.Start();
  PrometheusServer prometheus(PrometheusServer::ScrapeConfig(daemon.http_port()));
  WaitForTargetUp(prometheus, daemon);

  // The fixed set: everything the target exposes with zero partitions (plus Prometheus's own
  // per-target series: up, scrape_duration_seconds, scrape_samples_*, scrape_series_added).
  ASSERT_TRUE(prometheus.WaitForScrapes(1));
  auto fixed = prometheus.Value(R"(count({job="readingsd"}))");
  ASSERT_TRUE(fixed.has_value()) << prometheus.log();
  EXPECT_FALSE(prometheus.Value("count(readingsd_partition_writes)").has_value());
  std::cout << "[          ] series with zero partitions: " << *fixed << "\n";

  tools::GeneratorOptions uniform;  // round-robin: 5 readings for each of 1,000 devices
  uniform.count = 5000;
  uniform.devices = 1000;
  PublishResult published = RunPublisher({.port = broker.port(), .generator = uniform});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  ASSERT_EQ(published.acked, 5000u);

  WaitForIngested(prometheus, daemon, 5000);
  ASSERT_TRUE(prometheus.WaitForScrapes(2)) << prometheus.log();

  // Zero now, and at every scrape since the target came up.
  EXPECT_EQ(prometheus.Value("readingsd_low_cardinality_partition_key"), 0.0)
      << Get(daemon.http_port(), "/metrics").second;
  EXPECT_EQ(prometheus.Value("max_over_time(readingsd_low_cardinality_partition_key[5m])"), 0.0);

  auto partitions = prometheus.Value("count(readingsd_partition_writes)");
  ASSERT_TRUE(partitions.has_value());
  EXPECT_GE(*partitions, 1);
  EXPECT_LE(*partitions, kTopK);
  // Never more than K at any scrape: partitions that leave the top-K go stale.
  EXPECT_LE(prometheus.Value("max_over_time(count(readingsd_partition_writes)[5m:1s])").value_or(1e9), kTopK);

  // Only writes happened, so at most 3 series per top-K partition (writes, units/s, hot) on top
  // of the fixed set; and in any case within the exporter's documented bound 2 * 3 * K + fixed,
  // with 150 as a generous ceiling on the fixed set (it is measured above, ~80).
  auto total = prometheus.Value(R"(count({job="readingsd"}))");
  ASSERT_TRUE(total.has_value());
  std::cout << "[          ] series after 1,000 devices: " << *total << " (" << *partitions
            << " partitions)\n";
  EXPECT_LE(*total, *fixed + 3 * kTopK);
  EXPECT_LE(*total, 6 * kTopK + 150);
  EXPECT_LE(prometheus.Value(R"(max_over_time(count({job="readingsd"})[5m:1s]))").value_or(1e9),
            *fixed + 3 * kTopK);

  auto distinct = prometheus.Value("readingsd_partitions_distinct");
  ASSERT_TRUE(distinct.has_value());
  EXPECT_NEAR(*distinct, 1000, 1000 * 0.05);
  EXPECT_LT(prometheus.Value("readingsd_partition_top_share").value_or(1), 0.1);
  EXPECT_LE(prometheus.Value("readingsd_partition_topk_share").value_or(1), 0.5);
}

}  // namespace
}  // namespace readingsd::test
