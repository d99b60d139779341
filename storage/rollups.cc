#include "storage/rollups.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "storage/key.h"
#include "storage/rocks_options.h"
#include "storage/varint.h"

namespace readingsd::storage::internal {
namespace {

void PutKeptValue(std::string_view sort_key, const AttributeValue& value, std::string* out) {
  out->append(sort_key);
  if (const auto* n = std::get_if<Number>(&value)) {
    out->push_back('d');
    PutBytes(out, n->text);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    out->push_back('s');
    PutBytes(out, *s);
  } else {
    out->push_back(std::get<bool>(value) ? 't' : 'f');
  }
}

AttributeValue Owned(const std::variant<NumberView, std::string_view, bool>& value) {
  if (const auto* n = std::get_if<NumberView>(&value)) return n->ToNumber();
  if (const auto* s = std::get_if<std::string_view>(&value)) return std::string(*s);
  return std::get<bool>(value);
}

void EncodeFloor(int64_t seconds, std::string* out) {
  out->assign(1, 'f');
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(static_cast<uint64_t>(seconds) >> (8 * i)));
}

void Fold(const KeyWrite& w, Rollup* rollup) {
  if (rollup->stale) return;
  if (w.prior) {
    // A redelivery changes nothing; another value cannot take its old min or max back.
    if (*w.prior != w.value) {
      rollup->stale = true;
      rollup->attributes.clear();
    }
    return;
  }
  const Reading& r = *w.reading;
  ++rollup->readings;
  for (const Attribute& attribute : r.attributes) {
    auto it = std::ranges::find(rollup->attributes, attribute.name, &RollupAttribute::name);
    if (it == rollup->attributes.end()) {
      rollup->attributes.emplace_back().name = attribute.name;
      it = rollup->attributes.end() - 1;
    }
    RollupAttribute& a = *it;
    const bool first_one = a.count++ == 0;
    // Sort keys, not arrival, decide first and last: a reading may arrive late.
    if (first_one || r.sort_key < a.first_key) {
      a.first = attribute.value;
      a.first_key = r.sort_key;
    }
    if (first_one || r.sort_key > a.last_key) {
      a.last = attribute.value;
      a.last_key = r.sort_key;
    }
    NumberView number;
    if (const auto* n = std::get_if<Number>(&attribute.value)) {
      number = *n;
    } else if (const auto* b = std::get_if<bool>(&attribute.value)) {
      number = NumberView::OfCanonical(*b ? "1" : "0");
    } else {
      continue;
    }
    const bool first_number = a.numeric_count++ == 0;
    const double value = number.ToDouble();
    a.sum.Add(value);
    if (first_number || CompareNumbers(value, number, a.min_value, a.min) < 0) {
      a.min.text.clear();
      number.AppendTo(&a.min.text);
      a.min_value = value;
    }
    if (first_number || CompareNumbers(value, number, a.max_value, a.max) > 0) {
      a.max.text.clear();
      number.AppendTo(&a.max.text);
      a.max_value = value;
    }
  }
}

}  // namespace

void Rollup::Reset() {
  stale = false;
  readings = 0;
  std::erase_if(attributes, [](const RollupAttribute& a) { return a.count == 0; });
  for (RollupAttribute& a : attributes) {
    a.count = a.numeric_count = 0;
    a.sum.Clear();
  }
}

void EncodeRollup(const Rollup& rollup, std::string* scratch, std::string* out) {
  out->assign(1, 'r');
  out->push_back(rollup.stale ? 1 : 0);
  PutVarint(out, rollup.readings);
  if (rollup.stale) return;
  for (const RollupAttribute& a : rollup.attributes) {
    if (a.count == 0) continue;
    scratch->clear();
    PutVarint(scratch, a.count);
    PutVarint(scratch, a.numeric_count);
    a.sum.AppendTo(scratch);
    if (a.numeric_count > 0) {
      PutDouble(scratch, a.min_value);
      PutBytes(scratch, a.min.text);
      PutDouble(scratch, a.max_value);
      PutBytes(scratch, a.max.text);
    }
    PutKeptValue(a.first_key, a.first, scratch);
    PutKeptValue(a.last_key, a.last, scratch);
    PutBytes(out, a.name);
    PutBytes(out, *scratch);
  }
}

