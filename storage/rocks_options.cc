#include "storage/rocks_options.h"

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <sys/time.h>

#include "storage/key.h"

namespace readingsd::storage::internal {
namespace {

// The partition key with its separator ("DEV#id\0") is the bloom-filter prefix: a Query touches
// one partition, so SST files without it are skipped without reading their blocks.
class PartitionPrefix : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "readingsd.PartitionPrefix.v1"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    std::string_view k(key.data(), key.size());
    return rocksdb::Slice(key.data(), k.find(kSeparator) + 1);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    std::string_view k(key.data(), key.size());
    return k.starts_with(kPartitionPrefix) && k.find(kSeparator) != std::string_view::npos;
  }
};

// Where a memtable insert starts its search (memtable_insert_with_hint_prefix_extractor): one
// place per partition for readings, which arrive in time order per device; one per key space for
// the registry and rollup records, which each batch writes in key order (Registry::Plan,
// Rollups::Plan), each a few versions past the one before. Without a hint every such record,
// one or two per reading when a batch spreads over many devices, searches the whole memtable
// from its top level. A hint only saves comparisons: the skiplist checks it against the key's
// neighbours and searches from higher up when it does not bracket the key. A write group that
// RocksDB inserts in parallel (allow_concurrent_memtable_write, its default, when writers' batches
// meet; the store's writes mostly take its write lock) inserts without hints.
//
// No key a DeleteRange begins at may be in the domain: RocksDB before 9.2 keeps one hint per
// prefix for the point keys' skiplist and the range tombstones' alike (fixed upstream in 9.2),
// so a tombstone's hint would be taken for a point key, which would then be linked into the
// tombstones' list and lost. The store's range deletions begin at "ROL#" alone
// (Rollups::Prepare) and at "IDX#" name SEP (a dropped index): a rollup key needs its SEP, a
// registry key its device id, and no index key is hinted.
class InsertHintPrefix : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "readingsd.InsertHintPrefix.v1"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    std::string_view k(key.data(), key.size());
    if (k.starts_with(kPartitionPrefix)) return rocksdb::Slice(key.data(), k.find(kSeparator) + 1);
    return rocksdb::Slice(key.data(), kRegistryPrefix.size());  // "REG#" or "ROL#" (the assert below)
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    std::string_view k(key.data(), key.size());
    if (k.starts_with(kPartitionPrefix) || k.starts_with(kRollupPrefix)) {
      return k.find(kSeparator) != std::string_view::npos;
    }
    return k.starts_with(kRegistryPrefix) && k.size() > kRegistryPrefix.size();
  }
};
static_assert(kRegistryPrefix.size() == kRollupPrefix.size());

// RocksDB's own info LOG writer (EnvLogger) asserts on the first write after a failed one, and
// Debian's librocksdb 7.8 is built with assertions: the second LOG line after the disk fills
// aborted the process (WritableFileWriter::AssertFalseAndGetStatusForPrevError). This one
// appends to the same LOG file with stdio and drops what it cannot write. Past kMaxBytes the
// LOG becomes LOG.old (replacing the one before).
class InfoLog : public rocksdb::Logger {
 public:
  // nullptr when the file cannot be opened: RocksDB then opens its own and reports why. Creates
  // `dir` (not its parents) if missing, as RocksDB would.
  static std::shared_ptr<InfoLog> Open(const std::string& dir) {
    std::error_code ignored;
    std::filesystem::create_directory(dir, ignored);
    auto log = std::make_shared<InfoLog>(dir + "/LOG");
    return log->file_ == nullptr ? nullptr : log;
  }
  explicit InfoLog(std::string path) : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), path_(std::move(path)) {
    Reopen();
  }
  ~InfoLog() override {
    if (file_ != nullptr) std::fclose(file_);
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    timeval now;
    gettimeofday(&now, nullptr);
    std::tm t;
    localtime_r(&now.tv_sec, &t);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y/%m/%d-%H:%M:%S", &t);
    std::lock_guard lock(mu_);
    if (file_ == nullptr) return;
    std::fprintf(file_, "%s.%06ld ", stamp, static_cast<long>(now.tv_usec));
    std::vfprintf(file_, format, ap);
    std::fputc('\n', file_);
    std::fflush(file_);
    if (std::ftell(file_) > kMaxBytes) {
      std::fclose(file_);
      std::error_code ignored;
      std::filesystem::rename(path_, path_ + ".old", ignored);
      Reopen();
    }
  }

 private:
  static constexpr long kMaxBytes = 16L << 20;
  void Reopen() { file_ = std::fopen(path_.c_str(), "ae"); }

  const std::string path_;
  std::mutex mu_;
  std::FILE* file_ = nullptr;
};

