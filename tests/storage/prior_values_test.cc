#include "storage/prior_values.h"

#include <gtest/gtest.h>
#include <rocksdb/statistics.h>

#include <filesystem>

#include "storage/key.h"
#include "storage/rocks_options.h"

namespace readingsd::storage::internal {
namespace {

namespace fs = std::filesystem;

// A RocksDB with the store's options, written as Store::Write writes: Plan, the batch, Commit.
class PriorValuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/readingsd-prior-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Reopen();
  }
  void TearDown() override {
    priors_.reset();
    db_.reset();
    fs::remove_all(dir_);
  }
  void Reopen() {
    priors_.reset();
    db_.reset();
    stats_ = rocksdb::CreateDBStatistics();
    rocksdb::Options o = MakeOptions(StoreOptions{.path = dir_}, stats_, /*writable=*/true);
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_, &raw).ok());
    db_.reset(raw);
    priors_ = std::make_unique<PriorValues>(db_.get());
  }

  static Reading Make(std::string device, std::string ts, std::string value) {
    std::string sk;
    EXPECT_TRUE(NormalizeTimestamp(ts, &sk).ok()) << ts;
    return Reading{std::move(device), sk, {{"v", std::move(value)}}};
  }
  static std::string Encoded(const std::string& value) {
    std::string out;
    EncodeAttributes({{"v", value}}, &out);
    return out;
  }

  // The priors of `readings`, written as one batch.
  std::vector<std::optional<std::string>> Write(const std::vector<Reading>& readings) {
    std::vector<KeyWrite> writes;
    Status s = priors_->Plan(readings, &writes);
    EXPECT_TRUE(s.ok()) << s.ToString();
    rocksdb::WriteBatch batch;
    std::vector<std::optional<std::string>> out;
    for (const KeyWrite& w : writes) {
      EXPECT_EQ(w.key, EncodeKey(w.reading->device_id, w.reading->sort_key));
      batch.Put(w.key, w.value);
      out.push_back(w.prior);
    }
    EXPECT_TRUE(db_->Write(rocksdb::WriteOptions(), &batch).ok());
    priors_->Commit();
    return out;
  }
  uint64_t Reads() const {
    return stats_->getTickerCount(rocksdb::NUMBER_DB_SEEK) + stats_->getTickerCount(rocksdb::NUMBER_MULTIGET_CALLS) +
           stats_->getTickerCount(rocksdb::NUMBER_KEYS_READ);
  }

  std::string dir_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<PriorValues> priors_;
};

using Priors = std::vector<std::optional<std::string>>;

TEST_F(PriorValuesTest, ReadingsNewerThanTheirDevicesNewestNeedNoRead) {
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:00Z", "x")}), Priors{std::nullopt});
  const uint64_t after_first_sight = Reads();
  EXPECT_GT(after_first_sight, 0u);  // the partition's newest key was read once
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:10Z", "y"), Make("a1", "2026-06-23T08:00:20Z", "z")}),
               (Priors{std::nullopt, std::nullopt}));
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:30Z", "w")}), Priors{std::nullopt});
  EXPECT_EQ(Reads(), after_first_sight);
}

TEST_F(PriorValuesTest, OverwritesFindTheValueTheyReplace) {
  Write({Make("a1", "2026-06-23T08:00:00Z", "old0"), Make("a1", "2026-06-23T08:00:10Z", "old10")});
  // The newest key itself, an older one, and an older key that is not stored.
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:10Z", "new10"), Make("a1", "2026-06-23T08:00:00Z", "new0"),
                   Make("a1", "2026-06-23T07:59:00Z", "gap")}),
            (Priors{Encoded("old10"), Encoded("old0"), std::nullopt}));
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:10Z", "newer10")}), Priors{Encoded("new10")});
}

TEST_F(PriorValuesTest, AKeyWrittenTwiceInOneBatchReplacesItsEarlierWrite) {
  Write({Make("a1", "2026-06-23T08:00:00Z", "stored")});
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:00Z", "first"), Make("a1", "2026-06-23T08:00:00Z", "second"),
                   Make("a1", "2026-06-23T09:00:00Z", "new"), Make("a1", "2026-06-23T09:00:00Z", "again"),
                   Make("a1", "2026-06-23T08:00:00Z", "third")}),
            (Priors{Encoded("stored"), Encoded("first"), std::nullopt, Encoded("new"), Encoded("second")}));
}

TEST_F(PriorValuesTest, AKeyWrittenTwiceIsFoundAmongOtherDevicesWrites) {
  Write({Make("a1", "2026-06-23T08:00:00Z", "a1 stored"), Make("b", "2026-06-23T08:00:00Z", "b stored")});
  // Devices interleaved, each key's second write behind another device's: the prior of a key's
  // write is that key's latest earlier write, never another device's at the same time.
  EXPECT_EQ(Write({Make("b", "2026-06-23T09:00:00Z", "b new"), Make("a1", "2026-06-23T09:00:00Z", "a1 new"),
                   Make("b", "2026-06-23T08:00:00Z", "b over"), Make("a1", "2026-06-23T09:00:00Z", "a1 again"),
                   Make("b", "2026-06-23T09:00:00Z", "b again"), Make("a1", "2026-06-23T08:30:00Z", "a1 gap"),
                   Make("b", "2026-06-23T08:00:00Z", "b over again")}),
            (Priors{std::nullopt, std::nullopt, Encoded("b stored"), Encoded("a1 new"), Encoded("b new"), std::nullopt,
                    Encoded("b over")}));
}

TEST_F(PriorValuesTest, ANewPriorValuesIsSeededFromThePartitionsNewestKey) {
  // a10 sorts right after a1's partition: its keys must not be taken for a1's.
  Write({Make("a1", "2026-06-23T08:00:00Z", "a1"), Make("a10", "2026-06-23T10:00:00Z", "a10")});
  Reopen();
  EXPECT_EQ(Write({Make("a1", "2026-06-23T08:00:00Z", "a1 again"), Make("a1", "2026-06-23T09:00:00Z", "a1 new"),
                   Make("a10", "2026-06-23T10:00:00Z", "a10 again"), Make("b", "2026-06-23T10:00:00Z", "b")}),
            (Priors{Encoded("a1"), std::nullopt, Encoded("a10"), std::nullopt}));
}

TEST_F(PriorValuesTest, AFailedWriteLeavesTheNewestKeysAsTheyWere) {
  Write({Make("a1", "2026-06-23T08:00:00Z", "stored")});
  std::vector<Reading> lost = {Make("a1", "2026-06-23T09:00:00Z", "never written")};
  std::vector<KeyWrite> writes;
  ASSERT_TRUE(priors_->Plan(lost, &writes).ok());  // no Commit: the write failed
  // Had 09:00 counted as stored, writing it now would be an overwrite to look up.
  const uint64_t before = Reads();
  EXPECT_EQ(Write({Make("a1", "2026-06-23T09:00:00Z", "now written")}), Priors{std::nullopt});
  EXPECT_EQ(Reads(), before);
}

}  // namespace
}  // namespace readingsd::storage::internal