Status DecodeRollup(std::string_view encoded, Rollup* rollup) {
  RollupView view;
  if (Status s = ReadRollup(encoded, &view); !s.ok()) return s;
  rollup->stale = view.stale;
  rollup->readings = view.readings;
  rollup->attributes.clear();
  for (const RollupAttributeView& v : view.attributes) {
    RollupAttribute& a = rollup->attributes.emplace_back();
    a.name.assign(v.name);
    a.count = v.count;
    a.numeric_count = v.numeric_count;
    a.sum.AddEncoded(v.sum);
    if (v.numeric_count > 0) {
      a.min = v.min.ToNumber();
      a.max = v.max.ToNumber();
      a.min_value = v.min_value;
      a.max_value = v.max_value;
    }
    a.first = Owned(v.first);
    a.last = Owned(v.last);
    a.first_key.assign(v.first_key);
    a.last_key.assign(v.last_key);
  }
  return Status::OK();
}

// Records of format 'u' (no doubles beside min and max) were kept under "G" alone: the format
// leads, so that an older readingsd reads a newer store's value as no granule and reads readings.
constexpr std::string_view kRollupsFormat = "v2 ";

std::string RollupsValue(int64_t granule_seconds) {
  return std::string(kRollupsFormat) + std::to_string(granule_seconds);
}

int64_t RollupSecondsOf(std::string_view rollups_value) {
  if (!rollups_value.starts_with(kRollupsFormat)) return 0;
  rollups_value.remove_prefix(kRollupsFormat.size());
  int64_t seconds = 0;
  const auto [end, error] = std::from_chars(rollups_value.data(), rollups_value.data() + rollups_value.size(), seconds);
  if (error != std::errc() || end != rollups_value.data() + rollups_value.size()) return 0;
  return ValidateRollupSeconds(seconds).ok() ? seconds : 0;
}

Status Rollups::Prepare() {
  std::string stored;
  auto s = db_->Get(rocksdb::ReadOptions(), std::string(kRollupsKey), &stored);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "reading the rollups' state");
  // Another granule or another record format: the records are rebuilt from later writes.
  const std::string wanted = granule_ > 0 ? RollupsValue(granule_) : "";
  if (stored == wanted) return Status::OK();
  rocksdb::WriteBatch batch;
  // Only when there is a record: a range tombstone is something every later read steps over.
  const std::string lower(kRollupPrefix), upper = lower + kSortKeyEnd;
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db_, lower_slice, upper_slice);
  it->SeekToFirst();
  if (Status s = FromRocks(it->status(), "reading the rollups"); !s.ok()) return s;
  if (it->Valid()) batch.DeleteRange(lower, upper);
  if (granule_ > 0) {
    batch.Put(std::string(kRollupsKey), wanted);
  } else {
    batch.Delete(std::string(kRollupsKey));
  }
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "resetting the rollups");
}

int64_t Rollups::GranuleOf(std::string_view sort_key) const {
  return FloorToMultiple(SortKeyWholeSeconds(sort_key), granule_);
}

int64_t Rollups::FirstGranuleFrom(const std::string& sort_key) const {
  int64_t start = GranuleOf(sort_key);
  std::string key;
  if (SortKeyAtWholeSeconds(start, &key) && key < sort_key) start += granule_;
  return start;
}

std::string Rollups::GranuleKey(std::string_view device_id, int64_t start) const {
  std::string sort_key;
  SortKeyAtWholeSeconds(start, &sort_key);  // a granule of a sort key begins on one (a day's divisor)
  return RollupKey(device_id, sort_key);
}

