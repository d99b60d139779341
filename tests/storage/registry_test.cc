// The device registry through the Store: what ListDevices says after writes, overwrites,
// reopens, retention, and on a store written before the registry existed.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <date/date.h>

#include <filesystem>

#include "storage/key.h"
#include "storage/number.h"
#include "storage/store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::storage {
namespace {

using std::chrono::hours;
using std::chrono::system_clock;

std::string Ts(system_clock::time_point t) { return date::format("%FT%TZ", date::floor<std::chrono::seconds>(t)); }

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { options_.path = dir_.File("db"); }
  void Open() {
    Status s = Store::Open(options_, &store_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  static Reading Make(std::string device, std::string ts, double temperature) {
    std::string sk;
    EXPECT_TRUE(NormalizeTimestamp(ts, &sk).ok()) << ts;
    return Reading{std::move(device), sk, {{"temperature", temperature}}};
  }
  void Write(std::vector<Reading> readings) { ASSERT_TRUE(store_->Write(readings).ok()); }

  std::vector<DeviceSummary> List(std::string_view prefix = "", std::string_view after = "", std::size_t limit = 100) {
    std::vector<DeviceSummary> out;
    Status s = store_->ListDevices(prefix, after, limit, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  DeviceSummary Only(std::string_view device) {
    auto all = List(device);
    EXPECT_EQ(all.size(), 1u) << device;
    return all.empty() || all[0].device_id != device ? DeviceSummary{} : all[0];
  }
  static double Latest(const DeviceSummary& d) {
    std::vector<Attribute> attributes;
    EXPECT_TRUE(DecodeAttributes(d.latest, &attributes).ok());
    return attributes.empty() ? -1 : NumberToDouble(std::get<Number>(attributes[0].value).text);
  }
  // What the partition holds: the truth the registry must agree with.
  std::size_t Stored(std::string_view device) {
    std::size_t n = 0;
    auto it = store_->NewIterator(device, "", "");
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    return n;
  }

  test::TempDir dir_{"readingsd-registry"};
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

TEST_F(RegistryTest, CountsEachKeyOnceAndKeepsTheNewestAsLatest) {
  Open();
  Write({Make("a1", "2026-06-23T08:00:00Z", 1), Make("a1", "2026-06-23T08:00:10Z", 2),
         Make("b", "2026-06-23T09:00:00Z", 5)});
  DeviceSummary a1 = Only("a1");
  EXPECT_EQ(a1.readings, 2u);
  EXPECT_EQ(a1.first_sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(a1.last_sort_key, "2026-06-23T08:00:10.000000000Z");
  EXPECT_EQ(Latest(a1), 2);

  // Overwrites: of an older reading (nothing changes), of the latest (it changes); a key twice in
  // one batch; an older new reading moves first; a redelivered batch counts nothing.
  Write({Make("a1", "2026-06-23T08:00:00Z", 10)});
  EXPECT_EQ(Only("a1").readings, 2u);
  EXPECT_EQ(Latest(Only("a1")), 2);
  Write({Make("a1", "2026-06-23T08:00:10Z", 20)});
  EXPECT_EQ(Only("a1").readings, 2u);
  EXPECT_EQ(Latest(Only("a1")), 20);
  Write({Make("a1", "2026-06-23T08:00:20Z", 30), Make("a1", "2026-06-23T08:00:20Z", 31),
         Make("a1", "2026-06-23T07:00:00Z", 0)});
  a1 = Only("a1");
  EXPECT_EQ(a1.readings, 4u);
  EXPECT_EQ(a1.first_sort_key, "2026-06-23T07:00:00.000000000Z");
  EXPECT_EQ(a1.last_sort_key, "2026-06-23T08:00:20.000000000Z");
  EXPECT_EQ(Latest(a1), 31);
  Write({Make("a1", "2026-06-23T08:00:20Z", 31), Make("a1", "2026-06-23T07:00:00Z", 0)});
  EXPECT_EQ(Only("a1").readings, Stored("a1"));
  EXPECT_EQ(Only("b").readings, 1u);

  store_.reset();  // and after a reopen, whose first write of a device reads its record
  Open();
  Write({Make("a1", "2026-06-23T08:00:20Z", 32), Make("a1", "2026-06-23T08:00:30Z", 40)});
  a1 = Only("a1");
  EXPECT_EQ(a1.readings, 5u);
  EXPECT_EQ(a1.readings, Stored("a1"));
  EXPECT_EQ(Latest(a1), 40);
}

TEST_F(RegistryTest, ListsInIdOrderByPrefixAndPage) {
  Open();
  for (const char* device : {"a10", "a1", "b", "a2", "a1-x"}) Write({Make(device, "2026-06-23T08:00:00Z", 1)});
  auto ids = [](const std::vector<DeviceSummary>& devices) {
    std::vector<std::string> out;
    for (const auto& d : devices) out.push_back(d.device_id);
    return out;
  };
  EXPECT_EQ(ids(List()), (std::vector<std::string>{"a1", "a1-x", "a10", "a2", "b"}));
  EXPECT_EQ(ids(List("a1")), (std::vector<std::string>{"a1", "a1-x", "a10"}));
  EXPECT_EQ(ids(List("", "", 2)), (std::vector<std::string>{"a1", "a1-x"}));
  EXPECT_EQ(ids(List("", "a1-x", 2)), (std::vector<std::string>{"a10", "a2"}));
  EXPECT_EQ(ids(List("a1", "a1")), (std::vector<std::string>{"a1-x", "a10"}));
  EXPECT_EQ(ids(List("a", "a0")), (std::vector<std::string>{"a1", "a1-x", "a10", "a2"}));
  EXPECT_TRUE(List("c").empty());
  EXPECT_TRUE(List("", "b").empty());
}

// A store as readingsd wrote it before the registry: its readings, no REG# key, no
// META#registry. The next open builds the registry from the readings.
TEST_F(RegistryTest, AStoreWrittenBeforeTheRegistryGetsOneAtOpen) {
  Open();
  std::vector<Reading> readings;
  for (int d = 0; d < 30; ++d) {
    for (int s = 0; s < 10; ++s) {
      readings.push_back(Make("d" + std::to_string(d), "2026-06-23T08:00:0" + std::to_string(s) + "Z", d * 100 + s));
    }
  }
  Write(readings);
  store_.reset();
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), options_.path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->DeleteRange(rocksdb::WriteOptions(), db->DefaultColumnFamily(), "REG#", "REG$").ok());
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), "META#registry").ok());
    ASSERT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "REG#d7", &v).IsNotFound());
  }
  Open();
  auto devices = List();
  ASSERT_EQ(devices.size(), 30u);
  DeviceSummary d7 = Only("d7");
  EXPECT_EQ(d7.readings, 10u);
  EXPECT_EQ(d7.first_sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(d7.last_sort_key, "2026-06-23T08:00:09.000000000Z");
  EXPECT_EQ(Latest(d7), 709);
  // And it is kept from then on.
  Write({Make("d7", "2026-06-23T08:00:05Z", 0), Make("d7", "2026-06-23T08:00:10Z", 710)});
  EXPECT_EQ(Only("d7").readings, 11u);
  EXPECT_EQ(Latest(Only("d7")), 710);
}

