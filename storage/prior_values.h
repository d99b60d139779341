// What each write of Store::Write replaces: a new key, or an overwrite of which old value. What
// is derived from a reading (secondary index entries, the device registry) must remove what the
// old value put there, in the same WriteBatch. Internal to storage/.
#pragma once

#include <rocksdb/db.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/reading.h"

namespace readingsd::storage::internal {

// One reading of a batch as Store::Write puts it.
struct KeyWrite {
  const Reading* reading = nullptr;  // the caller's (Plan returns the writes in batch order)
  std::string key;                   // EncodeKey(device id, sort key)
  std::string value;                 // EncodeAttributes(attributes)
  // nullopt: the key is new. Otherwise the encoded value this write replaces: the stored one, or,
  // for a key written twice in one batch, the value of its earlier write in that batch.
  std::optional<std::string> prior;
  // Newer than every key of its device, stored or earlier in the batch: ingest's common case,
  // which the registry and the rollups keep in memory (docs/device-registry.md).
  bool newest = false;
};

// Finds the prior of every write of a batch, reading as little as it can. It keeps each device's
// newest stored sort key in memory (one entry per device written since the open, seeded on its
// first write from the partition's last key: one seek per device), so a reading newer than that
// is known to be new without a read: ingest's common case, as each device's readings arrive in
// time order. Any other reading is looked up, all of a batch's in one MultiGet. Retention only
// removes keys, so the newest key stays an upper bound of what is stored.
//
// Not thread-safe: Plan, the write of the batch and Commit must run under one lock, so that no
// other write changes the keys between the lookup and the write.
class PriorValues {
 public:
  // `db` holds the readings under storage/key.h's keys (in its default column family).
  explicit PriorValues(rocksdb::DB* db) : db_(db) {}

  // `writes` gets one KeyWrite per reading, in order, with key, value and prior. The readings
  // must be valid (ValidateReading) and outlive `writes`. Pass the same vector every time: its
  // elements are reused, so their keys and values are encoded without allocating.
  Status Plan(std::span<const Reading> readings, std::vector<KeyWrite>* writes);
  // The batch of the last Plan is written: its keys count as stored from now on. Not called when
  // the write failed.
  void Commit();

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  struct Device {
    std::string stored;  // the newest stored sort key, "" when it has none
    // The newest sort key of the Plan numbered `plan`, stored or in its batch (a view of
    // `stored` or of a reading, valid until the next Plan).
    uint64_t plan = 0;
    std::string_view planned;
  };
  // The device, read from the store on first use.
  Status Find(std::string_view device_id, Device** device);

  rocksdb::DB* db_;
  std::unordered_map<std::string, Device, Hash, std::equal_to<>> devices_;
  // Each Plan's number, its devices, and what it looks up; kept so a batch allocates nothing.
  uint64_t plan_ = 0;
  std::vector<Device*> planned_;
  std::vector<std::size_t> lookups_;
  std::vector<std::pair<std::string_view, std::size_t>> by_key_;
};

}  // namespace readingsd::storage::internal
