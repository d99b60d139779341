// What readingsd keeps beside RocksDB's files in a data dir, and the checks Store::Open runs
// on a store before anything may change it (docs/storage-integrity.md). Internal to storage/.
//
//   READINGSD  the marker: this directory is a readingsd store (key format, store id). A
//              non-empty directory without it is not opened, so a typo in storage.data_dir
//              is never turned into a store.
//   HIGHWATER  the high-water mark: what the store durably held at the last check point
//              (after every flush and compaction, every few seconds while written, at a clean
//              stop). A store that holds less than its mark went backwards and is refused.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/statistics.h>
#include <rocksdb/wal_filter.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::storage::internal {

inline constexpr std::string_view kMarkerFile = "READINGSD";
inline constexpr std::string_view kHighWaterFile = "HIGHWATER";
// Stored inside RocksDB too: a store written before the marker existed is recognised by it.
inline constexpr std::string_view kFormatKey = "META#format";
inline constexpr std::string_view kFormatValue = "readingsd-keys-v1";
// The table id (Store::TableId), written once beside the format key.
inline constexpr std::string_view kTableIdKey = "META#table-id";
// META#index#<name>: a declared index's state, "<spec>\nready" or "<spec>\nbuilding\n<reading
// key to resume its backfill at>" (<spec>: what its entries were built by; another one rebuilds).
inline constexpr std::string_view kIndexStatePrefix = "META#index#";

struct Marker {
  std::string format;
  std::string id;  // random, fixed at creation: a HIGHWATER from another store is noticed
};

struct LiveFile {
  std::string name;  // "000123.sst"
  uint64_t bytes = 0;
};

struct HighWater {
  std::string id;
  std::string written;  // UTC, for messages
  // Every write up to this sequence number was durable (WAL synced) when the mark was taken.
  uint64_t sequence = 0;
  // The MANIFEST CURRENT named and how many of its bytes were synced. A MANIFEST only grows
  // and is replaced by a higher-numbered one, so a shorter or older one lost version edits.
  std::string manifest;
  uint64_t manifest_bytes = 0;
  uint64_t readings = 0;        // RocksDB's estimate of the keys, for messages
  std::vector<LiveFile> files;  // the live SST files, for messages
};

// The directory as found, read without RocksDB.
struct DirState {
  std::vector<std::string> entries;  // names, sorted; empty also when the directory is missing
  std::optional<Marker> marker;
  std::optional<HighWater> mark;
  bool has_current = false;
  std::string manifest;                   // named by CURRENT
  std::optional<uint64_t> manifest_bytes;  // nullopt: that file does not exist
};
// IOError when the directory or one of readingsd's files cannot be read, Corruption when one
// of them is malformed.
Status InspectDir(const std::string& path, DirState* state);

// Stops recovery at a gap in the WAL's sequence numbers: a zeroed block is skipped by RocksDB's
// log reader without any error, and the writes in it would be lost without a word.
class WalGapFilter : public rocksdb::WalFilter {
 public:
  WalProcessingOption LogRecordFound(unsigned long long log_number, const std::string& log_file_name,
                                     const rocksdb::WriteBatch& batch, rocksdb::WriteBatch* new_batch,
                                     bool* batch_changed) override;
  const char* Name() const override { return "readingsd.WalGapFilter"; }
  // "" when the records were contiguous.
  const std::string& gap() const { return gap_; }

 private:
  uint64_t next_ = 0;
  std::string gap_;
};

// A read-only open of the store, which writes nothing: no LOG, no LOCK, no OPTIONS file.
struct Probe {
  std::shared_ptr<WalGapFilter> wal_filter;  // outlives db, which holds a raw pointer to it
  std::unique_ptr<rocksdb::DB> db;           // null when the open failed
  rocksdb::Status status;
  std::string format;  // the format key's value, "" if absent
  uint64_t sequence = 0;
  uint64_t readings = 0;
  std::vector<LiveFile> files;
};
void OpenProbe(const StoreOptions& options, std::shared_ptr<rocksdb::Statistics> stats, Probe* probe);

// Every way the store falls short of its mark or cannot be read; empty when it passed.
// `io_error` is set when the only trouble is the file system (permissions, not damage).
std::vector<std::string> Check(const std::string& path, const DirState& dir, const Probe& probe, Status* io_error);
// The refusal: every problem, what it still holds, and what the operator can do.
Status Refusal(const std::string& path, const DirState& dir, const Probe& probe,
               const std::vector<std::string>& problems);

// Why a non-empty directory without a marker is not opened, naming what is in it.
std::string ForeignDir(const std::string& path, const std::vector<std::string>& entries);

// Written atomically: a temp file, fsync, rename, fsync of the directory.
Status WriteMarker(const std::string& dir, const Marker& marker);
std::string NewStoreId();
// A random (version 4) UUID: 8-4-4-4-12 lower-case hex digits.
std::string NewUuid();
// The current UTC time in strftime's `format`.
std::string UtcNow(const char* format);
// Syncs the WAL and the MANIFEST, then writes what they now durably hold as the new mark.
// `sync_wal` false for a store without a WAL to sync (right after a repair).
Status TakeMark(rocksdb::DB* db, const std::string& dir, const std::string& id, bool sync_wal = true);

}  // namespace readingsd::storage::internal
