#include "storage/store.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/checkpoint.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "storage/key.h"
#include "storage/prior_values.h"
#include "storage/registry.h"
#include "storage/rocks_options.h"
#include "storage/rollups.h"
#include "storage/store_dir.h"

namespace readingsd::storage {
namespace {

using internal::FromRocks;

// Corruption the store met while running (a query reading a damaged block, a compaction
// failing on one): counted for the exporter and /readyz.
class CorruptionTally {
 public:
  void Record(const rocksdb::Status& s) {
    if (!s.IsCorruption()) return;
    std::lock_guard lock(mu_);
    ++count_;
    last_ = s.ToString();
  }
  void Read(uint64_t* count, std::string* last) const {
    std::lock_guard lock(mu_);
    *count = count_;
    *last = last_;
  }

 private:
  mutable std::mutex mu_;
  uint64_t count_ = 0;
  std::string last_;
};

// Tells the high-water marker that the store's files changed.
struct MarkSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool changed = false;
  bool stop = false;

  void Notify() {
    {
      std::lock_guard lock(mu);
      changed = true;
    }
    cv.notify_one();
  }
};

// A flush or compaction changed the live files: mark again. Background work that meets a
// damaged block is counted as corruption.
class StoreEvents : public rocksdb::EventListener {
 public:
  StoreEvents(std::shared_ptr<MarkSignal> signal, std::shared_ptr<CorruptionTally> tally)
      : signal_(std::move(signal)), tally_(std::move(tally)) {}
  const char* Name() const override { return "readingsd.StoreEvents"; }
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override { signal_->Notify(); }
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override { signal_->Notify(); }
  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* bg_error) override {
    tally_->Record(*bg_error);
  }

 private:
  std::shared_ptr<MarkSignal> signal_;
  std::shared_ptr<CorruptionTally> tally_;
};

// A RocksDB iterator over [lower, upper) that reports a corruption to the tally once, however
// often its status is asked. Both iterators below hold one.
class BoundedIterator {
 public:
  // `prefix_bloom`: the bounds stay in one partition, so its prefix bloom filters may skip files;
  // else (across partitions) they must not.
  BoundedIterator(rocksdb::DB* db, CorruptionTally* tally, std::string lower, std::string upper, bool prefix_bloom)
      : tally_(tally),
        lower_(std::move(lower)),
        upper_(std::move(upper)),
        lower_slice_(lower_),
        upper_slice_(upper_) {
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice_;
    ro.iterate_upper_bound = &upper_slice_;
    if (prefix_bloom) {
      ro.auto_prefix_mode = true;
    } else {
      ro.total_order_seek = true;
    }
    it_.reset(db->NewIterator(ro));
  }

  rocksdb::Iterator* operator->() const { return it_.get(); }
  std::string_view value() const {
    auto v = it_->value();
    return std::string_view(v.data(), v.size());
  }
  Status status(std::string_view context) const {
    auto s = it_->status();
    if (!counted_ && s.IsCorruption()) {
      counted_ = true;
      tally_->Record(s);
    }
    return FromRocks(s, context);
  }

 private:
  CorruptionTally* tally_;
  mutable bool counted_ = false;
  std::string lower_, upper_;
  rocksdb::Slice lower_slice_, upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

// The keys under one prefix: a reading partition ("DEV#id\0", whose prefix bloom filters apply)
// or an index partition (storage/key.h). `end` is greater than every byte that follows the prefix.
class RocksPartitionIterator : public PartitionIterator {
 public:
  RocksPartitionIterator(rocksdb::DB* db, CorruptionTally* tally, std::string prefix, char end, std::string_view lower,
                         std::string_view upper, bool prefix_bloom)
      : prefix_(std::move(prefix)),
        it_(db, tally, prefix_ + std::string(lower), prefix_ + (upper.empty() ? std::string(1, end) : std::string(upper)),
            prefix_bloom) {}

  void SeekToFirst() override { it_->SeekToFirst(); }
  void SeekToLast() override { it_->SeekToLast(); }
  void Seek(std::string_view sort_key) override { it_->Seek(Key(sort_key)); }
  void SeekForPrev(std::string_view sort_key) override { it_->SeekForPrev(Key(sort_key)); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  void Prev() override { it_->Prev(); }
  std::string_view sort_key() const override {
    auto k = it_->key();
    return std::string_view(k.data() + prefix_.size(), k.size() - prefix_.size());
  }
  std::string_view encoded_attributes() const override { return it_.value(); }
  Status status() const override { return it_.status("iterator"); }

 private:
  std::string Key(std::string_view sort_key) const { return prefix_ + std::string(sort_key); }

  const std::string prefix_;  // before it_, which is built from it
  BoundedIterator it_;
};

// Nothing, and why: an iterator whose records could not be brought up to date.
class FailedIterator : public PartitionIterator {
 public:
  explicit FailedIterator(Status status) : status_(std::move(status)) {}
  void SeekToFirst() override {}
  void SeekToLast() override {}
  void Seek(std::string_view) override {}
  void SeekForPrev(std::string_view) override {}
  bool Valid() const override { return false; }
  void Next() override {}
  void Prev() override {}
  std::string_view sort_key() const override { return {}; }
  std::string_view encoded_attributes() const override { return {}; }
  Status status() const override { return status_; }

