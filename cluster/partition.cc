#include "cluster/partition.h"

#include <algorithm>
#include <charconv>

namespace readingsd::cluster {
namespace {

bool ParseNumber(std::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

uint32_t PartitionOf(std::string_view device_id, uint32_t partitions) {
  uint32_t h = 2166136261u;  // FNV-1a 32-bit offset basis, as Go's hash/fnv New32a
  for (unsigned char c : device_id) {
    h ^= c;
    h *= 16777619u;  // FNV-1a 32-bit prime
  }
  return h % partitions;
}

Status ParsePartitionList(const std::vector<std::string>& entries, uint32_t partitions, std::vector<uint32_t>* out) {
  out->clear();
  if (entries.empty()) {
    for (uint32_t p = 0; p < partitions; ++p) out->push_back(p);
    return Status::OK();
  }
  for (const std::string& entry : entries) {
    const std::string_view text(entry);
    const auto dash = text.find('-');
    uint32_t first = 0, last = 0;
    const bool parsed = dash == std::string_view::npos
                            ? ParseNumber(text, &first) && (last = first, true)
                            : ParseNumber(text.substr(0, dash), &first) && ParseNumber(text.substr(dash + 1), &last);
    if (!parsed || first > last || last >= partitions) {
      return Status::InvalidArgument("partition entry \"" + entry + "\" must be N or N-M with N <= M < " +
                                     std::to_string(partitions) + " (the partition count)");
    }
    for (uint32_t p = first; p <= last; ++p) out->push_back(p);
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return Status::OK();
}

}  // namespace readingsd::cluster
