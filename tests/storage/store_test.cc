#include "storage/store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <date/date.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <filesystem>
#include <thread>

#include "storage/key.h"
#include "tests/support/mount.h"

namespace readingsd::storage {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/readingsd-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.path = dir_ + "/db";
  }
  void TearDown() override {
    store_.reset();
    mount_.reset();  // unmounts: nothing of a test outlives it
    fs::remove_all(dir_);
  }
  // A tmpfs on `dir`; skips the test when this process may not mount (not root). CI runs as root.
  void MountTmpfs(const std::string& dir, const std::string& size, bool read_only) {
    std::string error;
    mount_ = test::Mount::Tmpfs(dir, size, read_only, &error);
    if (!mount_ && !test::Mount::Permitted(error)) {
      GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to mount a tmpfs: " << error;
    }
    ASSERT_TRUE(mount_) << error;
  }
  void Open() { ASSERT_TRUE(Store::Open(options_, &store_).ok()); }

  static Reading Make(std::string device, std::string ts, double temperature) {
    std::string sk;
    EXPECT_TRUE(NormalizeTimestamp(ts, &sk).ok());
    return Reading{std::move(device), sk, {{"temperature", temperature}}};
  }

  std::vector<std::string> SortKeys(std::string_view device, std::string_view lo = "", std::string_view hi = "") {
    std::vector<std::string> out;
    auto it = store_->NewIterator(device, lo, hi);
    for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->sort_key());
    EXPECT_TRUE(it->status().ok());
    return out;
  }

  std::string dir_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<test::Mount> mount_;
};

TEST_F(StoreTest, PutGetOverwriteIsIdempotent) {
  Open();
  Reading r = Make("a1", "2026-06-23T08:00:00Z", 21.5);
  ASSERT_TRUE(store_->Put(r).ok());
  r.attributes[0].value = 22.0;
  ASSERT_TRUE(store_->Put(r).ok());  // same PK+SK: overwrite, as PutItem
  Reading got;
  ASSERT_TRUE(store_->Get("a1", r.sort_key, &got).ok());
  EXPECT_EQ(std::get<Number>(got.attributes.at(0).value), Number(22));
  EXPECT_EQ(SortKeys("a1").size(), 1u);
  EXPECT_TRUE(store_->Get("a1", Make("a1", "2026-06-23T08:00:01Z", 0).sort_key, &got).IsNotFound());
}

TEST_F(StoreTest, BatchIsAllOrNothing) {
  Open();
  std::vector<Reading> batch = {Make("a1", "2026-06-23T08:00:00Z", 1), Make("a1", "2026-06-23T08:00:01Z", 2)};
  batch.push_back(Reading{"bad/id", batch[0].sort_key, {}});
  EXPECT_TRUE(store_->Write(batch).IsInvalidArgument());
  EXPECT_TRUE(SortKeys("a1").empty());
  batch.pop_back();
  batch.push_back(Reading{"a1", "2026-06-23T08:00:02Z", {}});  // not normalised
  EXPECT_TRUE(store_->Write(batch).IsInvalidArgument());
  batch.pop_back();
  ASSERT_TRUE(store_->Write(batch).ok());
  EXPECT_EQ(SortKeys("a1").size(), 2u);
}

// The store writes a batch in key order: a batch out of it, a key twice among other keys,
// keeps each key's last write, and the registry counts each key once with the newest as latest.
TEST_F(StoreTest, ABatchOutOfKeyOrderKeepsEachKeysLastWrite) {
  Open();
  ASSERT_TRUE(store_->Write(std::vector<Reading>{Make("b", "2026-06-23T08:00:05Z", 1), Make("a", "2026-06-23T08:00:09Z", 2),
                                                 Make("b", "2026-06-23T08:00:01Z", 3), Make("a", "2026-06-23T08:00:03Z", 4),
                                                 Make("b", "2026-06-23T08:00:05Z", 5), Make("a", "2026-06-23T08:00:09Z", 6),
                                                 Make("b", "2026-06-23T08:00:05Z", 7)})
                  .ok());
  Reading got;
  ASSERT_TRUE(store_->Get("b", Make("b", "2026-06-23T08:00:05Z", 0).sort_key, &got).ok());
  EXPECT_EQ(std::get<Number>(got.attributes.at(0).value), Number(7));
  ASSERT_TRUE(store_->Get("a", Make("a", "2026-06-23T08:00:09Z", 0).sort_key, &got).ok());
  EXPECT_EQ(std::get<Number>(got.attributes.at(0).value), Number(6));
  std::vector<DeviceSummary> devices;
  ASSERT_TRUE(store_->ListDevices("", "", 10, &devices).ok());
  ASSERT_EQ(devices.size(), 2u);
  std::vector<Attribute> latest;
  for (const DeviceSummary& d : devices) {
    EXPECT_EQ(d.readings, 2u) << d.device_id;
    ASSERT_TRUE(DecodeAttributes(d.latest, &latest).ok());
    EXPECT_EQ(std::get<Number>(latest.at(0).value), Number(d.device_id == "a" ? 6 : 7)) << d.device_id;
  }
}

