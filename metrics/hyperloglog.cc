#include "metrics/hyperloglog.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/hash.h"

namespace readingsd::metrics {

HyperLogLog::HyperLogLog(int precision)
    : precision_(std::clamp(precision, kMinPrecision, kMaxPrecision)),
      registers_(std::size_t{1} << precision_, 0) {}

void HyperLogLog::Add(std::string_view key) {
  const std::uint64_t hash = Hash64(key);
  const std::size_t index = hash >> (64 - precision_);
  // The rank of the rest is its count of leading zeros plus one; the shifted-in zeros must not
  // count, so an all-zero rest ranks 64 - p + 1.
  const std::uint64_t rest = hash << precision_;
  const int rank = rest == 0 ? 64 - precision_ + 1 : std::countl_zero(rest) + 1;
  registers_[index] = std::max(registers_[index], static_cast<std::uint8_t>(rank));
}

bool HyperLogLog::Merge(const HyperLogLog& other) {
  if (other.precision_ != precision_) return false;
  for (std::size_t i = 0; i < registers_.size(); ++i) {
    registers_[i] = std::max(registers_[i], other.registers_[i]);
  }
  return true;
}

double HyperLogLog::Estimate() const {
  const double m = static_cast<double>(registers_.size());
  double inverse_sum = 0;
  std::size_t empty = 0;
  for (std::uint8_t r : registers_) {
    inverse_sum += std::ldexp(1.0, -r);
    empty += r == 0;
  }
  // Bias constant alpha_m from the paper; precision >= 4 means m >= 16.
  const double alpha =
      m == 16 ? 0.673 : m == 32 ? 0.697 : m == 64 ? 0.709 : 0.7213 / (1 + 1.079 / m);
  const double raw = alpha * m * m / inverse_sum;
  if (raw <= 2.5 * m && empty > 0) return m * std::log(m / static_cast<double>(empty));
  return raw;
}

double HyperLogLog::standard_error() const {
  return 1.04 / std::sqrt(static_cast<double>(registers_.size()));
}

void HyperLogLog::Clear() { std::fill(registers_.begin(), registers_.end(), 0); }

}  // namespace readingsd::metrics
