// The device registry: one record per device (key.h: "REG#" deviceId) with its first and last
// reading time, its reading count and its latest reading, kept by Store::Write, so listing every
// device reads no partition. A batch of readings each newer than its device's newest (ingest's
// common case) changes the records in memory only; Persist writes them (before any read of
// them), and Recover rebuilds them from the readings after a crash. Internal to storage/;
// docs/device-registry.md says how it stays exact.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/prior_values.h"
#include "storage/rollups.h"
#include "storage/store.h"

namespace readingsd::storage::internal {

inline constexpr std::string_view kRegistryBuiltKey = "META#registry";
inline constexpr std::string_view kRegistryBuiltValue = "v1";
// Whether the registry and rollup records may lag the readings (storage/key.h).
inline constexpr std::string_view kFoldKey = "META#fold";
inline constexpr std::string_view kFoldDirty = "dirty";
inline constexpr std::string_view kFoldClean = "clean";

struct DeviceRecord {
  uint64_t readings = 0;  // at or after horizon
  std::string first, last;  // sort keys; "" when readings is 0
  std::string horizon;      // readings older than this sort key are not counted ("" = none)
  std::string latest;       // encoded attributes of the reading at `last`
};
void EncodeDeviceRecord(const DeviceRecord& record, std::string* out);
Status DecodeDeviceRecord(std::string_view encoded, DeviceRecord* record);

// Not thread-safe: Plan, the write of its batch and Commit run under the store's write lock,
// which also serialises Sweep's changes with writes. Keeps the record of every device written
// since the open in memory (its latest reading included), so a write reads no record but a
// device's first.
class Registry {
 public:
  explicit Registry(rocksdb::DB* db) : db_(db) {}

  // A store that has no complete registry (written before it existed, or cut off while it was
  // built) gets one, read from every reading. Run before any write.
  Status BuildIfMissing();

  // After a crash (the store's fold marker says "dirty"), before any write: the record of
  // `device_id` as it stands in the store, plus the readings of its partition after its `last`
  // and at or after its horizon (those a write in the common case left to memory), into `batch`.
  Status Recover(std::string_view device_id, rocksdb::WriteBatch* batch);

  // Plans the new record of every device `writes` touch, kept aside until Commit. A write older
  // than its device's horizon changes nothing; a new key counts one; an overwrite counts nothing;
  // the newest key written becomes `latest`. Only the records of devices with a write that is not
  // their newest (KeyWrite::newest) go into `batch`, once each; the others are left dirty in memory.
  Status Plan(std::span<const KeyWrite> writes, rocksdb::WriteBatch* batch);
  // Adds to `batch` the record of `device_id` once `removed` is deleted in that batch: its sort
  // keys in order, every stored key of the partition from the first to the last of them. Kept
  // aside until Commit. A removed key older than the horizon was not counted; a removed first or
  // last is replaced by its stored neighbour outside `removed` (one seek each).
  Status PlanDelete(std::string_view device_id, std::span<const std::string> removed, rocksdb::WriteBatch* batch);
  // The batch of Plan or PlanDelete is written.
  void Commit();

  // Adds every dirty record to `batch`, in key order; CommitPersist once it is written.
  Status PlanPersist(rocksdb::WriteBatch* batch);
  void CommitPersist();

  // Retention: every record whose horizon is older than `cutoff` stops counting the readings
  // older than `cutoff` (counted in its partition, the only reads it makes) and takes `cutoff`
  // as its horizon; a device with no reading left keeps a record with none, which listings skip.
  // Takes `write_mu` itself, once per device, and first calls `persist_locked` under it: the
  // devices to sweep are read from the stored records. Each device's batch also raises its
  // rollup floor (Rollups::PlanSweep). Once it returned OK compaction may drop readings older
  // than `cutoff`: no record counts them any more.
  Status Sweep(const std::string& cutoff, std::mutex& write_mu, const rocksdb::WriteOptions& write_options,
               Rollups* rollups, const std::function<Status()>& persist_locked);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  struct Kept {
    DeviceRecord record;
    // The record once the batch of the Plan or PlanDelete numbered `plan` is written. Reused
    // from batch to batch, so a batch copies into strings that are already allocated.
    uint64_t plan = 0;
    DeviceRecord planned;
    bool put = false;     // the plan puts `planned` into its batch
    bool dirty = false;   // `record` is not what the store holds
    bool listed = false;  // in dirty_
  };
  using Records = std::unordered_map<std::string, Kept, Hash, std::equal_to<>>;

  // The device's record: kept, or read (a device without one gets an empty record with the
  // current horizon).
  Status Find(std::string_view device_id, Records::value_type** kept);
  Status Load(std::string_view device_id, DeviceRecord* record) const;
  // Starts Plan or PlanDelete: none of the records planned so far is written.
  void StartPlan();
  // `kept`'s planned record, a copy of its record on the plan's first touch.
  DeviceRecord& Planned(Records::value_type* kept);

  rocksdb::DB* db_;
  Records records_;
  uint64_t plan_ = 0;
  std::vector<Records::value_type*> pending_;  // the records of the last plan, until Commit
  std::vector<Records::value_type*> dirty_;    // those dirty (or once dirty) since the last persist
  std::string value_;                          // an encoded record, reused
  std::string horizon_;   // a new record's: the cutoff of the latest sweep begun
};

}  // namespace readingsd::storage::internal
