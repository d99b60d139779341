// Hash64: the stable string hash of the metrics sketches and of index shards.
#pragma once

#include <cstdint>
#include <string_view>

namespace readingsd {

// FNV-1a over the bytes, then the MurmurHash3 fmix64 finalizer.
//
// Why not std::hash: its value is unspecified, may change between library versions and gives no
// guarantee about the high bits, while HyperLogLog takes its register index from the top bits and
// its rank from the rest. FNV-1a alone mixes poorly into the high bits of short keys that differ
// only at the end ("DEV#1000", "DEV#1001"); fmix64 is a bijection with full avalanche, so every
// input bit reaches every output bit. The result is stable across runs, builds and platforms,
// which also keeps the tests deterministic. Partition keys are short, so byte-at-a-time is fine.
inline std::uint64_t Hash64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV-1a 64-bit prime
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace readingsd