// After a hard error (the WAL or a flush hit a full disk) RocksDB stops writes. Left alone, its
// SstFileManager resumes only once write_buffer_size x max_write_buffer_number (128 MiB here)
// is free, polling every 5 s, and DB::Resume() meanwhile returns Busy. The store resumes from
// Write instead (RocksStore::MaybeResume), which needs only the space to flush the memtable.
class ResumeFromWrites : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "readingsd.ResumeFromWrites"; }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status bg_error, bool* auto_recovery) override {
    if (bg_error.severity() == rocksdb::Status::Severity::kHardError) *auto_recovery = false;
  }
};

// Drops readings whose sort key is older than the retention cutoff while compaction rewrites
// them anyway: retention costs no scan. Index entries go with their readings: their keys end
// with the reading's key. A rollup record goes once its whole granule is older than the cutoff
// (the sweep has raised its device's floor past it already); a floor record stays.
class RetentionFilter : public rocksdb::CompactionFilter {
 public:
  RetentionFilter(std::string cutoff, int64_t rollup_seconds) : cutoff_(std::move(cutoff)) {
    if (rollup_seconds > 0 && !cutoff_.empty() &&
        !SortKeyAtWholeSeconds(SortKeyWholeSeconds(cutoff_) - rollup_seconds, &last_expired_granule_)) {
      last_expired_granule_.clear();
    }
  }
  const char* Name() const override { return "readingsd.RetentionFilter"; }
  bool Filter(int, const rocksdb::Slice& key, const rocksdb::Slice&, std::string*, bool*) const override {
    const std::string_view k(key.data(), key.size());
    std::string_view device, sort_key;
    if (DecodeKey(k, &device, &sort_key)) return sort_key < cutoff_;
    IndexKey entry;
    if (DecodeIndexKey(k, &entry)) return entry.sort_key < cutoff_;
    return DecodeRollupKey(k, &device, &sort_key) && !sort_key.empty() && sort_key <= last_expired_granule_;
  }

 private:
  std::string cutoff_;
  std::string last_expired_granule_;  // a granule starting at or before it ends at or before cutoff_
};

class RetentionFilterFactory : public rocksdb::CompactionFilterFactory {
 public:
  RetentionFilterFactory(std::chrono::seconds retention, int64_t rollup_seconds,
                         std::shared_ptr<const RetentionCutoff> cutoff)
      : retention_(retention), rollup_seconds_(rollup_seconds), cutoff_(std::move(cutoff)) {}
  const char* Name() const override { return "readingsd.RetentionFilterFactory"; }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context&) override {
    return std::make_unique<RetentionFilter>(
        cutoff_ ? cutoff_->Get() : SortKeyAt(std::chrono::system_clock::now() - retention_), rollup_seconds_);
  }

 private:
  std::chrono::seconds retention_;
  int64_t rollup_seconds_;
  std::shared_ptr<const RetentionCutoff> cutoff_;
};

rocksdb::CompressionType Preferred(std::initializer_list<rocksdb::CompressionType> wanted) {
  auto supported = rocksdb::GetSupportedCompressions();
  for (auto c : wanted) {
    if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
  }
  return rocksdb::kNoCompression;
}

}  // namespace

Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(context) + ": " + s.ToString();
  if (s.IsNoSpace()) msg += " (the data dir's disk is full; writes resume once space is freed)";
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  return Status::IOError(msg);
}

