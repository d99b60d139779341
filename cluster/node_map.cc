#include "cluster/node_map.h"

#include <algorithm>
#include <charconv>

#include "base/text.h"
#include "cluster/partition.h"

namespace readingsd::cluster {

bool Node::Owns(uint32_t partition) const {
  return std::binary_search(partitions.begin(), partitions.end(), partition);
}

Status ParseNodeUrl(std::string_view url, std::string* host, std::string* port) {
  constexpr std::string_view kScheme = "http://";
  const Status wrong = Status::InvalidArgument("must be http://host:port (e.g. \"http://10.0.0.2:8080\"), got \"" +
                                               std::string(url) + "\"");
  if (!url.starts_with(kScheme)) return wrong;
  std::string_view rest = url.substr(kScheme.size());
  if (rest.ends_with('/')) rest.remove_suffix(1);
  HostPort parsed;
  if (rest.find('/') != std::string_view::npos || !ParseHostPort(rest, &parsed).ok() || parsed.host.empty() ||
      parsed.port == 0) {
    return wrong;
  }
  *host = parsed.host;
  *port = std::to_string(parsed.port);
  return Status::OK();
}

std::string PartitionRanges(const std::vector<uint32_t>& partitions) {
  std::string out;
  for (std::size_t i = 0; i < partitions.size();) {
    std::size_t j = i;
    while (j + 1 < partitions.size() && partitions[j + 1] == partitions[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(partitions[i]);
    if (j > i) out += '-' + std::to_string(partitions[j]);
    i = j + 1;
  }
  return out;
}

Status ParsePartitionRanges(std::string_view text, uint32_t partitions, std::vector<uint32_t>* out) {
  std::vector<std::string> entries;
  for (;;) {
    const auto comma = text.find(',');
    entries.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return ParsePartitionList(entries, partitions, out);
}

bool PartitionSet::Holds(std::string_view device_id) const {
  return std::binary_search(partitions.begin(), partitions.end(), PartitionOf(device_id, count));
}

Status ParsePartitionSet(const std::string* partitions, const std::string* partition_count,
                         std::optional<PartitionSet>* out) {
  out->reset();
  if ((partitions == nullptr) != (partition_count == nullptr)) {
    return Status::InvalidArgument("partitions and partition_count go together");
  }
  if (partitions == nullptr) return Status::OK();
  PartitionSet set;
  const char* end = partition_count->data() + partition_count->size();
  auto [at, ec] = std::from_chars(partition_count->data(), end, set.count);
  if (ec != std::errc() || at != end || set.count < 1 || set.count > 65536) {
    return Status::InvalidArgument("partition_count: expected an integer from 1 to 65536, got \"" +
                                   partition_count->substr(0, 40) + "\"");
  }
  if (Status s = ParsePartitionRanges(*partitions, set.count, &set.partitions); !s.ok()) {
    return Status::InvalidArgument("partitions: " + s.message());
  }
  *out = std::move(set);
  return Status::OK();
}

Status PartitionSetOf(std::string_view target, std::optional<PartitionSet>* out) {
  const auto question = target.find('?');
  std::string_view query = question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  std::optional<std::string> partitions, count;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = piece.find('=');
    const std::string_view name = piece.substr(0, eq);
    std::optional<std::string>* param = name == "partitions" ? &partitions : name == "partition_count" ? &count : nullptr;
    if (param == nullptr) continue;
    if (param->has_value()) return Status::InvalidArgument(std::string(name) + ": given more than once");
    std::string value;
    if (!PercentDecode(eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1), true, &value)) {
      return Status::InvalidArgument(std::string(name) + ": malformed percent-encoding");
    }
    *param = std::move(value);
  }
  return ParsePartitionSet(partitions ? &*partitions : nullptr, count ? &*count : nullptr, out);
}

std::string WithPartitionSet(std::string_view target, const std::vector<uint32_t>& partitions, uint32_t count) {
  std::string out(target);
  out += out.find('?') == std::string::npos ? '?' : '&';
  out += "partitions=" + PartitionRanges(partitions) + "&partition_count=" + std::to_string(count);
  return out;
}

}  // namespace readingsd::cluster
