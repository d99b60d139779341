// Rollups against the readings they summarise, in a real RocksDB store: random writes (numbers
// negative, fractional and long, booleans, strings, missing attributes; out of order, redelivered,
// overwritten with other values), deletes, retention, reopens, a SIGKILL, a store written without
// rollups and a changed granule; then aggregates over random windows and steps, answered from the
// rollups and from every reading, must be identical to the bit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "query/aggregate.h"
#include "storage/key.h"
#include "storage/rocks_options.h"
#include "storage/store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::query {
namespace {

using storage::Attribute;
using storage::Number;
using storage::Reading;

constexpr AggregateFn kAll[] = {AggregateFn::kAvg, AggregateFn::kMin,   AggregateFn::kMax, AggregateFn::kCount,
                                AggregateFn::kSum, AggregateFn::kFirst, AggregateFn::kLast};

std::string SortKeyAt(int64_t seconds, int64_t nanos) {
  std::string key;
  EXPECT_TRUE(storage::SortKeyAtWholeSeconds(seconds, &key));
  const std::string fraction = std::to_string(1000000000 + nanos).substr(1);
  return key.substr(0, 20) + fraction + "Z";
}

class RollupTest : public ::testing::Test {
 protected:
  void Open(int64_t rollup_seconds = 60, std::chrono::seconds retention = std::chrono::seconds(0),
            bool read_only = false) {
    store_.reset();
    storage::StoreOptions options;
    options.path = dir_.File("db");
    options.rollup_seconds = rollup_seconds;
    options.retention = retention;
    options.read_only = read_only;
    options.delete_batch = 7;  // deletes span several batches
    Status s = storage::Store::Open(options, &store_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  Number RandomNumber() {
    static const char* const kTexts[] = {"0", "-0.5", "1", "22.25", "-17", "1e20", "-1e-20", "3.14159265358979323846",
                                         "12345678901234567890123456789.5", "-12345678901234567890.25", "0.1", "0.2"};
    if (rng_() % 3 == 0) return Number(static_cast<double>(static_cast<int>(rng_() % 2000) - 1000) / 8);
    Number n;
    EXPECT_TRUE(Number::Parse(kTexts[rng_() % std::size(kTexts)], &n).ok());
    return n;
  }

  // A reading of `device` at second `seconds` (+ a random fraction), each attribute present or not.
  Reading RandomReading(const std::string& device, int64_t seconds) {
    Reading r{device, SortKeyAt(seconds, rng_() % 4 == 0 ? 0 : static_cast<int64_t>(rng_() % 1000000000)), {}};
    if (rng_() % 5 != 0) r.attributes.push_back({"t", RandomNumber()});
    if (rng_() % 3 != 0) r.attributes.push_back({"b", rng_() % 2 == 0});
    if (rng_() % 3 == 0) r.attributes.push_back({"s", std::string(rng_() % 2 ? "ok" : "warn")});
    // A string in a reading and a number in the next: "t" of another type.
    if (!r.attributes.empty() && rng_() % 17 == 0) r.attributes[0].value = std::string("n/a");
    return r;
  }

  void Write(std::vector<Reading> readings) {
    Status s = store_->Write(readings);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (Reading& r : readings) written_[{r.device_id, r.sort_key}] = std::move(r);
  }

  // One batch: mostly each device's next seconds in time order, with late readings, redeliveries
  // and overwrites with other values among them.
  void RandomBatch(int64_t* clock, std::size_t n) {
    std::vector<Reading> batch;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string device = rng_() % 4 == 0 ? "d2" : "d1";
      const int kind = static_cast<int>(rng_() % 20);
      if (kind == 0 && !written_.empty()) {
        auto it = std::next(written_.begin(), static_cast<long>(rng_() % written_.size()));
        batch.push_back(it->second);  // a redelivery: the same value
      } else if (kind == 1 && !written_.empty()) {
        auto it = std::next(written_.begin(), static_cast<long>(rng_() % written_.size()));
        Reading other = RandomReading(it->first.first, 0);
        other.sort_key = it->first.second;  // an overwrite, most likely with another value
        batch.push_back(std::move(other));
      } else if (kind == 2) {
        batch.push_back(RandomReading(device, *clock - static_cast<int64_t>(rng_() % 900)));  // late
      } else {
        *clock += static_cast<int64_t>(rng_() % 25);
        batch.push_back(RandomReading(device, *clock));
      }
    }
    Write(std::move(batch));
  }

  void RandomDelete(int64_t lo, int64_t hi) {
    const int64_t a = lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo));
    const int64_t b = a + 1 + static_cast<int64_t>(rng_() % 400);
    uint64_t deleted = 0;
    Status s = store_->DeleteReadings("d1", SortKeyAt(a, static_cast<int64_t>(rng_() % 1000000000)),
                                      SortKeyAt(b, static_cast<int64_t>(rng_() % 1000000000)), nullptr, &deleted);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  static void ExpectSame(const AggregateResult& raw, const AggregateResult& rolled, const std::string& what) {
    ASSERT_EQ(raw.buckets.size(), rolled.buckets.size()) << what;
    EXPECT_EQ(raw.scanned_count, rolled.scanned_count) << what;
    for (std::size_t b = 0; b < raw.buckets.size(); ++b) {
      const Bucket &x = raw.buckets[b], &y = rolled.buckets[b];
      const std::string where = what + " bucket " + storage::WholeSecondsTimestamp(x.start_seconds);
      ASSERT_EQ(x.start_seconds, y.start_seconds) << where;
      EXPECT_EQ(x.count, y.count) << where;
      for (std::size_t i = 0; i < x.attributes.size(); ++i) {
        const AttributeAggregate &p = x.attributes[i], &q = y.attributes[i];
        EXPECT_EQ(p.count, q.count) << where << " attribute " << i;
        EXPECT_EQ(p.numeric_count, q.numeric_count) << where << " attribute " << i;
        if (p.count > 0) {
          EXPECT_EQ(p.first, q.first) << where << " attribute " << i;
          EXPECT_EQ(p.last, q.last) << where << " attribute " << i;
        }
        if (p.numeric_count > 0) {
          EXPECT_EQ(p.sum, q.sum) << where << " attribute " << i;  // bit for bit: exact sums
          EXPECT_EQ(p.min, q.min) << where << " attribute " << i;
          EXPECT_EQ(p.max, q.max) << where << " attribute " << i;
        }
      }
    }
  }

