#include "cluster/node_map.h"

#include <algorithm>

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

}  // namespace readingsd::cluster
