// The rollups (storage/rollup.h) kept by Store::Write, DeleteReadings and the retention sweep in
// their own WriteBatches, beside the readings and the device registry. Internal to storage/;
// docs/native-api.md "Rollups" says what stays exact and how.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/prior_values.h"
#include "storage/reading.h"
#include "storage/rollup.h"

namespace readingsd::storage::internal {

inline constexpr std::string_view kRollupsKey = "META#rollups";
// META#rollups' value for granule G (> 0): the record format, then G (storage/key.h).
std::string RollupsValue(int64_t granule_seconds);
// The granule a META#rollups value says the records were kept with, or 0 when they are of
// another format (or there are none): a reader of such a store reads the readings.
int64_t RollupSecondsOf(std::string_view rollups_value);

// A rollup record, owned: what the write path folds readings into.
struct RollupAttribute {
  std::string name;
  uint64_t count = 0, numeric_count = 0;
  ExactSum sum;
  Number min, max;
  double min_value = 0, max_value = 0;  // NumberView::ToDouble of each
  AttributeValue first, last;
  std::string first_key, last_key;
};
struct Rollup {
  bool stale = false;
  uint64_t readings = 0;
  std::vector<RollupAttribute> attributes;  // those counting nothing are not written

  // Empty again, keeping the attributes it counted (their names and room reused).
  void Reset();
};
// `scratch` is reused between calls.
void EncodeRollup(const Rollup& rollup, std::string* scratch, std::string* out);
Status DecodeRollup(std::string_view encoded, Rollup* rollup);

// Not thread-safe: Plan, PlanDelete, PlanSweep, the write of their batch and Commit run under the
// store's write lock. Keeps each device's newest granule's record (its open one) in memory (read
// once per device after an open, with its floor), so a write in time order reads no record and
// writes none: a batch Puts a granule's record when the device's newest reading moves past it
// (its final record), or when a write that is not its device's newest (KeyWrite::newest) changes
// it; the open record is left dirty until Persist. A plan folds into the open record in place (no
// copy per batch); a plan that is not committed (its write failed) has the devices it touched
// read again from the store, their dirty records rebuilt from the readings. With granule_seconds
// 0 it keeps nothing.
class Rollups {
 public:
  Rollups(rocksdb::DB* db, int64_t granule_seconds) : db_(db), granule_(granule_seconds) {}

  // At a writable open, before any write: when the store's records were kept with another
  // granule (or none: rollups off, or a store older than rollups, whose records if any were not
  // kept since), they are all removed and META#rollups records this one. Each device's floor is
  // then set at its next write, past its newest stored reading: its older readings are read
  // whole by aggregates, never summed from records that missed some.
  Status Prepare();

  // After a crash (the store's fold marker says "dirty"), before any write: every granule of
  // `device_id` from its newest stored record on (or from its floor), rebuilt from its readings,
  // into `batch`. A stale newest record stays, and the granules after it are rebuilt.
  Status Recover(std::string_view device_id, rocksdb::WriteBatch* batch);

  // Folds each reading into its granule's record: a new key adds its reading; an overwrite
  // with the same encoded value changes nothing (a redelivery); one with another value marks the
  // granule stale (a min or max cannot be taken back). A stale granule stays stale. A reading
  // older than its device's floor is left to the readings.
  Status Plan(std::span<const KeyWrite> writes, rocksdb::WriteBatch* batch);
  // `removed` as Registry::PlanDelete's: the granules wholly inside [front, back] lose their
  // record (they hold no reading any more); the two at its ends are marked stale.
  Status PlanDelete(std::string_view device_id, std::span<const std::string> removed, rocksdb::WriteBatch* batch);
  // Retention: a device's floor rises to the first granule at or after `cutoff`, so that no
  // record counts a reading compaction may drop; records below it are dropped by compaction.
  // SetHorizon(cutoff) first, under the same lock, for the devices not written yet.
  void SetHorizon(const std::string& cutoff);
  Status PlanSweep(std::string_view device_id, const std::string& cutoff, rocksdb::WriteBatch* batch);
  // The batch of the last plan is written.
  void Commit();

  // Adds every dirty open record to `batch` (of `device_id` alone, when given); CommitPersist
  // once it is written.
  Status PlanPersist(rocksdb::WriteBatch* batch, std::string_view device_id = {});
  void CommitPersist();

 private:
  static constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  struct Device {
    int64_t floor = kNoFloor;  // granules before it have no record that counts
    bool floor_stored = false;  // its floor record exists
    bool has_open = false;      // the newest granule that has a record, if any
    int64_t open_start = 0;
    Rollup open;
    // The plan that last touched it, and what that plan changes.
    uint64_t plan = 0;
    std::size_t last_slot = kNone;  // its newest slot of the plan; each slot links the one before
    int64_t planned_floor = kNoFloor;
    bool floor_planned = false;  // its floor record is in the plan's batch
    bool forget = false;  // read it again (a delete changed its records, or a plan failed)
    bool open_dirty = false;  // `open` is not what the store holds
    bool listed = false;      // in dirty_
    int64_t plan_newest = 0;  // the newest granule the plan touches
  };
  using Devices = std::unordered_map<std::string, Device, Hash, std::equal_to<>>;
  // A granule record a plan writes: the device's open one, or its own.
  struct Slot {
    Devices::value_type* device = nullptr;
    int64_t start = 0;
    std::string key;  // RollupKey of the granule
    bool in_place = false;  // the device's open record, else `own`
    Rollup own;

    Rollup& record() { return in_place ? device->second.open : own; }
    std::size_t prev = kNone;
    bool rare = false;  // a write that is not its device's newest changes it
    bool put = false;   // in the plan's batch
  };

  Status Find(std::string_view device_id, Devices::value_type** device);
  // The floor and newest record of `device_id` as stored (no floor record: kNoFloor).
  Status ReadStored(std::string_view device_id, Device* device, bool* any_record);
  // The last plan was not committed: the devices it touched are read again.
  void ForgetUncommitted();
  void StartPlan();
  Device& Touch(Devices::value_type* device);
  // The plan's record of granule `start` of `device`: kept in memory, read, or new.
  // `sort_key` is a reading's in the granule: its day is the granule's.
  // "" for the device's open record (in place).
  Status SlotOf(Devices::value_type* device, int64_t start, std::string_view sort_key, Slot** slot);
  // The start of the granule that holds `sort_key`, in seconds since 1970.
  int64_t GranuleOf(std::string_view sort_key) const;
  int64_t FirstGranuleFrom(const std::string& sort_key) const;
  std::string GranuleKey(std::string_view device_id, int64_t start) const;

  rocksdb::DB* db_;
  const int64_t granule_;
  Devices devices_;
  uint64_t plan_ = 0;
  std::vector<Devices::value_type*> touched_;  // until Commit
  std::vector<Devices::value_type*> dirty_;    // those dirty (or once dirty) since the last persist
  std::vector<Devices::value_type*> persisting_;  // PlanPersist's, until CommitPersist
  bool persist_all_ = false;
  std::vector<Slot> slots_;  // the first `used_` belong to the current plan; the rest keep their room
  std::size_t used_ = 0;
  std::vector<std::size_t> order_;  // Plan's slots in key order, reused
  int64_t horizon_floor_ = kNoFloor;
  std::string value_, scratch_;
};

}  // namespace readingsd::storage::internal