TEST_F(StoreTest, IteratorStaysInsideItsPartitionAndBounds) {
  Open();
  std::vector<Reading> batch;
  for (const char* device : {"a", "a1", "a10", "a1-x", "a2"}) {
    for (int s = 0; s < 5; ++s) {
      batch.push_back(Make(device, "2026-06-23T08:00:0" + std::to_string(s) + "Z", s));
    }
  }
  ASSERT_TRUE(store_->Write(batch).ok());
  ASSERT_TRUE(store_->CompactAll().ok());  // read from SST files and bloom filters too
  auto keys = SortKeys("a1");
  ASSERT_EQ(keys.size(), 5u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_TRUE(SortKeys("a11").empty());

  auto window = SortKeys("a1", keys[1], keys[3]);
  EXPECT_EQ(window, (std::vector<std::string>{keys[1], keys[2]}));

  auto it = store_->NewIterator("a1", "", "");
  it->SeekToLast();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->sort_key(), keys[4]);
  it->SeekForPrev(keys[2]);
  EXPECT_EQ(it->sort_key(), keys[2]);
  it->Prev();
  EXPECT_EQ(it->sort_key(), keys[1]);
  it->SeekToFirst();
  it->Prev();
  EXPECT_FALSE(it->Valid());  // never walks into partition "a"
}

TEST_F(StoreTest, ReopenKeepsDataAndSecondOpenIsBusy) {
  Open();
  ASSERT_TRUE(store_->Put(Make("a1", "2026-06-23T08:00:00Z", 1)).ok());
  std::unique_ptr<Store> second;
  Status s = Store::Open(options_, &second);
  EXPECT_EQ(s.code(), Status::Code::kBusy) << s.ToString();
  EXPECT_NE(s.message().find("in use"), std::string::npos);
  store_.reset();
  Open();
  EXPECT_EQ(SortKeys("a1").size(), 1u);
}

TEST_F(StoreTest, ReadOnlyOpensBesideAWriterAndCheckpoints) {
  Open();
  ASSERT_TRUE(store_->Put(Make("a1", "2026-06-23T08:00:00Z", 1)).ok());  // in the WAL only
  StoreOptions ro = options_;
  ro.read_only = true;
  std::unique_ptr<Store> reader;
  ASSERT_TRUE(Store::Open(ro, &reader).ok());
  Reading got;
  EXPECT_TRUE(reader->Get("a1", Make("a1", "2026-06-23T08:00:00Z", 1).sort_key, &got).ok());
  EXPECT_FALSE(reader->Put(Make("a1", "2026-06-23T08:00:01Z", 2)).ok());
  ASSERT_TRUE(reader->Checkpoint(dir_ + "/backup").ok());
  reader.reset();
  ro.path = dir_ + "/backup";
  ro.read_only = false;
  ASSERT_TRUE(Store::Open(ro, &reader).ok());
  EXPECT_TRUE(reader->Get("a1", Make("a1", "2026-06-23T08:00:00Z", 1).sort_key, &got).ok());
  ro.path = dir_ + "/missing";
  ro.read_only = true;
  EXPECT_FALSE(Store::Open(ro, &reader).ok());
}

