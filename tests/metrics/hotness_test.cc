#include "metrics/hotness.h"

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <malloc.h>

#include "tests/metrics/fake_clock.h"

#if defined(__SANITIZE_ADDRESS__)
#define READINGSD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define READINGSD_TEST_ASAN 1
#endif
#endif
#ifdef READINGSD_TEST_ASAN
// From the ASan runtime (GCC ships no header for it).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace readingsd::metrics {
namespace {

using std::chrono::seconds;

constexpr std::size_t kReadingBytes = 120;  // a reading: 1 WCU

std::string Device(int i) { return "DEV#" + std::to_string(i); }

// Bytes the process has allocated and not freed (ASan replaces malloc, so ask it then).
std::size_t HeapBytesInUse() {
#ifdef READINGSD_TEST_ASAN
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#endif
}

class HotnessTrackerTest : public ::testing::Test {
 protected:
  FakeClock clock_;
};

TEST_F(HotnessTrackerTest, OnePartitionTakingMostWritesIsFlagged) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  std::mt19937_64 rng(1);
  std::bernoulli_distribution hot(0.6);
  std::uniform_int_distribution<int> other(1, 999);
  for (int i = 0; i < 20'000; ++i) {
    tracker.RecordWrite(hot(rng) ? Device(0) : Device(other(rng)), kReadingBytes);
    if (i % 1'000 == 999) clock_.Advance(seconds(1));
  }

  const HotnessReport report = tracker.Report();
  const TrafficReport& writes = report.writes;
  EXPECT_TRUE(report.low_cardinality_partition_key);
  ASSERT_EQ(writes.top.size(), 20u);
  EXPECT_EQ(writes.top[0].partition, Device(0));
  EXPECT_NEAR(writes.top_share, 0.6, 0.02);
  EXPECT_GE(writes.topk_share, writes.top_share);
  EXPECT_GE(writes.concentration_index, writes.top_share * writes.top_share);
  EXPECT_EQ(writes.total_items, 20'000u);
  EXPECT_EQ(writes.total_units, 20'000u);
  EXPECT_NEAR(writes.distinct_partitions, 1'000, 30);
}

TEST_F(HotnessTrackerTest, KeyThatSpreadsWritesIsNotFlagged) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  for (int i = 0; i < 20'000; ++i) tracker.RecordWrite(Device(i % 1'000), kReadingBytes);

  const HotnessReport report = tracker.Report();
  EXPECT_FALSE(report.low_cardinality_partition_key);
  EXPECT_LT(report.writes.topk_share, 0.05);
  EXPECT_NEAR(report.writes.distinct_partitions, 1'000, 30);
  for (const PartitionLoad& load : report.writes.top) {
    EXPECT_LE(load.units - load.units_error, 20u);  // the true count is 20 each
    EXPECT_FALSE(load.hot);
  }
}

TEST_F(HotnessTrackerTest, RegionLikeKeyIsFlagged) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  const char* regions[] = {"REGION#eu", "REGION#us", "REGION#ap"};
  for (int i = 0; i < 3'000; ++i) tracker.RecordWrite(regions[i % 3], kReadingBytes);

  const HotnessReport report = tracker.Report();
  EXPECT_TRUE(report.low_cardinality_partition_key);
  EXPECT_NEAR(report.writes.distinct_partitions, 3, 0.01);
  EXPECT_DOUBLE_EQ(report.writes.topk_share, 1.0);
  EXPECT_EQ(report.writes.top.size(), 3u);
}

TEST_F(HotnessTrackerTest, FewDistinctPartitionsAreFlaggedEvenWithATinyTopK) {
  HotnessOptions options;
  options.top_k = 1;
  HotnessTracker tracker(options, clock_.AsFunction());
  for (int i = 0; i < 1'000; ++i) tracker.RecordWrite(Device(i % 5), kReadingBytes);

  const HotnessReport report = tracker.Report();
  EXPECT_LT(report.writes.topk_share, options.low_cardinality_top_share);
  EXPECT_TRUE(report.low_cardinality_partition_key);
}

TEST_F(HotnessTrackerTest, TooFewWritesAreNotJudged) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  for (int i = 0; i < 99; ++i) tracker.RecordWrite(Device(0), kReadingBytes);
  EXPECT_FALSE(tracker.Report().low_cardinality_partition_key);
  tracker.RecordWrite(Device(0), kReadingBytes);
  EXPECT_TRUE(tracker.Report().low_cardinality_partition_key);
}

TEST_F(HotnessTrackerTest, TrafficAgesOutAfterTheWindow) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  for (int i = 0; i < 1'000; ++i) tracker.RecordWrite(Device(i % 3), kReadingBytes);
  tracker.RecordRead(Device(0), 10, 1'000);

  clock_.Advance(seconds(59));
  HotnessReport report = tracker.Report();
  EXPECT_EQ(report.writes.total_items, 1'000u);
  EXPECT_EQ(report.reads.total_items, 10u);
  EXPECT_TRUE(report.low_cardinality_partition_key);

  clock_.Advance(seconds(1));
  report = tracker.Report();
  EXPECT_EQ(report.writes.total_items, 0u);
  EXPECT_EQ(report.writes.total_units, 0u);
  EXPECT_TRUE(report.writes.top.empty());
  EXPECT_EQ(report.writes.distinct_partitions, 0);
  EXPECT_EQ(report.writes.topk_share, 0);
  EXPECT_EQ(report.reads.total_items, 0u);
  EXPECT_TRUE(report.reads.top.empty());
  EXPECT_FALSE(report.low_cardinality_partition_key);

  // A reused slice starts empty.
  tracker.RecordWrite(Device(7), kReadingBytes);
  report = tracker.Report();
  EXPECT_EQ(report.writes.total_items, 1u);
  ASSERT_EQ(report.writes.top.size(), 1u);
  EXPECT_EQ(report.writes.top[0].partition, Device(7));
}

TEST_F(HotnessTrackerTest, SteadyRateIsMeasuredOverTheCoveredWindow) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  for (int i = 0; i < 180; ++i) {
    tracker.RecordWrite(Device(1), kReadingBytes);
    clock_.Advance(seconds(1));
  }
  const TrafficReport writes = tracker.Report().writes;
  EXPECT_GE(writes.window_seconds, 50);
  EXPECT_LE(writes.window_seconds, 60);
  ASSERT_EQ(writes.top.size(), 1u);
  EXPECT_NEAR(writes.top[0].units_per_second, 1.0, 0.05);
}

TEST_F(HotnessTrackerTest, PartitionOverTheWcuLimitIsHot) {
  HotnessOptions options;
  options.partition_wcu_limit = 10;
  HotnessTracker tracker(options, clock_.AsFunction());
  for (int i = 0; i < 1'200; ++i) tracker.RecordWrite("DEV#hot", 2'048);  // 2 WCU each
  for (int i = 0; i < 50; ++i) tracker.RecordWrite("DEV#cold", kReadingBytes);

  // Right after start the rate divides by one slice (10 s): 2400 WCU -> 240 WCU/s.
  const TrafficReport writes = tracker.Report().writes;
  ASSERT_EQ(writes.top.size(), 2u);
  EXPECT_EQ(writes.top[0].partition, "DEV#hot");
  EXPECT_EQ(writes.top[0].items, 1'200u);
  EXPECT_EQ(writes.top[0].units, 2'400u);
  EXPECT_DOUBLE_EQ(writes.top[0].units_per_second, 240);
  EXPECT_TRUE(writes.top[0].hot);
  EXPECT_EQ(writes.top[1].partition, "DEV#cold");
  EXPECT_DOUBLE_EQ(writes.top[1].units_per_second, 5);
  EXPECT_FALSE(writes.top[1].hot);
}

// With top_k = 1 the sketch has 4 counters. A, B, C and D take 100 writes each; then X takes
// over a counter of 100 with its first write, so its estimate is 200 for a true 100: error 100.
// It heads the top-1 at an estimated 20 WCU/s (one 10 s slice), while only 10 WCU/s is sure.
class LowerBoundTest : public HotnessTrackerTest {
 protected:
  void Feed(HotnessTracker& tracker) {
    for (const char* partition : {"DEV#a", "DEV#b", "DEV#c", "DEV#d"}) {
      for (int i = 0; i < 100; ++i) tracker.RecordWrite(partition, kReadingBytes);
    }
    for (int i = 0; i < 100; ++i) tracker.RecordWrite("DEV#x", kReadingBytes);
  }
};

TEST_F(LowerBoundTest, AnEstimateOverTheLimitWithTheLowerBoundUnderItIsNotHot) {
  auto top_with_limit = [&](double limit) {
    HotnessOptions options;
    options.top_k = 1;
    options.partition_wcu_limit = limit;
    HotnessTracker tracker(options, clock_.AsFunction());
    Feed(tracker);
    const TrafficReport writes = tracker.Report().writes;
    EXPECT_EQ(writes.top.size(), 1u);
    return writes.top.at(0);
  };
  const PartitionLoad x = top_with_limit(15);
  EXPECT_EQ(x.partition, "DEV#x");
  EXPECT_EQ(x.units, 200u);
  EXPECT_EQ(x.units_error, 100u);
  EXPECT_GT(x.units_per_second, 15);  // the estimate alone would alarm
  EXPECT_FALSE(x.hot);
  EXPECT_TRUE(top_with_limit(9).hot);  // the sure 10 WCU/s is what counts
}

TEST_F(LowerBoundTest, AShareOverTheLimitOnlyByItsEstimateDoesNotFlagTheKey) {
  HotnessOptions options;
  options.top_k = 1;
  options.low_cardinality_min_partitions = 1;  // only the share arm can flag
  options.low_cardinality_top_share = 0.3;
  HotnessTracker tracker(options, clock_.AsFunction());
  Feed(tracker);
  const HotnessReport report = tracker.Report();
  ASSERT_EQ(report.writes.top.size(), 1u);
  const PartitionLoad& x = report.writes.top[0];
  // Estimated 200 of 500 writes (0.4) is over the 0.3 limit; the sure 100 of 500 (0.2) is not,
  // and the true spread is five partitions of 100.
  EXPECT_GT(static_cast<double>(x.units) / static_cast<double>(report.writes.total_units),
            options.low_cardinality_top_share);
  EXPECT_DOUBLE_EQ(report.writes.topk_share, 0.2);
  EXPECT_DOUBLE_EQ(report.writes.top_share, 0.2);
  EXPECT_FALSE(report.low_cardinality_partition_key);
}

TEST_F(HotnessTrackerTest, CapacityUnitsRoundUpPerStartedUnit) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  for (std::size_t bytes : {0, 1, 1'024, 1'025, 4'096}) tracker.RecordWrite("DEV#1", bytes);
  tracker.RecordRead("DEV#1", 0, 0);      // an empty query still costs 1 RCU
  tracker.RecordRead("DEV#1", 2, 4'096);  // 1 RCU
  tracker.RecordRead("DEV#1", 3, 4'097);  // 2 RCU

  const HotnessReport report = tracker.Report();
  EXPECT_EQ(report.writes.total_items, 5u);
  EXPECT_EQ(report.writes.total_units, 1u + 1 + 1 + 2 + 4);
  EXPECT_EQ(report.reads.total_items, 5u);
  EXPECT_EQ(report.reads.total_units, 4u);
}

TEST_F(HotnessTrackerTest, ReadsHaveTheirOwnTopKAndLimit) {
  HotnessOptions options;
  options.partition_rcu_limit = 1;
  HotnessTracker tracker(options, clock_.AsFunction());
  for (int i = 0; i < 100; ++i) tracker.RecordRead(Device(i % 2 == 0 ? 0 : i), 5, 8'192);
  tracker.RecordWrite(Device(9), kReadingBytes);

  const HotnessReport report = tracker.Report();
  ASSERT_FALSE(report.reads.top.empty());
  const PartitionLoad& top = report.reads.top[0];
  EXPECT_EQ(top.partition, Device(0));
  EXPECT_EQ(top.items, 250u);
  EXPECT_EQ(top.units, 100u);
  EXPECT_DOUBLE_EQ(top.units_per_second, 10);
  EXPECT_TRUE(top.hot);
  ASSERT_EQ(report.writes.top.size(), 1u);
  EXPECT_EQ(report.writes.top[0].partition, Device(9));
}

// Memory is bounded by the options, not by the number of partitions: once every slice of the
// window holds full sketches, 120,000 more distinct partitions (each way) leave nothing behind.
TEST_F(HotnessTrackerTest, MemoryStaysBoundedWhateverTheNumberOfPartitions) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  int next = 0;
  auto one_window = [&](int partitions_per_slice) {
    for (int slice = 0; slice < HotnessTracker::kWindowSlices; ++slice) {
      for (int i = 0; i < partitions_per_slice; ++i) {
        const std::string partition = "DEV#a-device-id-" + std::to_string(next++);  // not a short string
        tracker.RecordWrite(partition, kReadingBytes);
        tracker.RecordRead(partition, 1, kReadingBytes);
      }
      clock_.Advance(seconds(10));  // the next slice
    }
  };
  one_window(1'000);
  const std::size_t before = HeapBytesInUse();
  one_window(20'000);
  const std::size_t after = HeapBytesInUse();
  // Keeping even 8 bytes per partition seen would be 1.9 MB.
  EXPECT_LT(after, before + 64 * 1024) << "grew from " << before << " to " << after << " bytes";
  const HotnessReport report = tracker.Report();
  EXPECT_EQ(report.writes.top.size(), 20u);
  EXPECT_EQ(report.reads.top.size(), 20u);
}

TEST_F(HotnessTrackerTest, ConcurrentWritersLoseNothing) {
  HotnessTracker tracker(HotnessOptions{}, clock_.AsFunction());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&tracker, t] {
      for (int i = 0; i < 10'000; ++i) tracker.RecordWrite(Device(t * 10'000 + i), kReadingBytes);
    });
  }
  threads.emplace_back([&tracker] {
    for (int i = 0; i < 20; ++i) (void)tracker.Report();
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(tracker.Report().writes.total_items, 40'000u);
}

}  // namespace
}  // namespace readingsd::metrics
