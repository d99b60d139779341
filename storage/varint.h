// Varints, length-prefixed bytes and doubles, as the value encoding (storage/reading.h) and rollup
// records (storage/rollup.h) write them. Internal to storage/.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace readingsd::storage::internal {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline bool GetVarint(std::string_view* in, uint64_t* v) {
  // Names and short strings: one byte, read without the loop.
  if (!in->empty() && static_cast<uint8_t>(in->front()) < 0x80) {
    *v = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    return true;
  }
  *v = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

inline void PutBytes(std::string* out, std::string_view bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes);
}

inline bool GetBytes(std::string_view* in, std::string_view* out) {
  uint64_t n;
  if (!GetVarint(in, &n) || n > in->size()) return false;
  *out = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

// A double's 8 bytes as the machine holds them (little-endian on every platform readingsd builds for).
inline void PutDouble(std::string* out, double v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

inline bool GetDouble(std::string_view* in, double* v) {
  if (in->size() < sizeof *v) return false;
  std::memcpy(v, in->data(), sizeof *v);
  in->remove_prefix(sizeof *v);
  return true;
}

}  // namespace readingsd::storage::internal