 private:
  Status status_;
};

// Every reading key lies in ["DEV#", "DEV$"): the META# keys sort after them.
class RocksTableIterator : public TableIterator {
 public:
  RocksTableIterator(rocksdb::DB* db, CorruptionTally* tally)
      : it_(db, tally, std::string(kPartitionPrefix),
            std::string(kPartitionPrefix.substr(0, kPartitionPrefix.size() - 1)) +
                static_cast<char>(kPartitionPrefix.back() + 1),
            /*prefix_bloom=*/false) {}

  void SeekToFirst() override {
    it_->SeekToFirst();
    Settle();
  }
  void Seek(std::string_view device_id, std::string_view sort_key) override {
    it_->Seek(EncodeKey(device_id, sort_key));
    Settle();
  }
  bool Valid() const override { return error_.ok() && it_->Valid(); }
  void Next() override {
    it_->Next();
    Settle();
  }
  std::string_view device_id() const override { return device_id_; }
  std::string_view sort_key() const override { return sort_key_; }
  std::string_view encoded_attributes() const override { return it_.value(); }
  Status status() const override { return error_.ok() ? it_.status("table iterator") : error_; }

 private:
  void Settle() {
    if (!it_->Valid()) return;
    auto k = it_->key();
    const std::string_view key(k.data(), k.size());
    if (!DecodeKey(key, &device_id_, &sort_key_)) {
      error_ = Status::Corruption("a key in the readings' range is not a reading key: " + std::string(key));
    }
  }

  BoundedIterator it_;
  std::string_view device_id_, sort_key_;
  Status error_;
};

Status ValidateReading(const Reading& r) {
  if (Status s = ValidateDeviceId(r.device_id); !s.ok()) return s;
  std::string normalised;
  if (Status s = NormalizeTimestamp(r.sort_key, &normalised); !s.ok()) return s;
  if (normalised != r.sort_key) {
    return Status::InvalidArgument("sort key \"" + r.sort_key + "\" is not normalised (expected \"" + normalised + "\")");
  }
  return ValidateAttributes(r.attributes);
}

// What an index's entries are built by: its state records it, so that a declaration changed
// under the same name is rebuilt rather than mixed with entries of the old keys.
std::string SpecText(const IndexSpec& spec) {
  return std::to_string(static_cast<int>(spec.partition)) + "|" + spec.partition_attribute + "|" +
         std::to_string(static_cast<int>(spec.sort)) + "|" + spec.sort_attribute + "|" + std::to_string(spec.shards);
}

std::string IndexStateKey(std::string_view name) { return std::string(internal::kIndexStatePrefix) + std::string(name); }

// Every reading key lies in ["DEV#", "DEV$").
std::string ReadingsEnd() {
  return std::string(kPartitionPrefix.substr(0, kPartitionPrefix.size() - 1)) +
         static_cast<char>(kPartitionPrefix.back() + 1);
}

// An open RocksDB and what keeps it company.
struct OpenDb {
  std::unique_ptr<rocksdb::DB> db;
  std::shared_ptr<internal::WalGapFilter> wal_filter;  // the DB's options point to it
  std::shared_ptr<rocksdb::Statistics> stats;
  std::shared_ptr<CorruptionTally> tally = std::make_shared<CorruptionTally>();
  std::shared_ptr<MarkSignal> marks;  // null for a read-only open, which takes no marks
  std::string path, id;
  std::string table_id;  // internal::kTableIdKey's value
  bool sync = false;
  std::chrono::seconds retention{0};
  std::shared_ptr<internal::RetentionCutoff> retention_cutoff;  // the DB's compaction reads it
  std::vector<IndexSpec> indexes;
  std::vector<bool> building;          // per index: being backfilled
  std::string backfill_from;           // the reading key the backfill resumes at
  std::size_t backfill_batch = 1000;
  std::size_t delete_batch = 1000;
  std::vector<std::string> dropped_indexes;
  int64_t rollup_seconds = 0;  // the options' (writable), or the store's (read-only)
};

class RocksStore : public Store {
 public:
  explicit RocksStore(OpenDb open)
      : open_(std::move(open)), db_(open_.db.get()), priors_(db_), registry_(db_), rollups_(db_, open_.rollup_seconds) {
    write_options_.sync = open_.sync;
    built_.assign(open_.indexes.size(), 1.0);
    backfilled_.assign(open_.indexes.size(), false);
    for (std::size_t i = 0; i < open_.indexes.size(); ++i) {
      if (open_.building[i]) built_[i] = 0;
    }
  }

  // A writable store's background work: the device registry built if missing, swept once
  // (retention), then the marker thread, which also sweeps every kSweepInterval, and the
  // backfill of the indexes being built.
  Status Start() {
    if (Status s = rollups_.Prepare(); !s.ok()) return s;
    if (Status s = registry_.BuildIfMissing(); !s.ok()) return s;
    if (Status s = RecoverRecords(); !s.ok()) return s;
    if (Status s = SweepRegistry(/*when_due=*/false); !s.ok()) return s;
    marker_ = std::thread([this] { MarkLoop(); });
    if (std::find(open_.building.begin(), open_.building.end(), true) != open_.building.end()) {
      backfill_ = std::thread([this] { Backfill(); });
    }
    return Status::OK();
  }

  ~RocksStore() override {
    if (backfill_.joinable()) {
      stop_backfill_ = true;
      backfill_.join();
    }
    if (marker_.joinable()) {
      {
        std::lock_guard lock(open_.marks->mu);
        open_.marks->stop = true;
      }
      open_.marks->cv.notify_one();
      marker_.join();
      {
        std::lock_guard lock(write_mu_);
        if (Status s = PersistLocked(); !s.ok()) Warn(s);  // else the next open recovers
      }
      Mark();  // a clean stop leaves a mark of everything written
    }
    // Closing explicitly surfaces background errors in the log instead of in a destructor.
    db_->Close();
  }