// Under retention a record counts the readings at or after the cutoff of the last sweep (at
// open, hourly, before CompactAll), and compaction drops only what no record counts any more.
TEST_F(RegistryTest, RetentionSweepsCountsAndFirstReadingTs) {
  const auto now = system_clock::now();
  Open();  // no retention yet: everything counts
  Write({Make("a1", Ts(now - hours(72)), 1), Make("a1", Ts(now - hours(48)), 2), Make("a1", Ts(now - hours(1)), 3),
         Make("a1", Ts(now), 4), Make("old", Ts(now - hours(50)), 9)});
  EXPECT_EQ(Only("a1").readings, 4u);
  EXPECT_EQ(List().size(), 2u);
  store_.reset();

  options_.retention = hours(24);
  Open();  // sweeps
  DeviceSummary a1 = Only("a1");
  EXPECT_EQ(a1.readings, 2u);
  EXPECT_EQ(a1.first_sort_key, Make("a1", Ts(now - hours(1)), 0).sort_key);
  EXPECT_EQ(Latest(a1), 4);
  EXPECT_EQ(List().size(), 1u) << "a device with no reading left is not listed";
  EXPECT_EQ(Stored("a1"), 4u) << "not compacted yet";

  // Past the horizon: an overwrite of a reading retention will drop, and an old new one, count
  // nothing; a new reading counts.
  Write({Make("a1", Ts(now - hours(48)), 20), Make("a1", Ts(now - hours(30)), 5), Make("old", Ts(now - hours(49)), 8),
         Make("a1", Ts(now - hours(2)), 6)});
  a1 = Only("a1");
  EXPECT_EQ(a1.readings, 3u);
  EXPECT_EQ(a1.first_sort_key, Make("a1", Ts(now - hours(2)), 0).sort_key);
  EXPECT_EQ(List().size(), 1u);

  ASSERT_TRUE(store_->CompactAll().ok());
  EXPECT_EQ(Stored("a1"), 3u);
  EXPECT_EQ(Only("a1").readings, 3u);
  EXPECT_EQ(Stored("old"), 0u);
  store_.reset();
  Open();
  EXPECT_EQ(Only("a1").readings, 3u);
  // A device whose readings all expired starts over with its next one.
  Write({Make("old", Ts(now), 7)});
  DeviceSummary old = Only("old");
  EXPECT_EQ(old.readings, 1u);
  EXPECT_EQ(old.first_sort_key, old.last_sort_key);
}

}  // namespace
}  // namespace readingsd::storage
