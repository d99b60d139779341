// Store: readings in RocksDB under the keys of storage/key.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/index.h"
#include "storage/reading.h"

namespace readingsd::storage {

struct StoreOptions {
  std::string path = "./data";
  // fsync the WAL on every write: survives power loss, not only a process crash.
  bool sync = false;
  // Readings older than this are dropped by compaction (0 = keep forever).
  std::chrono::seconds retention{0};
  std::size_t block_cache_bytes = 64u << 20;
  std::size_t write_buffer_bytes = 64u << 20;
  // Opens beside a running daemon (no lock, sees what was written up to the open): for backup
  // and offline inspection. Writes fail.
  bool read_only = false;
  // Declared secondary indexes (storage/index.h), valid and with distinct names: every write
  // keeps their entries in its own WriteBatch.
  std::vector<IndexSpec> indexes;
  // An index declared on a store that holds readings is backfilled in the background, this many
  // readings per WriteBatch (each taken under the write lock, so writes wait at most one batch).
  std::size_t index_backfill_batch = 1000;
  // DeleteReadings removes this many readings per WriteBatch (each under the write lock, so
  // writes wait at most one batch, and memory stays bounded however large the range).
  std::size_t delete_batch = 1000;
  // Rollups (storage/rollup.h): each device's readings summarised per granule of this many
  // seconds at write time (storage/rollups.h), so an aggregate whose step is a multiple of it reads
  // one record per granule. 0 = none (an open with 0 removes a store's records); otherwise a
  // divisor of 86400. Opening a store with another granule rebuilds them from later writes.
  // 5 minutes: a day's 5-minute buckets read 288 records (RocksDB's cost per key read is most
  // of an aggregate's at 60 s), and ingest Puts a record per 30 readings of 10 s, not per 6.
  int64_t rollup_seconds = 300;

  bool operator==(const StoreOptions&) const = default;
};

// Operational figures for the exporter, read from RocksDB properties.
struct StoreStats {
  uint64_t sst_bytes = 0;
  uint64_t memtable_bytes = 0;
  uint64_t pending_compaction_bytes = 0;
  uint64_t estimated_keys = 0;
  uint64_t stall_micros = 0;
  uint64_t block_cache_misses = 0;  // cumulative: data, index and filter blocks read from files
  // The block cache holds index and filter blocks too, so its usage grows towards its capacity
  // as data is written, queried or not: RSS levels off only once it is full.
  uint64_t block_cache_bytes = 0;
  uint64_t block_cache_capacity_bytes = 0;
  // Checksum mismatches and other corruption met since the open (queries, writes, compactions):
  // a damaged file that the checks at open cannot see. `last_corruption` names the file.
  uint64_t corruption_errors = 0;
  std::string last_corruption;
  // Cumulative fsyncs of the WAL: one per write while options.sync is on (and one when a new
  // store is initialised).
  uint64_t wal_syncs = 0;
  // Indexes whose entries the open removed: no longer declared, or declared with other keys
  // (then rebuilt). Never a reading.
  std::vector<std::string> dropped_indexes;
};

// A declared index and how far it is built.
struct IndexStatus {
  IndexSpec spec;
  // False while an index declared on a store that already held readings is being backfilled:
  // writes keep it up to date meanwhile, but it does not yet hold every reading.
  bool active = true;
  double built = 1;  // share of the readings backfilled, 0..1
  // True once a backfill of this open finished: however fast it was, the daemon can say so.
  bool backfilled = false;
};

// A device as the device registry records it at write time (docs/device-registry.md).
struct DeviceSummary {
  std::string device_id;
  std::string first_sort_key, last_sort_key;  // its oldest and newest reading
  // Its readings: an overwrite counts once; under retention, those at or after the cutoff of the
  // last retention sweep.
  uint64_t readings = 0;
  std::string latest;  // the encoded attributes (DecodeAttributes) of the reading at last_sort_key
};

// Readings of one partition within [lower, upper) sort keys, in key (= time) order.
// Not thread-safe; one per reader.
class PartitionIterator {
 public:
  virtual ~PartitionIterator() = default;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  virtual void Seek(std::string_view sort_key) = 0;         // first >= sort_key
  virtual void SeekForPrev(std::string_view sort_key) = 0;  // last <= sort_key
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual std::string_view sort_key() const = 0;
  virtual std::string_view encoded_attributes() const = 0;  // see DecodeAttributes
  virtual Status status() const = 0;
};

// Readings of every partition in key order: by device id (bytewise), then by sort key. For
// Scan, which reads the whole table. Not thread-safe; one per reader. A key in the readings'
// range that does not decode ends the iteration with Corruption (status()).
class TableIterator {
 public:
  virtual ~TableIterator() = default;
  virtual void SeekToFirst() = 0;
  // The first reading at or after the key of (device_id, sort_key). `sort_key` may be "" (the
  // partition's start), a sort key + '\0' (just past it) or kSortKeyEnd (past the partition).
  virtual void Seek(std::string_view device_id, std::string_view sort_key) = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual std::string_view device_id() const = 0;
  virtual std::string_view sort_key() const = 0;
  virtual std::string_view encoded_attributes() const = 0;  // see DecodeAttributes
  virtual Status status() const = 0;
};

// Thread-safe: any method from any thread at once (the ingest thread writes while the HTTP
// threads read).
class Store {
 public:
  // Opens the store at options.path, creating one in a missing or empty directory. Nothing in
  // the directory changes until the store passed its checks (storage/store_dir.h): a non-empty
  // directory without readingsd's marker is InvalidArgument; a store that went backwards
  // against its high-water mark, or whose MANIFEST or WAL is damaged beyond a torn final
  // record, is Corruption; a locked one is Busy. Never a crash.
  static Status Open(const StoreOptions& options, std::unique_ptr<Store>* store);
  virtual ~Store() = default;

