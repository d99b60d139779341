// SpaceSaving: a bounded-memory top-K sketch over weighted string keys (Metwally, Agrawal and
// El Abbadi, "Efficient Computation of Frequent and Top-k Elements in Data Streams", ICDT 2005).
//
// The sketch monitors m = top_k * counters_per_top_k keys. A key that is already monitored gets
// its weight added. A new key takes over the counter with the smallest count c_min: its count
// becomes c_min + weight and its error c_min, because the new key may have been seen up to c_min
// times while unmonitored. With N the total weight added so far:
//
//   * every estimate overestimates: true <= count <= true + error, and error <= N / m
//     (the counters always sum to N, so the smallest one is at most N / m);
//   * any key whose true count exceeds N / m is monitored, i.e. present in entries().
//
// Add() is O(log m): counters sit in an indexed min-heap, keys are found through a hash map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/hash.h"

namespace readingsd::metrics {

struct SpaceSavingOptions {
  // How many keys TopK() returns.
  std::size_t top_k = 20;
  // m = top_k * counters_per_top_k counters. The error bound is N / m, so more counters per
  // reported key buy precision with memory; 4 keeps the bound at N / (4K).
  std::size_t counters_per_top_k = 4;
};

struct SpaceSavingEntry {
  std::string key;
  std::uint64_t count = 0;  // estimate; never below the true count
  std::uint64_t error = 0;  // count - error is never above the true count
};

class SpaceSaving {
 public:
  // top_k and counters_per_top_k below 1 are treated as 1.
  explicit SpaceSaving(const SpaceSavingOptions& options = {});

  void Add(std::string_view key, std::uint64_t weight = 1);

  // The top_k monitored keys, by count descending (ties by key, so output is deterministic).
  std::vector<SpaceSavingEntry> TopK() const;

  // Estimate for any key; an unmonitored key gets {key, max_unmonitored_count(), same}.
  SpaceSavingEntry Estimate(std::string_view key) const;

  // The counter of a monitored key, nullptr when the key is not monitored.
  const SpaceSavingEntry* Find(std::string_view key) const;

  // All monitored keys, in no particular order.
  const std::vector<SpaceSavingEntry>& entries() const { return entries_; }

  // Upper bound on the true count of any key not in entries(): the smallest counter once all m
  // are in use, 0 before (no key has been evicted yet). Never decreases.
  std::uint64_t max_unmonitored_count() const;

  std::uint64_t total() const { return total_; }
  std::size_t top_k() const { return top_k_; }
  std::size_t capacity() const { return capacity_; }

  void Clear();

 private:
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const { return Hash64(key); }
  };

  void SiftUp(std::size_t pos);
  void SiftDown(std::size_t pos);
  void SwapHeap(std::size_t a, std::size_t b);
  std::uint64_t CountAt(std::size_t heap_pos) const { return entries_[heap_[heap_pos]].count; }

  std::size_t top_k_;
  std::size_t capacity_;
  std::uint64_t total_ = 0;
  std::vector<SpaceSavingEntry> entries_;  // counter slots
  std::vector<std::size_t> heap_;          // slot indices, min-heap by count
  std::vector<std::size_t> heap_pos_;      // slot -> position in heap_
  std::unordered_map<std::string, std::size_t, KeyHash, std::equal_to<>> slot_of_;
};

// Sketches of disjoint sub-streams (e.g. consecutive time buckets) are combined by summing their
// per-key estimates, an unmonitored key contributing max_unmonitored_count() to both count and
// error. Both guarantees survive: true <= count <= true + error, error <= sum(N_i / m) = N / m,
// and a key whose true total exceeds N / m exceeds N_i / m in some part, so it is a candidate.
SpaceSavingEntry EstimateAcross(std::span<const SpaceSaving* const> parts, std::string_view key);

// The k keys with the largest combined counts among all keys monitored by any part.
std::vector<SpaceSavingEntry> TopKAcross(std::span<const SpaceSaving* const> parts, std::size_t k);

}  // namespace readingsd::metrics
