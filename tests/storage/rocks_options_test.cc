#include "storage/rocks_options.h"

#include <gtest/gtest.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/write_batch.h>

#include <memory>
#include <string>

#include "storage/key.h"
#include "storage/registry.h"
#include "storage/rollups.h"
#include "tests/support/temp_dir.h"

namespace readingsd::storage::internal {
namespace {

constexpr std::string_view kSortKey = "2026-06-23T08:00:00.000000000Z";

std::string Hint(const rocksdb::SliceTransform& hint, const std::string& key) {
  if (!hint.InDomain(key)) return "(none)";
  return hint.Transform(key).ToString();
}

// Every key space of storage/key.h: readings are hinted per partition, registry and rollup
// records per key space, and nothing else is, above all no key a DeleteRange begins at.
TEST(InsertHintTest, EachKeySpaceHasItsHintAndNoRangeDeletionStartsInOne) {
  test::TempDir dir("readingsd-hint");
  const rocksdb::Options o = MakeOptions(StoreOptions{.path = dir.path()}, nullptr, /*writable=*/false);
  ASSERT_NE(o.memtable_insert_with_hint_prefix_extractor, nullptr);
  const rocksdb::SliceTransform& hint = *o.memtable_insert_with_hint_prefix_extractor;

  EXPECT_EQ(Hint(hint, EncodeKey("a1", kSortKey)), std::string("DEV#a1") + kSeparator);
  EXPECT_EQ(Hint(hint, EncodeKey("a10", kSortKey)), std::string("DEV#a10") + kSeparator);
  EXPECT_EQ(Hint(hint, RegistryKey("a1")), "REG#");
  EXPECT_EQ(Hint(hint, RollupKey("a1", kSortKey)), "ROL#");
  EXPECT_EQ(Hint(hint, RollupKey("a1", "")), "ROL#");  // the floor record
  EXPECT_EQ(Hint(hint, std::string(kRegistryBuiltKey)), "(none)");
  EXPECT_EQ(Hint(hint, std::string(kRollupsKey)), "(none)");
  EXPECT_EQ(Hint(hint, EncodeIndexKey("by_t", "p", IndexValue{.is_number = true, .text = "1"}, "a1", kSortKey)),
            "(none)");
  // Where the store's range deletions begin (Rollups::Prepare, a dropped index).
  EXPECT_EQ(Hint(hint, std::string(kRollupPrefix)), "(none)");
  EXPECT_EQ(Hint(hint, IndexPrefix("by_t")), "(none)");
}

// RocksDB 7.8 shares one hint per prefix between the point keys and the range tombstones: a
// tombstone that began in the domain would hand its hint to the next point key of its prefix,
// which would be linked among the tombstones and never found. Fresh memtables, each a tombstone
// as Rollups::Prepare writes it and then point keys, many times (a skiplist node's height is
// random, and the loss needs a low one).
TEST(InsertHintTest, PointKeysWrittenAfterARangeDeletionAreFound) {
  for (int round = 0; round < 24; ++round) {
    test::TempDir dir("readingsd-hint");
    rocksdb::Options o = MakeOptions(StoreOptions{.path = dir.path()}, nullptr, /*writable=*/true);
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const std::string lower(kRollupPrefix), upper = lower + kSortKeyEnd;
    ASSERT_TRUE(db->DeleteRange(rocksdb::WriteOptions(), db->DefaultColumnFamily(), lower, upper).ok());
    const std::string keys[] = {RollupKey("a1", ""), RollupKey("a1", kSortKey), RegistryKey("a1"),
                                EncodeKey("a1", kSortKey)};
    for (const std::string& key : keys) {
      rocksdb::WriteBatch batch;
      ASSERT_TRUE(batch.Put(key, "v").ok());
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
    }
    for (const std::string& key : keys) {
      std::string value;
      EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), key, &value).ok()) << "round " << round << " key " << key;
    }
  }
}

}  // namespace
}  // namespace readingsd::storage::internal
