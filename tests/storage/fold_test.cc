// Registry and rollup records kept in memory for writes in time order (docs/device-registry.md):
// what a read right after a write sees, what a clean close leaves, and what a writer killed
// before it wrote them leaves after the next open: the records of a store that never crashed.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <iterator>
#include <map>

#include "storage/key.h"
#include "storage/number.h"
#include "storage/rollup.h"
#include "storage/store.h"
#include "tests/storage/registry_checks.h"
#include "tests/support/temp_dir.h"

namespace readingsd::storage {
namespace {

constexpr int64_t kStart = 1782201600;  // 2026-06-23T08:00:00Z

Reading At(const std::string& device, double seconds, double temperature) {
  const auto whole = static_cast<int64_t>(seconds);
  std::string sort_key;
  SortKeyAtWholeSeconds(kStart + whole, &sort_key);
  const auto millis = static_cast<int>((seconds - static_cast<double>(whole)) * 1000 + 0.5);
  if (millis > 0) sort_key.replace(20, 3, std::to_string(1000 + millis).substr(1));
  Number t;
  EXPECT_TRUE(Number::Parse(std::to_string(temperature), &t).ok());
  Reading r{device, sort_key, {{"temperature", t}}};
  if (static_cast<int64_t>(seconds) % 70 == 0) r.attributes.push_back({"status", std::string("alarm")});
  if (static_cast<int64_t>(seconds) % 90 == 0) r.attributes.push_back({"open", true});
  return r;
}

std::string Id(int d) { return "dev" + std::to_string(d); }

// The same writes every time: batches of one reading per device in time order (ingest's common
// case) across several granules, with `midway` called after batch 40; then redeliveries,
// overwrites with other values, late readings into the open granule and into a closed one, and
// devices first written after `midway`. `after` is called after each batch.
void Scenario(Store* store, const std::function<void()>& midway,
              const std::function<void(const std::vector<Reading>&)>& after = nullptr) {
  auto write = [&](const std::vector<Reading>& batch) {
    ASSERT_TRUE(store->Write(batch).ok());
    if (after) after(batch);
  };
  for (int b = 0; b < 90; ++b) {
    std::vector<Reading> batch;
    for (int d = 0; d < 12; ++d) batch.push_back(At(Id(d), b * 10 + d * 0.001, d * 100 + b * 0.5));
    if (b >= 60) {
      for (int n = 20; n < 24; ++n) batch.push_back(At(Id(n), b * 10, n + b * 0.25));
    }
    write(batch);
    if (b == 40) midway();
    if (b == 50) {
      write({At(Id(0), 450, 0 * 100 + 45 * 0.5),  // a redelivery: the same value
             At(Id(1), 480.001, -7),              // another value: the granule goes stale
             At(Id(2), 455.5, 3.25),              // late, into the open granule
             At(Id(3), 100.5, 99),                // late, into a closed granule
             At(Id(4), 1500, 1)});                // then ahead of the others
    }
  }
}

class RegistryFoldTest : public ::testing::Test {
 protected:
  void SetUp() override { options_.path = dir_.File("db"); }
  std::unique_ptr<Store> Open(const StoreOptions& options) {
    std::unique_ptr<Store> store;
    Status s = Store::Open(options, &store);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return store;
  }

  // Every "REG#", "ROL#" and "META#fold" key of a closed store, read with RocksDB alone.
  static std::map<std::string, std::string> Records(const std::string& path) {
    rocksdb::DB* raw = nullptr;
    EXPECT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::Options(), path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::map<std::string, std::string> out;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek("META#fold"); it->Valid(); it->Next()) {
      const std::string key = it->key().ToString();
      if (key == "META#fold" || key.starts_with("REG#") || key.starts_with("ROL#")) out[key] = it->value().ToString();
    }
    EXPECT_TRUE(it->status().ok());
    return out;
  }

  // A rollup record as what it says, not its bytes: readings folded in another order have their
  // attributes and partial sums in another order.
  static std::string Meaning(const std::string& value) {
    RollupView view;
    EXPECT_TRUE(ReadRollup(value, &view).ok());
    std::string out = (view.stale ? "stale " : "") + std::to_string(view.readings);
    std::sort(view.attributes.begin(), view.attributes.end(),
              [](const RollupAttributeView& a, const RollupAttributeView& b) { return a.name < b.name; });
    auto text = [](const std::variant<NumberView, std::string_view, bool>& v) {
      if (const auto* n = std::get_if<NumberView>(&v)) return "n" + n->ToNumber().text;
      if (const auto* s = std::get_if<std::string_view>(&v)) return "s" + std::string(*s);
      return std::string(std::get<bool>(v) ? "t" : "f");
    };
    for (const RollupAttributeView& a : view.attributes) {
      ExactSum sum;
      EXPECT_TRUE(sum.AddEncoded(a.sum));
      out += " " + std::string(a.name) + ":" + std::to_string(a.count) + "/" + std::to_string(a.numeric_count) + " sum " +
             std::to_string(sum.Value());
      if (a.numeric_count > 0) out += " min " + a.min.ToNumber().text + " max " + a.max.ToNumber().text;
      out += " first " + std::string(a.first_key) + text(a.first) + " last " + std::string(a.last_key) + text(a.last);
    }
    return out;
  }