TEST_F(StoreTest, RefusesADirectoryThatIsNotAStore) {
  fs::create_directories(options_.path);
  {
    std::FILE* f = std::fopen((options_.path + "/CURRENT").c_str(), "w");
    std::fputs("garbage\n", f);
    std::fclose(f);
  }
  Status s = Store::Open(options_, &store_);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(options_.path), std::string::npos) << s.ToString();
}

TEST_F(StoreTest, ReadOnlyDirectoryIsAClearError) {
  // A read-only mount, because permissions do not bind root (and CI runs as root).
  ASSERT_NO_FATAL_FAILURE(MountTmpfs(options_.path, "1m", /*read_only=*/true));
  if (IsSkipped()) return;
  Status s = Store::Open(options_, &store_);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_NE(s.message().find(options_.path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.ToString();
}

TEST_F(StoreTest, AStoreOnAReadOnlyMountIsAClearErrorYetOpensReadOnlyAndStaysIntact) {
  Open();
  Reading r = Make("a1", "2026-06-23T08:00:00Z", 1);
  ASSERT_TRUE(store_->Put(r).ok());
  store_.reset();
  std::string error;
  mount_ = test::Mount::ReadOnlyBind(options_.path, dir_ + "/ro", &error);
  if (!mount_ && !test::Mount::Permitted(error)) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to mount: " << error;
  ASSERT_TRUE(mount_) << error;

  StoreOptions ro = options_;
  ro.path = dir_ + "/ro";
  Status s = Store::Open(ro, &store_);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.ToString();
  ro.read_only = true;  // backup and inspection still work
  ASSERT_TRUE(Store::Open(ro, &store_).ok());
  Reading got;
  EXPECT_TRUE(store_->Get("a1", r.sort_key, &got).ok());
  store_.reset();
  mount_.reset();
  Open();
  EXPECT_TRUE(store_->Get("a1", r.sort_key, &got).ok());
}

TEST_F(StoreTest, FullDiskIsAClearErrorAndWritesResumeOnceSpaceReturns) {
  ASSERT_NO_FATAL_FAILURE(MountTmpfs(dir_ + "/disk", "4m", /*read_only=*/false));
  if (IsSkipped()) return;
  options_.path = dir_ + "/disk/db";
  Open();
  // The WAL holds the attributes uncompressed: 4 MiB fill after ~2,000 of these readings.
  const std::string pad(2000, 'x');
  int next = 0;
  auto batch = [&] {
    std::vector<Reading> readings;
    for (int d = 0; d < 10; ++d, ++next) {
      auto t = date::sys_days(date::year(2026) / 6 / 23) + std::chrono::milliseconds(next);
      Reading r = Make("d" + std::to_string(d), date::format("%FT%TZ", t), next);
      r.attributes.push_back({"pad", pad});
      readings.push_back(std::move(r));
    }
    return readings;
  };
  std::vector<Reading> written;  // every reading whose Write returned OK
  Status s;
  for (int i = 0; i < 10000; ++i) {
    auto readings = batch();
    if (!(s = store_->Write(readings)).ok()) break;
    written.insert(written.end(), readings.begin(), readings.end());
  }
  ASSERT_FALSE(s.ok()) << "a 4 MiB disk never filled";
  ASSERT_GT(written.size(), 100u);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("disk is full"), std::string::npos) << s.ToString();

  // While the disk stays full, writes keep failing and reads work. The first write after the
  // failure already tries to resume (and fails): the once-a-second limit counts from the last try.
  EXPECT_FALSE(store_->Write(batch()).ok());
  EXPECT_FALSE(store_->Write(batch()).ok());
  Reading got;
  EXPECT_TRUE(store_->Get(written.back().device_id, written.back().sort_key, &got).ok());

  std::string error;
  ASSERT_TRUE(mount_->Resize("64m", &error)) << error;
  auto readings = batch();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(s = store_->Write(readings)).ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(s.ok()) << "no recovery 10 s after the disk grew: " << s.ToString();
  written.insert(written.end(), readings.begin(), readings.end());
  for (int i = 0; i < 100; ++i) {  // and it keeps working
    readings = batch();
    ASSERT_TRUE((s = store_->Write(readings)).ok()) << s.ToString();
    written.insert(written.end(), readings.begin(), readings.end());
  }

  auto all_readable = [&] {
    std::size_t missing = 0;
    for (const auto& r : written) missing += store_->Get(r.device_id, r.sort_key, &got).ok() ? 0 : 1;
    return missing;
  };
  // The device registry counts what the partitions hold: the failed writes changed no record.
  auto registry_agrees = [&] {
    std::vector<DeviceSummary> devices;
    EXPECT_TRUE(store_->ListDevices("", "", 100, &devices).ok());
    EXPECT_EQ(devices.size(), 10u);
    for (const DeviceSummary& d : devices) {
      uint64_t stored = 0;
      auto it = store_->NewIterator(d.device_id, "", "");
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++stored;
      EXPECT_EQ(d.readings, stored) << d.device_id;
    }
  };
  EXPECT_EQ(all_readable(), 0u) << "of " << written.size();
  registry_agrees();
  store_.reset();
  Open();
  EXPECT_EQ(all_readable(), 0u) << "after a reopen, of " << written.size();
  registry_agrees();
}

TEST_F(StoreTest, RetentionDropsOldReadingsAtCompaction) {
  options_.retention = std::chrono::hours(24 * 30);
  Open();
  auto now = std::chrono::system_clock::now();
  auto ts = [](std::chrono::system_clock::time_point t) {
    return date::format("%FT%TZ", date::floor<std::chrono::seconds>(t));
  };
  ASSERT_TRUE(store_->Put(Make("a1", ts(now - std::chrono::hours(24 * 31)), 1)).ok());
  ASSERT_TRUE(store_->Put(Make("a1", ts(now - std::chrono::hours(24 * 29)), 2)).ok());
  ASSERT_TRUE(store_->Put(Make("a1", ts(now), 3)).ok());
  EXPECT_EQ(SortKeys("a1").size(), 3u);  // retention acts at compaction, not at read
  ASSERT_TRUE(store_->CompactAll().ok());
  auto keys = SortKeys("a1");
  ASSERT_EQ(keys.size(), 2u);
  Reading got;
  ASSERT_TRUE(store_->Get("a1", keys[0], &got).ok());
  EXPECT_EQ(std::get<Number>(got.attributes.at(0).value), Number(2));
}

TEST_F(StoreTest, CheckpointIsAnIdenticalStore) {
  Open();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(store_->Put(Make("d" + std::to_string(i % 7), "2026-06-23T08:00:00." + std::to_string(100 + i) + "Z", i)).ok());
  }
  ASSERT_TRUE(store_->Checkpoint(dir_ + "/backup").ok());
  std::unique_ptr<Store> copy;
  StoreOptions copy_options = options_;
  copy_options.path = dir_ + "/backup";
  ASSERT_TRUE(Store::Open(copy_options, &copy).ok());
  for (int d = 0; d < 7; ++d) {
    std::string device = "d" + std::to_string(d);
    auto a = store_->NewIterator(device, "", ""), b = copy->NewIterator(device, "", "");
    for (a->SeekToFirst(), b->SeekToFirst(); a->Valid(); a->Next(), b->Next()) {
      ASSERT_TRUE(b->Valid());
      EXPECT_EQ(a->sort_key(), b->sort_key());
      EXPECT_EQ(a->encoded_attributes(), b->encoded_attributes());
    }
    EXPECT_FALSE(b->Valid());
  }
  EXPECT_GT(store_->Stats().estimated_keys, 0u);
}

