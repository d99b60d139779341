// The key-condition engine against a real RocksDB store in a temporary directory.
#include "query/query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "query/filter.h"
#include "query/scan.h"
#include "storage/key.h"
#include "storage/store.h"

namespace readingsd::query {
namespace {

using storage::Reading;

// `attribute op value`, the tree the grammars (expr/) build for such a filter.
std::unique_ptr<FilterExpr> Compare(std::string attribute, CompareOp op, storage::AttributeValue value) {
  auto filter = std::make_unique<FilterExpr>();
  filter->op = op;
  filter->operands.push_back(Operand{.is_attribute = true, .attribute = std::move(attribute)});
  filter->operands.push_back(Operand{.literal = std::move(value)});
  return filter;
}

std::string SortKey(std::string_view timestamp) {
  std::string sort_key;
  EXPECT_TRUE(storage::NormalizeTimestamp(timestamp, &sort_key).ok()) << timestamp;
  return sort_key;
}

std::vector<std::string> SortKeys(const QueryResult& result) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < result.items.size(); ++i) keys.emplace_back(result.items[i].sort_key);
  return keys;
}

// All of `device`'s partition, in one direction, through an optional filter.
QueryRequest WholePartition(std::string_view device, bool forward, const FilterExpr* filter) {
  QueryRequest request;
  EXPECT_TRUE(MakeKeyCondition(device, SortKeyOp::kAll, "", "", &request.key).ok());
  request.scan_forward = forward;
  request.filter = filter;
  return request;
}

std::vector<std::string> SortKeys(std::initializer_list<std::string_view> timestamps) {
  std::vector<std::string> keys;
  for (std::string_view timestamp : timestamps) keys.push_back(SortKey(timestamp));
  return keys;
}

// Wraps the real store and checks that Query stays inside the bounds it asks for: every key an
// iterator lands on lies within [lower, upper), and every step is counted. It can also hand out
// a damaged value for one sort key, as a corrupted file would.
class ObservedStore : public storage::Store {
 public:
  explicit ObservedStore(const storage::Store& store) : store_(store) {}

  struct Observation {
    std::string lower, upper;
    int positions = 0;  // keys the iterator was positioned on
    bool left_bounds = false;
  };
  mutable std::vector<Observation> iterators;
  std::string damaged_sort_key;  // its value loses its last byte
  // Next and Prev that land on it wait until an iterator opened after theirs exists: the read
  // helper's, which opens it once it has begun its part (30 s at most). So the request's thread
  // never arrives at the helper's part before the helper took it, however loaded the machine.
  std::string slow_sort_key;

  Status Put(const Reading&) override { return Status::InvalidArgument("read only"); }
  Status Write(std::span<const Reading>) override { return Status::InvalidArgument("read only"); }
  Status DeleteReadings(std::string_view, std::string_view, std::string_view, const std::function<void(uint64_t)>&,
                        uint64_t*) override {
    return Status::InvalidArgument("read only");
  }
  Status Get(std::string_view device_id, std::string_view sort_key, Reading* reading) const override {
    return store_.Get(device_id, sort_key, reading);
  }
  std::unique_ptr<storage::PartitionIterator> NewIterator(std::string_view device_id,
                                                          std::string_view lower,
                                                          std::string_view upper) const override {
    std::lock_guard lock(mu_);  // a read helper opens iterators of its own
    iterators.push_back({std::string(lower), std::string(upper)});
    opened_.notify_all();
    return std::make_unique<Iterator>(store_.NewIterator(device_id, lower, upper), this,
                                      iterators.size() - 1);
  }
  std::unique_ptr<storage::TableIterator> NewTableIterator() const override { return store_.NewTableIterator(); }
  Status ListDevices(std::string_view prefix, std::string_view after, std::size_t limit,
                     std::vector<storage::DeviceSummary>* devices) const override {
    return store_.ListDevices(prefix, after, limit, devices);
  }
  std::string TableId() const override { return store_.TableId(); }
  std::unique_ptr<storage::PartitionIterator> NewIndexIterator(std::string_view index, std::string_view partition,
                                                              std::string_view lower,
                                                              std::string_view upper) const override {
    return store_.NewIndexIterator(index, partition, lower, upper);
  }
  std::vector<storage::IndexStatus> Indexes() const override { return store_.Indexes(); }
  storage::StoreStats Stats() const override { return store_.Stats(); }
  Status Checkpoint(const std::string&) const override { return Status::InvalidArgument("read only"); }
  Status CompactAll() override { return Status::InvalidArgument("read only"); }

 private:
  class Iterator : public storage::PartitionIterator {
   public:
    Iterator(std::unique_ptr<storage::PartitionIterator> inner, const ObservedStore* store,
             std::size_t index)
        : inner_(std::move(inner)), store_(store), index_(index) {}
    void SeekToFirst() override { inner_->SeekToFirst(); Observe(); }
    void SeekToLast() override { inner_->SeekToLast(); Observe(); }
    void Seek(std::string_view k) override { inner_->Seek(k); Observe(); }
    void SeekForPrev(std::string_view k) override { inner_->SeekForPrev(k); Observe(); }
    bool Valid() const override { return inner_->Valid(); }
    void Next() override { inner_->Next(); Observe(); Slow(); }
    void Prev() override { inner_->Prev(); Observe(); Slow(); }
    std::string_view sort_key() const override { return inner_->sort_key(); }
    std::string_view encoded_attributes() const override {
      const std::string_view value = inner_->encoded_attributes();
      return inner_->sort_key() == store_->damaged_sort_key ? value.substr(0, value.size() - 1) : value;
    }
    Status status() const override { return inner_->status(); }

   private:
    void Slow() const {
      if (!inner_->Valid() || inner_->sort_key() != store_->slow_sort_key) return;
      std::unique_lock lock(store_->mu_);
      store_->opened_.wait_for(lock, std::chrono::seconds(30), [&] { return store_->iterators.size() > index_ + 1; });
    }
    void Observe() {
      if (!inner_->Valid()) return;
      std::lock_guard lock(store_->mu_);
      Observation& o = store_->iterators[index_];
      ++o.positions;
      const std::string_view key = inner_->sort_key();
      if ((!o.lower.empty() && key < o.lower) || (!o.upper.empty() && key >= o.upper)) {
        o.left_bounds = true;
      }
    }
    std::unique_ptr<storage::PartitionIterator> inner_;
    const ObservedStore* store_;
    std::size_t index_;
  };