  // Random windows over [lo, hi] of both devices, steps multiples of the granule and not,
  // answered with and without rollups. Returns the granules answered from records.
  std::size_t CompareWindows(int64_t lo, int64_t hi, int windows = 60) {
    static const int64_t kSteps[] = {60, 120, 300, 900, 3600, 86400, 45, 90, 7};
    std::size_t rolled_up = 0;
    for (int w = 0; w < windows; ++w) {
      AggregateRequest request;
      request.device_id = windows_rng_() % 4 == 0 ? "d2" : "d1";
      int64_t a = lo + static_cast<int64_t>(windows_rng_() % static_cast<uint64_t>(hi - lo));
      int64_t b = a + static_cast<int64_t>(windows_rng_() % static_cast<uint64_t>(hi - a + 1));
      if (windows_rng_() % 3 == 0) a -= a % 60;  // on a granule's start
      if (windows_rng_() % 3 == 0) b -= b % 60;
      request.from = SortKeyAt(a, windows_rng_() % 2 ? 0 : static_cast<int64_t>(windows_rng_() % 1000000000));
      request.to = SortKeyAt(b, windows_rng_() % 3 == 0 ? 999999999 : static_cast<int64_t>(windows_rng_() % 1000000000));
      if (request.to < request.from) std::swap(request.from, request.to);
      request.step_seconds = kSteps[windows_rng_() % std::size(kSteps)];
      request.attributes = {"t", "b", "s", "missing"};
      request.fns.assign(std::begin(kAll), std::end(kAll));
      request.max_buckets = 1000000;
      AggregateResult rolled, raw;
      Status s = Aggregate(*store_, request, &rolled);
      EXPECT_TRUE(s.ok()) << s.ToString();
      request.use_rollups = false;
      s = Aggregate(*store_, request, &raw);
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(raw.rollup_count, 0u);
      EXPECT_EQ(raw.read_count, raw.scanned_count);
      ExpectSame(raw, rolled, request.device_id + " " + request.from + ".." + request.to + " step " +
                                  std::to_string(request.step_seconds));
      rolled_up += rolled.rollup_count;
    }
    return rolled_up;
  }

