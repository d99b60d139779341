// Declared secondary indexes, as DynamoDB's global secondary indexes: another partition and sort
// key over the same readings, so a fleet-wide question ("every reading above 30 °C in this
// hour") reads one index partition instead of every device. Entries live beside the readings
// (storage/key.h, indexKey) and are written in the same WriteBatch (Store::Write).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "storage/key.h"
#include "storage/reading.h"

namespace readingsd::storage {

// The index's partition key: a time bucket of readingTs, or a string attribute.
enum class IndexPartition { kReadingHour, kReadingDay, kAttribute };
// The index's sort key: a number or string attribute, or readingTs.
enum class IndexSort { kNumber, kString, kReadingTs };

inline constexpr std::string_view kReadingHourAttribute = "readingHour";  // "2026-06-23T08"
inline constexpr std::string_view kReadingDayAttribute = "readingDay";    // "2026-06-23"
inline constexpr int kMaxIndexShards = 256;

struct IndexSpec {
  std::string name;  // 3..255 bytes of [A-Za-z0-9_.-]
  IndexPartition partition = IndexPartition::kReadingHour;
  std::string partition_attribute;  // kAttribute: a string attribute
  IndexSort sort = IndexSort::kNumber;
  std::string sort_attribute;  // kNumber, kString
  // 1 = unsharded; n spreads one partition value over "value#0" .. "value#n-1" by the hash of
  // the reading's key, so that one hour's writes are not one hot partition.
  int shards = 1;

  // The names the index's keys go by in items and key conditions.
  std::string_view PartitionName() const;
  std::string_view SortName() const;

  bool operator==(const IndexSpec&) const = default;
};

// InvalidArgument naming what is wrong with a declaration (name, attribute names, shards).
Status ValidateIndexSpec(const IndexSpec& spec);

// The bucket of a sort key an index partitions by (kReadingHour: "2026-06-23T08").
std::string TimeBucket(IndexPartition partition, std::string_view sort_key);

// The key of a reading's entry in `spec`, or false when the reading lacks one of the key
// attributes or holds it with another type (a sparse index, as in DynamoDB).
bool IndexEntryKey(const IndexSpec& spec, std::string_view device_id, std::string_view sort_key,
                   std::span<const AttributeView> attributes, std::string* key);
// The partition value, with its shard suffix ("2026-06-23T08#3"), that the reading's entry in
// `spec` is filed under, or false when it has none: which index partition a write loads, for the
// hotness metrics.
bool IndexEntryPartition(const IndexSpec& spec, std::string_view device_id, std::string_view sort_key,
                         std::span<const AttributeView> attributes, std::string* partition);

}  // namespace readingsd::storage
