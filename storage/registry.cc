#include "storage/registry.h"

#include <algorithm>
#include <vector>

#include "storage/key.h"
#include "storage/rocks_options.h"

namespace readingsd::storage::internal {
namespace {

constexpr char kRecordVersion = 'r';

void PutShort(std::string_view s, std::string* out) {
  out->push_back(static_cast<char>(s.size()));
  out->append(s);
}

bool GetShort(std::string_view* in, std::string* s) {
  if (in->empty()) return false;
  const std::size_t n = static_cast<unsigned char>(in->front());
  if (n != 0 && n != kSortKeyLength) return false;
  if (in->size() < 1 + n) return false;
  s->assign(in->substr(1, n));
  in->remove_prefix(1 + n);
  return true;
}

// The first key after every key that begins with `prefix`.
std::string PrefixEnd(std::string_view prefix) { return std::string(prefix) + kSortKeyEnd; }

// The first reading in the keys [lower, upper) of one partition, or with `last` the last: its
// sort key and, when `value` is given, its value. *none when the range holds no reading.
Status Edge(rocksdb::DB* db, const std::string& lower, const std::string& upper, bool last, bool* none,
            std::string* sort_key, std::string* value) {
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db, lower_slice, upper_slice);
  if (last) {
    it->SeekToLast();
  } else {
    it->SeekToFirst();
  }
  if (Status s = FromRocks(it->status(), "deleting from the device registry"); !s.ok()) return s;
  std::string_view device, key;
  *none = !it->Valid() || !DecodeKey(std::string_view(it->key().data(), it->key().size()), &device, &key);
  if (*none) return Status::OK();
  sort_key->assign(key);
  if (value != nullptr) value->assign(it->value().data(), it->value().size());
  return Status::OK();
}

}  // namespace

void EncodeDeviceRecord(const DeviceRecord& record, std::string* out) {
  out->clear();
  out->push_back(kRecordVersion);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(record.readings >> (8 * i)));
  PutShort(record.first, out);
  PutShort(record.last, out);
  PutShort(record.horizon, out);
  out->append(record.latest);
}

Status DecodeDeviceRecord(std::string_view in, DeviceRecord* record) {
  const Status bad = Status::Corruption("a device registry record does not decode");
  if (in.size() < 9 || in[0] != kRecordVersion) return bad;
  record->readings = 0;
  for (int i = 0; i < 8; ++i) record->readings |= uint64_t{static_cast<unsigned char>(in[1 + i])} << (8 * i);
  in.remove_prefix(9);
  if (!GetShort(&in, &record->first) || !GetShort(&in, &record->last) || !GetShort(&in, &record->horizon)) {
    return bad;
  }
  record->latest.assign(in);
  return Status::OK();
}

Status Registry::BuildIfMissing() {
  std::string built;
  auto s = db_->Get(rocksdb::ReadOptions(), std::string(kRegistryBuiltKey), &built);
  if (s.ok() && built == kRegistryBuiltValue) return Status::OK();
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "reading the device registry's state");

  const std::string lower(kPartitionPrefix), upper = PrefixEnd(kPartitionPrefix);
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db_, lower_slice, upper_slice);
  rocksdb::WriteBatch batch;
  std::string device, value;
  DeviceRecord record;
  auto flush = [&]() -> Status {
    if (device.empty()) return Status::OK();
    EncodeDeviceRecord(record, &value);
    if (auto put = batch.Put(RegistryKey(device), value); !put.ok()) return FromRocks(put, "device registry");
    if (batch.Count() < 1000) return Status::OK();
    Status written = FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "building the device registry");
    batch.Clear();
    return written;
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view id, sort_key;
    if (!DecodeKey(std::string_view(it->key().data(), it->key().size()), &id, &sort_key)) continue;
    if (id != device) {
      if (Status f = flush(); !f.ok()) return f;
      device.assign(id);
      record = DeviceRecord();
      record.first.assign(sort_key);
    }
    ++record.readings;
    record.last.assign(sort_key);
    record.latest.assign(it->value().data(), it->value().size());
  }
  if (Status st = FromRocks(it->status(), "building the device registry"); !st.ok()) return st;
  if (Status f = flush(); !f.ok()) return f;
  batch.Put(std::string(kRegistryBuiltKey), std::string(kRegistryBuiltValue));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "building the device registry");
}

Status Registry::Load(std::string_view device_id, DeviceRecord* record) const {
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), RegistryKey(device_id), &value);
  if (s.IsNotFound()) {
    *record = DeviceRecord();
    record->horizon = horizon_;
    return Status::OK();
  }
  if (!s.ok()) return FromRocks(s, "reading the device registry");
  return DecodeDeviceRecord(value, record);
}

