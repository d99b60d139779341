#include "storage/index.h"

#include <algorithm>

#include "base/hash.h"

namespace readingsd::storage {

std::string_view IndexSpec::PartitionName() const {
  switch (partition) {
    case IndexPartition::kReadingHour: return kReadingHourAttribute;
    case IndexPartition::kReadingDay: return kReadingDayAttribute;
    case IndexPartition::kAttribute: break;
  }
  return partition_attribute;
}

std::string_view IndexSpec::SortName() const {
  return sort == IndexSort::kReadingTs ? kReadingTsAttribute : std::string_view(sort_attribute);
}

Status ValidateIndexSpec(const IndexSpec& spec) {
  const bool name_ok = spec.name.size() >= 3 && spec.name.size() <= 255 &&
                       std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '_' || c == '-' || c == '.';
                       });
  if (!name_ok) {
    return Status::InvalidArgument("index name must be 3..255 characters of a-z A-Z 0-9 _ - . (as DynamoDB), got \"" +
                                   spec.name + "\"");
  }
  auto attribute_ok = [](std::string_view a) {
    return !a.empty() && a.size() <= kMaxAttributeNameLength && a != kDeviceIdAttribute &&
           a != kReadingTsAttribute && a != kReadingHourAttribute && a != kReadingDayAttribute;
  };
  if (spec.partition == IndexPartition::kAttribute && !attribute_ok(spec.partition_attribute)) {
    return Status::InvalidArgument("index partition must be readingHour, readingDay or an attribute name, got \"" +
                                   spec.partition_attribute + "\"");
  }
  if (spec.sort != IndexSort::kReadingTs && !attribute_ok(spec.sort_attribute)) {
    return Status::InvalidArgument("index sort must be readingTs or an attribute name, got \"" + spec.sort_attribute +
                                   "\"");
  }
  if (spec.partition == IndexPartition::kAttribute && spec.sort != IndexSort::kReadingTs &&
      spec.partition_attribute == spec.sort_attribute) {
    return Status::InvalidArgument("index partition and sort must be different attributes");
  }
  if (spec.shards < 1 || spec.shards > kMaxIndexShards) {
    return Status::InvalidArgument("index shards must be 1.." + std::to_string(kMaxIndexShards) + ", got " +
                                   std::to_string(spec.shards));
  }
  return Status::OK();
}

std::string TimeBucket(IndexPartition partition, std::string_view sort_key) {
  // "YYYY-MM-DDTHH" and "YYYY-MM-DD" are prefixes of the fixed-width sort key.
  return std::string(sort_key.substr(0, partition == IndexPartition::kReadingDay ? 10 : 13));
}

namespace {

// The partition value (with its shard suffix) and the sort value of a reading's entry, or false
// when it has none.
bool EntryKeyParts(const IndexSpec& spec, std::string_view device_id, std::string_view sort_key,
                   std::span<const AttributeView> attributes, std::string* partition, IndexValue* sort) {
  auto find = [&attributes](std::string_view name) -> const AttributeView* {
    auto it = std::find_if(attributes.begin(), attributes.end(), [name](const AttributeView& a) { return a.name == name; });
    return it == attributes.end() ? nullptr : &*it;
  };
  if (spec.partition == IndexPartition::kAttribute) {
    const AttributeView* a = find(spec.partition_attribute);
    const auto* s = a == nullptr ? nullptr : std::get_if<std::string_view>(&a->value);
    if (s == nullptr || s->empty()) return false;
    *partition = *s;
  } else {
    *partition = TimeBucket(spec.partition, sort_key);
  }
  if (spec.sort == IndexSort::kReadingTs) {
    sort->text = sort_key;
  } else {
    const AttributeView* a = find(spec.sort_attribute);
    if (a == nullptr) return false;
    if (spec.sort == IndexSort::kNumber) {
      const auto* n = std::get_if<NumberView>(&a->value);
      if (n == nullptr) return false;
      Number number = n->ToNumber();
      // A value written before numbers were exact may hold a double outside DynamoDB's range.
      if (!ParseNumber(number.text, &sort->text).ok()) return false;
      sort->is_number = true;
    } else {
      const auto* s = std::get_if<std::string_view>(&a->value);
      if (s == nullptr || s->empty()) return false;
      sort->text = *s;
    }
  }
  if (spec.shards > 1) {
    *partition += '#';
    *partition += std::to_string(Hash64(EncodeKey(device_id, sort_key)) % static_cast<uint64_t>(spec.shards));
  }
  return true;
}

}  // namespace

bool IndexEntryKey(const IndexSpec& spec, std::string_view device_id, std::string_view sort_key,
                   std::span<const AttributeView> attributes, std::string* key) {
  std::string partition;
  IndexValue sort;
  if (!EntryKeyParts(spec, device_id, sort_key, attributes, &partition, &sort)) return false;
  *key = EncodeIndexKey(spec.name, partition, sort, device_id, sort_key);
  return true;
}

bool IndexEntryPartition(const IndexSpec& spec, std::string_view device_id, std::string_view sort_key,
                         std::span<const AttributeView> attributes, std::string* partition) {
  IndexValue sort;
  return EntryKeyParts(spec, device_id, sort_key, attributes, partition, &sort);
}

}  // namespace readingsd::storage