  const storage::Store& store_;
  mutable std::mutex mu_;
  mutable std::condition_variable opened_;
};

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/readingsd-query-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    storage::StoreOptions options;
    options.path = dir_ + "/db";
    ASSERT_TRUE(storage::Store::Open(options, &store_).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Put(std::string device, std::string_view timestamp, std::vector<storage::Attribute> attributes = {}) {
    if (attributes.empty()) attributes.push_back({"temperature", 20.0});
    Reading reading{std::move(device), SortKey(timestamp), std::move(attributes)};
    ASSERT_TRUE(store_->Put(reading).ok());
  }

  // One page with the given condition; fails the test on an error.
  QueryResult Run(std::string_view device, SortKeyOp op, std::string_view a = "",
                  std::string_view b = "", QueryRequest request = {}) {
    EXPECT_TRUE(MakeKeyCondition(device, op, a, b, &request.key).ok());
    QueryResult result;
    Status s = Query(*store_, request, &result);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return result;
  }

  // Pages through the whole condition, each page with a limit drawn by `next_limit`.
  template <typename NextLimit>
  std::vector<std::string> PageThrough(const KeyCondition& key, bool forward, NextLimit next_limit,
                                       int* pages = nullptr, const FilterExpr* filter = nullptr,
                                       std::size_t max_page_bytes = kMaxPageBytes) {
    std::vector<std::string> keys;
    QueryRequest request;
    request.key = key;
    request.scan_forward = forward;
    request.filter = filter;
    request.max_page_bytes = max_page_bytes;
    for (int page = 1;; ++page) {
      request.limit = next_limit();
      QueryResult result;
      Status s = Query(*store_, request, &result);
      EXPECT_TRUE(s.ok()) << s.ToString();
      for (std::string& key : SortKeys(result)) keys.push_back(std::move(key));
      if (pages) *pages = page;
      if (!result.last_evaluated_sort_key || page > 10000) break;
      request.exclusive_start = *result.last_evaluated_sort_key;
    }
    return keys;
  }

  std::string dir_;
  std::unique_ptr<storage::Store> store_;
};

// Five keys, two of them one nanosecond apart, so an off-by-one bound shows.
class BoundsTest : public QueryTest {
 protected:
  void SetUp() override {
    QueryTest::SetUp();
    for (std::string_view ts : kTimestamps) Put("a1", ts);
  }
  static constexpr std::string_view kTimestamps[] = {
      "2026-06-23T08:00:00Z", "2026-06-23T08:00:00.000000001Z", "2026-06-23T08:00:01Z",
      "2026-06-23T08:00:02Z", "2026-06-23T09:00:00Z"};
};

TEST_F(BoundsTest, EqualityIsExactlyOneKey) {
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kEq, kTimestamps[0])), SortKeys({kTimestamps[0]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kEq, kTimestamps[1])), SortKeys({kTimestamps[1]}));
  EXPECT_TRUE(Run("a1", SortKeyOp::kEq, "2026-06-23T08:00:00.5Z").items.empty());
}

TEST_F(BoundsTest, ComparisonsAtStoredKeysAreInclusiveOrExclusiveAsWritten) {
  const std::string_view at = kTimestamps[1];
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kLt, at)), SortKeys({kTimestamps[0]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kLe, at)), SortKeys({kTimestamps[0], kTimestamps[1]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kGt, at)),
            SortKeys({kTimestamps[2], kTimestamps[3], kTimestamps[4]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kGe, at)),
            SortKeys({kTimestamps[1], kTimestamps[2], kTimestamps[3], kTimestamps[4]}));
  EXPECT_TRUE(Run("a1", SortKeyOp::kLt, kTimestamps[0]).items.empty());
  EXPECT_TRUE(Run("a1", SortKeyOp::kGt, kTimestamps[4]).items.empty());
}

TEST_F(BoundsTest, BetweenIncludesBothStoredBounds) {
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kBetween, kTimestamps[1], kTimestamps[3])),
            SortKeys({kTimestamps[1], kTimestamps[2], kTimestamps[3]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kBetween, kTimestamps[2], kTimestamps[2])),
            SortKeys({kTimestamps[2]}));
}

TEST_F(BoundsTest, BetweenWithLowerAboveUpperIsRejected) {
  KeyCondition key;
  Status s = MakeKeyCondition("a1", SortKeyOp::kBetween, kTimestamps[3], kTimestamps[1], &key);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("The BETWEEN operator requires upper bound to be greater than or "
                             "equal to lower bound"),
            std::string::npos)
      << s.message();
}

TEST_F(BoundsTest, NewestFirstWithinBounds) {
  QueryRequest backward;
  backward.scan_forward = false;
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kBetween, kTimestamps[1], kTimestamps[3], backward)),
            SortKeys({kTimestamps[3], kTimestamps[2], kTimestamps[1]}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kLt, kTimestamps[2], "", backward)),
            SortKeys({kTimestamps[1], kTimestamps[0]}));
  std::vector<std::string> all = SortKeys(Run("a1", SortKeyOp::kAll));
  std::ranges::reverse(all);
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kAll, "", "", backward)), all);
}

TEST_F(BoundsTest, ReadsOnlyTheRangeWithOneBoundedIterator) {
  for (int i = 0; i < 50; ++i) Put("a1", "2026-06-24T00:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "Z");
  ObservedStore observed(*store_);
  QueryRequest request;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBetween, kTimestamps[1], kTimestamps[3], &request.key).ok());
  for (bool forward : {true, false}) {
    request.scan_forward = forward;
    QueryResult result;
    ASSERT_TRUE(Query(observed, request, &result).ok());
    EXPECT_EQ(result.scanned_count, 3u);
  }
  ASSERT_EQ(observed.iterators.size(), 2u);
  for (const ObservedStore::Observation& o : observed.iterators) {
    EXPECT_EQ(o.lower, SortKey(kTimestamps[1]));
    EXPECT_EQ(o.upper, SortKey(kTimestamps[3]) + '\0');
    EXPECT_EQ(o.positions, 3);
    EXPECT_FALSE(o.left_bounds);
  }
}

TEST_F(QueryTest, BeginsWithDayIsExactlyThatUtcDay) {
  Put("a1", "2026-06-22T23:59:59.999999999Z");
  Put("a1", "2026-06-23T00:00:00Z");
  Put("a1", "2026-06-24T01:00:00+02:00");  // 2026-06-23T23:00:00Z
  Put("a1", "2026-06-23T23:59:59.999999999Z");
  Put("a1", "2026-06-23T01:00:00+02:00");  // 2026-06-22T23:00:00Z
  Put("a1", "2026-06-24T00:00:00Z");
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kBeginsWith, "2026-06-23")),
            SortKeys({"2026-06-23T00:00:00Z", "2026-06-23T23:00:00Z", "2026-06-23T23:59:59.999999999Z"}));
  EXPECT_EQ(SortKeys(Run("a1", SortKeyOp::kBeginsWith, "2026-06-23T23")),
            SortKeys({"2026-06-23T23:00:00Z", "2026-06-23T23:59:59.999999999Z"}));
  EXPECT_TRUE(Run("a1", SortKeyOp::kBeginsWith, "2026-06-25").items.empty());
  EXPECT_EQ(Run("a1", SortKeyOp::kBeginsWith, "").items.size(), 6u);
}