Status Registry::Find(std::string_view device_id, Records::value_type** kept) {
  auto it = records_.find(device_id);
  if (it == records_.end()) {
    DeviceRecord loaded;
    if (Status s = Load(device_id, &loaded); !s.ok()) return s;
    it = records_.emplace(device_id, Kept{.record = std::move(loaded)}).first;
  }
  *kept = &*it;
  return Status::OK();
}

void Registry::StartPlan() {
  ++plan_;
  pending_.clear();
}

DeviceRecord& Registry::Planned(Records::value_type* kept) {
  Kept& k = kept->second;
  if (k.plan != plan_) {
    k.plan = plan_;
    k.planned = k.record;
    k.put = false;
    pending_.push_back(kept);
  }
  return k.planned;
}

Status Registry::Plan(std::span<const KeyWrite> writes, rocksdb::WriteBatch* batch) {
  StartPlan();
  Records::value_type* kept = nullptr;
  for (const KeyWrite& w : writes) {
    const Reading& reading = *w.reading;
    // A batch's readings often come device after device: the previous one's record is at hand.
    if (kept == nullptr || kept->first != reading.device_id) {
      if (Status s = Find(reading.device_id, &kept); !s.ok()) return s;
    }
    DeviceRecord& r = Planned(kept);
    // Any other than the device's newest is written with its record: Recover finds only those.
    if (!w.newest) kept->second.put = true;
    if (reading.sort_key < r.horizon) continue;  // retention has it already
    // An overwrite counts nothing, unless the record counts no reading at all.
    if (!w.prior || r.readings == 0) {
      if (r.readings == 0 || reading.sort_key < r.first) r.first = reading.sort_key;
      ++r.readings;
    }
    if (reading.sort_key >= r.last) {
      r.last = reading.sort_key;
      r.latest = w.value;
    }
  }
  // In key order, so each goes into the memtable a step past the one before (rocks_options.cc,
  // InsertHintPrefix), not from the top of it.
  const auto by_id = [](const Records::value_type* a, const Records::value_type* b) { return a->first < b->first; };
  if (!std::is_sorted(pending_.begin(), pending_.end(), by_id)) std::sort(pending_.begin(), pending_.end(), by_id);
  for (const Records::value_type* planned : pending_) {
    if (!planned->second.put) continue;
    EncodeDeviceRecord(planned->second.planned, &value_);
    if (auto s = batch->Put(RegistryKey(planned->first), value_); !s.ok()) return FromRocks(s, "write batch");
  }
  return Status::OK();
}

Status Registry::PlanDelete(std::string_view device_id, std::span<const std::string> removed,
                            rocksdb::WriteBatch* batch) {
  StartPlan();
  if (removed.empty()) return Status::OK();
  Records::value_type* kept = nullptr;
  if (Status s = Find(device_id, &kept); !s.ok()) return s;
  DeviceRecord& r = Planned(kept);
  kept->second.put = true;
  const std::string &lo = removed.front(), &hi = removed.back();
  const auto counted = static_cast<uint64_t>(
      std::count_if(removed.begin(), removed.end(), [&r](const std::string& k) { return k >= r.horizon; }));
  r.readings -= std::min(counted, r.readings);
  // The counted readings are those at or after the horizon, from `first` to `last`: a removed
  // `first` gives way to the next stored key after `hi`, a removed `last` to the one before `lo`.
  bool emptied = r.readings == 0;
  if (!emptied && r.first >= lo && r.first <= hi) {
    Status s = Edge(db_, EncodeKey(device_id, hi) + '\0', EncodeKey(device_id, std::string(1, kSortKeyEnd)),
                    /*last=*/false, &emptied, &r.first, nullptr);
    if (!s.ok()) return s;
  }
  if (!emptied && r.last >= lo && r.last <= hi) {
    Status s = Edge(db_, EncodeKey(device_id, ""), EncodeKey(device_id, lo), /*last=*/true, &emptied, &r.last, &r.latest);
    if (!s.ok()) return s;
  }
  if (emptied) {
    std::string horizon = std::move(r.horizon);
    r = DeviceRecord();
    r.horizon = std::move(horizon);
  }
  EncodeDeviceRecord(r, &value_);
  if (auto s = batch->Put(RegistryKey(device_id), value_); !s.ok()) return FromRocks(s, "write batch");
  return Status::OK();
}

void Registry::Commit() {
  for (Records::value_type* planned : pending_) {
    Kept& k = planned->second;
    std::swap(k.record, k.planned);
    k.dirty = !k.put;
    if (k.dirty && !k.listed) {
      k.listed = true;
      dirty_.push_back(planned);
    }
  }
  pending_.clear();
}

Status Registry::PlanPersist(rocksdb::WriteBatch* batch) {
  const auto by_id = [](const Records::value_type* a, const Records::value_type* b) { return a->first < b->first; };
  std::sort(dirty_.begin(), dirty_.end(), by_id);
  for (const Records::value_type* kept : dirty_) {
    if (!kept->second.dirty) continue;
    EncodeDeviceRecord(kept->second.record, &value_);
    if (auto s = batch->Put(RegistryKey(kept->first), value_); !s.ok()) return FromRocks(s, "write batch");
  }
  return Status::OK();
}

