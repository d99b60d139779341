// Rollup records and their exact sums: what storage/rollup.h reads is what the write path wrote,
// and a sum does not depend on the order of its values.
#include "storage/rollup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "storage/key.h"
#include "storage/rollups.h"

namespace readingsd::storage {
namespace {

TEST(ExactSumTest, IsTheNearestDoubleOfTheTrueSumInAnyOrder) {
  ExactSum tenths;
  for (int i = 0; i < 10; ++i) tenths.Add(0.1);
  EXPECT_EQ(tenths.Value(), 1.0);  // a plain double sum gives 0.9999999999999999
  ExactSum cancel;
  for (double x : {1e100, 1.0, -1e100}) cancel.Add(x);
  EXPECT_EQ(cancel.Value(), 1.0);

  std::mt19937_64 rng(1);
  std::vector<double> values;
  for (int i = 0; i < 500; ++i) {
    values.push_back(std::ldexp(static_cast<double>(rng() % 1000000) - 500000, static_cast<int>(rng() % 80) - 40));
  }
  ExactSum reference;
  for (double v : values) reference.Add(v);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(values.begin(), values.end(), rng);
    // Split at a random point, summed apart and merged, as granules are into a bucket.
    const std::size_t cut = rng() % values.size();
    ExactSum a, b;
    for (std::size_t i = 0; i < values.size(); ++i) (i < cut ? a : b).Add(values[i]);
    std::string encoded;
    b.AppendTo(&encoded);
    ASSERT_TRUE(a.AddEncoded(encoded));
    EXPECT_EQ(a.Value(), reference.Value());
  }
  EXPECT_FALSE(ExactSum().AddEncoded("\x02" "12345678"));
}

TEST(RollupRecordTest, ReadsWhatWasEncoded) {
  internal::Rollup rollup;
  rollup.readings = 3;
  internal::RollupAttribute& t = rollup.attributes.emplace_back();
  t.name = "temperature";
  t.count = 3;
  t.numeric_count = 2;
  t.sum.Add(-1.5);
  t.sum.Add(1e20);
  ASSERT_TRUE(Number::Parse("-1.5", &t.min).ok());
  ASSERT_TRUE(Number::Parse("1e20", &t.max).ok());
  t.min_value = -1.5;
  t.max_value = 1e20;
  t.first = std::string("n/a");
  t.first_key = "2026-06-23T08:00:00.000000000Z";
  t.last = true;
  t.last_key = "2026-06-23T08:00:59.999999999Z";
  const double sum_value = t.sum.Value();
  const std::string last_key = t.last_key;
  rollup.attributes.emplace_back().name = "unused";  // counts nothing: not written

  std::string scratch, encoded;
  internal::EncodeRollup(rollup, &scratch, &encoded);
  RollupView view;
  ASSERT_TRUE(ReadRollup(encoded, &view).ok());
  EXPECT_FALSE(view.stale);
  EXPECT_EQ(view.readings, 3u);
  ASSERT_EQ(view.attributes.size(), 1u);
  const RollupAttributeView& a = view.attributes[0];
  EXPECT_EQ(a.name, "temperature");
  EXPECT_EQ(a.numeric_count, 2u);
  EXPECT_EQ(a.min.ToNumber().text, "-1.5");
  EXPECT_EQ(a.max.ToNumber().text, "100000000000000000000");
  EXPECT_EQ(a.min_value, -1.5);
  EXPECT_EQ(a.max_value, 1e20);
  EXPECT_EQ(std::get<std::string_view>(a.first), "n/a");
  EXPECT_EQ(a.last_key, last_key);
  ExactSum sum;
  ASSERT_TRUE(sum.AddEncoded(a.sum));
  EXPECT_EQ(sum.Value(), sum_value);

  // Without first and last: the numbers, none of the values.
  RollupView numbers;
  ASSERT_TRUE(ReadRollup(encoded, &numbers, {}, /*first_last=*/false).ok());
  ASSERT_EQ(numbers.attributes.size(), 1u);
  EXPECT_EQ(numbers.attributes[0].max_value, 1e20);
  EXPECT_EQ(numbers.attributes[0].min.ToNumber().text, "-1.5");
  EXPECT_TRUE(numbers.attributes[0].first_key.empty());
  EXPECT_TRUE(numbers.attributes[0].last_key.empty());

  internal::Rollup back;
  ASSERT_TRUE(internal::DecodeRollup(encoded, &back).ok());
  std::string again;
  internal::EncodeRollup(back, &scratch, &again);
  EXPECT_EQ(again, encoded);

  for (std::size_t cut = 0; cut < encoded.size(); ++cut) {
    if (cut == 3) continue;  // 'r', flags, readings: a record of no attribute
    EXPECT_FALSE(ReadRollup(encoded.substr(0, cut), &view).ok()) << cut;
  }
  rollup.stale = true;
  internal::EncodeRollup(rollup, &scratch, &encoded);
  ASSERT_TRUE(ReadRollup(encoded, &view).ok());
  EXPECT_TRUE(view.stale);
  EXPECT_TRUE(view.attributes.empty());
}

TEST(RollupKeyTest, GranulesAndTheFloorRecord) {
  std::string_view device, granule;
  const std::string floor = RollupKey("a1", ""), record = RollupKey("a1", "2026-06-23T08:00:00.000000000Z");
  ASSERT_TRUE(DecodeRollupKey(floor, &device, &granule));
  EXPECT_EQ(device, "a1");
  EXPECT_TRUE(granule.empty());
  ASSERT_TRUE(DecodeRollupKey(record, &device, &granule));
  EXPECT_EQ(granule, "2026-06-23T08:00:00.000000000Z");
  EXPECT_FALSE(DecodeRollupKey(RegistryKey("a1"), &device, &granule));
  EXPECT_LT(RollupKey("a1", ""), RollupKey("a1", "2026"));
  EXPECT_GT(RollupKey("a1", ""), RegistryKey("zz"));
  EXPECT_TRUE(ValidateRollupSeconds(0).ok());
  EXPECT_TRUE(ValidateRollupSeconds(60).ok());
  EXPECT_TRUE(ValidateRollupSeconds(86400).ok());
  EXPECT_FALSE(ValidateRollupSeconds(7).ok());
  EXPECT_FALSE(ValidateRollupSeconds(-60).ok());
  EXPECT_FALSE(ValidateRollupSeconds(172800).ok());
  EXPECT_EQ(FloorToMultiple(-1, 60), -60);
  EXPECT_EQ(FloorToMultiple(119, 60), 60);
}

}  // namespace
}  // namespace readingsd::storage