  Status Put(const Reading& reading) override { return Write(std::span<const Reading>(&reading, 1)); }

  Status Write(std::span<const Reading> readings) override {
    for (const Reading& r : readings) {
      if (Status s = ValidateReading(r); !s.ok()) return s;
    }
    // One writer at a time: the priors found must still hold when the batch is written.
    std::lock_guard lock(write_mu_);
    // Before the plan: after a failed write, planning reads and rebuilds what it left in memory.
    MaybeResume();
    if (Status s = priors_.Plan(readings, &writes_); !s.ok()) return s;
    // In key order (a key's writes in batch order, the last one stored), each goes into the
    // memtable a step past the one before instead of from the top of it, and each device's
    // records are planned once: a batch of many devices, as an import or a line-protocol body
    // has, takes far fewer steps.
    const auto by_key = [](const internal::KeyWrite& a, const internal::KeyWrite& b) { return a.key < b.key; };
    if (!std::is_sorted(writes_.begin(), writes_.end(), by_key)) std::stable_sort(writes_.begin(), writes_.end(), by_key);
    batch_.Clear();
    for (const internal::KeyWrite& w : writes_) {
      if (auto s = batch_.Put(w.key, w.value); !s.ok()) return FromRocks(s, "write batch");
      if (Status s = PutIndexEntries(w, &batch_); !s.ok()) return s;
    }
    if (Status s = registry_.Plan(writes_, &batch_); !s.ok()) return s;
    if (Status s = rollups_.Plan(writes_, &batch_); !s.ok()) return s;
    // Records may now lag the readings until the next persist: a crash before it is recovered.
    if (fold_clean_) batch_.Put(std::string(internal::kFoldKey), std::string(internal::kFoldDirty));
    auto s = WriteLocked(&batch_);
    if (s.ok()) {
      priors_.Commit();
      registry_.Commit();
      rollups_.Commit();
      fold_clean_ = false;
    }
    return FromRocks(s, "write");
  }

  Status DeleteReadings(std::string_view device_id, std::string_view lower, std::string_view upper,
                        const std::function<void(uint64_t removed)>& progress, uint64_t* deleted) override {
    *deleted = 0;
    if (Status s = ValidateDeviceId(device_id); !s.ok()) return s;
    std::string from(lower);
    std::vector<std::string> removed;  // one batch's sort keys, at most delete_batch
    std::vector<AttributeView> attributes;
    std::string entry;
    for (;;) {
      {
        std::lock_guard lock(write_mu_);
        removed.clear();
        rocksdb::WriteBatch batch;
        std::unique_ptr<PartitionIterator> it = NewIterator(device_id, from, upper);
        for (it->SeekToFirst(); it->Valid() && removed.size() < open_.delete_batch; it->Next()) {
          removed.emplace_back(it->sort_key());
          if (auto s = batch.Delete(EncodeKey(device_id, it->sort_key())); !s.ok()) return FromRocks(s, "write batch");
          if (open_.indexes.empty()) continue;
          if (Status s = ReadAttributes(it->encoded_attributes(), &attributes); !s.ok()) {
            return Status::Corruption("the stored value " + PartitionKey(device_id) + " " + removed.back() +
                                      " to delete: " + s.message());
          }
          for (const IndexSpec& spec : open_.indexes) {
            if (!IndexEntryKey(spec, device_id, removed.back(), attributes, &entry)) continue;
            if (auto s = batch.Delete(entry); !s.ok()) return FromRocks(s, "write batch");
          }
        }
        if (Status s = it->status(); !s.ok()) return s;
        if (removed.empty()) return Status::OK();
        if (Status s = registry_.PlanDelete(device_id, removed, &batch); !s.ok()) return s;
        if (Status s = rollups_.PlanDelete(device_id, removed, &batch); !s.ok()) return s;
        if (auto s = WriteLocked(&batch); !s.ok()) return FromRocks(s, "delete");
        registry_.Commit();
        rollups_.Commit();
        *deleted += removed.size();
        from = removed.back() + '\0';  // just past the last one removed
      }
      if (progress) progress(removed.size());
      if (removed.size() < open_.delete_batch) return Status::OK();
    }
  }

  Status Get(std::string_view device_id, std::string_view sort_key, Reading* reading) const override {
    std::string value;
    auto s = db_->Get(rocksdb::ReadOptions(), EncodeKey(device_id, sort_key), &value);
    if (s.IsNotFound()) return Status::NotFound("no reading for that device id and timestamp");
    open_.tally->Record(s);
    if (!s.ok()) return FromRocks(s, "get");
    reading->device_id = device_id;
    reading->sort_key = sort_key;
    return DecodeAttributes(value, &reading->attributes);
  }

  std::unique_ptr<PartitionIterator> NewIterator(std::string_view device_id, std::string_view lower,
                                                 std::string_view upper) const override {
    return std::make_unique<RocksPartitionIterator>(db_, open_.tally.get(), EncodeKey(device_id, ""), kSortKeyEnd, lower,
                                                    upper, /*prefix_bloom=*/true);
  }

