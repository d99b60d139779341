#include "metrics/hyperloglog.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace readingsd::metrics {
namespace {

std::string KeyName(int i) { return "DEV#" + std::to_string(i); }

class HyperLogLogCardinalityTest : public ::testing::TestWithParam<int> {};

TEST_P(HyperLogLogCardinalityTest, WithinThreeStandardErrors) {
  const int distinct = GetParam();
  HyperLogLog hll;
  // Every key twice: repeats must not count.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < distinct; ++i) hll.Add(KeyName(i));
  }
  EXPECT_NEAR(hll.Estimate(), distinct, 3 * hll.standard_error() * distinct);
}

INSTANTIATE_TEST_SUITE_P(Cardinalities, HyperLogLogCardinalityTest,
                         ::testing::Values(1'000, 10'000, 100'000));

TEST(HyperLogLogTest, DefaultPrecisionGivesTheDocumentedError) {
  HyperLogLog hll;
  EXPECT_EQ(hll.precision(), 14);
  EXPECT_NEAR(hll.standard_error(), 0.0081, 0.0001);
  EXPECT_EQ(hll.Estimate(), 0);
}

TEST(HyperLogLogTest, FewKeysAreCountedNearExactly) {
  HyperLogLog hll;
  for (const char* region : {"REGION#eu", "REGION#us", "REGION#ap"}) hll.Add(region);
  EXPECT_NEAR(hll.Estimate(), 3, 0.01);
}

TEST(HyperLogLogTest, MergeCountsTheUnion) {
  HyperLogLog a;
  HyperLogLog b;
  for (int i = 0; i < 30'000; ++i) a.Add(KeyName(i));
  for (int i = 20'000; i < 50'000; ++i) b.Add(KeyName(i));
  ASSERT_TRUE(a.Merge(b));
  EXPECT_NEAR(a.Estimate(), 50'000, 3 * a.standard_error() * 50'000);
}

TEST(HyperLogLogTest, MergeRefusesAnotherPrecision) {
  HyperLogLog a(12);
  HyperLogLog b(10);
  b.Add("DEV#1");
  EXPECT_FALSE(a.Merge(b));
  EXPECT_EQ(a.Estimate(), 0);
}

TEST(HyperLogLogTest, PrecisionIsClamped) {
  EXPECT_EQ(HyperLogLog(1).precision(), HyperLogLog::kMinPrecision);
  EXPECT_EQ(HyperLogLog(40).precision(), HyperLogLog::kMaxPrecision);
}

TEST(HyperLogLogTest, ClearForgetsEverything) {
  HyperLogLog hll;
  for (int i = 0; i < 1'000; ++i) hll.Add(KeyName(i));
  hll.Clear();
  EXPECT_EQ(hll.Estimate(), 0);
}

}  // namespace
}  // namespace readingsd::metrics