TEST_F(QueryTest, OffsetBoundsNormaliseLikeKeys) {
  Put("a1", "2026-06-23T08:00:00Z");
  EXPECT_EQ(Run("a1", SortKeyOp::kEq, "2026-06-23T10:00:00+02:00").items.size(), 1u);
  EXPECT_EQ(Run("a1", SortKeyOp::kEq, "2026-06-23T03:00:00.000-05:00").items.size(), 1u);
  EXPECT_TRUE(Run("a1", SortKeyOp::kGt, "2026-06-23T10:00:00+02:00").items.empty());
  EXPECT_EQ(Run("a1", SortKeyOp::kGe, "2026-06-23T10:00:00+02:00").items.size(), 1u);
  // Bytewise the raw bounds are reversed ("10" > "09"); normalised they are 08:00Z..09:00Z.
  EXPECT_EQ(Run("a1", SortKeyOp::kBetween, "2026-06-23T10:00:00+02:00", "2026-06-23T09:00:00Z")
                .items.size(),
            1u);
}

TEST_F(QueryTest, EmptyAndUnknownPartitions) {
  Put("a1", "2026-06-23T08:00:00Z");
  for (SortKeyOp op : {SortKeyOp::kAll, SortKeyOp::kGe, SortKeyOp::kLt}) {
    const std::string_view a = op == SortKeyOp::kAll ? "" : "2026-06-23T08:00:00Z";
    for (bool forward : {true, false}) {
      QueryRequest request;
      request.scan_forward = forward;
      request.limit = 1;
      QueryResult result = Run("nobody", op, a, "", request);
      EXPECT_TRUE(result.items.empty());
      EXPECT_EQ(result.scanned_count, 0u);
      EXPECT_FALSE(result.last_evaluated_sort_key);
    }
  }
}

TEST_F(QueryTest, NeighbouringPartitionsNeverLeak) {
  const std::vector<std::string> devices = {"a", "a1", "a10", "a1-x", "a1.x", "a1_", "a2", "b"};
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      Put(devices[i], "2026-06-23T08:00:0" + std::to_string(j) + "Z", {{"owner", devices[i]}});
    }
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (bool forward : {true, false}) {
      QueryRequest request;
      request.scan_forward = forward;
      for (QueryResult result : {Run(devices[i], SortKeyOp::kAll, "", "", request),
                                 Run(devices[i], SortKeyOp::kGe, "0000-01-01T00:00:00Z", "", request),
                                 Run(devices[i], SortKeyOp::kLe, "9999-12-31T23:59:59.999999999Z", "", request),
                                 Run(devices[i], SortKeyOp::kBeginsWith, "2026", "", request)}) {
        ASSERT_EQ(result.items.size(), i + 1) << devices[i];
        for (std::size_t k = 0; k < result.items.size(); ++k) {
          Reading reading;
          ASSERT_TRUE(result.items.ToReading(k, devices[i], &reading).ok());
          ASSERT_EQ(reading.attributes.size(), 1u);
          EXPECT_EQ(std::get<std::string>(reading.attributes[0].value), devices[i]);
        }
      }
    }
  }
}

// Pages are rendered from the stored bytes, so Query must have read every value whole: a damaged
// one is an error naming the item, never a page that stops or breaks at it.
TEST_F(QueryTest, ADamagedStoredValueFailsTheQuery) {
  for (int minute = 0; minute < 3; ++minute) {
    Put("a1", "2026-06-23T08:0" + std::to_string(minute) + ":00Z",
        {{"temperature", 20.0 + minute}, {"unit", std::string("C")}});
  }
  ObservedStore observed(*store_);
  observed.damaged_sort_key = SortKey("2026-06-23T08:01:00Z");
  const std::unique_ptr<FilterExpr> filter = Compare("temperature", CompareOp::kGt, 100.0);
  for (const FilterExpr* f : std::vector<const FilterExpr*>{nullptr, filter.get()}) {
    for (bool forward : {true, false}) {
      QueryRequest request = WholePartition("a1", forward, f);
      QueryResult result;
      const Status s = Query(observed, request, &result);
      EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
      EXPECT_NE(s.message().find("DEV#a1 " + observed.damaged_sort_key), std::string::npos) << s.ToString();
    }
  }
  observed.damaged_sort_key.clear();
  QueryRequest request;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kAll, "", "", &request.key).ok());
  QueryResult result;
  ASSERT_TRUE(Query(observed, request, &result).ok());
  EXPECT_EQ(result.items.size(), 3u);
}

// A sink gets the very items Items would keep, in order, with the value read into views; count
// and billing are the same either way.
TEST_F(QueryTest, ASinkGetsWhatItemsKeep) {
  for (int minute = 0; minute < 6; ++minute) {
    Put("a1", "2026-06-23T08:0" + std::to_string(minute) + ":00Z",
        {{"temperature", 20.0 + minute}, {"unit", std::string(minute % 2 ? "C" : "F")}, {"ok", minute > 2}});
  }
  struct Recording final : ItemSink {
    std::vector<Reading> items;
    // Keeps the value decoded, and checks the views handed over against it while they are valid.
    void Add(std::string_view sort_key, std::string_view encoded,
             std::span<const storage::AttributeView> attributes) override {
      Reading& r = items.emplace_back();
      r.device_id = "a1";
      r.sort_key = sort_key;
      ASSERT_TRUE(storage::DecodeAttributes(encoded, &r.attributes).ok());
      const std::vector<storage::AttributeView> decoded = storage::ViewsOf(r.attributes);
      ASSERT_EQ(attributes.size(), decoded.size());
      for (std::size_t a = 0; a < decoded.size(); ++a) {
        EXPECT_EQ(attributes[a].name, decoded[a].name);
        EXPECT_EQ(attributes[a].value, decoded[a].value) << decoded[a].name;
      }
    }
  };
  const std::unique_ptr<FilterExpr> filter = Compare("unit", CompareOp::kEq, std::string("C"));
  for (const FilterExpr* f : std::vector<const FilterExpr*>{nullptr, filter.get()}) {
    for (bool forward : {true, false}) {
      QueryRequest request = WholePartition("a1", forward, f);
      request.limit = 5;
      QueryResult kept, sunk;
      Recording sink;
      ASSERT_TRUE(Query(*store_, request, &kept).ok());
      ASSERT_TRUE(Query(*store_, request, &sunk, &sink).ok());
      EXPECT_TRUE(sunk.items.empty());
      EXPECT_EQ(sunk.count, kept.count);
      EXPECT_EQ(sunk.scanned_count, kept.scanned_count);
      EXPECT_EQ(sunk.scanned_bytes, kept.scanned_bytes);
      EXPECT_EQ(sunk.last_evaluated_sort_key, kept.last_evaluated_sort_key);
      ASSERT_EQ(sink.items.size(), kept.items.size());
      EXPECT_EQ(kept.count, f == nullptr ? 5u : forward ? 2u : 3u);  // odd minutes among the first 5 read
      for (std::size_t i = 0; i < kept.items.size(); ++i) {
        Reading expected;
        ASSERT_TRUE(kept.items.ToReading(i, "a1", &expected).ok());
        EXPECT_EQ(sink.items[i].sort_key, expected.sort_key);
        ASSERT_EQ(sink.items[i].attributes.size(), expected.attributes.size());
        for (std::size_t a = 0; a < expected.attributes.size(); ++a) {
          EXPECT_EQ(sink.items[i].attributes[a].name, expected.attributes[a].name);
          EXPECT_EQ(sink.items[i].attributes[a].value, expected.attributes[a].value);
        }
      }
    }
  }
}