Status Rollups::ReadStored(std::string_view device_id, Device* device, bool* any_record) {
  const std::string lower = RollupKey(device_id, ""), upper = RollupKey(device_id, std::string(1, kSortKeyEnd));
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db_, lower_slice, upper_slice);
  it->SeekToFirst();
  // A device with no record at all (every new one) needs no second seek for its newest.
  *any_record = it->Valid();
  if (it->Valid() && it->key().size() == lower.size()) {
    device->floor_stored = true;
    if (Status s = ReadRollupFloor(std::string_view(it->value().data(), it->value().size()), &device->floor); !s.ok()) {
      return s;
    }
  }
  if (*any_record) it->SeekToLast();
  if (*any_record && it->Valid() && it->key().size() > lower.size()) {
    std::string_view id, granule;
    if (!DecodeRollupKey(std::string_view(it->key().data(), it->key().size()), &id, &granule) || granule.empty()) {
      return Status::Corruption("a rollup key does not decode");
    }
    device->has_open = true;
    device->open_start = SortKeyWholeSeconds(granule);
    if (Status s = DecodeRollup(std::string_view(it->value().data(), it->value().size()), &device->open); !s.ok()) {
      return s;
    }
  }
  return FromRocks(it->status(), "reading a device's rollups");
}

Status Rollups::Find(std::string_view device_id, Devices::value_type** found) {
  auto at = devices_.find(device_id);
  if (at != devices_.end() && !at->second.forget) {
    *found = &*at;
    return Status::OK();
  }
  // A plan that failed folded into a dirty open record in place: the store's records and
  // readings say what it held.
  if (at != devices_.end() && at->second.open_dirty) {
    rocksdb::WriteBatch batch;
    if (Status s = Recover(device_id, &batch); !s.ok()) return s;
    if (Status s = FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "rebuilding a rollup"); !s.ok()) return s;
  }
  Device device;
  bool any_record = false;
  if (Status s = ReadStored(device_id, &device, &any_record); !s.ok()) return s;
  if (!device.floor_stored) {
    // Readings stored without rollups: the granules after the newest one are the first summarised.
    const std::string first = EncodeKey(device_id, ""), end = EncodeKey(device_id, std::string(1, kSortKeyEnd));
    const rocksdb::Slice first_slice(first), end_slice(end);
    auto readings = RangeIterator(db_, first_slice, end_slice);
    readings->SeekToLast();
    if (readings->Valid()) {
      const std::string_view key(readings->key().data(), readings->key().size());
      device.floor = GranuleOf(key.substr(first.size())) + granule_;
    }
    if (Status s = FromRocks(readings->status(), "reading a partition's newest key"); !s.ok()) return s;
    // A device the sweep has not reached yet keeps its floor record until PlanSweep raises it.
    device.floor = std::max(device.floor, horizon_floor_);
  }
  if (at == devices_.end()) at = devices_.emplace(device_id, Device{}).first;
  device.listed = at->second.listed;
  at->second = std::move(device);
  *found = &*at;
  return Status::OK();
}