  std::unique_ptr<PartitionIterator> NewIndexIterator(std::string_view index_name, std::string_view partition,
                                                      std::string_view lower, std::string_view upper) const override {
    // A sort value's tag (storage/key.h) is below 0xff.
    return std::make_unique<RocksPartitionIterator>(db_, open_.tally.get(), IndexPartitionPrefix(index_name, partition),
                                                    '\xff', lower, upper, /*prefix_bloom=*/false);
  }

  std::vector<IndexStatus> Indexes() const override {
    std::lock_guard lock(index_mu_);
    std::vector<IndexStatus> out;
    for (std::size_t i = 0; i < open_.indexes.size(); ++i) {
      out.push_back({open_.indexes[i], !open_.building[i], built_[i], backfilled_[i]});
    }
    return out;
  }

  int64_t RollupSeconds() const override { return open_.rollup_seconds; }

  std::unique_ptr<PartitionIterator> NewRollupIterator(std::string_view device_id, std::string_view lower,
                                                       std::string_view upper) const override {
    if (open_.rollup_seconds == 0) return nullptr;
    if (Status s = PersistForRead(device_id); !s.ok()) {
      return std::make_unique<FailedIterator>(s);
    }
    return std::make_unique<RocksPartitionIterator>(db_, open_.tally.get(), RollupKey(device_id, ""), kSortKeyEnd,
                                                    lower, upper, /*prefix_bloom=*/false);
  }

  std::unique_ptr<TableIterator> NewTableIterator() const override {
    return std::make_unique<RocksTableIterator>(db_, open_.tally.get());
  }

  Status ListDevices(std::string_view prefix, std::string_view after, std::size_t limit,
                     std::vector<DeviceSummary>* devices) const override {
    devices->clear();
    if (Status s = PersistForRead({}); !s.ok()) return s;
    // Past `after` (its key + '\0' is the next possible one), up to the end of `prefix`.
    std::string lower = after.empty() || after < prefix ? RegistryKey(prefix) : RegistryKey(after) + '\0';
    BoundedIterator it(db_, open_.tally.get(), std::move(lower), RegistryKey(prefix) + kSortKeyEnd,
                       /*prefix_bloom=*/false);
    internal::DeviceRecord record;
    for (it->SeekToFirst(); it->Valid() && devices->size() < limit; it->Next()) {
      std::string_view device_id;
      if (!DecodeRegistryKey(std::string_view(it->key().data(), it->key().size()), &device_id)) continue;
      if (Status s = internal::DecodeDeviceRecord(it.value(), &record); !s.ok()) return s;
      if (record.readings == 0) continue;
      devices->push_back(DeviceSummary{std::string(device_id), std::move(record.first), std::move(record.last),
                                       record.readings, std::move(record.latest)});
    }
    return it.status("device registry");
  }

  std::string TableId() const override { return open_.table_id; }

  StoreStats Stats() const override {
    StoreStats st;
    db_->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &st.sst_bytes);
    db_->GetIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &st.memtable_bytes);
    db_->GetIntProperty(rocksdb::DB::Properties::kEstimatePendingCompactionBytes, &st.pending_compaction_bytes);
    db_->GetIntProperty(rocksdb::DB::Properties::kEstimateNumKeys, &st.estimated_keys);
    db_->GetIntProperty(rocksdb::DB::Properties::kBlockCacheUsage, &st.block_cache_bytes);
    db_->GetIntProperty(rocksdb::DB::Properties::kBlockCacheCapacity, &st.block_cache_capacity_bytes);
    st.stall_micros = open_.stats->getTickerCount(rocksdb::STALL_MICROS);
    st.block_cache_misses = open_.stats->getTickerCount(rocksdb::BLOCK_CACHE_MISS);
    open_.tally->Read(&st.corruption_errors, &st.last_corruption);
    st.wal_syncs = open_.stats->getTickerCount(rocksdb::WAL_FILE_SYNCED);
    st.dropped_indexes = open_.dropped_indexes;
    return st;
  }

  Status Checkpoint(const std::string& dir) const override {
    rocksdb::Checkpoint* raw = nullptr;
    if (auto s = rocksdb::Checkpoint::Create(db_, &raw); !s.ok()) return FromRocks(s, "checkpoint");
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    {
      // Every record written and no write until the copy is taken: the copy is clean and exact.
      auto* self = const_cast<RocksStore*>(this);
      std::unique_lock lock(self->write_mu_, std::defer_lock);
      if (writable_) {
        lock.lock();
        if (Status s = self->PersistLocked(); !s.ok()) return s;
      }
      if (auto s = checkpoint->CreateCheckpoint(dir); !s.ok()) return FromRocks(s, "checkpoint into " + dir);
    }
    // The copy is a store of its own: its marker and a mark of what it holds.
    rocksdb::Options o = internal::MakeOptions(StoreOptions{.path = dir}, open_.stats, /*writable=*/false);
    rocksdb::DB* copy = nullptr;
    if (auto s = rocksdb::DB::OpenForReadOnly(o, dir, &copy); !s.ok()) return FromRocks(s, "checkpoint in " + dir);
    std::string id = internal::NewStoreId();
    Status s = internal::TakeMark(copy, dir, id, /*sync_wal=*/false);
    delete copy;
    if (!s.ok()) return s;
    return internal::WriteMarker(dir, {std::string(internal::kFormatValue), id});
  }

  Status CompactAll() override {
    if (Status s = SweepRegistry(/*when_due=*/false); !s.ok()) return s;
    if (auto s = db_->Flush(rocksdb::FlushOptions()); !s.ok()) return FromRocks(s, "flush");
    rocksdb::CompactRangeOptions options;
    options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    return FromRocks(db_->CompactRange(options, nullptr, nullptr), "compact");
  }

