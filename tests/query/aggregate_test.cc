// Aggregates against a real RocksDB store in a temporary directory: bucket alignment and edges,
// every function over numbers, booleans and strings, and the caps.
#include "query/aggregate.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/key.h"
#include "storage/store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::query {
namespace {

using storage::Attribute;
using storage::Number;

std::string SortKey(std::string_view timestamp) {
  std::string sort_key;
  EXPECT_TRUE(storage::NormalizeTimestamp(timestamp, &sort_key).ok()) << timestamp;
  return sort_key;
}

Number N(std::string_view text) {
  Number number;
  EXPECT_TRUE(Number::Parse(text, &number).ok()) << text;
  return number;
}

std::string Start(const Bucket& bucket) { return storage::WholeSecondsTimestamp(bucket.start_seconds); }

constexpr AggregateFn kAll[] = {AggregateFn::kAvg, AggregateFn::kMin,   AggregateFn::kMax, AggregateFn::kCount,
                                AggregateFn::kSum, AggregateFn::kFirst, AggregateFn::kLast};

class AggregateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions options;
    options.path = dir_.File("db");
    ASSERT_TRUE(storage::Store::Open(options, &store_).ok());
  }

  void Put(std::string_view timestamp, std::vector<Attribute> attributes) {
    ASSERT_TRUE(store_->Put({"d1", SortKey(timestamp), std::move(attributes)}).ok());
  }

  AggregateRequest Request(std::string_view from, std::string_view to, int64_t step_seconds,
                           std::vector<std::string> attributes = {"t"}) {
    AggregateRequest request;
    request.device_id = "d1";
    request.from = SortKey(from);
    request.to = SortKey(to);
    request.step_seconds = step_seconds;
    request.attributes = std::move(attributes);
    request.fns.assign(std::begin(kAll), std::end(kAll));
    return request;
  }

  AggregateResult Run(const AggregateRequest& request) {
    AggregateResult result;
    Status s = Aggregate(*store_, request, &result);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return result;
  }

  test::TempDir dir_{"readingsd-aggregate"};
  std::unique_ptr<storage::Store> store_;
};

TEST_F(AggregateTest, FoldsNumbersIntoAlignedBucketsAndLeavesEmptyOnesOut) {
  // 08:00-08:04 in the first 5m bucket, 08:05 exactly on the second's start, none in 08:10,
  // 08:17 in the fourth; one reading without t.
  for (int minute : {0, 1, 2, 3, 4}) {
    Put("2026-06-23T08:0" + std::to_string(minute) + ":30Z", {{"t", Number(20 + minute)}, {"h", Number(50)}});
  }
  Put("2026-06-23T08:05:00Z", {{"t", N("1.25")}});
  Put("2026-06-23T08:06:00Z", {{"h", Number(40)}});
  Put("2026-06-23T08:17:00Z", {{"t", Number(-3)}});
  Put("2026-06-23T08:25:00Z", {{"t", Number(99)}});  // after the window

  const AggregateResult result = Run(Request("2026-06-23T08:00:00Z", "2026-06-23T08:20:00Z", 300));
  EXPECT_EQ(result.scanned_count, 8u);
  ASSERT_EQ(result.buckets.size(), 3u);
  EXPECT_EQ(Start(result.buckets[0]), "2026-06-23T08:00:00Z");
  EXPECT_EQ(Start(result.buckets[1]), "2026-06-23T08:05:00Z");
  EXPECT_EQ(Start(result.buckets[2]), "2026-06-23T08:15:00Z");

  const AttributeAggregate& first = result.buckets[0].attributes[0];
  EXPECT_EQ(result.buckets[0].count, 5u);
  EXPECT_EQ(first.count, 5u);
  EXPECT_EQ(first.sum, 110);
  EXPECT_EQ(first.avg(), 22);
  EXPECT_EQ(first.min, Number(20));
  EXPECT_EQ(first.max, Number(24));
  EXPECT_EQ(first.first, storage::AttributeValue(Number(20)));
  EXPECT_EQ(first.last, storage::AttributeValue(Number(24)));

  // Bucket count is every reading; the attribute's count only those that have it.
  EXPECT_EQ(result.buckets[1].count, 2u);
  EXPECT_EQ(result.buckets[1].attributes[0].count, 1u);
  EXPECT_EQ(result.buckets[1].attributes[0].min, N("1.25"));
  EXPECT_EQ(result.buckets[2].attributes[0].max, Number(-3));
}

TEST_F(AggregateTest, MinAndMaxKeepTheExactNumber) {
  Put("2026-06-23T08:00:00Z", {{"t", N("12345678901234567890123456789.5")}});
  Put("2026-06-23T08:00:01Z", {{"t", N("12345678901234567890123456789.25")}});
  const AggregateResult result = Run(Request("2026-06-23T08:00:00Z", "2026-06-23T08:00:59Z", 60));
  ASSERT_EQ(result.buckets.size(), 1u);
  EXPECT_EQ(result.buckets[0].attributes[0].min.text, "12345678901234567890123456789.25");
  EXPECT_EQ(result.buckets[0].attributes[0].max.text, "12345678901234567890123456789.5");
}