  test::TempDir dir_{"readingsd-rollup"};
  std::unique_ptr<storage::Store> store_;
  std::mt19937_64 rng_{20261206};  // the readings
  std::mt19937_64 windows_rng_{7};  // the windows asked
  std::map<std::pair<std::string, std::string>, Reading> written_;
};

constexpr int64_t kStart = 1782172800;  // 2026-06-23T00:00:00Z

TEST_F(RollupTest, RandomWritesOverwritesAndDeletesAnswerAsTheReadingsDo) {
  Open();
  int64_t clock = kStart;
  for (int round = 0; round < 6; ++round) {
    for (int b = 0; b < 12; ++b) RandomBatch(&clock, 1 + rng_() % 40);
    if (round % 2 == 1) {
      for (int d = 0; d < 3; ++d) RandomDelete(kStart, clock);
    }
    if (round == 3) Open();  // the open granules are read again from the store
    EXPECT_GT(CompareWindows(kStart - 100, clock + 100), 0u);
  }
}

TEST_F(RollupTest, ARedeliveryChangesNothingAndAnotherValueMarksTheGranuleStale) {
  Open();
  const auto reading = [](int64_t s, int t) {
    return Reading{"d1", SortKeyAt(kStart + s, 0), {{"t", Number(t)}}};
  };
  Write({reading(0, 5), reading(10, 7), reading(20, 9), reading(70, 1)});
  Write({reading(10, 7)});  // redelivered
  AggregateRequest request;
  request.device_id = "d1";
  request.from = SortKeyAt(kStart, 0);
  request.to = SortKeyAt(kStart + 119, 999999999);
  request.step_seconds = 60;
  request.attributes = {"t"};
  request.fns.assign(std::begin(kAll), std::end(kAll));
  AggregateResult result;
  ASSERT_TRUE(Aggregate(*store_, request, &result).ok());
  EXPECT_EQ(result.rollup_count, 2u);
  EXPECT_EQ(result.read_count, 0u);
  EXPECT_EQ(result.scanned_count, 4u);
  ASSERT_EQ(result.buckets.size(), 2u);
  EXPECT_EQ(result.buckets[0].attributes[0].count, 3u);
  EXPECT_EQ(result.buckets[0].attributes[0].sum, 21);

  Write({reading(20, -4)});  // the max (9) is gone: the granule is read from its readings
  ASSERT_TRUE(Aggregate(*store_, request, &result).ok());
  EXPECT_EQ(result.rollup_count, 1u);
  EXPECT_EQ(result.read_count, 3u);
  EXPECT_EQ(result.buckets[0].attributes[0].max, Number(7));
  EXPECT_EQ(result.buckets[0].attributes[0].min, Number(-4));
  Write({reading(30, 100)});  // a stale granule stays stale
  ASSERT_TRUE(Aggregate(*store_, request, &result).ok());
  EXPECT_EQ(result.rollup_count, 1u);
  EXPECT_EQ(result.buckets[0].attributes[0].max, Number(100));
  EXPECT_EQ(result.buckets[0].count, 4u);
  Open();
  ASSERT_TRUE(Aggregate(*store_, request, &result).ok());
  EXPECT_EQ(result.rollup_count, 1u);
  EXPECT_EQ(result.buckets[0].attributes[0].max, Number(100));
}

// The granules a window cuts at either end are answered from their records when an attribute
// every reading has shows them all inside the window, and from their readings otherwise.
TEST_F(RollupTest, AGranuleTheWindowCutsIsReadFromItsRecordOnlyWhenEveryReadingIsInside) {
  Open();
  const auto reading = [](int64_t s, int64_t nanos, std::vector<Attribute> attributes) {
    return Reading{"d1", SortKeyAt(kStart + s, nanos), std::move(attributes)};
  };
  Write({reading(5, 0, {{"t", Number(1)}, {"s", std::string("a")}}), reading(35, 0, {{"t", Number(2)}}),
         reading(65, 0, {{"t", Number(3)}}), reading(75, 0, {{"t", Number(4)}, {"b", true}}),
         reading(119, 0, {{"t", Number(5)}}), reading(130, 0, {{"t", Number(6)}})});
  AggregateRequest request;
  request.device_id = "d1";
  request.step_seconds = 60;
  request.attributes = {"b", "s"};  // neither is in every reading: "t" shows where they lie
  request.fns.assign(std::begin(kAll), std::end(kAll));
  const auto run = [&](int64_t from, int64_t from_nanos, int64_t to, int64_t to_nanos) {
    request.from = SortKeyAt(kStart + from, from_nanos);
    request.to = SortKeyAt(kStart + to, to_nanos);
    AggregateResult rolled, raw;
    EXPECT_TRUE(Aggregate(*store_, request, &rolled).ok());
    request.use_rollups = false;
    EXPECT_TRUE(Aggregate(*store_, request, &raw).ok());
    request.use_rollups = true;
    ExpectSame(raw, rolled, request.from + ".." + request.to);
    return rolled;
  };
  // Granule 0 from second 3 on (its readings at 5 and 35), 60 whole, 120 up to 179.
  AggregateResult result = run(3, 0, 179, 0);
  EXPECT_EQ(result.rollup_count, 3u);
  EXPECT_EQ(result.read_count, 0u);
  EXPECT_EQ(result.scanned_count, 6u);
  // The window ends at 119 s: the reading at 119 s lies inside it, to the nanosecond.
  result = run(0, 0, 119, 0);
  EXPECT_EQ(result.rollup_count, 2u);
  EXPECT_EQ(result.read_count, 0u);
  // And a nanosecond before it not: granule 60 is read from its readings.
  result = run(0, 0, 118, 999999999);
  EXPECT_EQ(result.rollup_count, 1u);
  EXPECT_EQ(result.read_count, 2u);
  EXPECT_EQ(result.scanned_count, 4u);
  // From a nanosecond after the first reading: granule 0 from its readings.
  result = run(5, 1, 179, 0);
  EXPECT_EQ(result.rollup_count, 2u);
  EXPECT_EQ(result.read_count, 1u);
  // Nor do the functions asked for: without first and last the edges' keys are still read.
  request.fns = {AggregateFn::kAvg, AggregateFn::kCount};
  result = run(3, 0, 179, 0);
  EXPECT_EQ(result.rollup_count, 3u);
  EXPECT_EQ(result.read_count, 0u);
  // A granule with no attribute in every reading shows nothing: from its readings.
  Write({reading(140, 0, {{"b", false}})});
  request.fns.assign(std::begin(kAll), std::end(kAll));
  result = run(0, 0, 179, 0);
  EXPECT_EQ(result.rollup_count, 2u);
  EXPECT_EQ(result.read_count, 2u);
}

TEST_F(RollupTest, AStoreWrittenWithoutRollupsAndAChangedGranule) {
  Open(/*rollup_seconds=*/0);
  int64_t clock = kStart;
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  const int64_t before = clock;
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  Open(60);  // older readings stay raw; the granule of the newest one too
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  EXPECT_GT(CompareWindows(kStart, clock), 0u);
  // Late readings into the older part, and overwrites there, after the floor was set.
  Write({RandomReading("d1", before - 30), RandomReading("d1", kStart + 5), RandomReading("d2", before)});
  EXPECT_GT(CompareWindows(kStart, clock), 0u);
  Open(300);  // another granule: the records are built again from here on
  EXPECT_EQ(store_->RollupSeconds(), 300);
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  const int64_t switched = clock;
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  EXPECT_GT(CompareWindows(switched, clock), 0u);
  Open(0);  // off: removed, and nothing is answered from them
  for (int b = 0; b < 3; ++b) RandomBatch(&clock, 30);
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  Open(60);
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  CompareWindows(kStart, clock);
}

// A store whose records are of the format before min and max kept their doubles (META#rollups
// "60", records tagged 'u'), which this build cannot read: a read-only open reads the readings,
// a writable one removes the records and keeps new ones from later writes on.
TEST_F(RollupTest, RecordsOfTheFormerFormatAreNotReadButRemoved) {
  Open();
  int64_t clock = kStart;
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  EXPECT_GT(CompareWindows(kStart, clock), 0u);
  store_.reset();
  {
    const std::string path = dir_.File("db");
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(storage::internal::MakeOptions({.path = path}, nullptr, true), path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Put("META#rollups", "60").ok());
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    std::size_t records = 0;
    for (it->Seek(std::string(storage::kRollupPrefix)); it->Valid() && it->key().starts_with("ROL#"); it->Next()) {
      if (it->value().starts_with("r")) {
        ASSERT_TRUE(batch.Put(it->key(), "u" + it->value().ToString().substr(1)).ok());
        ++records;
      }
    }
    ASSERT_GT(records, 0u);
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
  }
  Open(60, std::chrono::seconds(0), /*read_only=*/true);
  EXPECT_EQ(store_->RollupSeconds(), 0);
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  Open();
  EXPECT_EQ(CompareWindows(kStart, clock), 0u);
  const int64_t reopened = clock;
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 30);
  EXPECT_GT(CompareWindows(reopened, clock), 0u);
}