 private:
  // Writes the entries of every reading in [open_.backfill_from, end) for the indexes being
  // built, a batch at a time under the write lock (a write between batches maintains them
  // itself), recording where to resume in each one's state: a restart goes on from there.
  void Backfill() {
    std::size_t total = 0, done = 0;
    {
      BoundedIterator it(db_, open_.tally.get(), std::string(kPartitionPrefix), ReadingsEnd(), /*prefix_bloom=*/false);
      for (it->SeekToFirst(); it->Valid() && !stop_backfill_; it->Next()) {
        ++total;
        if (it->key().ToString() < open_.backfill_from) ++done;
      }
    }
    std::string from = open_.backfill_from;
    std::vector<AttributeView> attributes;
    std::string entry;
    while (!stop_backfill_) {
      std::lock_guard write_lock(write_mu_);
      rocksdb::WriteBatch batch;
      BoundedIterator it(db_, open_.tally.get(), from.empty() ? std::string(kPartitionPrefix) : from, ReadingsEnd(),
                         /*prefix_bloom=*/false);
      std::size_t n = 0;
      for (it->SeekToFirst(); it->Valid() && n < open_.backfill_batch; it->Next(), ++n) {
        std::string_view device_id, sort_key;
        const std::string_view key(it->key().data(), it->key().size());
        if (!DecodeKey(key, &device_id, &sort_key) || !ReadAttributes(it.value(), &attributes).ok()) continue;
        for (std::size_t i = 0; i < open_.indexes.size(); ++i) {
          if (open_.building[i] && IndexEntryKey(open_.indexes[i], device_id, sort_key, attributes, &entry)) {
            batch.Put(entry, it->value());
          }
        }
      }
      const bool finished = !it->Valid();
      if (!finished) from = it->key().ToString();
      if (!it.status("index backfill").ok()) return;  // counted as corruption; retried at the next open
      for (std::size_t i = 0; i < open_.indexes.size(); ++i) {
        if (!open_.building[i]) continue;
        batch.Put(IndexStateKey(open_.indexes[i].name),
                  SpecText(open_.indexes[i]) + (finished ? "\nready" : "\nbuilding\n" + from));
      }
      if (!db_->Write(write_options_, &batch).ok()) return;  // the state says where to resume
      done += n;
      std::lock_guard lock(index_mu_);
      for (std::size_t i = 0; i < open_.indexes.size(); ++i) {
        if (!open_.building[i]) continue;
        built_[i] = total == 0 ? 1 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
        if (finished) {
          open_.building[i] = false;
          backfilled_[i] = true;
        }
      }
      if (finished) return;
    }
  }

  // The reading's entry in every index, and the removal of the entry its prior value had there
  // when that differs (an overwrite with other key attribute values leaves nothing stale).
  Status PutIndexEntries(const internal::KeyWrite& w, rocksdb::WriteBatch* batch) {
    if (open_.indexes.empty()) return Status::OK();
    const Reading& r = *w.reading;
    const std::vector<AttributeView> attributes = ViewsOf(r.attributes);
    std::vector<AttributeView> prior;
    if (w.prior) {
      if (Status s = ReadAttributes(*w.prior, &prior); !s.ok()) {
        return Status::Corruption("the stored value " + PartitionKey(r.device_id) + " " + r.sort_key +
                                  " overwrites: " + s.message());
      }
    }
    std::string key, old_key;
    for (const IndexSpec& spec : open_.indexes) {
      const bool has = IndexEntryKey(spec, r.device_id, r.sort_key, attributes, &key);
      if (w.prior && IndexEntryKey(spec, r.device_id, r.sort_key, prior, &old_key) && (!has || old_key != key)) {
        if (auto s = batch->Delete(old_key); !s.ok()) return FromRocks(s, "write batch");
      }
      if (has) {
        if (auto s = batch->Put(key, w.value); !s.ok()) return FromRocks(s, "write batch");
      }
    }
    return Status::OK();
  }

  // A batch of Write or DeleteReadings, under write_mu_: an I/O error stops writes until MaybeResume.
  rocksdb::Status WriteLocked(rocksdb::WriteBatch* batch) { return WriteLocked(write_options_, batch); }
  rocksdb::Status WriteLocked(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch) {
    MaybeResume();
    auto s = db_->Write(options, batch);
    if (s.IsIOError()) write_failed_ = true;
    open_.tally->Record(s);
    return s;
  }

