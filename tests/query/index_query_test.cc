// IndexQuery against a real store with declared indexes.
#include "query/index_query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "storage/key.h"
#include "storage/store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::query {
namespace {

using storage::IndexValue;
using storage::Reading;

class Collect : public IndexItemSink {
 public:
  void Add(const IndexItem& item) override {
    std::string_view encoded = item.sort;
    IndexValue sort;
    EXPECT_TRUE(storage::ReadIndexValue(&encoded, &sort) && encoded.empty());
    items.push_back(std::string(item.partition) + " " + std::string(item.device_id) + " " + sort.text);
  }
  std::vector<std::string> items;
};

class IndexQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions options;
    options.path = dir_.path() + "/db";
    options.indexes = {storage::IndexSpec{.name = "hot_by_hour", .sort_attribute = "temperature", .shards = 4},
                       storage::IndexSpec{.name = "by_status", .partition = storage::IndexPartition::kAttribute,
                                          .partition_attribute = "status", .sort = storage::IndexSort::kString,
                                          .sort_attribute = "site"}};
    ASSERT_TRUE(storage::Store::Open(options, &store_).ok());
    std::vector<Reading> batch;
    // 60 devices, one reading each in 08:00 and 09:00, temperatures -29.5 .. 29.5 and 100 + i.
    for (int i = 0; i < 60; ++i) {
      std::string ts = "2026-06-23T08:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ":00Z";
      std::string sk;
      ASSERT_TRUE(storage::NormalizeTimestamp(ts, &sk).ok());
      batch.push_back(Reading{"d" + std::to_string(i), sk, {{"temperature", storage::Number(i - 29.5)}}});
      sk[12] = '9';
      batch.push_back(Reading{"d" + std::to_string(i), sk, {{"temperature", storage::Number(100 + i)}}});
    }
    ASSERT_TRUE(store_->Write(batch).ok());
  }

  IndexQueryRequest Hot(std::vector<std::string> hours, SortKeyOp op, std::string a) {
    IndexQueryRequest r;
    r.index = "hot_by_hour";
    r.values = std::move(hours);
    r.sort.op = op;
    r.sort.a = IndexValue{true, std::move(a)};
    return r;
  }

  Status Run(const IndexQueryRequest& request, Collect* sink, IndexQueryResult* result) {
    return IndexQuery(*store_, request, sink, result);
  }

  test::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
};

TEST_F(IndexQueryTest, AllShardsMergeInNumericOrder) {
  Collect sink;
  IndexQueryResult result;
  ASSERT_TRUE(Run(Hot({"2026-06-23T08"}, SortKeyOp::kGt, "27"), &sink, &result).ok());
  ASSERT_EQ(sink.items.size(), 3u);
  EXPECT_EQ(sink.items[0].substr(sink.items[0].find(' ')), " d57 27.5");
  EXPECT_EQ(sink.items[2].substr(sink.items[2].find(' ')), " d59 29.5");
  EXPECT_EQ(result.scanned_count, 3u);
  EXPECT_FALSE(result.last_evaluated);

  Collect all;
  ASSERT_TRUE(Run(Hot({"2026-06-23T08"}, SortKeyOp::kAll, "0"), &all, &result).ok());
  ASSERT_EQ(all.items.size(), 60u);
  for (std::size_t i = 0; i + 1 < all.items.size(); ++i) {
    EXPECT_LT(std::stod(all.items[i].substr(all.items[i].rfind(' '))),
              std::stod(all.items[i + 1].substr(all.items[i + 1].rfind(' '))));
  }
}

TEST_F(IndexQueryTest, OneShardWithItsSuffixAndBackward) {
  Collect sink;
  IndexQueryResult result;
  IndexQueryRequest r = Hot({"2026-06-23T08#2"}, SortKeyOp::kLt, "0");
  r.all_shards = false;
  r.scan_forward = false;
  ASSERT_TRUE(Run(r, &sink, &result).ok());
  ASSERT_FALSE(sink.items.empty());
  EXPECT_LT(sink.items.size(), 30u);
  for (const std::string& item : sink.items) EXPECT_TRUE(item.starts_with("2026-06-23T08#2 ")) << item;
  EXPECT_GT(std::stod(sink.items.front().substr(sink.items.front().rfind(' '))),
            std::stod(sink.items.back().substr(sink.items.back().rfind(' '))));
}

TEST_F(IndexQueryTest, PagesAcrossBucketsResumeWhereTheyStopped) {
  IndexQueryRequest r = Hot({"2026-06-23T08", "2026-06-23T09"}, SortKeyOp::kGe, "20");
  r.limit = 7;
  std::vector<std::string> all;
  int pages = 0;
  for (;; ++pages) {
    Collect sink;
    IndexQueryResult result;
    ASSERT_TRUE(Run(r, &sink, &result).ok());
    all.insert(all.end(), sink.items.begin(), sink.items.end());
    if (!result.last_evaluated) break;
    r.exclusive_start = result.last_evaluated;
    ASSERT_LT(pages, 100);
  }
  // 08: 20 .. 29.5 is 10 readings (d50..d59); 09: all 60.
  EXPECT_EQ(all.size(), 70u);
  EXPECT_EQ(pages, 9);  // 70 / 7 = 10 pages, the last one's key absent as nothing follows it
  EXPECT_TRUE(all.front().starts_with("2026-06-23T08#"));
  EXPECT_TRUE(all.back().starts_with("2026-06-23T09#"));
}