// Items are kept in fixed-size chunks: items of every size, the largest bigger than a chunk,
// come back whole and in order however they fall across chunk boundaries.
TEST_F(QueryTest, ItemsOfAnySizeComeBackWhole) {
  std::vector<std::string> values;
  for (int second = 0; second < 60; ++second) {
    values.push_back(std::string(static_cast<std::size_t>(second) * second * 20, static_cast<char>('a' + second % 26)));
    Put("a1", "2026-06-23T08:00:" + std::string(second < 10 ? "0" : "") + std::to_string(second) + "Z",
        {{"blob", values.back()}});
  }
  for (bool forward : {true, false}) {
    QueryRequest request;
    request.scan_forward = forward;
    request.max_page_bytes = 0;  // 1.4 MB in all
    const QueryResult result = Run("a1", SortKeyOp::kAll, "", "", request);
    ASSERT_EQ(result.items.size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::size_t second = forward ? i : values.size() - 1 - i;
      Reading reading;
      ASSERT_TRUE(result.items.ToReading(i, "a1", &reading).ok()) << i;
      EXPECT_EQ(reading.sort_key, SortKey("2026-06-23T08:00:00Z").replace(17, 2, (second < 10 ? "0" : "") + std::to_string(second)));
      ASSERT_EQ(reading.attributes.size(), 1u);
      EXPECT_EQ(std::get<std::string>(reading.attributes[0].value), values[second]) << second;
    }
  }
}

TEST_F(QueryTest, LimitCountsItemsReadAndNextKeyOnlyWhenMoreRemain) {
  for (int s = 0; s < 5; ++s) Put("a1", "2026-06-23T08:00:0" + std::to_string(s) + "Z");
  QueryRequest request;
  request.limit = 2;
  QueryResult page = Run("a1", SortKeyOp::kAll, "", "", request);
  EXPECT_EQ(SortKeys(page), SortKeys({"2026-06-23T08:00:00Z", "2026-06-23T08:00:01Z"}));
  EXPECT_EQ(page.count, 2u);
  EXPECT_EQ(page.scanned_count, 2u);
  EXPECT_EQ(page.last_evaluated_sort_key, SortKey("2026-06-23T08:00:01Z"));

  request.limit = 5;  // exactly everything: nothing remains, so no next key
  EXPECT_FALSE(Run("a1", SortKeyOp::kAll, "", "", request).last_evaluated_sort_key);
  request.limit = 2;
  request.scan_forward = false;
  page = Run("a1", SortKeyOp::kGe, "2026-06-23T08:00:03Z", "", request);
  EXPECT_EQ(SortKeys(page), SortKeys({"2026-06-23T08:00:04Z", "2026-06-23T08:00:03Z"}));
  EXPECT_FALSE(page.last_evaluated_sort_key) << "the range holds exactly two";
}

TEST_F(QueryTest, RandomPagingReturnsEveryItemExactlyOnceInBothOrders) {
  std::mt19937 random(20260623);
  std::set<std::string> stored;
  for (int i = 0; i < 300; ++i) {
    const int second = std::uniform_int_distribution<>(0, 86399)(random);
    const int nanos = std::uniform_int_distribution<>(0, 2)(random);
    char ts[64];
    std::snprintf(ts, sizeof ts, "2026-06-23T%02d:%02d:%02d.%09dZ", second / 3600, second / 60 % 60,
                  second % 60, nanos);
    Put("dev", ts);
    stored.insert(SortKey(ts));
    Put(i % 2 ? "de" : "dev0", ts);  // neighbours that must never show up
  }
  const std::vector<std::string> keys(stored.begin(), stored.end());
  auto pick = [&] { return keys[std::uniform_int_distribution<std::size_t>(0, keys.size() - 1)(random)]; };

  for (int round = 0; round < 40; ++round) {
    std::string a = pick(), b = pick();
    if (a > b) std::swap(a, b);
    const SortKeyOp op = static_cast<SortKeyOp>(round % 8);
    std::string prefix = "2026-06-23T" + a.substr(11, 2);
    KeyCondition key;
    const std::string first = op == SortKeyOp::kAll ? "" : op == SortKeyOp::kBeginsWith ? prefix : a;
    Status made = MakeKeyCondition("dev", op, first, op == SortKeyOp::kBetween ? b : "", &key);
    ASSERT_TRUE(made.ok()) << made.ToString();

    std::vector<std::string> expected;
    for (const std::string& k : keys) {
      const bool in = op == SortKeyOp::kAll || (op == SortKeyOp::kEq && k == a) ||
                      (op == SortKeyOp::kLt && k < a) || (op == SortKeyOp::kLe && k <= a) ||
                      (op == SortKeyOp::kGt && k > a) || (op == SortKeyOp::kGe && k >= a) ||
                      (op == SortKeyOp::kBetween && k >= a && k <= b) ||
                      (op == SortKeyOp::kBeginsWith && k.starts_with(prefix));
      if (in) expected.push_back(k);
    }
    for (bool forward : {true, false}) {
      std::vector<std::string> want = expected;
      if (!forward) std::ranges::reverse(want);
      auto random_limit = [&] { return std::uniform_int_distribution<std::size_t>(1, 7)(random); };
      EXPECT_EQ(PageThrough(key, forward, random_limit), want) << "op " << round % 8 << " " << a << " " << b;
    }
  }
}