TEST_F(RollupTest, RetentionLeavesNoRecordCountingAReadingItDrops) {
  using std::chrono::hours;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t clock = now - 4 * 3600;
  Open();
  for (int b = 0; b < 30; ++b) RandomBatch(&clock, 40);
  clock = std::max(clock, now - 3600);
  for (int b = 0; b < 10; ++b) RandomBatch(&clock, 40);
  EXPECT_GT(CompareWindows(now - 4 * 3600, now), 0u);
  Open(60, hours(2));  // swept at open: the readings are still there until compaction
  EXPECT_GT(CompareWindows(now - 4 * 3600, now), 0u);
  // Written after the sweep: older than its cutoff (left to the readings) and newer.
  Write({RandomReading("d1", now - 3 * 3600), RandomReading("d1", now - 2 * 3600 + 30), RandomReading("d1", now - 60)});
  ASSERT_TRUE(store_->CompactAll().ok());
  EXPECT_GT(CompareWindows(now - 4 * 3600, now), 0u);
  Open(60, hours(2));
  for (int b = 0; b < 5; ++b) RandomBatch(&clock, 40);
  EXPECT_GT(CompareWindows(now - 4 * 3600, clock), 0u);
}

// A writer killed with SIGKILL right after its writes returned: the records are in the same
// WAL records as the readings, so nothing the open granules held in memory is lost.
TEST_F(RollupTest, AKilledWriterLosesNoPartOfAGranule) {
  store_.reset();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Open();
    int64_t clock = kStart;
    for (int b = 0; b < 20; ++b) RandomBatch(&clock, 25);
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  Open();
  const int64_t end = kStart + 20 * 25 * 25;
  EXPECT_GT(CompareWindows(kStart, end), 0u);
  // The same random choices as the child's: its batches again (redeliveries), then more.
  int64_t clock = kStart;
  for (int b = 0; b < 30; ++b) RandomBatch(&clock, 25);
  EXPECT_GT(CompareWindows(kStart, clock), 0u);
}

}  // namespace
}  // namespace readingsd::query