  // A failed write leaves RocksDB stopped until DB::Resume(), which flushes the memtable (what
  // was written is kept) and starts a new WAL. Tried before the next write, at most once per
  // kResumeInterval; while the disk is still full it fails and the write reports why.
  void MaybeResume() {
    if (!write_failed_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(resume_mu_);
    auto now = std::chrono::steady_clock::now();
    if (!write_failed_ || now - last_resume_ < kResumeInterval) return;
    last_resume_ = now;
    if (db_->Resume().ok()) write_failed_ = false;
  }

  // Background work that failed, into RocksDB's LOG.
  void Warn(const Status& s) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, db_->GetDBOptions().info_log, "readingsd: %s", s.ToString().c_str());
  }

  // A failed mark (a full disk) leaves the previous one, which the store still satisfies. None
  // is tried while writes fail: nothing new is durable then, and a SyncWAL on a store stopped by
  // a full disk changed how it came back (writes went through again on a disk still full,
  // tests/daemon/faults_test.cc); resuming is MaybeResume's alone.
  bool Mark() {
    if (write_failed_.load(std::memory_order_acquire)) return false;
    Status s = internal::TakeMark(db_, open_.path, open_.id);
    if (!s.ok()) Warn(s);
    return s.ok();
  }

  // Writes every record Write left dirty in memory, and marks the store clean. Under write_mu_.
  Status PersistLocked() {
    rocksdb::WriteBatch batch;
    if (Status s = registry_.PlanPersist(&batch); !s.ok()) return s;
    if (Status s = rollups_.PlanPersist(&batch); !s.ok()) return s;
    if (!fold_clean_) batch.Put(std::string(internal::kFoldKey), std::string(internal::kFoldClean));
    if (batch.Count() == 0) return Status::OK();
    if (auto s = WriteLocked(persist_options_, &batch); !s.ok()) {
      return FromRocks(s, "writing the device registry and rollups");
    }
    registry_.CommitPersist();
    rollups_.CommitPersist();
    fold_clean_ = true;
    return Status::OK();
  }

  // Before a read of records: every registry record (`device_id` empty), or the rollup records of
  // `device_id`, as the readings written so far make them. Reads are const; the records they
  // read are the store's own state.
  Status PersistForRead(std::string_view device_id) const {
    if (!writable_) return Status::OK();
    auto* self = const_cast<RocksStore*>(this);
    std::lock_guard lock(self->write_mu_);
    if (device_id.empty()) return self->PersistLocked();
    rocksdb::WriteBatch batch;
    if (Status s = self->rollups_.PlanPersist(&batch, device_id); !s.ok()) return s;
    if (batch.Count() == 0) return Status::OK();
    if (auto s = self->WriteLocked(persist_options_, &batch); !s.ok()) return FromRocks(s, "writing a rollup");
    self->rollups_.CommitPersist();
    return Status::OK();
  }

  // A writable open of a store whose records lagged its readings when it stopped (a crash):
  // each device's records brought up to date from its partition, before any write.
  Status RecoverRecords() {
    std::string fold;
    auto got = db_->Get(rocksdb::ReadOptions(), std::string(internal::kFoldKey), &fold);
    if (got.IsNotFound() || (got.ok() && fold != internal::kFoldDirty)) return Status::OK();
    if (!got.ok()) return FromRocks(got, "reading the records' state");
    rocksdb::WriteBatch batch;
    BoundedIterator it(db_, open_.tally.get(), std::string(kPartitionPrefix), ReadingsEnd(), /*prefix_bloom=*/false);
    std::string device;
    // One seek per partition: past each device's readings to the next device's first.
    for (it->SeekToFirst(); it->Valid(); it->Seek(EncodeKey(device, std::string(1, kSortKeyEnd)))) {
      std::string_view id, sort_key;
      if (!DecodeKey(std::string_view(it->key().data(), it->key().size()), &id, &sort_key)) {
        return Status::Corruption("a key in the readings' range is not a reading key");
      }
      device.assign(id);
      if (Status s = registry_.Recover(device, &batch); !s.ok()) return s;
      if (Status s = rollups_.Recover(device, &batch); !s.ok()) return s;
      if (batch.Count() < 1000) continue;
      if (auto s = db_->Write(write_options_, &batch); !s.ok()) return FromRocks(s, "recovering the records");
      batch.Clear();
    }
    if (Status s = it.status("recovering the records"); !s.ok()) return s;
    batch.Put(std::string(internal::kFoldKey), std::string(internal::kFoldClean));
    return FromRocks(db_->Write(write_options_, &batch), "recovering the records");
  }

  // Retention: the registry stops counting readings older than the cutoff, and only then may
  // compaction drop them. `when_due`: only if the last sweep is kSweepInterval old.
  Status SweepRegistry(bool when_due) {
    if (open_.retention.count() == 0) return Status::OK();
    std::lock_guard lock(sweep_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (when_due && now - last_sweep_ < kSweepInterval) return Status::OK();
    const std::string cutoff = SortKeyAt(std::chrono::system_clock::now() - open_.retention);
    if (Status s = registry_.Sweep(cutoff, write_mu_, write_options_, &rollups_, [this] { return PersistLocked(); });
        !s.ok()) {
      return s;
    }
    open_.retention_cutoff->Set(cutoff);
    last_sweep_ = now;
    return Status::OK();
  }

  // Marks after every change of the live files, and every kMarkInterval while written.
  void MarkLoop() {
    MarkSignal& signal = *open_.marks;
    uint64_t marked = db_->GetLatestSequenceNumber();
    std::unique_lock lock(signal.mu);
    while (!signal.stop) {
      signal.cv.wait_for(lock, kMarkInterval, [&] { return signal.stop || signal.changed; });
      if (signal.stop) break;
      bool changed = std::exchange(signal.changed, false);
      lock.unlock();
      if (!write_failed_.load(std::memory_order_acquire)) {
        // Bounds what a crash leaves to recover: the records lag the readings by one interval.
        // Not while writes fail: resuming is for the writes to try (MaybeResume).
        std::lock_guard write_lock(write_mu_);
        if (Status s = PersistLocked(); !s.ok()) Warn(s);
      }
      uint64_t sequence = db_->GetLatestSequenceNumber();
      if ((changed || sequence != marked) && Mark()) marked = sequence;
      if (Status s = SweepRegistry(/*when_due=*/true); !s.ok()) Warn(s);
      lock.lock();
    }
  }

  OpenDb open_;
  rocksdb::DB* db_;
  rocksdb::WriteOptions write_options_;
  // Persisted records need no fsync of their own (storage.sync or not): lost in a crash, they
  // leave META#fold "dirty" (written before them, synced with its readings), and the open recovers.
  // So a read that persists a record never waits for the disk.
  const rocksdb::WriteOptions persist_options_;
  std::mutex write_mu_;
  const bool writable_ = open_.marks != nullptr;
  bool fold_clean_ = true;  // under write_mu_: the store's kFoldKey does not say "dirty"
  internal::PriorValues priors_;  // under write_mu_
  std::vector<internal::KeyWrite> writes_;  // Write's, under write_mu_: reused, see PriorValues::Plan
  rocksdb::WriteBatch batch_;               // Write's, under write_mu_: cleared, so it keeps its room
  internal::Registry registry_;   // under write_mu_
  internal::Rollups rollups_;     // under write_mu_
  mutable std::mutex index_mu_;   // open_.building, built_ and backfilled_ after the open
  std::vector<double> built_;
  std::vector<bool> backfilled_;
  std::atomic<bool> stop_backfill_{false};
  std::thread backfill_;

  static constexpr std::chrono::seconds kResumeInterval{1};
  std::atomic<bool> write_failed_{false};
  std::mutex resume_mu_;
  std::chrono::steady_clock::time_point last_resume_{};

  static constexpr std::chrono::seconds kMarkInterval{5};
  static constexpr std::chrono::seconds kSweepInterval{3600};
  std::mutex sweep_mu_;
  std::chrono::steady_clock::time_point last_sweep_{};  // under sweep_mu_
  std::thread marker_;  // last: started once everything above is in place
};

