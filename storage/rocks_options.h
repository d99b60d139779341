// RocksDB options and status mapping shared by the store, its integrity checks and the
// operator's verify and repair. Internal to storage/.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/status.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::storage::internal {

Status FromRocks(const rocksdb::Status& s, std::string_view context);

// An iterator over the keys in [lower, upper) in total order (across partitions); the slices
// must outlive it.
std::unique_ptr<rocksdb::Iterator> RangeIterator(rocksdb::DB* db, const rocksdb::Slice& lower,
                                                 const rocksdb::Slice& upper);

// Where a store's compaction takes its retention cutoff from, instead of the clock: the cutoff
// of the device registry's last sweep (storage/registry.h), so that no reading a record still
// counts is dropped. "" (before the first sweep) drops nothing. Thread-safe.
class RetentionCutoff {
 public:
  std::string Get() const {
    std::lock_guard lock(mu_);
    return cutoff_;
  }
  void Set(std::string cutoff) {
    std::lock_guard lock(mu_);
    cutoff_ = std::move(cutoff);
  }

 private:
  mutable std::mutex mu_;
  std::string cutoff_;
};

// The options every open of a store uses. `writable`: a read-write open, which gets readingsd's
// info LOG and resumes after a full disk; a read-only one writes nothing at all, not even a LOG.
// Never creates a store (create_if_missing is false) and never drops WAL records silently:
// a torn final record (a write cut off by a crash, never acknowledged) is all it tolerates.
// With `cutoff`, retention drops readings older than it; without, older than
// options.retention before now.
rocksdb::Options MakeOptions(const StoreOptions& options, std::shared_ptr<rocksdb::Statistics> stats,
                             bool writable, std::shared_ptr<const RetentionCutoff> cutoff = nullptr);

}  // namespace readingsd::storage::internal