  static void ExpectSameRecords(const std::map<std::string, std::string>& got,
                                const std::map<std::string, std::string>& want) {
    std::vector<std::string> got_keys, want_keys;
    for (const auto& [key, value] : got) got_keys.push_back(key);
    for (const auto& [key, value] : want) want_keys.push_back(key);
    std::vector<std::string> only_got, only_want;
    std::ranges::set_difference(got_keys, want_keys, std::back_inserter(only_got));
    std::ranges::set_difference(want_keys, got_keys, std::back_inserter(only_want));
    ASSERT_TRUE(only_got.empty() && only_want.empty())
        << "only in the store: " << testing::PrintToString(only_got)
        << ", only in the reference: " << testing::PrintToString(only_want);
    for (const auto& [key, value] : want) {
      SCOPED_TRACE(key);
      std::string_view device, granule;
      if (DecodeRollupKey(key, &device, &granule) && !granule.empty()) {
        EXPECT_EQ(Meaning(got.at(key)), Meaning(value));
      } else {
        EXPECT_EQ(got.at(key), value);  // registry records, floors, the fold marker
      }
    }
  }

  // What each device's partition says its record must be.
  static void ExpectRegistryAgreesWithReadings(Store* store) {
    auto it = store->NewTableIterator();
    std::map<std::string, DeviceSummary> truth;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      DeviceSummary& d = truth[std::string(it->device_id())];
      if (d.readings++ == 0) d.first_sort_key = it->sort_key();
      d.last_sort_key = it->sort_key();
      d.latest = it->encoded_attributes();
    }
    ASSERT_TRUE(it->status().ok());
    test::ExpectListingIs(*store, truth);
    EXPECT_EQ(truth.size(), 16u);
  }

  readingsd::test::TempDir dir_{"readingsd-fold"};
  StoreOptions options_;
};

TEST_F(RegistryFoldTest, AReadRightAfterAWriteSeesIt) {
  auto store = Open(options_);
  for (int b = 0; b < 40; ++b) {
    ASSERT_TRUE(store->Write(std::vector<Reading>{At("a", b * 10, b), At("b", b * 10, -b)}).ok());
    std::vector<DeviceSummary> listed;
    ASSERT_TRUE(store->ListDevices("", "", 10, &listed).ok());
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].readings, static_cast<uint64_t>(b + 1));
    EXPECT_EQ(listed[0].last_sort_key, At("a", b * 10, 0).sort_key);
    // The granule being written has a record that holds the reading just written.
    const std::string granule = At("a", (b * 10) / 300 * 300, 0).sort_key;
    auto it = store->NewRollupIterator("b", granule, "");
    ASSERT_NE(it, nullptr);
    it->SeekToFirst();
    ASSERT_TRUE(it->Valid()) << b << " " << it->status().ToString();
    EXPECT_EQ(it->sort_key(), granule);
    RollupView view;
    ASSERT_TRUE(ReadRollup(it->encoded_attributes(), &view).ok());
    EXPECT_EQ(view.readings, static_cast<uint64_t>(b % 30 + 1));
  }
}

TEST_F(RegistryFoldTest, ACleanCloseLeavesTheRecordsWrittenAndTheStoreClean) {
  const std::string reference = dir_.File("reference");
  {
    auto store = Open(options_);
    Scenario(store.get(), [] {});
  }
  const auto records = Records(options_.path);
  ASSERT_TRUE(records.contains("META#fold"));
  EXPECT_EQ(records.at("META#fold"), "clean");
  // The records of a store that wrote each one with its readings: every dirty record written
  // after each batch (a listing writes the registry's, an aggregate's iterator its device's).
  StoreOptions options = options_;
  options.path = reference;
  {
    auto store = Open(options);
    Scenario(store.get(), [] {}, [&](const std::vector<Reading>& batch) {
      std::vector<DeviceSummary> listed;
      ASSERT_TRUE(store->ListDevices("", "", 1, &listed).ok());
      for (const Reading& r : batch) ASSERT_NE(store->NewRollupIterator(r.device_id, "", ""), nullptr);
    });
  }
  ExpectSameRecords(records, Records(reference));
  {
    auto store = Open(options_);
    ExpectRegistryAgreesWithReadings(store.get());
  }
}

