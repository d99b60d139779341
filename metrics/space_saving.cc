#include "metrics/space_saving.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace readingsd::metrics {

namespace {

// Sorts by count descending, ties by key, and keeps the first k.
void KeepLargest(std::vector<SpaceSavingEntry>& entries, std::size_t k) {
  k = std::min(k, entries.size());
  const auto middle = entries.begin() + static_cast<std::ptrdiff_t>(k);
  std::partial_sort(entries.begin(), middle, entries.end(),
                    [](const SpaceSavingEntry& a, const SpaceSavingEntry& b) {
                      return a.count != b.count ? a.count > b.count : a.key < b.key;
                    });
  entries.resize(k);
}

}  // namespace

SpaceSaving::SpaceSaving(const SpaceSavingOptions& options)
    : top_k_(std::max<std::size_t>(options.top_k, 1)),
      capacity_(top_k_ * std::max<std::size_t>(options.counters_per_top_k, 1)) {
  entries_.reserve(capacity_);
  heap_.reserve(capacity_);
  heap_pos_.reserve(capacity_);
  slot_of_.reserve(capacity_);
}

void SpaceSaving::Add(std::string_view key, std::uint64_t weight) {
  // A zero weight would still let an unmonitored key evict the minimum, churning for nothing.
  if (weight == 0) return;
  total_ += weight;

  if (auto it = slot_of_.find(key); it != slot_of_.end()) {
    entries_[it->second].count += weight;
    SiftDown(heap_pos_[it->second]);
    return;
  }

  if (entries_.size() < capacity_) {
    const std::size_t slot = entries_.size();
    entries_.push_back({std::string(key), weight, 0});
    heap_.push_back(slot);
    heap_pos_.push_back(heap_.size() - 1);
    slot_of_.emplace(std::string(key), slot);
    SiftUp(heap_.size() - 1);
    return;
  }

  // Take over the smallest counter; reuse its hash-map node instead of allocating a new one.
  const std::size_t slot = heap_[0];
  SpaceSavingEntry& victim = entries_[slot];
  auto node = slot_of_.extract(victim.key);
  node.key() = key;
  slot_of_.insert(std::move(node));
  victim.key = key;
  victim.error = victim.count;
  victim.count += weight;
  SiftDown(0);
}

std::vector<SpaceSavingEntry> SpaceSaving::TopK() const {
  std::vector<SpaceSavingEntry> top = entries_;
  KeepLargest(top, top_k_);
  return top;
}

const SpaceSavingEntry* SpaceSaving::Find(std::string_view key) const {
  auto it = slot_of_.find(key);
  return it == slot_of_.end() ? nullptr : &entries_[it->second];
}

SpaceSavingEntry SpaceSaving::Estimate(std::string_view key) const {
  const SpaceSaving* const self[] = {this};
  return EstimateAcross(self, key);
}

std::uint64_t SpaceSaving::max_unmonitored_count() const {
  return entries_.size() < capacity_ ? 0 : CountAt(0);
}

void SpaceSaving::Clear() {
  total_ = 0;
  entries_.clear();
  heap_.clear();
  heap_pos_.clear();
  slot_of_.clear();
}

void SpaceSaving::SiftUp(std::size_t pos) {
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (CountAt(parent) <= CountAt(pos)) return;
    SwapHeap(parent, pos);
    pos = parent;
  }
}

void SpaceSaving::SiftDown(std::size_t pos) {
  for (;;) {
    const std::size_t left = 2 * pos + 1;
    const std::size_t right = left + 1;
    std::size_t smallest = pos;
    if (left < heap_.size() && CountAt(left) < CountAt(smallest)) smallest = left;
    if (right < heap_.size() && CountAt(right) < CountAt(smallest)) smallest = right;
    if (smallest == pos) return;
    SwapHeap(pos, smallest);
    pos = smallest;
  }
}

void SpaceSaving::SwapHeap(std::size_t a, std::size_t b) {
  std::swap(heap_[a], heap_[b]);
  heap_pos_[heap_[a]] = a;
  heap_pos_[heap_[b]] = b;
}

SpaceSavingEntry EstimateAcross(std::span<const SpaceSaving* const> parts, std::string_view key) {
  SpaceSavingEntry combined{std::string(key), 0, 0};
  for (const SpaceSaving* part : parts) {
    if (const SpaceSavingEntry* entry = part->Find(key)) {
      combined.count += entry->count;
      combined.error += entry->error;
    } else {
      const std::uint64_t bound = part->max_unmonitored_count();
      combined.count += bound;
      combined.error += bound;
    }
  }
  return combined;
}

std::vector<SpaceSavingEntry> TopKAcross(std::span<const SpaceSaving* const> parts, std::size_t k) {
  std::unordered_set<std::string_view> candidates;
  for (const SpaceSaving* part : parts) {
    for (const SpaceSavingEntry& entry : part->entries()) candidates.insert(entry.key);
  }
  std::vector<SpaceSavingEntry> combined;
  combined.reserve(candidates.size());
  for (std::string_view key : candidates) combined.push_back(EstimateAcross(parts, key));
  KeepLargest(combined, k);
  return combined;
}

}  // namespace readingsd::metrics