std::shared_ptr<rocksdb::Statistics> NewStatistics() {
  auto stats = rocksdb::CreateDBStatistics();
  stats->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  return stats;
}

// Reads each index's state: a declared index is ready, or being built from where its backfill
// stopped (a new one on a store that holds readings from the start); entries of an index no
// longer declared, or declared with other keys, are removed (DeleteRange of its own key range:
// the readings are elsewhere). `read_only`: the states are only read, so that an index the store
// has not built is refused rather than answered from the entries it has.
Status OpenIndexes(rocksdb::DB* db, OpenDb* open, bool read_only) {
  std::map<std::string, std::string> states;
  {
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
    for (it->Seek(internal::kIndexStatePrefix); it->Valid() && it->key().starts_with(internal::kIndexStatePrefix);
         it->Next()) {
      states[it->key().ToString().substr(internal::kIndexStatePrefix.size())] = it->value().ToString();
    }
    if (!it->status().ok()) return FromRocks(it->status(), "index states");
  }
  bool any_reading = false;
  {
    const std::string end = ReadingsEnd();
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
    it->Seek(std::string(kPartitionPrefix));
    any_reading = it->Valid();
    if (!it->status().ok()) return FromRocks(it->status(), "index states");
  }
  rocksdb::WriteBatch batch;
  auto drop = [&](const std::string& name) {
    const std::string begin = IndexPrefix(name), end = begin + '\xff';
    batch.DeleteRange(begin, end);
    open->dropped_indexes.push_back(name);
  };
  std::string resume;  // the earliest of the building indexes'
  bool any_building = false;
  for (const IndexSpec& spec : open->indexes) {
    auto state = states.find(spec.name);
    const std::string prefix = SpecText(spec) + "\n";
    bool building = false;
    std::string from;
    if (state != states.end() && state->second.starts_with(prefix)) {
      const std::string rest = state->second.substr(prefix.size());
      building = rest != "ready";
      if (building) from = rest.substr(std::min(rest.size(), std::string("building\n").size()));
      states.erase(state);
    } else {
      if (state != states.end()) {
        drop(spec.name);
        states.erase(state);
      }
      building = any_reading;
      batch.Put(IndexStateKey(spec.name), prefix + (building ? "building\n" : "ready"));
    }
    open->building.push_back(building);
    if (building) {
      resume = any_building ? std::min(resume, from) : from;
      any_building = true;
    }
  }
  for (const auto& [name, value] : states) {
    drop(name);
    batch.Delete(IndexStateKey(name));
  }
  open->backfill_from = resume;
  if (read_only) {
    open->dropped_indexes.clear();  // nothing was
    return Status::OK();
  }
  if (batch.Count() == 0) return Status::OK();
  return FromRocks(db->Write(rocksdb::WriteOptions(), &batch), "index states");
}