TEST_F(RegistryFoldTest, AKilledWriterLeavesWhatAStoreThatNeverCrashedHolds) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<Store> store;
    if (!Store::Open(options_, &store).ok()) _exit(1);
    // Midway every record is written (a listing, an aggregate's records), then more is left
    // in memory only, and devices are written that have no record at all.
    Scenario(store.get(), [&] {
      std::vector<DeviceSummary> listed;
      if (!store->ListDevices("", "", 1000, &listed).ok()) _exit(1);
      store->NewRollupIterator(Id(5), "", "");
    });
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  ASSERT_EQ(Records(options_.path).at("META#fold"), "dirty");

  StoreOptions options = options_;
  options.path = dir_.File("reference");
  {
    auto reference = Open(options);
    Scenario(reference.get(), [] {});
  }
  {
    auto recovered = Open(options_);
    ExpectRegistryAgreesWithReadings(recovered.get());
  }
  ExpectSameRecords(Records(options_.path), Records(options.path));

  // And a read-only open of a crashed store reads aggregates from the readings.
  const pid_t again = fork();
  ASSERT_GE(again, 0);
  if (again == 0) {
    std::unique_ptr<Store> store;
    if (!Store::Open(options_, &store).ok()) _exit(1);
    if (!store->Write(std::vector<Reading>{At(Id(0), 5000, 1)}).ok()) _exit(1);
    raise(SIGKILL);
  }
  ASSERT_EQ(waitpid(again, &status, 0), again);
  StoreOptions read_only = options_;
  read_only.read_only = true;
  {
    auto store = Open(read_only);
    EXPECT_EQ(store->RollupSeconds(), 0);
  }
  {
    auto store = Open(options_);
    EXPECT_EQ(store->RollupSeconds(), 300);
    ExpectRegistryAgreesWithReadings(store.get());
  }
  EXPECT_EQ(Records(options_.path).at("META#fold"), "clean");
  {
    auto store = Open(read_only);
    EXPECT_EQ(store->RollupSeconds(), 300);
  }
}

// Under retention a record counts what is at or after its horizon: a device first written after
// the last persist has no record, and the sweep at open applies retention to the one recovered.
TEST_F(RegistryFoldTest, AKilledWriterUnderRetentionCountsWhatItsHorizonLeaves) {
  using std::chrono::hours;
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  auto at = [&](const std::string& device, int64_t seconds_ago, double t) {
    std::string sort_key;
    SortKeyAtWholeSeconds(now - seconds_ago, &sort_key);
    return Reading{device, sort_key, {{"temperature", Number(t)}}};
  };
  options_.retention = hours(24);
  {
    auto store = Open(options_);  // "kept" has a stored record with its horizon
    ASSERT_TRUE(store->Write(std::vector<Reading>{at("kept", 3600 * 30, 1), at("kept", 3600 * 5, 2)}).ok());
    // Stored, never counted: a record with no reading and the cutoff as its horizon.
    ASSERT_TRUE(store->Write(std::vector<Reading>{at("expired", 3600 * 40, 1)}).ok());
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<Store> store;
    if (!Store::Open(options_, &store).ok()) _exit(1);
    for (int i = 0; i < 5; ++i) {
      // In time order: each its device's newest, some already older than the cutoff.
      if (!store->Write(std::vector<Reading>{at("new", 3600 * (50 - 10 * i), i), at("kept", 3600 * (4 - i), 10 + i)})
               .ok()) {
        _exit(1);
      }
    }
    // Its newest, older than its horizon, then one after it.
    if (!store->Write(std::vector<Reading>{at("expired", 3600 * 30, 2)}).ok()) _exit(1);
    if (!store->Write(std::vector<Reading>{at("expired", 3600, 3)}).ok()) _exit(1);
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  auto store = Open(options_);
  std::vector<DeviceSummary> listed;
  ASSERT_TRUE(store->ListDevices("", "", 10, &listed).ok());
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].device_id, "expired");
  EXPECT_EQ(listed[0].readings, 1u);
  EXPECT_EQ(listed[0].first_sort_key, at("expired", 3600, 0).sort_key);
  listed.erase(listed.begin());
  EXPECT_EQ(listed[0].device_id, "kept");
  EXPECT_EQ(listed[0].readings, 6u);  // 5 h ago and the five since; not 30 h ago
  EXPECT_EQ(listed[0].first_sort_key, at("kept", 3600 * 5, 0).sort_key);
  EXPECT_EQ(listed[0].last_sort_key, at("kept", 0, 0).sort_key);
  EXPECT_EQ(listed[1].device_id, "new");
  EXPECT_EQ(listed[1].readings, 2u);  // 20 h and 10 h ago; not 50, 40 and 30 h ago
  EXPECT_EQ(listed[1].first_sort_key, at("new", 3600 * 20, 0).sort_key);
  EXPECT_EQ(listed[1].last_sort_key, at("new", 3600 * 10, 0).sort_key);
}

}  // namespace
}  // namespace readingsd::storage
