// Store::DeleteReadings: what the device registry and the index entries say after partial and
// full deletes, overwrites of deleted readings, a reopen, and a process killed mid-delete.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "storage/number.h"
#include "tests/storage/delete_fixture.h"
#include "tests/storage/registry_checks.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::storage {
namespace {

using test::DeleteTestOptions;
using test::DeleteTestReading;

class DeleteTest : public ::testing::Test {
 protected:
  void SetUp() override { options_ = DeleteTestOptions(dir_.File("db")); }
  void Open() {
    Status s = Store::Open(options_, &store_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Write(const std::string& device, int from, int to) {
    std::vector<Reading> batch;
    for (int i = from; i < to; ++i) batch.push_back(DeleteTestReading(device, i, i));
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  static std::string At(int i) { return DeleteTestReading("x", i, 0).sort_key; }
  // Deletes `device`'s readings in [lower, upper) ("" for an open end), checking what it reports.
  uint64_t Delete(const std::string& device, std::string lower, std::string upper) {
    uint64_t deleted = 0, reported = 0;
    Status s = store_->DeleteReadings(device, lower, upper, [&](uint64_t n) { reported += n; }, &deleted);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(reported, deleted);
    return deleted;
  }
  // The device as the registry lists it, with its latest reading's temperature; readings 0 when
  // it is not listed.
  DeviceSummary Listed(const std::string& device, double* latest = nullptr) {
    std::vector<DeviceSummary> all;
    EXPECT_TRUE(store_->ListDevices(device, "", 10, &all).ok());
    for (const DeviceSummary& d : all) {
      if (d.device_id != device) continue;
      std::vector<Attribute> attributes;
      EXPECT_TRUE(DecodeAttributes(d.latest, &attributes).ok());
      if (latest && !attributes.empty()) *latest = NumberToDouble(std::get<Number>(attributes[0].value).text);
      return d;
    }
    return DeviceSummary{};
  }

  // Closes the store and checks that it agrees with itself: every device's record with what its
  // partition holds (count, first, last, latest), no record listed for a device without readings,
  // and the index entries exactly those IndexEntryKey gives the readings, each with its value.
  // Then opens it again (a reopen reads the records back from disk).
  void ExpectConsistent() {
    if (!store_) Open();
    std::map<std::string, DeviceSummary> truth;
    std::map<std::string, std::string> expected_entries;
    std::vector<AttributeView> attributes;
    std::string entry;
    auto it = store_->NewTableIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      DeviceSummary& d = truth[std::string(it->device_id())];
      if (d.readings++ == 0) d.first_sort_key = it->sort_key();
      d.last_sort_key = it->sort_key();
      d.latest = it->encoded_attributes();
      ASSERT_TRUE(ReadAttributes(it->encoded_attributes(), &attributes).ok());
      for (const IndexSpec& spec : options_.indexes) {
        if (IndexEntryKey(spec, it->device_id(), it->sort_key(), attributes, &entry)) {
          expected_entries[entry] = it->encoded_attributes();
        }
      }
    }
    ASSERT_TRUE(it->status().ok());
    it.reset();
    test::ExpectListingIs(*store_, truth);
    store_.reset();

    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::Options(), options_.path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::map<std::string, std::string> entries;
    std::unique_ptr<rocksdb::Iterator> idx(db->NewIterator(rocksdb::ReadOptions()));
    for (idx->Seek("IDX#"); idx->Valid() && idx->key().starts_with("IDX#"); idx->Next()) {
      entries[idx->key().ToString()] = idx->value().ToString();
    }
    ASSERT_TRUE(idx->status().ok());
    idx.reset();
    db.reset();
    EXPECT_EQ(entries.size(), expected_entries.size());
    EXPECT_TRUE(entries == expected_entries);
    Open();
  }

  ::readingsd::test::TempDir dir_{"readingsd-delete"};
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

TEST_F(DeleteTest, PartialDeletesKeepTheRegistryAndTheIndexesExact) {
  Open();
  Write("a", 0, 10);
  Write("b", 0, 2);
  double latest = 0;

  // The middle (two batches of 3): first and last stay.
  EXPECT_EQ(Delete("a", At(3), At(6)), 3u);
  DeviceSummary a = Listed("a", &latest);
  EXPECT_EQ(a.readings, 7u);
  EXPECT_EQ(a.first_sort_key, At(0));
  EXPECT_EQ(a.last_sort_key, At(9));
  ExpectConsistent();

  // From the start: first moves past the gap to the next stored reading.
  EXPECT_EQ(Delete("a", "", At(3)), 3u);
  a = Listed("a");
  EXPECT_EQ(a.readings, 4u);
  EXPECT_EQ(a.first_sort_key, At(6));
  // To the end: last and latest move back.
  EXPECT_EQ(Delete("a", At(8), ""), 2u);
  a = Listed("a", &latest);
  EXPECT_EQ(a.readings, 2u);
  EXPECT_EQ(a.last_sort_key, At(7));
  EXPECT_EQ(latest, 7);
  // A range with nothing in it, and a device that has none.
  EXPECT_EQ(Delete("a", At(0), At(6)), 0u);
  EXPECT_EQ(Delete("nobody", "", ""), 0u);
  ExpectConsistent();

  // Deleted readings written again count again and get their entries back; one between the last
  // left and the newest ever written (which the store remembers as a bound) becomes the latest.
  Write("a", 4, 5);
  Write("a", 8, 9);
  a = Listed("a", &latest);
  EXPECT_EQ(a.readings, 4u);
  EXPECT_EQ(a.last_sort_key, At(8));
  EXPECT_EQ(latest, 8);
  // An overwrite of a kept reading still counts nothing.
  ASSERT_TRUE(store_->Put(DeleteTestReading("a", 6, 60)).ok());
  EXPECT_EQ(Listed("a").readings, 4u);
  ExpectConsistent();

  // Everything: the device is no longer listed; the other one is untouched.
  EXPECT_EQ(Delete("a", "", ""), 4u);
  EXPECT_EQ(Listed("a").readings, 0u);
  EXPECT_EQ(Listed("b").readings, 2u);
  ExpectConsistent();
  EXPECT_EQ(Listed("a").readings, 0u);
  // Its next reading starts it again.
  Write("a", 20, 21);
  a = Listed("a");
  EXPECT_EQ(a.readings, 1u);
  EXPECT_EQ(a.first_sort_key, At(20));
  ExpectConsistent();
}

TEST_F(DeleteTest, ABeginsWithPrefixBoundsTheDelete) {
  Open();
  Write("a", 0, 7200);  // two hours
  // The bounds of begins_with 2026-06-23T08 as the API passes them (query::RangeOf).
  EXPECT_EQ(Delete("a", "2026-06-23T08", "2026-06-23T09"), 3600u);
  DeviceSummary a = Listed("a");
  EXPECT_EQ(a.readings, 3600u);
  EXPECT_EQ(a.first_sort_key, At(3600));
  ExpectConsistent();
}

TEST_F(DeleteTest, AProcessKilledMidDeleteLeavesAConsistentStoreWithAPrefixDeleted) {
  Open();
  Write("big", 0, 1000);
  Write("other", 0, 5);
  store_.reset();
  // 40 per batch, killed (SIGKILL) inside DeleteReadings once 5 batches are written.
  const std::string log = dir_.File("child.log");
  ::readingsd::test::Process child({.argv = {READINGSD_DELETE_CHILD_PATH, options_.path, "big", "40", "5"},
                                    .log_path = log});
  std::string said;
  for (int i = 0; i < 3000 && said.find("paused") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(log);
    said.assign(std::istreambuf_iterator<char>(in), {});
    ASSERT_TRUE(child.Running()) << said;
  }
  ASSERT_NE(said.find("paused"), std::string::npos) << said;
  child.Kill(SIGKILL);
  EXPECT_EQ(child.Wait(std::chrono::seconds(10)), 128 + SIGKILL);

  ExpectConsistent();
  DeviceSummary big = Listed("big");
  EXPECT_EQ(big.readings, 800u);
  EXPECT_EQ(big.first_sort_key, At(200));
  EXPECT_EQ(big.last_sort_key, At(999));
  EXPECT_EQ(Listed("other").readings, 5u);
  // The rest is deleted by asking again.
  EXPECT_EQ(Delete("big", "", ""), 800u);
  ExpectConsistent();
  EXPECT_EQ(Listed("big").readings, 0u);
}

}  // namespace
}  // namespace readingsd::storage
