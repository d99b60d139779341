#include "storage/store.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/checkpoint.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "storage/key.h"
#include "storage/prior_values.h"
#include "storage/rocks_options.h"
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

class RocksPartitionIterator : public PartitionIterator {
 public:
  RocksPartitionIterator(rocksdb::DB* db, CorruptionTally* tally, std::string_view device_id, std::string_view lower,
                         std::string_view upper)
      : prefix_(EncodeKey(device_id, "")),
        it_(db, tally, prefix_ + std::string(lower),
            prefix_ + (upper.empty() ? std::string(1, kSortKeyEnd) : std::string(upper)), /*prefix_bloom=*/true) {}

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
};

class RocksStore : public Store {
 public:
  explicit RocksStore(OpenDb open) : open_(std::move(open)), db_(open_.db.get()), priors_(db_) {
    write_options_.sync = open_.sync;
    if (open_.marks) marker_ = std::thread([this] { MarkLoop(); });
  }

  ~RocksStore() override {
    if (marker_.joinable()) {
      {
        std::lock_guard lock(open_.marks->mu);
        open_.marks->stop = true;
      }
      open_.marks->cv.notify_one();
      marker_.join();
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
    std::vector<internal::KeyWrite> writes;
    if (Status s = priors_.Plan(readings, &writes); !s.ok()) return s;
    rocksdb::WriteBatch batch;
    for (const internal::KeyWrite& w : writes) {
      if (auto s = batch.Put(w.key, w.value); !s.ok()) return FromRocks(s, "write batch");
    }
    MaybeResume();
    auto s = db_->Write(write_options_, &batch);
    if (s.IsIOError()) write_failed_ = true;
    open_.tally->Record(s);
    if (s.ok()) priors_.Commit(writes);
    return FromRocks(s, "write");
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
    return std::make_unique<RocksPartitionIterator>(db_, open_.tally.get(), device_id, lower, upper);
  }

  std::unique_ptr<TableIterator> NewTableIterator() const override {
    return std::make_unique<RocksTableIterator>(db_, open_.tally.get());
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
    return st;
  }

  Status Checkpoint(const std::string& dir) const override {
    rocksdb::Checkpoint* raw = nullptr;
    if (auto s = rocksdb::Checkpoint::Create(db_, &raw); !s.ok()) return FromRocks(s, "checkpoint");
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    if (auto s = checkpoint->CreateCheckpoint(dir); !s.ok()) return FromRocks(s, "checkpoint into " + dir);
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
    if (auto s = db_->Flush(rocksdb::FlushOptions()); !s.ok()) return FromRocks(s, "flush");
    rocksdb::CompactRangeOptions options;
    options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    return FromRocks(db_->CompactRange(options, nullptr, nullptr), "compact");
  }

 private:
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

  // A failed mark (a full disk) leaves the previous one, which the store still satisfies. None
  // is tried while writes fail: nothing new is durable then, and a SyncWAL on a store stopped by
  // a full disk changed how it came back (writes went through again on a disk still full,
  // tests/daemon/faults_test.cc); resuming is MaybeResume's alone.
  bool Mark() {
    if (write_failed_.load(std::memory_order_acquire)) return false;
    Status s = internal::TakeMark(db_, open_.path, open_.id);
    if (!s.ok()) rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, db_->GetDBOptions().info_log, "readingsd: %s", s.ToString().c_str());
    return s.ok();
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
      uint64_t sequence = db_->GetLatestSequenceNumber();
      if ((changed || sequence != marked) && Mark()) marked = sequence;
      lock.lock();
    }
  }

  OpenDb open_;
  rocksdb::DB* db_;
  rocksdb::WriteOptions write_options_;
  std::mutex write_mu_;
  internal::PriorValues priors_;  // under write_mu_

  static constexpr std::chrono::seconds kResumeInterval{1};
  std::atomic<bool> write_failed_{false};
  std::mutex resume_mu_;
  std::chrono::steady_clock::time_point last_resume_{};

  static constexpr std::chrono::seconds kMarkInterval{5};
  std::thread marker_;  // last: started once everything above is in place
};

std::shared_ptr<rocksdb::Statistics> NewStatistics() {
  auto stats = rocksdb::CreateDBStatistics();
  stats->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  return stats;
}

// `create`: a new store in a directory that holds at most its marker. `adopt`: a store of an
// earlier readingsd, without a marker; it gets one once its first mark is written.
Status OpenWritable(const StoreOptions& options, OpenDb open, bool create, bool adopt, std::unique_ptr<Store>* store) {
  rocksdb::Options o = internal::MakeOptions(options, open.stats, /*writable=*/true);
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
  *store = std::make_unique<RocksStore>(std::move(open));
  return Status::OK();
}

}  // namespace

Status Store::Open(const StoreOptions& options, std::unique_ptr<Store>* store) {
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
    open.db = std::move(probe.db);
    open.db->Get(rocksdb::ReadOptions(), std::string(internal::kTableIdKey), &open.table_id);
    open.wal_filter = std::move(probe.wal_filter);
    *store = std::make_unique<RocksStore>(std::move(open));
    return Status::OK();
  }
  probe.db.reset();
  return OpenWritable(options, std::move(open), /*create=*/false, /*adopt=*/!dir.marker, store);
}

}  // namespace readingsd::storage