std::unique_ptr<rocksdb::Iterator> RangeIterator(rocksdb::DB* db, const rocksdb::Slice& lower,
                                                 const rocksdb::Slice& upper) {
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower;
  ro.iterate_upper_bound = &upper;
  ro.total_order_seek = true;
  return std::unique_ptr<rocksdb::Iterator>(db->NewIterator(ro));
}

rocksdb::Options MakeOptions(const StoreOptions& options, std::shared_ptr<rocksdb::Statistics> stats,
                             bool writable, std::shared_ptr<const RetentionCutoff> cutoff) {
  rocksdb::Options o;
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  o.max_background_jobs = 2;
  o.write_buffer_size = options.write_buffer_bytes;
  o.level_compaction_dynamic_level_bytes = true;
  // Sensor values compress well; LZ4 keeps upper levels cheap, ZSTD the cold bottom.
  o.compression = Preferred({rocksdb::kLZ4Compression, rocksdb::kSnappyCompression});
  o.bottommost_compression = Preferred({rocksdb::kZSTD, rocksdb::kLZ4Compression});
  // Each bottom-level file trains a 16 KB ZSTD dictionary from samples of its blocks, so every
  // block is compressed with what all of them share (attribute names, device ids, the digits of
  // timestamps) instead of learning it anew: 2 M readings 7.73 -> 6.13 MB, compaction +4 %.
  // ZSTD level 6 on top saved 28 % more but made compaction 1.8x slower (bench/README.md,
  // finding 29). Files written before keep reading as they are.
  o.bottommost_compression_opts.enabled = true;
  o.bottommost_compression_opts.max_dict_bytes = 16 << 10;
  o.bottommost_compression_opts.zstd_max_train_bytes = 100 * (16 << 10);
  o.prefix_extractor = std::make_shared<PartitionPrefix>();
  o.memtable_prefix_bloom_size_ratio = 0.05;
  // No filter in the last level, which holds ~90 % of the readings: a window finds its device
  // there, and a GetItem mostly asks for a reading that exists, so it reads the data block anyway
  // (a miss now reads one too). That filter cost 1.25 bytes per reading on disk, and as much in
  // the block cache, where each new file's filter is loaded when compaction opens it.
  o.optimize_filters_for_hits = true;
  // Each device's readings arrive in time order, so its next key goes right after its last one:
  // a per-partition insert hint makes the memtable insert near O(1) instead of a full skiplist
  // search among every other device's keys (InsertHintPrefix).
  o.memtable_insert_with_hint_prefix_extractor = std::make_shared<InsertHintPrefix>();
  o.statistics = std::move(stats);
  if (writable) {
    o.info_log = InfoLog::Open(options.path);
    o.listeners.push_back(std::make_shared<ResumeFromWrites>());
  }

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;  // point reads (GetItem) use the same filter
  // Index and filter blocks live in the block cache, not beside it: otherwise every SST file
  // pins its own for as long as it is open, and memory grows with the data, not with the
  // cache's size. They are partitioned into metadata_block_size pieces because a whole filter
  // of a bottom-level file (megabytes) is larger than one cache shard: it was evicted as soon as
  // it was used and re-read by every query (25 ms for a 600-reading window instead of 0.1 ms).
  // The small top-level index of each file stays pinned, as do L0's; the rest is evicted last.
  table.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  // Readings of one device compress far better in 16 KB blocks than in the default 4 KB: 2 M
  // readings take 9.7 MB instead of 17.1 MB (8 KB: 12.5, 32 KB: 7.4), and a 600-reading window
  // costs the same. The price is a coarser cache: a device's newest readings pin 16 KB of it.
  table.block_size = 16 * 1024;
  table.pin_top_level_index_and_filter = true;
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  if (options.retention.count() > 0) {
    o.compaction_filter_factory = std::make_shared<RetentionFilterFactory>(options.retention, options.rollup_seconds,
                                                                           std::move(cutoff));
    // Files that no write touches still get rewritten (and so expired) at least daily.
    o.periodic_compaction_seconds = 24 * 3600;
  }
  return o;
}

}  // namespace readingsd::storage::internal