void Registry::CommitPersist() {
  for (Records::value_type* kept : dirty_) kept->second.dirty = kept->second.listed = false;
  dirty_.clear();
}

Status Registry::Recover(std::string_view device_id, rocksdb::WriteBatch* batch) {
  DeviceRecord r;
  if (Status s = Load(device_id, &r); !s.ok()) return s;
  // In the common case a write is its device's newest: after `last`. Older ones were written
  // with the record.
  std::string lower = EncodeKey(device_id, r.last) + '\0';
  if (!r.horizon.empty()) lower = std::max(lower, EncodeKey(device_id, r.horizon));
  const std::string upper = EncodeKey(device_id, std::string(1, kSortKeyEnd));
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db_, lower_slice, upper_slice);
  uint64_t added = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view id, sort_key;
    if (!DecodeKey(std::string_view(it->key().data(), it->key().size()), &id, &sort_key)) continue;
    if (r.readings == 0 && added == 0) r.first.assign(sort_key);
    ++added;
    r.last.assign(sort_key);
    r.latest.assign(it->value().data(), it->value().size());
  }
  if (Status s = FromRocks(it->status(), "recovering the device registry"); !s.ok()) return s;
  if (added == 0) return Status::OK();
  r.readings += added;
  EncodeDeviceRecord(r, &value_);
  if (auto s = batch->Put(RegistryKey(device_id), value_); !s.ok()) return FromRocks(s, "write batch");
  return Status::OK();
}

Status Registry::Sweep(const std::string& cutoff, std::mutex& write_mu, const rocksdb::WriteOptions& write_options,
                       Rollups* rollups, const std::function<Status()>& persist_locked) {
  {
    std::lock_guard lock(write_mu);
    horizon_ = std::max(horizon_, cutoff);
    rollups->SetHorizon(cutoff);
    // Every device written so far gets a stored record to be found by below; those written
    // from now on start at the cutoff.
    if (Status s = persist_locked(); !s.ok()) return s;
  }
  // The devices to sweep, read without the lock; each is checked again under it.
  std::vector<std::string> devices;
  {
    const std::string lower(kRegistryPrefix), upper = PrefixEnd(kRegistryPrefix);
    const rocksdb::Slice lower_slice(lower), upper_slice(upper);
    auto it = RangeIterator(db_, lower_slice, upper_slice);
    DeviceRecord record;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view id;
      if (!DecodeRegistryKey(std::string_view(it->key().data(), it->key().size()), &id)) continue;
      if (Status s = DecodeDeviceRecord(std::string_view(it->value().data(), it->value().size()), &record); !s.ok()) {
        return s;
      }
      if (record.horizon < cutoff) devices.emplace_back(id);
    }
    if (Status s = FromRocks(it->status(), "sweeping the device registry"); !s.ok()) return s;
  }
  std::string value;
  for (const std::string& id : devices) {
    std::lock_guard lock(write_mu);
    Records::value_type* kept = nullptr;
    if (Status s = Find(id, &kept); !s.ok()) return s;
    DeviceRecord* record = &kept->second.record;
    if (record->horizon >= cutoff) continue;
    DeviceRecord swept = *record;
    swept.horizon = cutoff;
    if (swept.readings > 0 && swept.first < cutoff) {
      const std::string lower = EncodeKey(id, swept.first), upper = EncodeKey(id, std::string(1, kSortKeyEnd));
      const std::string end = EncodeKey(id, cutoff);
      const rocksdb::Slice lower_slice(lower), upper_slice(upper);
      auto it = RangeIterator(db_, lower_slice, upper_slice);
      uint64_t expired = 0;
      for (it->SeekToFirst(); it->Valid() && it->key().compare(end) < 0; it->Next()) ++expired;
      if (Status s = FromRocks(it->status(), "sweeping the device registry"); !s.ok()) return s;
      std::string_view device, sort_key;
      if (it->Valid() && DecodeKey(std::string_view(it->key().data(), it->key().size()), &device, &sort_key)) {
        swept.first.assign(sort_key);
        swept.readings -= std::min(expired, swept.readings);
      } else {
        swept = DeviceRecord();
        swept.horizon = cutoff;
      }
    }
    rocksdb::WriteBatch batch;
    EncodeDeviceRecord(swept, &value);
    batch.Put(RegistryKey(id), value);
    if (Status s = rollups->PlanSweep(id, cutoff, &batch); !s.ok()) return s;
    if (Status s = FromRocks(db_->Write(write_options, &batch), "sweeping the device registry"); !s.ok()) return s;
    rollups->Commit();
    *record = std::move(swept);
    kept->second.dirty = false;
  }
  return Status::OK();
}

}  // namespace readingsd::storage::internal