TEST_F(QueryTest, FilterCountsReturnedItemsAndScannedItems) {
  for (int i = 0; i < 10; ++i) {
    Put("a1", "2026-06-23T08:00:0" + std::to_string(i) + "Z", {{"temperature", double(i)}});
  }
  const std::unique_ptr<FilterExpr> filter = Compare("temperature", CompareOp::kGe, 7.0);
  QueryRequest request;
  request.filter = filter.get();
  QueryResult result = Run("a1", SortKeyOp::kAll, "", "", request);
  EXPECT_EQ(result.count, 3u);
  EXPECT_EQ(result.items.size(), 3u);
  EXPECT_EQ(result.scanned_count, 10u);
  // Read units are billed on what was read: ten items of deviceId a1, readingTs, temperature
  // (0 takes 1 byte, 1 to 9 two: a byte per two significant digits, plus one).
  EXPECT_EQ(result.scanned_bytes, 10u * ((8 + 2) + (9 + 30) + 11) + 1 + 9 * 2);
}

TEST_F(QueryTest, PageEmptiedByTheFilterStillHasANextKey) {
  for (int i = 0; i < 10; ++i) {
    Put("a1", "2026-06-23T08:00:0" + std::to_string(i) + "Z", {{"temperature", double(i)}});
  }
  const std::unique_ptr<FilterExpr> filter = Compare("temperature", CompareOp::kGt, 7.0);
  QueryRequest request;
  request.filter = filter.get();
  request.limit = 3;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kAll, "", "", &request.key).ok());
  QueryResult first;
  ASSERT_TRUE(Query(*store_, request, &first).ok());
  EXPECT_EQ(first.count, 0u);
  EXPECT_EQ(first.scanned_count, 3u);
  ASSERT_TRUE(first.last_evaluated_sort_key) << "an empty page is not the end";

  int pages = 0;
  EXPECT_EQ(PageThrough(request.key, true, [] { return 3; }, &pages, filter.get()),
            SortKeys({"2026-06-23T08:00:08Z", "2026-06-23T08:00:09Z"}));
  EXPECT_EQ(pages, 4);  // scanned 3 + 3 + 3 + 1
}

TEST_F(QueryTest, MaxPageBytesSplitsPages) {
  for (int i = 0; i < 10; ++i) {
    Put("a1", "2026-06-23T08:00:0" + std::to_string(i) + "Z", {{"blob", std::string(1000, 'x')}});
  }
  KeyCondition key;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kAll, "", "", &key).ok());
  std::vector<std::string> all = SortKeys(Run("a1", SortKeyOp::kAll));
  ASSERT_EQ(all.size(), 10u);
  for (bool forward : {true, false}) {
    std::vector<std::string> want = all;
    if (!forward) std::ranges::reverse(want);
    int pages = 0;
    // Three items (~3 KB) cross 2500 bytes: pages of 3, 3, 3, 1.
    EXPECT_EQ(PageThrough(key, forward, [] { return 0; }, &pages, nullptr, 2500), want);
    EXPECT_EQ(pages, 4);
    // A cap below one item still returns one item per page.
    EXPECT_EQ(PageThrough(key, forward, [] { return 0; }, &pages, nullptr, 1), want);
    EXPECT_EQ(pages, 10);
  }
}

TEST_F(QueryTest, ExclusiveStartMustBeANormalisedSortKey) {
  Put("a1", "2026-06-23T08:00:00Z");
  QueryRequest request;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kAll, "", "", &request.key).ok());
  for (const std::string& bad : std::vector<std::string>{
           "2026-06-23T08:00:00Z", "garbage", "2026-02-30T00:00:00.000000000Z",
           "2026-06-23T08:00:00.000000000z", "2026-06-23T08:00:00.000000000Z\x01",
           std::string("2026-06-23T08:00:00.00000000\0Z", 30)}) {
    request.exclusive_start = bad;
    QueryResult result;
    EXPECT_TRUE(Query(*store_, request, &result).IsInvalidArgument()) << bad;
  }
  // A well-formed key need not be stored.
  request.exclusive_start = SortKey("2026-06-23T07:00:00Z");
  QueryResult result;
  ASSERT_TRUE(Query(*store_, request, &result).ok());
  EXPECT_EQ(result.items.size(), 1u);
}

TEST_F(QueryTest, ExclusiveStartOutsideTheRangeStaysInTheRange) {
  for (int s = 0; s < 5; ++s) Put("a1", "2026-06-23T08:00:0" + std::to_string(s) + "Z");
  QueryRequest request;
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBetween, "2026-06-23T08:00:01Z",
                               "2026-06-23T08:00:03Z", &request.key).ok());
  for (bool forward : {true, false}) {
    request.scan_forward = forward;
    QueryResult result;
    request.exclusive_start = SortKey(forward ? "2026-06-23T08:00:00Z" : "2026-06-23T08:00:04Z");
    ASSERT_TRUE(Query(*store_, request, &result).ok());
    EXPECT_EQ(result.items.size(), 3u);
    request.exclusive_start = SortKey(forward ? "2026-06-23T08:00:04Z" : "2026-06-23T08:00:00Z");
    ASSERT_TRUE(Query(*store_, request, &result).ok());
    EXPECT_TRUE(result.items.empty());
    EXPECT_FALSE(result.last_evaluated_sort_key);
  }
}

// Items that count how many were added on a thread other than the one that made the first
// sink: the pages a helper thread read part of.
class ThreadCountingItems final : public ItemSink {
 public:
  explicit ThreadCountingItems(std::atomic<std::size_t>* elsewhere) : elsewhere_(elsewhere) {}

  void Add(std::string_view sort_key, std::string_view encoded, std::span<const storage::AttributeView>) override {
    if (std::this_thread::get_id() != owner_) ++*elsewhere_;
    items.Append(sort_key, encoded);
  }
  std::unique_ptr<ItemSink> NewPart(std::size_t) const override {
    auto part = std::make_unique<ThreadCountingItems>(elsewhere_);
    part->owner_ = owner_;
    return part;
  }
  void AppendPart(ItemSink* part, std::size_t n) override {
    items.AppendPart(&static_cast<ThreadCountingItems*>(part)->items, n);
  }

  Items items;

 private:
  std::atomic<std::size_t>* elsewhere_;
  std::thread::id owner_ = std::this_thread::get_id();
};

