// A damaged store is refused, never quietly opened with fewer readings, and a refused open
// leaves every file as it was. Each test damages a copy of one real store: 20 devices, 100
// readings each compacted into SST files and 50 more each still only in the WAL.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <date/date.h>
#include <rocksdb/db.h>

#include <chrono>

#include "storage/integrity.h"
#include "storage/key.h"
#include "storage/rocks_options.h"
#include "storage/store.h"
#include "tests/support/damaged_store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::storage {
namespace {

namespace fs = std::filesystem;
using test::BuiltStore;
using test::Snapshot;
using test::SnapshotDiff;
using test::StoredKeySet;

class DamagedStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pristine_dir_ = new test::TempDir("readingsd-pristine");
    built_ = new BuiltStore(test::BuildStore(pristine_dir_->File("db"), 20, 100, 50));
  }
  static void TearDownTestSuite() {
    delete built_;
    delete pristine_dir_;
  }

  // A fresh copy of the pristine store, to damage.
  std::string Copy() {
    std::string path = dir_.File("db");
    test::CopyDir(pristine_dir_->File("db"), path);
    return path;
  }

  // Store::Open refuses with `code`, saying `says`, and the directory is byte for byte as it was.
  void ExpectRefused(const std::string& path, Status::Code code, const std::string& says) {
    test::DirSnapshot before = Snapshot(path);
    std::unique_ptr<Store> store;
    Status s = Store::Open({.path = path}, &store);
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
    EXPECT_EQ(SnapshotDiff(before, Snapshot(path)), "");
  }

  static StoredKeySet Keys(const Store& store) {
    StoredKeySet keys;
    for (const auto& device : built_->devices) {
      auto it = store.NewIterator(device, "", "");
      for (it->SeekToFirst(); it->Valid(); it->Next()) keys.emplace(device, std::string(it->sort_key()));
      EXPECT_TRUE(it->status().ok()) << it->status().ToString();
    }
    return keys;
  }

  static StoredKeySet AllKeys() {
    StoredKeySet all = built_->flushed;
    all.insert(built_->in_wal.begin(), built_->in_wal.end());
    return all;
  }

  test::TempDir dir_{"readingsd-damaged"};
  static test::TempDir* pristine_dir_;
  static BuiltStore* built_;
};

test::TempDir* DamagedStoreTest::pristine_dir_ = nullptr;
BuiltStore* DamagedStoreTest::built_ = nullptr;

TEST_F(DamagedStoreTest, AnIntactStoreOpensWithEveryReadingAgainAndAgain) {
  std::string path = Copy();
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open({.path = path}, &store).ok());
    EXPECT_TRUE(Keys(*store) == AllKeys());
  }
}

TEST_F(DamagedStoreTest, ACutManifestIsRefused) {
  std::string path = Copy();
  std::string manifest = test::NewestFile(path, "MANIFEST-");
  test::CutFile(manifest, test::FileSize(manifest) / 2);
  ExpectRefused(path, Status::Code::kCorruption, "it was cut short");
}

TEST_F(DamagedStoreTest, AMissingCurrentIsRefusedOnEveryRetry) {
  std::string path = Copy();
  fs::remove(path + "/CURRENT");
  ExpectRefused(path, Status::Code::kCorruption, "CURRENT is missing");
  ExpectRefused(path, Status::Code::kCorruption, "CURRENT is missing");
}

TEST_F(DamagedStoreTest, ACurrentNamingAMissingManifestIsRefused) {
  std::string path = Copy();
  fs::remove(test::NewestFile(path, "MANIFEST-"));
  ExpectRefused(path, Status::Code::kCorruption, "which does not exist");
}

TEST_F(DamagedStoreTest, AWalCutInHalfIsRefused) {
  std::string path = Copy();
  std::string wal = test::NewestFile(path, ".log");
  test::CutFile(wal, test::FileSize(wal) / 2);
  ExpectRefused(path, Status::Code::kCorruption, "writes are gone");
}

TEST_F(DamagedStoreTest, AWalOverwrittenInTheMiddleIsRefused) {
  std::string path = Copy();
  std::string wal = test::NewestFile(path, ".log");
  test::OverwriteFile(wal, test::FileSize(wal) / 2, std::string(300, '\xa5'));
  ExpectRefused(path, Status::Code::kCorruption, "RocksDB cannot read it");
}