TEST_F(IndexQueryTest, RefusesUnknownIndexesAndValuesOfTheOtherType) {
  Collect sink;
  IndexQueryResult result;
  IndexQueryRequest r = Hot({"2026-06-23T08"}, SortKeyOp::kGt, "27");
  r.index = "nope";
  EXPECT_EQ(Run(r, &sink, &result).message(), "The table does not have the specified index: nope");
  r = Hot({"2026-06-23T08"}, SortKeyOp::kGt, "27");
  r.sort.a.is_number = false;
  EXPECT_TRUE(Run(r, &sink, &result).IsInvalidArgument());
  r = Hot({"2026-06-23T08"}, SortKeyOp::kGt, "27");
  r.exclusive_start = IndexPosition{"2026-06-23T10", IndexTail({true, "1"}, "d1", std::string(30, '0'))};
  EXPECT_TRUE(Run(r, &sink, &result).IsInvalidArgument());
}

// The shards of a value are merged by whole entry: equal temperatures (in every shard) in device
// id and then time order, the same for 8 shards, 3 (not a power of two) and 1, backward the
// reverse; shards without entries, and a value without any, are merged as well.
TEST(IndexQueryMergeTest, ShardsMergeInEntryOrderWithTiesAndEmptyShards) {
  test::TempDir dir;
  storage::StoreOptions options;
  options.path = dir.path() + "/db";
  for (int shards : {8, 3, 1}) {
    options.indexes.push_back(storage::IndexSpec{.name = "t" + std::to_string(shards),
                                                 .sort_attribute = "temperature", .shards = shards});
  }
  std::unique_ptr<storage::Store> store;
  ASSERT_TRUE(storage::Store::Open(options, &store).ok());
  // 08: 12 devices, 5 readings each, temperatures 0, 1 and 2 only. 09: one reading.
  std::vector<Reading> batch;
  std::vector<std::tuple<int, std::string, std::string>> expected;  // temperature, device, sort key
  for (int d = 0; d < 12; ++d) {
    for (int m = 0; m < 5; ++m) {
      std::string sk;
      ASSERT_TRUE(storage::NormalizeTimestamp("2026-06-23T08:0" + std::to_string(m) + ":00Z", &sk).ok());
      const int t = (d + m) % 3;
      batch.push_back(Reading{"d" + std::to_string(10 + d), sk, {{"temperature", storage::Number(t)}}});
      expected.emplace_back(t, "d" + std::to_string(10 + d), sk);
    }
  }
  std::string late;
  ASSERT_TRUE(storage::NormalizeTimestamp("2026-06-23T09:30:00Z", &late).ok());
  batch.push_back(Reading{"d99", late, {{"temperature", storage::Number(-4.5)}}});
  ASSERT_TRUE(store->Write(batch).ok());
  std::sort(expected.begin(), expected.end());

  class Entries : public IndexItemSink {
   public:
    void Add(const IndexItem& item) override {
      std::string_view encoded = item.sort;
      IndexValue sort;
      EXPECT_TRUE(storage::ReadIndexValue(&encoded, &sort));
      items.emplace_back(std::stoi(sort.text), std::string(item.device_id), std::string(item.sort_key));
    }
    std::vector<std::tuple<int, std::string, std::string>> items;
  };
  for (const char* index : {"t8", "t3", "t1"}) {
    for (bool forward : {true, false}) {
      IndexQueryRequest r;
      r.index = index;
      r.values = {"2026-06-23T08"};
      r.scan_forward = forward;
      Entries sink;
      IndexQueryResult result;
      ASSERT_TRUE(IndexQuery(*store, r, &sink, &result).ok()) << index;
      auto want = expected;
      if (!forward) std::reverse(want.begin(), want.end());
      EXPECT_EQ(sink.items, want) << index << (forward ? " forward" : " backward");
    }
    for (const char* hour : {"2026-06-23T09", "2026-06-23T10"}) {  // one entry in one shard; none
      IndexQueryRequest r;
      r.index = index;
      r.values = {hour};
      Entries sink;
      IndexQueryResult result;
      ASSERT_TRUE(IndexQuery(*store, r, &sink, &result).ok()) << index;
      EXPECT_EQ(sink.items.size(), std::string(hour).ends_with("09") ? 1u : 0u) << index << " " << hour;
    }
  }
}

}  // namespace
}  // namespace readingsd::query