// Index and filter blocks live in the block cache, bounded by its size. A whole filter of a big
// file is larger than one cache shard (512 KiB here), so unpartitioned it was evicted right after
// each use and read again by every query; partitioned, a repeated window is served from the
// cache alone. (Compacted files have no filter now, see below; their index is partitioned too.)
TEST_F(StoreTest, RepeatedWindowReadsAreServedFromTheBlockCache) {
  options_.block_cache_bytes = 4u << 20;
  Open();
  constexpr int kDevices = 50, kPerDevice = 12'000;  // 600 k keys: a ~750 KB bloom filter
  std::vector<Reading> batch;
  for (int t = 0; t < kPerDevice; ++t) {
    for (int d = 0; d < kDevices; ++d) {
      const auto at = date::sys_seconds{date::sys_days{date::year{2026} / 6 / 23}} + std::chrono::seconds{t};
      batch.push_back(Make("d" + std::to_string(d), date::format("%FT%TZ", at), t));
    }
    if (batch.size() >= 10'000) {
      ASSERT_TRUE(store_->Write(batch).ok());
      batch.clear();
    }
  }
  ASSERT_TRUE(store_->CompactAll().ok());
  auto window = [&] {
    return SortKeys("d7", "2026-06-23T01:00:00.000000000Z", "2026-06-23T01:10:00.000000000Z").size();
  };
  ASSERT_EQ(window(), 600u);
  ASSERT_EQ(window(), 600u);
  const uint64_t warm = store_->Stats().block_cache_misses;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(window(), 600u);
  const StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.block_cache_misses, warm);
  EXPECT_EQ(stats.block_cache_capacity_bytes, options_.block_cache_bytes);
  EXPECT_GT(stats.block_cache_bytes, 0u);
  EXPECT_LE(stats.block_cache_bytes, stats.block_cache_capacity_bytes);
}