TEST_F(AggregateTest, BooleansAreZeroAndOneAndStringsOnlyCountAndKeep) {
  Put("2026-06-23T08:00:00Z", {{"door", true}, {"status", std::string("ok")}});
  Put("2026-06-23T08:00:10Z", {{"door", false}, {"status", std::string("warn")}});
  Put("2026-06-23T08:00:20Z", {{"door", true}, {"status", std::string("ok")}});
  const AggregateResult result =
      Run(Request("2026-06-23T08:00:00Z", "2026-06-23T08:00:59Z", 60, {"door", "status"}));
  ASSERT_EQ(result.buckets.size(), 1u);
  const AttributeAggregate& door = result.buckets[0].attributes[0];
  EXPECT_EQ(door.numeric_count, 3u);
  EXPECT_EQ(door.sum, 2);
  EXPECT_EQ(door.min, Number(0));
  EXPECT_EQ(door.max, Number(1));
  EXPECT_EQ(door.first, storage::AttributeValue(true));  // as stored
  const AttributeAggregate& status = result.buckets[0].attributes[1];
  EXPECT_EQ(status.count, 3u);
  EXPECT_EQ(status.numeric_count, 0u);
  EXPECT_EQ(status.first, storage::AttributeValue(std::string("ok")));
  EXPECT_EQ(status.last, storage::AttributeValue(std::string("ok")));
}

TEST_F(AggregateTest, EmptyWindowOneReadingAndAStepLargerThanTheWindow) {
  EXPECT_TRUE(Run(Request("2026-06-23T08:00:00Z", "2026-06-23T09:00:00Z", 60)).buckets.empty());
  Put("2026-06-23T08:30:00.5Z", {{"t", Number(7)}});
  const AggregateResult result = Run(Request("2026-06-23T08:29:00Z", "2026-06-23T08:31:00Z", 86400));
  ASSERT_EQ(result.buckets.size(), 1u);
  EXPECT_EQ(Start(result.buckets[0]), "2026-06-23T00:00:00Z");  // aligned to the UTC day
  EXPECT_EQ(result.buckets[0].attributes[0].avg(), 7);
}

TEST_F(AggregateTest, BucketsCrossDaysAndYearsInUtc) {
  Put("2026-12-31T23:59:59.999999999Z", {{"t", Number(1)}});
  Put("2027-01-01T00:00:00Z", {{"t", Number(2)}});
  Put("2027-01-01T01:00:00+02:00", {{"t", Number(3)}});  // 2026-12-31T23:00Z
  const AggregateResult result = Run(Request("2026-12-31T00:00:00Z", "2027-01-01T23:00:00Z", 3600));
  ASSERT_EQ(result.buckets.size(), 2u);
  EXPECT_EQ(Start(result.buckets[0]), "2026-12-31T23:00:00Z");
  EXPECT_EQ(result.buckets[0].count, 2u);
  EXPECT_EQ(Start(result.buckets[1]), "2027-01-01T00:00:00Z");
  EXPECT_EQ(result.buckets[1].count, 1u);
}

TEST_F(AggregateTest, BucketsBeforeNineteenSeventyAlignDownward) {
  Put("1969-12-31T23:59:30Z", {{"t", Number(1)}});
  const AggregateResult result = Run(Request("1969-12-31T23:00:00Z", "1970-01-01T01:00:00Z", 60));
  ASSERT_EQ(result.buckets.size(), 1u);
  EXPECT_EQ(Start(result.buckets[0]), "1969-12-31T23:59:00Z");
}

TEST_F(AggregateTest, OnlyTheFunctionsAskedForAreKept) {
  Put("2026-06-23T08:00:00Z", {{"t", Number(5)}});
  AggregateRequest request = Request("2026-06-23T08:00:00Z", "2026-06-23T08:00:59Z", 60);
  request.fns = {AggregateFn::kCount};
  const AggregateResult result = Run(request);
  const AttributeAggregate& t = result.buckets.at(0).attributes[0];
  EXPECT_EQ(t.count, 1u);
  EXPECT_EQ(t.sum, 0);
  EXPECT_EQ(t.last, storage::AttributeValue(Number(0)));  // never kept
}

TEST_F(AggregateTest, CapsAreInvalidArgumentsNamingThem) {
  for (int second = 0; second < 5; ++second) Put("2026-06-23T08:00:0" + std::to_string(second) + "Z", {{"t", Number(1)}});
  AggregateRequest request = Request("2026-06-23T08:00:00Z", "2026-06-23T08:00:09Z", 1);
  request.max_buckets = 9;
  EXPECT_EQ(BucketsSpanned(request.from, request.to, 1), 10u);
  AggregateResult result;
  Status s = Aggregate(*store_, request, &result);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message().rfind("max buckets: ", 0), 0u) << s.message();

  request.max_buckets = 10;
  request.max_scanned = 4;
  s = Aggregate(*store_, request, &result);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message().rfind("max scan: ", 0), 0u) << s.message();
  request.max_scanned = 5;  // exactly the window's readings
  EXPECT_EQ(Run(request).scanned_count, 5u);
}

}  // namespace
}  // namespace readingsd::query