Status Rollups::Recover(std::string_view device_id, rocksdb::WriteBatch* batch) {
  if (granule_ == 0) return Status::OK();
  Device stored;
  bool any_record = false;
  if (Status s = ReadStored(device_id, &stored, &any_record); !s.ok()) return s;
  if (!stored.floor_stored) return Status::OK();  // no granule of it is summarised
  int64_t from = stored.floor;
  // A stale record stays stale, as it would have without the crash.
  if (stored.has_open) from = std::max(from, stored.open.stale ? stored.open_start + granule_ : stored.open_start);
  std::string from_key;
  if (!SortKeyAtWholeSeconds(from, &from_key)) {
    if (from > 0) return Status::OK();  // after year 9999
    from_key.clear();  // before year 0000 (a new device's floor): the whole partition
  }
  const std::string lower = EncodeKey(device_id, from_key), upper = EncodeKey(device_id, std::string(1, kSortKeyEnd));
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  auto it = RangeIterator(db_, lower_slice, upper_slice);
  Reading reading{std::string(device_id), "", {}};
  KeyWrite w;
  w.reading = &reading;
  Rollup record;
  int64_t start = kNoFloor;
  auto put = [&]() -> Status {
    if (start == kNoFloor) return Status::OK();
    EncodeRollup(record, &scratch_, &value_);
    if (auto s = batch->Put(GranuleKey(device_id, start), value_); !s.ok()) return FromRocks(s, "write batch");
    return Status::OK();
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view id, sort_key;
    if (!DecodeKey(std::string_view(it->key().data(), it->key().size()), &id, &sort_key)) continue;
    const int64_t granule = GranuleOf(sort_key);
    if (granule != start) {
      if (Status s = put(); !s.ok()) return s;
      start = granule;
      record = Rollup();
    }
    reading.sort_key.assign(sort_key);
    if (Status s = DecodeAttributes(std::string_view(it->value().data(), it->value().size()), &reading.attributes);
        !s.ok()) {
      return s;
    }
    Fold(w, &record);
  }
  if (Status s = FromRocks(it->status(), "rebuilding the rollups"); !s.ok()) return s;
  return put();
}

void Rollups::ForgetUncommitted() {
  // What the last plan folded in place is not stored.
  for (Devices::value_type* device : touched_) device->second.forget = true;
  touched_.clear();
  used_ = 0;
}

void Rollups::StartPlan() {
  ForgetUncommitted();
  ++plan_;
}

Rollups::Device& Rollups::Touch(Devices::value_type* device) {
  Device& d = device->second;
  if (d.plan != plan_) {
    d.plan = plan_;
    d.last_slot = kNone;
    d.planned_floor = d.floor;
    d.floor_planned = false;
    d.plan_newest = d.has_open ? d.open_start : kNoFloor;
    touched_.push_back(device);
  }
  return d;
}

Status Rollups::SlotOf(Devices::value_type* device, int64_t start, std::string_view sort_key, Slot** found) {
  Device& d = device->second;
  for (std::size_t i = d.last_slot; i != kNone; i = slots_[i].prev) {
    if (slots_[i].start == start) {
      *found = &slots_[i];
      return Status::OK();
    }
  }
  if (used_ == slots_.size()) slots_.emplace_back();
  Slot& slot = slots_[used_];
  slot.device = device;
  slot.start = start;
  slot.prev = d.last_slot;
  slot.rare = slot.put = false;
  d.last_slot = used_++;
  *found = &slot;
  if (sort_key.empty()) {  // the open record, which the plan closes
    slot.key = GranuleKey(device->first, start);
    slot.in_place = true;
    return Status::OK();
  }
  // The granule's key from the reading's: same day (a granule divides it), its time of day.
  const auto day_seconds = static_cast<unsigned>(start - FloorToMultiple(start, 86400));
  const unsigned fields[] = {day_seconds / 3600, day_seconds / 60 % 60, day_seconds % 60};
  slot.key = RollupKey(device->first, "");
  slot.key.append(sort_key.substr(0, 11));
  for (unsigned field : fields) {
    slot.key.push_back(static_cast<char>('0' + field / 10));
    slot.key.push_back(static_cast<char>('0' + field % 10));
    slot.key.push_back(':');
  }
  slot.key.back() = '.';
  slot.key.append("000000000Z");
  // The open record is folded in place: a failed write has the device read again (StartPlan).
  slot.in_place = d.has_open && start == d.open_start;
  if (!d.has_open || start > d.open_start) {
    slot.own.Reset();  // nothing after the newest record has one, nor a reading (the floor says so)
  } else if (!slot.in_place) {
    std::string value;
    auto s = db_->Get(rocksdb::ReadOptions(), slot.key, &value);
    if (s.IsNotFound()) {
      slot.own.Reset();
    } else if (!s.ok()) {
      return FromRocks(s, "reading a rollup");
    } else if (Status decoded = DecodeRollup(value, &slot.own); !decoded.ok()) {
      return decoded;
    }
  }
  return Status::OK();
}