// Readings one second apart with bursts (ten within a millisecond) and gaps (an hour), of
// varied sizes, so guesses of where a page ends are sometimes wrong in both directions.
class LongPartitionTest : public QueryTest {
 protected:
  void SetUp() override {
    QueryTest::SetUp();
    std::mt19937 random(2026);
    std::vector<Reading> readings;
    long long nanos = 0;  // since 2026-06-23T00:00:00Z
    for (int i = 0; i < kCount; ++i) {
      const int kind = std::uniform_int_distribution<>(0, 99)(random);
      nanos += kind < 2 ? 3600'000'000'000LL : kind < 12 ? 100'000LL : 1'000'000'000LL;
      char ts[64];
      const long long second = nanos / 1'000'000'000LL;
      std::snprintf(ts, sizeof ts, "2026-06-%02lldT%02lld:%02lld:%02lld.%09lldZ", 23 + second / 86400,
                    second / 3600 % 24, second / 60 % 60, second % 60, nanos % 1'000'000'000LL);
      readings.push_back({"long", SortKey(ts),
                          {{"t", static_cast<double>(i % 100)},
                           {"pad", std::string(std::uniform_int_distribution<>(0, 300)(random), 'p')}}});
      keys_.push_back(readings.back().sort_key);
    }
    readings.push_back({"lon", keys_[10], {{"t", 1.0}}});  // neighbours that must never show up
    readings.push_back({"long0", keys_[10], {{"t", 1.0}}});
    ASSERT_TRUE(store_->Write(readings).ok());
  }

  static constexpr int kCount = 4000;
  std::vector<std::string> keys_;
};

// A part goes to a helper only while a core is left for it: on two cores one request being
// answered leaves one; two requests leave none, nor does one beside a helper already at work.
TEST(ReadHelpersTest, APartIsHandedOverOnlyWhileACoreIsLeft) {
  ReadHelpers helpers(2, /*cores=*/2);
  {
    ReadHelpers::ScopedRequest first(helpers), second(helpers);
    EXPECT_FALSE(helpers.TryRun([] {}));
  }
  ReadHelpers::ScopedRequest answering(helpers);
  std::atomic<bool> release{false};
  EXPECT_TRUE(helpers.TryRun([&] {
    while (!release) std::this_thread::yield();
  }));
  EXPECT_FALSE(helpers.TryRun([] {}));
  release = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool taken = false;
  while (!taken && std::chrono::steady_clock::now() < deadline) {
    taken = helpers.TryRun([] {});
    if (!taken) std::this_thread::yield();
  }
  EXPECT_TRUE(taken);
  EXPECT_EQ(helpers.tasks_run(), 2u);
}

// A helper reading the later part of a page changes nothing a client sees: pages through every
// kind of condition, limit, byte cap, filter and direction are the same item for item, count
// for count and key for key as when one thread reads them.
TEST_F(LongPartitionTest, PagesReadInTwoPartsAreThePagesOneThreadReads) {
  ReadHelpers helpers(1);
  std::atomic<std::size_t> by_helper{0};
  const std::unique_ptr<FilterExpr> filter = Compare("t", CompareOp::kGe, 30.0);
  std::mt19937 random(623);
  auto pick = [&] { return keys_[std::uniform_int_distribution<std::size_t>(0, keys_.size() - 1)(random)]; };
  for (int round = 0; round < 120; ++round) {
    std::string a = pick(), b = pick();
    if (a > b) std::swap(a, b);
    const SortKeyOp op = static_cast<SortKeyOp>(round % 8);
    const std::string first = op == SortKeyOp::kAll ? "" : op == SortKeyOp::kBeginsWith ? a.substr(0, 10) : a;
    QueryRequest request;
    ASSERT_TRUE(MakeKeyCondition("long", op, first, op == SortKeyOp::kBetween ? b : "", &request.key).ok());
    request.scan_forward = round % 3 != 0;
    request.limit = std::vector<std::size_t>{0, 100, 700, 2500}[round % 4];
    request.max_page_bytes = std::vector<std::size_t>{kMaxPageBytes, 0, 60000}[round / 4 % 3];
    if (request.limit == 0 && request.max_page_bytes == 0) request.limit = 1500;
    request.filter = round % 5 == 0 ? filter.get() : nullptr;
    SCOPED_TRACE("round " + std::to_string(round));
    for (int page = 0; page < 100; ++page) {
      QueryRequest alone = request;
      QueryResult want;
      ASSERT_TRUE(Query(*store_, alone, &want).ok());
      QueryRequest helped = request;
      helped.helpers = &helpers;
      QueryResult got;
      ThreadCountingItems sink(&by_helper);
      ASSERT_TRUE(Query(*store_, helped, &got, &sink).ok());
      ASSERT_EQ(sink.items.size(), want.items.size());
      for (std::size_t i = 0; i < want.items.size(); ++i) {
        ASSERT_EQ(sink.items[i].sort_key, want.items[i].sort_key);
        ASSERT_EQ(sink.items[i].encoded_attributes, want.items[i].encoded_attributes);
      }
      ASSERT_EQ(got.count, want.count);
      ASSERT_EQ(got.scanned_count, want.scanned_count);
      ASSERT_EQ(got.scanned_bytes, want.scanned_bytes);
      ASSERT_EQ(got.last_evaluated_sort_key, want.last_evaluated_sort_key);
      if (!want.last_evaluated_sort_key) break;
      request.exclusive_start = *want.last_evaluated_sort_key;
    }
  }
  EXPECT_GT(helpers.tasks_run(), 0u);
  EXPECT_GT(by_helper.load(), 0u);  // some pages really were read in two parts
}

// A damaged value in the later part fails the page that reaches it, and only that page.
TEST_F(LongPartitionTest, ADamagedValueInTheHelpersPartFailsOnlyThePagesThatReachIt) {
  ReadHelpers helpers(1);
  ObservedStore observed(*store_);
  observed.damaged_sort_key = keys_[2000];  // read by pages of 2500 and the whole partition
  for (bool forward : {true, false}) {
    for (std::size_t limit : {0, 2500, 1500}) {
      QueryRequest request = WholePartition("long", forward, nullptr);
      request.limit = limit;
      request.max_page_bytes = 0;
      request.helpers = &helpers;
      QueryResult result;
      const Status s = Query(observed, request, &result);
      if (limit == 1500) {
        EXPECT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(result.items.size(), 1500u);
      } else {
        EXPECT_EQ(s.code(), Status::Code::kCorruption) << limit << " " << s.ToString();
        EXPECT_NE(s.message().find(observed.damaged_sort_key), std::string::npos) << s.ToString();
      }
    }
  }
  EXPECT_GT(helpers.tasks_run(), 0u);
}

// When the page's first items are followed by a gap, the request's thread has nothing to read
// before the helper's part, and the helper's items end the page: whether a next key follows is
// the helper's to tell.
TEST_F(QueryTest, AHelpersPartRightAfterTheFirstItemsEndsThePageWithItsNextKey) {
  std::vector<Reading> readings;
  auto add = [&](int hour, int count) {
    for (int i = 0; i < count; ++i) {
      char ts[32];
      std::snprintf(ts, sizeof ts, "2026-06-23T%02d:%02d:%02dZ", hour, i / 60, i % 60);
      readings.push_back({"gap", SortKey(ts), {{"t", 1.0}}});
    }
  };
  add(0, 64);    // the first page's guess: one a second...
  add(1, 2000);  // ...but the next come an hour later
  add(3, 64);
  ASSERT_TRUE(store_->Write(readings).ok());
  ReadHelpers helpers(1);
  ObservedStore observed(*store_);
  for (bool forward : {true, false}) {
    std::atomic<std::size_t> by_helper{0};
    observed.slow_sort_key = SortKey(forward ? "2026-06-23T01:00:00Z" : "2026-06-23T01:33:19Z");
    QueryRequest request = WholePartition("gap", forward, nullptr);
    request.limit = 564;  // the guess puts the helper's part 300 s on, inside the gap
    QueryResult want;
    ASSERT_TRUE(Query(*store_, request, &want).ok());
    ASSERT_TRUE(want.last_evaluated_sort_key);
    request.helpers = &helpers;
    QueryResult got;
    ThreadCountingItems sink(&by_helper);
    ASSERT_TRUE(Query(observed, request, &got, &sink).ok());
    EXPECT_EQ(by_helper.load(), 500u);
    ASSERT_EQ(sink.items.size(), want.items.size());
    EXPECT_EQ(sink.items[563].sort_key, want.items[563].sort_key);
    EXPECT_EQ(got.scanned_count, want.scanned_count);
    EXPECT_EQ(got.last_evaluated_sort_key, want.last_evaluated_sort_key);
  }
}

TEST(MakeKeyConditionTest, ValidatesEverything) {
  KeyCondition key;
  EXPECT_TRUE(MakeKeyCondition("", SortKeyOp::kAll, "", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a#1", SortKeyOp::kAll, "", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition(std::string("a\0b", 3), SortKeyOp::kAll, "", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kEq, "yesterday", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kGe, "2026-06-23", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBeginsWith, "2026/06", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBetween, "2026-06-23T00:00:00Z", "nope", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kAll, "2026-06-23T00:00:00Z", "", &key).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kGe, "2026-06-23T00:00:00Z", "2026-06-24T00:00:00Z", &key)
                  .IsInvalidArgument());

  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBetween, "2026-06-23T10:00:00+02:00",
                               "2026-06-23T09:00:00.5Z", &key).ok());
  EXPECT_EQ(key.device_id, "a1");
  EXPECT_EQ(key.a, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(key.b, "2026-06-23T09:00:00.500000000Z");
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBeginsWith, "2026-06-23T08", "", &key).ok());
  EXPECT_EQ(key.a, "2026-06-23T08");
}