TEST_F(DamagedStoreTest, AWalZeroedInTheMiddleIsRefused) {
  std::string path = Copy();
  std::string wal = test::NewestFile(path, ".log");
  test::OverwriteFile(wal, test::FileSize(wal) / 2, std::string(300, '\0'));
  ExpectRefused(path, Status::Code::kCorruption, "RocksDB cannot read it");
}

// RocksDB's log reader skips zeroed whole records up to a block's end without a word; the
// sequence numbers after them give the loss away.
TEST_F(DamagedStoreTest, ZeroedWholeWalRecordsAreRefused) {
  std::string path = dir_.File("single");
  {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open({.path = path}, &store).ok());
    auto start = date::sys_days(date::year(2026) / 6 / 23);
    for (int i = 0; i < 30000; ++i) {  // one reading per record: small records, many blocks
      std::string sk;
      ASSERT_TRUE(NormalizeTimestamp(date::format("%FT%TZ", start + std::chrono::seconds(i)), &sk).ok());
      ASSERT_TRUE(store->Put({"dev00000", sk, {{"temperature", 20.0}}}).ok());
    }
  }
  ASSERT_GT(test::ZeroWalBlockTail(test::NewestFile(path, ".log")), 0u);
  ExpectRefused(path, Status::Code::kCorruption, "jumps from sequence");
}

TEST_F(DamagedStoreTest, AStoreWithoutItsHighWaterMarkIsRefused) {
  std::string path = Copy();
  fs::remove(path + "/HIGHWATER");
  ExpectRefused(path, Status::Code::kCorruption, "HIGHWATER is missing");
}

TEST_F(DamagedStoreTest, ANonEmptyDirectoryThatIsNotAStoreIsRefused) {
  std::string path = dir_.File("not-a-store");
  fs::create_directories(path + "/photos");
  std::ofstream(path + "/notes.txt") << "shopping list\n";
  ExpectRefused(path, Status::Code::kInvalidArgument, "no READINGSD marker");
}

// A crash cuts the WAL's last record short: that write never returned, so nothing
// acknowledged is lost, and the store opens with every reading before it.
TEST_F(DamagedStoreTest, ATornFinalWalRecordAfterACrashOpensWithEveryReadingBeforeIt) {
  std::string path = dir_.File("live"), crashed = dir_.File("crashed");
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open({.path = path}, &store).ok());
  std::string mark_at_open = Snapshot(path).at("HIGHWATER");
  StoredKeySet written;
  for (int i = 0; i < 40; ++i) {
    std::vector<Reading> batch;
    for (const auto& device : built_->devices) {
      std::string sk;
      ASSERT_TRUE(NormalizeTimestamp("2026-06-23T08:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ":00Z", &sk).ok());
      batch.push_back({device, sk, {{"temperature", 20.0 + i}}});
    }
    ASSERT_TRUE(store->Write(batch).ok());
    if (i < 39) for (const auto& r : batch) written.emplace(r.device_id, r.sort_key);
  }
  // The files as a crash leaves them, before the daemon's next mark.
  test::CopyDir(path, crashed);
  store.reset();
  std::ofstream(crashed + "/HIGHWATER", std::ios::binary | std::ios::trunc) << mark_at_open;
  std::string wal = test::NewestFile(crashed, ".log");
  test::CutFile(wal, test::FileSize(wal) - 3);

  ASSERT_TRUE(Store::Open({.path = crashed}, &store).ok());
  EXPECT_TRUE(Keys(*store) == written);
}

TEST_F(DamagedStoreTest, AFlippedBitInAnSstIsCountedWhereItIsReadAndFoundByVerify) {
  std::string path = Copy();
  std::string sst = test::NewestFile(path, ".sst");
  // In a data block of readings: data blocks come first, and "DEV#" keys before the registry's
  // and the rollups', which take more than half of this store's data (a record per reading).
  test::FlipBit(sst, test::FileSize(sst) / 10);

  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open({.path = path}, &store).ok());  // nothing at open reads that block
  EXPECT_EQ(store->Stats().corruption_errors, 0u);
  int damaged = 0;
  for (const auto& device : built_->devices) {
    auto it = store->NewIterator(device, "", "");
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
    }
    if (it->status().code() == Status::Code::kCorruption) ++damaged;
    it->status();  // asked again: still one error
  }
  ASSERT_GT(damaged, 0);
  StoreStats st = store->Stats();
  EXPECT_EQ(st.corruption_errors, static_cast<uint64_t>(damaged));
  EXPECT_NE(st.last_corruption.find(fs::path(sst).filename().string()), std::string::npos) << st.last_corruption;
  store.reset();

  VerifyReport report;
  std::size_t progress_calls = 0;
  ASSERT_TRUE(VerifyStore({.path = path}, [&](const VerifyProgress&) { ++progress_calls; }, &report).ok());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find(fs::path(sst).filename().string() + ": Corruption"), std::string::npos)
      << report.problems[0];
  EXPECT_EQ(progress_calls, report.files);

  test::CopyDir(pristine_dir_->File("db"), dir_.File("intact"));
  ASSERT_TRUE(VerifyStore({.path = dir_.File("intact")}, nullptr, &report).ok());
  EXPECT_TRUE(report.problems.empty());
  EXPECT_GT(report.files, 0u);
}

