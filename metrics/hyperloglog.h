// HyperLogLog: approximate count of distinct strings in bounded memory (Flajolet, Fusy, Gandouet
// and Meunier, "HyperLogLog: the analysis of a near-optimal cardinality estimation algorithm",
// 2007).
//
// 2^p one-byte registers. Each key is hashed with Hash64; the top p bits pick a register, which
// keeps the largest "position of the first 1 bit" seen among the remaining 64 - p bits. The
// standard error of Estimate() is 1.04 / sqrt(2^p): 0.81 % at the default p = 14 (16 KiB).
// Small cardinalities (raw estimate <= 2.5 * 2^p with empty registers left) use linear counting,
// which is near exact there. A 64-bit hash makes the original large-range correction unnecessary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace readingsd::metrics {

class HyperLogLog {
 public:
  static constexpr int kMinPrecision = 4;
  static constexpr int kMaxPrecision = 18;
  static constexpr int kDefaultPrecision = 14;

  // precision is clamped to [kMinPrecision, kMaxPrecision].
  explicit HyperLogLog(int precision = kDefaultPrecision);

  void Add(std::string_view key);

  // Afterwards this counts the union of both key sets. Returns false, leaving this unchanged,
  // when the precisions differ.
  [[nodiscard]] bool Merge(const HyperLogLog& other);

  double Estimate() const;

  // 1.04 / sqrt(2^p), relative.
  double standard_error() const;
  int precision() const { return precision_; }

  void Clear();

 private:
  int precision_;
  std::vector<std::uint8_t> registers_;
};

}  // namespace readingsd::metrics