// `create`: a new store in a directory that holds at most its marker. `adopt`: a store of an
// earlier readingsd, without a marker; it gets one once its first mark is written.
Status OpenWritable(const StoreOptions& options, OpenDb open, bool create, bool adopt, std::unique_ptr<Store>* store) {
  open.retention = options.retention;
  open.retention_cutoff = std::make_shared<internal::RetentionCutoff>();
  rocksdb::Options o = internal::MakeOptions(options, open.stats, /*writable=*/true, open.retention_cutoff);
  o.create_if_missing = create;
  open.wal_filter = std::make_shared<internal::WalGapFilter>();
  o.wal_filter = open.wal_filter.get();
  open.marks = std::make_shared<MarkSignal>();
  o.listeners.push_back(std::make_shared<StoreEvents>(open.marks, open.tally));
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(o, options.path, &raw);
  if (!s.ok()) {
    if (s.ToString().find("lock") != std::string::npos) {
      return Status::Busy("data dir " + options.path + " is in use by another process (" + s.ToString() + ")");
    }
    std::string gap = open.wal_filter->gap().empty() ? "" : " (" + open.wal_filter->gap() + ")";
    return FromRocks(s, "cannot open data dir " + options.path + gap);
  }
  open.db.reset(raw);
  if (create) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = open.db->Put(wo, std::string(internal::kFormatKey), std::string(internal::kFormatValue));
    if (!s.ok()) return FromRocks(s, "cannot initialise data dir " + options.path);
  }
  // The table id, made once: a store without one (new, or written before it existed) gets it now.
  s = open.db->Get(rocksdb::ReadOptions(), std::string(internal::kTableIdKey), &open.table_id);
  if (s.IsNotFound()) {
    open.table_id = internal::NewUuid();
    // Not synced here: the mark taken next syncs the WAL (one fsync at open, not two).
    s = open.db->Put(rocksdb::WriteOptions(), std::string(internal::kTableIdKey), open.table_id);
  }
  if (!s.ok()) return FromRocks(s, "table id in data dir " + options.path);
  if (Status m = internal::TakeMark(open.db.get(), options.path, open.id); !m.ok()) return m;
  if (adopt) {
    if (Status m = internal::WriteMarker(options.path, {std::string(internal::kFormatValue), open.id}); !m.ok()) return m;
  }
  open.path = options.path;
  open.sync = options.sync;
  open.indexes = options.indexes;
  open.backfill_batch = std::max<std::size_t>(1, options.index_backfill_batch);
  open.delete_batch = std::max<std::size_t>(1, options.delete_batch);
  open.rollup_seconds = options.rollup_seconds;
  if (Status st = OpenIndexes(open.db.get(), &open, /*read_only=*/false); !st.ok()) return st;
  auto opened = std::make_unique<RocksStore>(std::move(open));
  if (Status s = opened->Start(); !s.ok()) return s;
  *store = std::move(opened);
  return Status::OK();
}

}  // namespace

Status Store::Open(const StoreOptions& options, std::unique_ptr<Store>* store) {
  if (Status s = ValidateRollupSeconds(options.rollup_seconds); !s.ok()) return s;
  internal::DirState dir;
  if (Status s = internal::InspectDir(options.path, &dir); !s.ok()) return s;
  OpenDb open;
  open.stats = NewStatistics();
  open.id = dir.marker ? dir.marker->id : internal::NewStoreId();
  // A store is created only in a missing or empty directory, or to finish a creation cut off
  // after its first step, the marker.
  if (dir.entries.empty() || (dir.marker && !dir.mark && !dir.has_current)) {
    if (options.read_only) return Status::NotFound("data dir " + options.path + " holds no store");
    std::error_code ec;
    std::filesystem::create_directories(options.path, ec);
    if (ec) return Status::IOError("cannot create data dir " + options.path + ": " + ec.message());
    if (Status s = internal::WriteMarker(options.path, {std::string(internal::kFormatValue), open.id}); !s.ok()) {
      return s;
    }
    return OpenWritable(options, std::move(open), /*create=*/true, /*adopt=*/false, store);
  }
  if (!dir.marker && !dir.has_current) return Status::InvalidArgument(internal::ForeignDir(options.path, dir.entries));

  // Checked read-only first: until it passes, nothing in the directory changes.
  internal::Probe probe;
  internal::OpenProbe(options, open.stats, &probe);
  Status io_error;
  auto problems = internal::Check(options.path, dir, probe, &io_error);
  if (!problems.empty()) return internal::Refusal(options.path, dir, probe, problems);
  if (!io_error.ok()) return io_error;
  if (probe.format.empty()) {
    return Status::InvalidArgument("data dir " + options.path + " is not a readingsd store (a RocksDB database without " +
                                   "readingsd's format key); nothing in it was changed");
  }
  if (probe.format != internal::kFormatValue) {
    return Status::InvalidArgument("data dir " + options.path + " holds key format \"" + probe.format +
                                   "\", this readingsd reads \"" + std::string(internal::kFormatValue) + "\"");
  }
  if (options.read_only) {
    open.indexes = options.indexes;  // a read-only open builds nothing
    open.db = std::move(probe.db);
    if (Status st = OpenIndexes(open.db.get(), &open, /*read_only=*/true); !st.ok()) return st;
    open.db->Get(rocksdb::ReadOptions(), std::string(internal::kTableIdKey), &open.table_id);
    // The granule its records were kept with: a read-only open changes nothing.
    std::string granule;
    if (open.db->Get(rocksdb::ReadOptions(), std::string(internal::kRollupsKey), &granule).ok()) {
      open.rollup_seconds = internal::RollupSecondsOf(granule);
    }
    // Records that may lag the readings (a daemon writing, or one that crashed): aggregates
    // read the readings instead.
    std::string fold;
    if (open.db->Get(rocksdb::ReadOptions(), std::string(internal::kFoldKey), &fold).ok() &&
        fold == internal::kFoldDirty) {
      open.rollup_seconds = 0;
    }
    open.wal_filter = std::move(probe.wal_filter);
    *store = std::make_unique<RocksStore>(std::move(open));
    return Status::OK();
  }
  probe.db.reset();
  return OpenWritable(options, std::move(open), /*create=*/false, /*adopt=*/!dir.marker, store);
}

}  // namespace readingsd::storage