// A store of the readingsd before markers existed: RocksDB files and the format key inside.
TEST_F(DamagedStoreTest, AStoreOfAnEarlierReadingsdIsAdoptedWithEveryReading) {
  std::string path = dir_.File("earlier");
  {
    rocksdb::Options o = internal::MakeOptions({.path = path}, nullptr, /*writable=*/true);
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "META#format", "readingsd-keys-v1").ok());
    std::string sk;
    ASSERT_TRUE(NormalizeTimestamp("2026-06-23T08:00:00Z", &sk).ok());
    std::string value;
    EncodeAttributes({{"temperature", 21.5}}, &value);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), EncodeKey("dev00000", sk), value).ok());
  }
  ASSERT_FALSE(fs::exists(path + "/READINGSD"));
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open({.path = path}, &store).ok());
  EXPECT_TRUE(fs::exists(path + "/READINGSD"));
  EXPECT_TRUE(fs::exists(path + "/HIGHWATER"));
  Reading got;
  std::string sk;
  ASSERT_TRUE(NormalizeTimestamp("2026-06-23T08:00:00Z", &sk).ok());
  EXPECT_TRUE(store->Get("dev00000", sk, &got).ok());
  store.reset();
  ASSERT_TRUE(Store::Open({.path = path}, &store).ok());  // and from now on it is checked
}

TEST_F(DamagedStoreTest, RepairReportsWithoutChangingAnythingThenKeepsACopyAndRepairs) {
  std::string path = Copy();
  std::string manifest = test::NewestFile(path, "MANIFEST-");
  test::CutFile(manifest, test::FileSize(manifest) / 2);
  test::DirSnapshot damaged = Snapshot(path);

  RepairReport report;
  Status s = RepairStore({.path = path}, {}, &report);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(report.problems.empty());
  EXPECT_FALSE(report.repaired);
  // The SST files the cut MANIFEST forgot are still there: a repair finds every reading.
  EXPECT_EQ(report.readings, AllKeys().size());
  ASSERT_TRUE(report.mark_sequence.has_value());
  EXPECT_EQ(report.sequence, *report.mark_sequence);
  EXPECT_EQ(SnapshotDiff(damaged, Snapshot(path)), "");
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().filename().string().find("repair-preview"), std::string::npos) << entry.path();
  }

  ASSERT_TRUE(RepairStore({.path = path}, {.apply = true, .copy_to = dir_.File("kept")}, &report).ok());
  EXPECT_TRUE(report.repaired);
  EXPECT_EQ(report.copy, dir_.File("kept"));
  EXPECT_EQ(SnapshotDiff(damaged, Snapshot(dir_.File("kept"))), "");
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open({.path = path}, &store).ok());
  EXPECT_TRUE(Keys(*store) == AllKeys());
  store.reset();
  ASSERT_TRUE(RepairStore({.path = path}, {}, &report).ok());
  EXPECT_TRUE(report.problems.empty());  // nothing left to repair
}

}  // namespace
}  // namespace readingsd::storage