TEST_F(QueryTest, KeyWhenFullMarksEveryFullPageEvenOnTheLastItem) {
  for (int s = 0; s < 4; ++s) Put("a1", "2026-06-23T08:00:0" + std::to_string(s) + "Z");
  QueryRequest request;
  request.limit = 4;  // exactly everything
  request.key_when_full = true;
  QueryResult page = Run("a1", SortKeyOp::kAll, "", "", request);
  EXPECT_EQ(page.count, 4u);
  EXPECT_EQ(page.last_evaluated_sort_key, SortKey("2026-06-23T08:00:03Z"));
  request.exclusive_start = *page.last_evaluated_sort_key;
  page = Run("a1", SortKeyOp::kAll, "", "", request);
  EXPECT_EQ(page.count, 0u);
  EXPECT_FALSE(page.last_evaluated_sort_key);
  request.exclusive_start.clear();
  request.limit = 5;  // not full: no key
  EXPECT_FALSE(Run("a1", SortKeyOp::kAll, "", "", request).last_evaluated_sort_key);
}

TEST_F(QueryTest, DynamoDbKeyValuesCompareAsStrings) {
  for (int s = 0; s < 3; ++s) Put("a1", "2026-06-23T08:00:0" + std::to_string(s) + "Z");
  auto run = [&](std::string_view device, SortKeyOp op, std::string_view a, std::string_view b = "") {
    QueryRequest request;
    Status s = MakeKeyCondition(device, op, a, b, &request.key, KeyValues::kAsDynamoDb);
    EXPECT_TRUE(s.ok()) << s.ToString();
    QueryResult result;
    EXPECT_TRUE(Query(*store_, request, &result).ok());
    return result.count;
  };
  EXPECT_EQ(run("a b", SortKeyOp::kAll, ""), 0u);  // outside the charset: no such partition
  EXPECT_EQ(run("a1", SortKeyOp::kEq, "tuesday"), 0u);
  EXPECT_EQ(run("a1", SortKeyOp::kLt, "tuesday"), 3u);  // every timestamp sorts before "t"
  EXPECT_EQ(run("a1", SortKeyOp::kGt, "tuesday"), 0u);
  EXPECT_EQ(run("a1", SortKeyOp::kGe, "2026-06-23"), 3u);
  EXPECT_EQ(run("a1", SortKeyOp::kLe, "2026-06-23T08:00:01"), 1u);  // "…08:00:01.000000000Z" > "…08:00:01"
  EXPECT_EQ(run("a1", SortKeyOp::kBeginsWith, "2026/06"), 0u);
  EXPECT_EQ(run("a1", SortKeyOp::kBetween, "2026", "2027"), 3u);
  KeyCondition key;
  EXPECT_TRUE(MakeKeyCondition("", SortKeyOp::kAll, "", "", &key, KeyValues::kAsDynamoDb).IsInvalidArgument());
  EXPECT_TRUE(MakeKeyCondition("a1", SortKeyOp::kEq, "", "", &key, KeyValues::kAsDynamoDb).IsInvalidArgument());
  EXPECT_TRUE(
      MakeKeyCondition("a1", SortKeyOp::kBetween, "tuesday", "2026", &key, KeyValues::kAsDynamoDb).IsInvalidArgument());
  ASSERT_TRUE(MakeKeyCondition("a1", SortKeyOp::kBetween, "2026-06-23T08:00:00Z", "2026-06-23T08:00:01Z", &key).ok());
  EXPECT_TRUE(InSortKeyRange(key, SortKey("2026-06-23T08:00:01Z")));
  EXPECT_FALSE(InSortKeyRange(key, SortKey("2026-06-23T08:00:02Z")));
}

