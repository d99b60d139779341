// Helpers shared by the libFuzzer targets in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <variant>
#include <vector>

#include "storage/reading.h"

namespace readingsd::fuzz {

// A property violation: say which one, then trap so libFuzzer records the input as a crash.
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                   \
    }                                                                                     \
  } while (0)

inline std::string_view AsView(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `input` at each `separator` into at most `max_parts` parts (the last one takes the
// rest); missing parts are empty.
inline std::vector<std::string_view> Split(std::string_view input, char separator, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const auto at = input.find(separator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + 1);
  }
  parts.push_back(input);
  parts.resize(max_parts);
  return parts;
}

// Attributes or views of them.
template <typename A>
bool SameAttributes(const std::vector<A>& a, const std::vector<A>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].value != b[i].value) return false;
  }
  return true;
}

}  // namespace readingsd::fuzz