// The last level holds most readings and carries no filter (optimize_filters_for_hits): there it
// cost 1.25 bytes per reading on disk and in the block cache without sparing a read. Point reads
// of present and absent readings still answer right.
TEST_F(StoreTest, CompactedFilesCarryNoFilterAndPointReadsStillWork) {
  Open();
  std::vector<Reading> batch;
  for (int t = 0; t < 20'000; ++t) {
    const auto at = date::sys_seconds{date::sys_days{date::year{2026} / 6 / 23}} + std::chrono::seconds{t};
    batch.push_back(Make("d" + std::to_string(t % 20), date::format("%FT%TZ", at), t));
  }
  ASSERT_TRUE(store_->Write(batch).ok());
  ASSERT_TRUE(store_->CompactAll().ok());

  int files = 0;
  for (const auto& entry : fs::directory_iterator(options_.path)) {
    if (entry.path().extension() != ".sst") continue;
    rocksdb::SstFileReader reader{rocksdb::Options()};
    ASSERT_TRUE(reader.Open(entry.path().string()).ok());
    const auto properties = reader.GetTableProperties();
    EXPECT_GT(properties->num_entries, 0u);
    EXPECT_EQ(properties->filter_size, 0u) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 0);

  Reading got;
  EXPECT_TRUE(store_->Get(batch[4321].device_id, batch[4321].sort_key, &got).ok());
  EXPECT_EQ(got.sort_key, batch[4321].sort_key);
  EXPECT_TRUE(store_->Get(batch[4321].device_id, batch[4322].sort_key, &got).IsNotFound());
  EXPECT_TRUE(store_->Get("d999", batch[0].sort_key, &got).IsNotFound());
}


// Index entries as stored: "device sortKey sortValue" per entry of one index partition, in order.
class IndexedStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    options_.indexes = {IndexSpec{.name = "hot_by_hour", .sort_attribute = "temperature"},
                        IndexSpec{.name = "by_status", .partition = IndexPartition::kAttribute,
                                  .partition_attribute = "status", .sort = IndexSort::kReadingTs}};
  }
  std::vector<std::string> Entries(std::string_view index, std::string_view partition) {
    std::vector<std::string> out;
    auto it = store_->NewIndexIterator(index, partition, "", "");
    const std::string prefix = IndexPartitionPrefix(index, partition);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string whole = prefix + std::string(it->sort_key());  // the key views into it
      IndexKey key;
      EXPECT_TRUE(DecodeIndexKey(whole, &key));
      out.push_back(std::string(key.device_id) + " " + std::string(key.sort_key.substr(11, 8)) + " " + key.sort.text);
    }
    EXPECT_TRUE(it->status().ok());
    return out;
  }
  static Reading With(Reading r, std::string status) {
    r.attributes.push_back({"status", std::move(status)});
    return r;
  }
};

