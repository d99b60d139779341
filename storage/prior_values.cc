#include "storage/prior_values.h"

#include <algorithm>

#include "storage/key.h"
#include "storage/rocks_options.h"

namespace readingsd::storage::internal {

Status PriorValues::Plan(std::span<const Reading> readings, std::vector<KeyWrite>* writes) {
  ++plan_;
  planned_.clear();
  lookups_.clear();
  writes->resize(readings.size());
  for (std::size_t i = 0; i < readings.size(); ++i) {
    const Reading& r = readings[i];
    KeyWrite& w = (*writes)[i];
    w.reading = &r;
    EncodeKey(r.device_id, r.sort_key, &w.key);
    EncodeAttributes(r.attributes, &w.value);
    w.prior.reset();
    w.newest = false;
    Device* device = nullptr;
    if (Status s = Find(r.device_id, &device); !s.ok()) return s;
    if (device->plan != plan_) {
      device->plan = plan_;
      device->planned = device->stored;
      planned_.push_back(device);
    }
    // Newer than every key of its device, stored or written earlier in the batch: new. Any other
    // may overwrite a stored key or an earlier write of the batch.
    if (r.sort_key > device->planned) {
      device->planned = r.sort_key;
      w.newest = true;
    } else {
      lookups_.push_back(i);
    }
  }
  if (lookups_.empty()) return Status::OK();

  // A key written earlier in the batch replaces that write, the latest of them: with the keys in
  // order (a key's writes in batch order), it is the one just before. Only a lookup can be one,
  // as an earlier write of its key leaves its device's newest at or above it.
  by_key_.clear();
  for (std::size_t i = 0; i < writes->size(); ++i) by_key_.emplace_back((*writes)[i].key, i);
  std::sort(by_key_.begin(), by_key_.end());
  for (std::size_t p = 1; p < by_key_.size(); ++p) {
    if (by_key_[p].first == by_key_[p - 1].first) {
      (*writes)[by_key_[p].second].prior = (*writes)[by_key_[p - 1].second].value;
    }
  }
  std::erase_if(lookups_, [writes](std::size_t i) { return (*writes)[i].prior.has_value(); });
  if (lookups_.empty()) return Status::OK();

  std::vector<rocksdb::Slice> keys;
  keys.reserve(lookups_.size());
  for (std::size_t i : lookups_) keys.emplace_back((*writes)[i].key);
  std::vector<rocksdb::PinnableSlice> values(lookups_.size());
  std::vector<rocksdb::Status> statuses(lookups_.size());
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), keys.size(), keys.data(), values.data(),
                statuses.data());
  for (std::size_t j = 0; j < lookups_.size(); ++j) {
    if (statuses[j].IsNotFound()) continue;
    if (!statuses[j].ok()) return FromRocks(statuses[j], "looking up the value a write replaces");
    (*writes)[lookups_[j]].prior = values[j].ToString();
  }
  return Status::OK();
}

void PriorValues::Commit() {
  for (Device* device : planned_) {
    if (device->planned != device->stored) device->stored.assign(device->planned);
  }
  planned_.clear();
}

Status PriorValues::Find(std::string_view device_id, Device** device) {
  if (auto it = devices_.find(device_id); it != devices_.end()) {
    *device = &it->second;
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
  *device = &devices_.emplace(device_id, Device{}).first->second;
  (*device)->stored = std::move(last);
  return Status::OK();
}

}  // namespace readingsd::storage::internal