Status Rollups::Plan(std::span<const KeyWrite> writes, rocksdb::WriteBatch* batch) {
  StartPlan();
  if (granule_ == 0) return Status::OK();
  Devices::value_type* device = nullptr;
  for (const KeyWrite& w : writes) {
    const Reading& r = *w.reading;
    // A batch's readings often come device after device: the previous one is at hand.
    if (device == nullptr || device->first != r.device_id) {
      if (Status s = Find(r.device_id, &device); !s.ok()) return s;
    }
    Device& d = Touch(device);
    if (!d.floor_stored && !d.floor_planned) {
      d.floor_planned = true;
      EncodeFloor(d.floor, &value_);
      if (auto s = batch->Put(RollupKey(r.device_id, ""), value_); !s.ok()) return FromRocks(s, "write batch");
    }
    const int64_t start = GranuleOf(r.sort_key);
    if (start < d.floor) continue;
    Slot* slot = nullptr;
    if (d.has_open && start > d.open_start && d.open_dirty) {
      // The open record is final once a newer granule has a reading: it is written now.
      if (Status s = SlotOf(device, d.open_start, "", &slot); !s.ok()) return s;
    }
    if (Status s = SlotOf(device, start, r.sort_key, &slot); !s.ok()) return s;
    // A write in time order into the device's newest granule stays in memory; any other is
    // written with its granule's record, which Recover then leaves as it is or rebuilds alike.
    if (!w.newest || (d.has_open && start < d.open_start)) slot->rare = true;
    d.plan_newest = std::max(d.plan_newest, start);
    Fold(w, &slot->record());
  }
  // In key order, so each goes into the memtable a step past the one before (rocks_options.cc,
  // InsertHintPrefix), not from the top of it.
  order_.clear();
  for (std::size_t i = 0; i < used_; ++i) order_.push_back(i);
  const auto by_key = [this](std::size_t a, std::size_t b) { return slots_[a].key < slots_[b].key; };
  if (!std::is_sorted(order_.begin(), order_.end(), by_key)) std::sort(order_.begin(), order_.end(), by_key);
  for (std::size_t i : order_) {
    Slot& slot = slots_[i];
    // Every granule but the newest one the device reaches is final.
    slot.put = slot.rare || slot.start < slot.device->second.plan_newest;
    if (!slot.put) continue;
    EncodeRollup(slot.record(), &scratch_, &value_);
    if (auto s = batch->Put(slot.key, value_); !s.ok()) return FromRocks(s, "write batch");
  }
  return Status::OK();
}

Status Rollups::PlanDelete(std::string_view device_id, std::span<const std::string> removed,
                           rocksdb::WriteBatch* batch) {
  StartPlan();
  if (granule_ == 0 || removed.empty()) return Status::OK();
  Devices::value_type* device = nullptr;
  if (Status s = Find(device_id, &device); !s.ok()) return s;
  Device& d = Touch(device);
  // Its dirty open record first: the device is read again from the store after the delete.
  if (d.has_open && d.open_dirty) {
    EncodeRollup(d.open, &scratch_, &value_);
    if (auto s = batch->Put(GranuleKey(device_id, d.open_start), value_); !s.ok()) return FromRocks(s, "write batch");
  }
  const int64_t first = GranuleOf(removed.front()), last = GranuleOf(removed.back());
  Rollup stale;
  stale.stale = true;
  EncodeRollup(stale, &scratch_, &value_);
  int64_t previous = kNoFloor;
  for (const std::string& sort_key : removed) {
    const int64_t start = GranuleOf(sort_key);
    if (start == previous || start < d.floor) continue;
    previous = start;
    // Every stored key from the first removed to the last goes: the granules between hold none.
    const std::string key = GranuleKey(device_id, start);
    auto s = start == first || start == last ? batch->Put(key, value_) : batch->Delete(key);
    if (!s.ok()) return FromRocks(s, "write batch");
  }
  d.forget = true;
  return Status::OK();
}