// Collects what Scan returns.
class ScanItems final : public ScanSink {
 public:
  void Add(const ScanItem& item) override {
    keys.push_back(std::string(item.device_id) + "/" + std::string(item.sort_key));
    attribute_counts.push_back(item.attributes.size());
  }
  std::vector<std::string> keys;
  std::vector<std::size_t> attribute_counts;
};

class ScanTest : public QueryTest {
 protected:
  void SetUp() override {
    QueryTest::SetUp();
    // 40 partitions with ids that share a prefix, 1 to 5 readings each.
    for (int d = 0; d < 40; ++d) {
      for (int s = 0; s <= d % 5; ++s) {
        Put("sensor-" + std::to_string(d), "2026-06-23T08:00:0" + std::to_string(s) + "Z",
            {{"temperature", 20.0 + d}, {"n", s}});
        all_.push_back("sensor-" + std::to_string(d) + "/" + SortKey("2026-06-23T08:00:0" + std::to_string(s) + "Z"));
      }
    }
    std::sort(all_.begin(), all_.end(), [](const std::string& a, const std::string& b) {
      // key order: device id bytewise (shorter first), then time
      const std::string da = a.substr(0, a.find('/')), db = b.substr(0, b.find('/'));
      return da != db ? da < db : a < b;
    });
  }

  // Every page of the segment, `limit` items read per page.
  std::vector<std::string> ScanAll(ScanRequest request, std::size_t limit, int* pages = nullptr) {
    ScanItems items;
    request.limit = limit;
    for (int page = 1;; ++page) {
      ScanResult result;
      Status s = Scan(*store_, request, &items, &result);
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (pages) *pages = page;
      if (!s.ok() || !result.last_evaluated_key || page > 1000) break;
      request.exclusive_start = result.last_evaluated_key;
    }
    return items.keys;
  }

  std::vector<std::string> all_;
};

TEST_F(ScanTest, ReadsEveryItemOnceInKeyOrderAndPagesAtTheLimit) {
  int pages = 0;
  EXPECT_EQ(ScanAll({}, 0, &pages), all_);
  EXPECT_EQ(pages, 1);
  EXPECT_EQ(ScanAll({}, 7, &pages), all_);
  EXPECT_EQ(pages, static_cast<int>(all_.size() / 7 + 1));  // a full last page has a key too
  EXPECT_EQ(ScanAll({}, all_.size(), &pages), all_);
  EXPECT_EQ(pages, 2);  // the second page is empty and ends the scan

  ScanRequest request;
  request.max_page_bytes = 1;  // one item a page
  ScanItems items;
  ScanResult result;
  ASSERT_TRUE(Scan(*store_, request, &items, &result).ok());
  EXPECT_EQ(result.scanned_count, 1u);
  ASSERT_TRUE(result.last_evaluated_key);
  EXPECT_EQ(result.last_evaluated_key->device_id + "/" + result.last_evaluated_key->sort_key, all_[0]);
  EXPECT_EQ(items.attribute_counts, std::vector<std::size_t>{2});
}

TEST_F(ScanTest, SegmentsPartitionTheTableAndSpreadThePartitions) {
  for (uint32_t total : {1u, 2u, 3u, 4u, 7u}) {
    std::vector<std::string> union_of_segments;
    std::size_t largest = 0;
    for (uint32_t segment = 0; segment < total; ++segment) {
      ScanRequest request;
      request.segment = segment;
      request.total_segments = total;
      std::vector<std::string> keys = ScanAll(request, 3);
      largest = std::max(largest, keys.size());
      for (const std::string& key : keys) {
        EXPECT_EQ(SegmentOf(key.substr(0, key.find('/')), total), segment) << key;
      }
      union_of_segments.insert(union_of_segments.end(), keys.begin(), keys.end());
    }
    std::sort(union_of_segments.begin(), union_of_segments.end());
    std::vector<std::string> sorted = all_;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(union_of_segments, sorted) << total << " segments";
    if (total == 4) {
      EXPECT_LT(largest, all_.size() / 2) << "ids with a common prefix still spread";
    }
  }
  EXPECT_EQ(SegmentOf("a1", 1), 0u);
}

TEST_F(ScanTest, FilterMayUseKeyAttributesAndCountsScannedItems) {
  auto filter = Compare("deviceId", CompareOp::kEq, std::string("sensor-4"));
  ScanRequest request;
  request.filter = filter.get();
  ScanItems items;
  ScanResult result;
  ASSERT_TRUE(Scan(*store_, request, &items, &result).ok());
  EXPECT_EQ(result.count, 5u);
  EXPECT_EQ(result.scanned_count, all_.size());
  EXPECT_GT(result.scanned_bytes, all_.size() * 20);
  EXPECT_EQ(items.attribute_counts, std::vector<std::size_t>(5, 2)) << "the key attributes are not the item's";
  ASSERT_EQ(result.partitions.size(), 40u);  // every partition read, filtered out or not
  std::size_t bytes = 0;
  for (const ScanResult::PartitionRead& read : result.partitions) bytes += read.bytes;
  EXPECT_EQ(bytes, result.scanned_bytes);
  EXPECT_EQ(result.partitions[0].device_id, "sensor-0");
  EXPECT_EQ(result.partitions[0].items, 1u);
  auto by_value = Compare("n", CompareOp::kGe, storage::Number(4));
  request.filter = by_value.get();
  ASSERT_TRUE(Scan(*store_, request, &items, &result).ok());
  EXPECT_EQ(result.count, 8u);  // sensors 4, 9, …, 39
}

TEST_F(ScanTest, ExclusiveStartIsChecked) {
  ScanRequest request;
  request.total_segments = 4;
  request.segment = 0;
  std::string other;  // a device id of another segment
  for (int d = 0; other.empty(); ++d) {
    if (SegmentOf("sensor-" + std::to_string(d), 4) != 0) other = "sensor-" + std::to_string(d);
  }
  request.exclusive_start = ItemKey{other, SortKey("2026-06-23T08:00:00Z")};
  ScanItems items;
  ScanResult result;
  Status s = Scan(*store_, request, &items, &result);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("Please use ExclusiveStartKey with correct Segment. TotalSegments: 4 Segment: 0"),
            std::string::npos)
      << s.message();
  request.total_segments = 1;
  request.exclusive_start = ItemKey{other, "2026-06-23"};
  EXPECT_TRUE(Scan(*store_, request, &items, &result).IsInvalidArgument());
  request.exclusive_start = ItemKey{"a b", SortKey("2026-06-23T08:00:00Z")};
  EXPECT_TRUE(Scan(*store_, request, &items, &result).IsInvalidArgument());
}

}  // namespace
}  // namespace readingsd::query
