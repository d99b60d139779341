#include "storage/prior_values.h"

#include "storage/key.h"
#include "storage/rocks_options.h"

namespace readingsd::storage::internal {

Status PriorValues::Plan(std::span<const Reading> readings, std::vector<KeyWrite>* writes) {
  writes->clear();
  writes->reserve(readings.size());
  for (const Reading& r : readings) {
    KeyWrite& w = writes->emplace_back();
    w.reading = &r;
    w.key = EncodeKey(r.device_id, r.sort_key);
    EncodeAttributes(r.attributes, &w.value);
  }
  // Each device's newest sort key so far (the stored one, then this batch's), and each key's
  // latest write so far in this batch. Views into `writes` and newest_, which do not move.
  std::unordered_map<std::string_view, std::string_view> newest;
  std::unordered_map<std::string_view, std::size_t> latest_write;
  std::vector<std::size_t> lookups;
  for (std::size_t i = 0; i < writes->size(); ++i) {
    KeyWrite& w = (*writes)[i];
    auto [earlier, first_write] = latest_write.try_emplace(w.key, i);
    if (!first_write) {
      w.prior = (*writes)[earlier->second].value;
      earlier->second = i;
      continue;
    }
    auto [device, unseen] = newest.try_emplace(w.reading->device_id);
    if (unseen) {
      const std::string* stored = nullptr;
      if (Status s = Newest(w.reading->device_id, &stored); !s.ok()) return s;
      device->second = *stored;
    }
    if (w.reading->sort_key > device->second) {
      device->second = w.reading->sort_key;
    } else {
      lookups.push_back(i);
    }
  }
  if (lookups.empty()) return Status::OK();

  std::vector<rocksdb::Slice> keys;
  keys.reserve(lookups.size());
  for (std::size_t i : lookups) keys.emplace_back((*writes)[i].key);
  std::vector<rocksdb::PinnableSlice> values(lookups.size());
  std::vector<rocksdb::Status> statuses(lookups.size());
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), keys.size(), keys.data(), values.data(),
                statuses.data());
  for (std::size_t j = 0; j < lookups.size(); ++j) {
    if (statuses[j].IsNotFound()) continue;
    if (!statuses[j].ok()) return FromRocks(statuses[j], "looking up the value a write replaces");
    (*writes)[lookups[j]].prior = values[j].ToString();
  }
  return Status::OK();
}

void PriorValues::Commit(std::span<const KeyWrite> writes) {
  for (const KeyWrite& w : writes) {
    auto it = newest_.find(w.reading->device_id);
    if (it == newest_.end()) it = newest_.emplace(w.reading->device_id, std::string()).first;
    if (w.reading->sort_key > it->second) it->second = w.reading->sort_key;
  }
}

Status PriorValues::Newest(std::string_view device_id, const std::string** newest) {
  if (auto it = newest_.find(device_id); it != newest_.end()) {
    *newest = &it->second;
    return Status::OK();
  }
  const std::string lower = EncodeKey(device_id, ""), upper = EncodeKey(device_id, std::string(1, kSortKeyEnd));
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  ro.auto_prefix_mode = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  it->SeekToLast();
  std::string last;
  if (it->Valid()) last = it->key().ToString().substr(lower.size());
  if (Status s = FromRocks(it->status(), "reading a partition's newest key"); !s.ok()) return s;
  *newest = &newest_.emplace(device_id, std::move(last)).first->second;
  return Status::OK();
}

}  // namespace readingsd::storage::internal