void Rollups::SetHorizon(const std::string& cutoff) {
  if (granule_ > 0) horizon_floor_ = std::max(horizon_floor_, FirstGranuleFrom(cutoff));
}

Status Rollups::PlanSweep(std::string_view device_id, const std::string& cutoff, rocksdb::WriteBatch* batch) {
  StartPlan();
  if (granule_ == 0) return Status::OK();
  Devices::value_type* device = nullptr;
  if (Status s = Find(device_id, &device); !s.ok()) return s;
  Device& d = Touch(device);
  const int64_t floor = FirstGranuleFrom(cutoff);
  if (floor <= d.floor) return Status::OK();
  d.planned_floor = floor;
  // Without a floor record no granule of the device is read from records: nothing to raise.
  if (!d.floor_stored) return Status::OK();
  EncodeFloor(floor, &value_);
  if (auto s = batch->Put(RollupKey(device_id, ""), value_); !s.ok()) return FromRocks(s, "write batch");
  return Status::OK();
}

void Rollups::Commit() {
  for (Devices::value_type* device : touched_) {
    Device& d = device->second;
    if (d.floor_planned) d.floor_stored = true;
    d.floor = d.planned_floor;
    if (d.has_open && d.open_start < d.floor) d.has_open = false;
    if (!d.has_open || d.forget) d.open_dirty = false;  // PlanDelete wrote it
  }
  for (std::size_t i = 0; i < used_; ++i) {
    Slot& slot = slots_[i];
    Device& d = slot.device->second;
    if (!slot.in_place && (!d.has_open || slot.start > d.open_start)) {
      std::swap(d.open, slot.own);
      d.open_start = slot.start;
      d.has_open = true;
    }
  }
  for (std::size_t i = 0; i < used_; ++i) {
    Slot& slot = slots_[i];
    Devices::value_type* device = slot.device;
    Device& d = device->second;
    if (!d.has_open || slot.start != d.open_start) continue;
    d.open_dirty = !slot.put;
    if (d.open_dirty && !d.listed) {
      d.listed = true;
      dirty_.push_back(device);
    }
  }
  touched_.clear();
  used_ = 0;
}

Status Rollups::PlanPersist(rocksdb::WriteBatch* batch, std::string_view device_id) {
  ForgetUncommitted();
  persisting_.clear();
  if (!device_id.empty()) {
    auto at = devices_.find(device_id);
    if (at != devices_.end() && at->second.open_dirty) persisting_.push_back(&*at);
  } else {
    const auto by_id = [](const Devices::value_type* a, const Devices::value_type* b) { return a->first < b->first; };
    std::sort(dirty_.begin(), dirty_.end(), by_id);
    for (Devices::value_type* device : dirty_) {
      if (device->second.open_dirty) persisting_.push_back(device);
    }
  }
  for (Devices::value_type* device : persisting_) {
    Device& d = device->second;
    if (d.forget) {
      if (Status s = Recover(device->first, batch); !s.ok()) return s;
    } else if (d.has_open) {
      EncodeRollup(d.open, &scratch_, &value_);
      if (auto s = batch->Put(GranuleKey(device->first, d.open_start), value_); !s.ok()) {
        return FromRocks(s, "write batch");
      }
    }
  }
  persist_all_ = device_id.empty();
  return Status::OK();
}

void Rollups::CommitPersist() {
  for (Devices::value_type* device : persisting_) device->second.open_dirty = false;
  persisting_.clear();
  if (!persist_all_) return;
  for (Devices::value_type* device : dirty_) device->second.listed = false;
  dirty_.clear();
}

}  // namespace readingsd::storage::internal