TEST_F(IndexedStoreTest, EntriesAreWrittenWithTheReadingInNumericOrderAndSparse) {
  Open();
  std::vector<Reading> batch = {Make("a", "2026-06-23T08:00:00Z", 31.5), Make("b", "2026-06-23T08:01:00Z", -4),
                                Make("c", "2026-06-23T08:02:00Z", 100), Make("d", "2026-06-23T09:00:00Z", 7),
                                With(Make("e", "2026-06-23T08:03:00Z", 5), "alarm")};
  batch.push_back(Reading{"f", batch[0].sort_key, {{"humidity", Number(40)}}});  // no temperature: not indexed
  batch.push_back(Reading{"g", batch[0].sort_key, {{"temperature", std::string("hot")}}});  // not a number
  ASSERT_TRUE(store_->Write(batch).ok());
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08"),
            (std::vector<std::string>{"b 08:01:00 -4", "e 08:03:00 5", "a 08:00:00 31.5", "c 08:02:00 100"}));
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T09"), (std::vector<std::string>{"d 09:00:00 7"}));
  EXPECT_EQ(Entries("by_status", "alarm"), (std::vector<std::string>{"e 08:03:00 2026-06-23T08:03:00.000000000Z"}));
  // The entry carries the reading's value.
  auto it = store_->NewIndexIterator("by_status", "alarm", "", "");
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  std::vector<Attribute> attributes;
  ASSERT_TRUE(DecodeAttributes(it->encoded_attributes(), &attributes).ok());
  EXPECT_EQ(attributes.size(), 2u);
}

TEST_F(IndexedStoreTest, AnOverwriteWithOtherValuesLeavesNoStaleEntry) {
  Open();
  ASSERT_TRUE(store_->Put(With(Make("a", "2026-06-23T08:00:00Z", 20), "alarm")).ok());
  ASSERT_TRUE(store_->Put(Make("a", "2026-06-23T08:05:00Z", 21)).ok());
  // The older reading is overwritten (not the device's newest: its prior is read).
  ASSERT_TRUE(store_->Put(With(Make("a", "2026-06-23T08:00:00Z", 35), "ok")).ok());
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08"), (std::vector<std::string>{"a 08:05:00 21", "a 08:00:00 35"}));
  EXPECT_TRUE(Entries("by_status", "alarm").empty());
  EXPECT_EQ(Entries("by_status", "ok").size(), 1u);
  // Overwritten without the attribute: the entry goes, and with the same value it stays once.
  ASSERT_TRUE(store_->Put(Reading{"a", Make("a", "2026-06-23T08:00:00Z", 0).sort_key, {}}).ok());
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08"), (std::vector<std::string>{"a 08:05:00 21"}));
  ASSERT_TRUE(store_->Put(Make("a", "2026-06-23T08:05:00Z", 21)).ok());
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08"), (std::vector<std::string>{"a 08:05:00 21"}));
  // A key written twice in one batch keeps only its last write's entry; and after a reopen
  // (nothing in memory) an overwrite still finds its prior.
  ASSERT_TRUE(store_->Write(std::vector<Reading>{Make("b", "2026-06-23T08:10:00Z", 1), Make("b", "2026-06-23T08:10:00Z", 2)}).ok());
  store_.reset();
  Open();
  ASSERT_TRUE(store_->Put(Make("a", "2026-06-23T08:05:00Z", 22)).ok());
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08"), (std::vector<std::string>{"b 08:10:00 2", "a 08:05:00 22"}));
}

TEST_F(IndexedStoreTest, ShardsSpreadOnePartitionValue) {
  options_.indexes[0].shards = 4;
  Open();
  std::vector<Reading> batch;
  for (int i = 0; i < 40; ++i) batch.push_back(Make("d" + std::to_string(i), "2026-06-23T08:00:00Z", i));
  ASSERT_TRUE(store_->Write(batch).ok());
  std::size_t total = 0;
  for (int shard = 0; shard < 4; ++shard) {
    const std::size_t n = Entries("hot_by_hour", "2026-06-23T08#" + std::to_string(shard)).size();
    EXPECT_GT(n, 0u) << shard;
    total += n;
  }
  EXPECT_EQ(total, 40u);
  EXPECT_TRUE(Entries("hot_by_hour", "2026-06-23T08").empty());
}