  // Put overwrites a reading with the same device id and sort key (as DynamoDB PutItem), so a
  // redelivered reading is stored once. Validates device id, sort key and attributes.
  virtual Status Put(const Reading& reading) = 0;
  // All readings in one atomic WriteBatch: when it returns OK they are in the WAL (and synced
  // when options.sync). Writes run one at a time. Nothing is written when any reading is invalid. After an I/O error
  // (e.g. the disk is full) writes keep failing until the store can resume, which Write
  // tries by itself at most once a second: they succeed again once space is freed.
  virtual Status Write(std::span<const Reading> readings) = 0;
  // Deletes the readings of `device_id` with sort keys in [lower, upper) (bounds as NewIterator's),
  // options.delete_batch at a time: each WriteBatch removes its readings, their index entries
  // and brings the device's registry record (count, first, last, latest) up to date, so a crash
  // between batches leaves a store that is consistent, with a prefix of the range deleted.
  // Serialised with Write. `progress`, if set, is called after each batch is written with the
  // readings that batch removed. `*deleted` counts every reading removed, also when it fails.
  virtual Status DeleteReadings(std::string_view device_id, std::string_view lower, std::string_view upper,
                                const std::function<void(uint64_t removed)>& progress, uint64_t* deleted) = 0;
  // NotFound when absent.
  virtual Status Get(std::string_view device_id, std::string_view sort_key, Reading* reading) const = 0;

  // Empty `lower` = start of the partition, empty `upper` = its end. Bounds are byte strings
  // compared with sort keys (a prefix works).
  virtual std::unique_ptr<PartitionIterator> NewIterator(std::string_view device_id,
                                                         std::string_view lower,
                                                         std::string_view upper) const = 0;

  // The entries of one partition of index `index_name` (partition value with its shard suffix)
  // in [lower, upper) of what follows the partition's prefix in their keys: value(sort) deviceId
  // SEP sortKey (storage/key.h). The iterator's sort_key() is that tail, its
  // encoded_attributes() the reading's value. Empty bounds = the partition's start / end.
  virtual std::unique_ptr<PartitionIterator> NewIndexIterator(std::string_view index_name, std::string_view partition,
                                                              std::string_view lower, std::string_view upper) const = 0;
  // The indexes the store was opened with, in declaration order.
  virtual std::vector<IndexStatus> Indexes() const = 0;

  // The granule the store's rollups are kept with (storage/rollup.h), 0 when it has none.
  virtual int64_t RollupSeconds() const { return 0; }
  // The rollup records of one device (storage/key.h) in [lower, upper) of their granule's sort
  // key: the floor record first (sort_key() ""; lower "" includes it), then one per granule in
  // time order; encoded_attributes() is the record (ReadRollup, ReadRollupFloor). nullptr for a
  // store without rollups.
  virtual std::unique_ptr<PartitionIterator> NewRollupIterator(std::string_view /*device_id*/,
                                                               std::string_view /*lower*/,
                                                               std::string_view /*upper*/) const {
    return nullptr;
  }

  // Every partition's readings, in key order (see TableIterator).
  virtual std::unique_ptr<TableIterator> NewTableIterator() const = 0;

  // Devices in id order from the device registry, without reading their partitions: those whose
  // id begins with `prefix` and sorts after `after` ("" = from the first), at most `limit`. A
  // device with no reading left (retention) is not listed.
  virtual Status ListDevices(std::string_view prefix, std::string_view after, std::size_t limit,
                             std::vector<DeviceSummary>* devices) const = 0;

  // A UUID made when the store was first opened writable by a readingsd that knew it, and kept
  // in the store (a checkpoint keeps it): DescribeTable's TableId. "" for a read-only open of a
  // store that has none yet.
  virtual std::string TableId() const = 0;

  virtual StoreStats Stats() const = 0;
  // Consistent on-disk copy (RocksDB checkpoint: hard links where possible) in a new directory.
  virtual Status Checkpoint(const std::string& dir) const = 0;
  // Sweeps the device registry (retention), flushes memtables and compacts everything
  // (retention applies): for operators and tests.
  virtual Status CompactAll() = 0;
};

}  // namespace readingsd::storage