TEST_F(IndexedStoreTest, RetentionDropsEntriesWithTheirReadings) {
  options_.retention = std::chrono::hours(24 * 30);
  Open();
  const auto now = std::chrono::system_clock::now();
  const std::string old_ts = date::format("%FT%TZ", date::floor<std::chrono::seconds>(now - std::chrono::hours(24 * 31)));
  const std::string new_ts = date::format("%FT%TZ", date::floor<std::chrono::seconds>(now));
  ASSERT_TRUE(store_->Put(With(Make("a", old_ts, 1), "alarm")).ok());
  ASSERT_TRUE(store_->Put(With(Make("a", new_ts, 2), "alarm")).ok());
  EXPECT_EQ(Entries("by_status", "alarm").size(), 2u);
  ASSERT_TRUE(store_->CompactAll().ok());
  ASSERT_EQ(Entries("by_status", "alarm").size(), 1u);
  EXPECT_EQ(Entries("by_status", "alarm")[0].substr(0, 2), "a ");
  EXPECT_EQ(Entries("hot_by_hour", new_ts.substr(0, 13)).size(), 1u);
  EXPECT_TRUE(Entries("hot_by_hour", old_ts.substr(0, 13)).empty());
}


// Waits (30 s at most) until every index is built; false if one is not by then.
bool AllBuilt(const Store& store) {
  for (int i = 0; i < 3000; ++i) {
    const auto indexes = store.Indexes();
    if (std::all_of(indexes.begin(), indexes.end(), [](const IndexStatus& s) { return s.active; })) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(IndexedStoreTest, AnIndexAddedToAPopulatedStoreIsBackfilledAcrossARestartAndDroppedWhenRemoved) {
  const std::vector<IndexSpec> declared = options_.indexes;
  options_.indexes.clear();
  Open();
  std::vector<Reading> batch;
  for (int i = 0; i < 3000; ++i) {
    batch.push_back(With(Make("d" + std::to_string(i % 50), "2026-06-23T08:00:00." + std::to_string(100000 + i) + "Z", i),
                         i % 3 == 0 ? "alarm" : "ok"));
  }
  ASSERT_TRUE(store_->Write(batch).ok());
  store_.reset();
  {
    // Opened read-only, which builds nothing, the index is refused, not answered from no entries.
    StoreOptions ro = options_;
    ro.indexes = declared;
    ro.read_only = true;
    std::unique_ptr<Store> reader;
    ASSERT_TRUE(Store::Open(ro, &reader).ok());
    EXPECT_FALSE(reader->Indexes()[0].active);
  }

  // Declared now: built one reading per batch in the background, stopped by a close at once
  // (3000 batches cannot all have run), so the next open must go on from its recorded state.
  options_.indexes = declared;
  options_.index_backfill_batch = 1;
  Open();
  auto first = store_->Indexes();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_FALSE(first[0].active);
  // A write meanwhile is indexed by the write path itself.
  ASSERT_TRUE(store_->Put(With(Make("late", "2026-06-23T08:30:00Z", 1), "alarm")).ok());
  store_.reset();
  Open();
  const auto resumed = store_->Indexes();
  EXPECT_FALSE(resumed[0].active) << "the backfill finished before the close: nothing was resumed";
  ASSERT_TRUE(AllBuilt(*store_));
  EXPECT_EQ(Entries("hot_by_hour", "2026-06-23T08").size(), 3001u);
  EXPECT_EQ(Entries("by_status", "alarm").size(), 1001u);
  EXPECT_EQ(store_->Indexes()[0].built, 1.0);
  EXPECT_TRUE(store_->Indexes()[0].backfilled);
  store_.reset();
  Open();
  EXPECT_TRUE(store_->Indexes()[0].active);  // ready stays ready
  EXPECT_FALSE(store_->Indexes()[0].backfilled);

  // Removed from the declarations: its entries go, the readings stay.
  options_.indexes = {declared[1]};
  store_.reset();
  Open();
  EXPECT_EQ(store_->Stats().dropped_indexes, std::vector<std::string>{"hot_by_hour"});
  EXPECT_TRUE(Entries("hot_by_hour", "2026-06-23T08").empty());
  EXPECT_EQ(Entries("by_status", "alarm").size(), 1001u);
  EXPECT_EQ(SortKeys("d0").size(), 60u);
  EXPECT_EQ(SortKeys("late").size(), 1u);
}

}  // namespace
}  // namespace readingsd::storage
