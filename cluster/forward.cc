#include "cluster/forward.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "cluster/partition.h"
#include "http/client.h"

namespace readingsd::cluster {
namespace {

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

std::optional<http::Response> Forwarder::Route(const http::Request& request, Reach reach, std::string_view device_id,
                                               const Local& local, std::string_view* endpoint) const {
  const NodeMap& map = options_.map;
  const Node& self = map.Self();
  const bool forwarded = request.count(kForwardedHeader) != 0;
  switch (reach) {
    case Reach::kLocal:
      return std::nullopt;
    case Reach::kDevice: {
      const uint32_t partition = PartitionOf(device_id, map.partitions);
      if (self.Owns(partition)) return std::nullopt;
      if (forwarded) {
        *endpoint = "forward_refused";
        return local.error(http::status::service_unavailable, "NotAnOwner",
                           "node " + self.name + " got a request forwarded by " +
                               std::string(http::ToStd(request[kForwardedHeader])) + " for device " +
                               Quoted(device_id) + " of partition " + std::to_string(partition) +
                               ", which it does not own: the nodes' maps ([cluster]) disagree");
      }
      *endpoint = "forwarded";
      return Device(request, device_id, partition, local);
    }
    case Reach::kMerged: {
      std::optional<PartitionSet> share;
      const bool parsed = PartitionSetOf(http::ToStd(request.target()), &share).ok();  // else the API refuses it
      if (parsed && share) return Share(request, *share, local, endpoint);
      if (forwarded || map.OwnsAll() || !parsed) return std::nullopt;
      *endpoint = "merged";
      return Merged(request, local);
    }
  }
  return std::nullopt;
}

http::Response Forwarder::Device(const http::Request& request, std::string_view device_id, uint32_t partition,
                                 const Local& local) const {
  std::string failures;
  for (const Node& node : options_.map.nodes) {
    if (!node.Owns(partition)) continue;
    http::Response answer;
    const Status s = Ask(node, Outgoing(request), &answer);
    if (s.ok()) return answer;
    failures += (failures.empty() ? "" : "; ") + node.name + ": " + s.message();
  }
  return local.error(http::status::service_unavailable, "NoLiveOwner",
                     "partition " + std::to_string(partition) + " (of device " + Quoted(device_id) +
                         ") has no live owner: " + failures);
}

std::optional<http::Response> Forwarder::Share(const http::Request& request, const PartitionSet& share,
                                               const Local& local, std::string_view* endpoint) const {
  const NodeMap& map = options_.map;
  const Node& self = map.Self();
  const bool owned = std::all_of(share.partitions.begin(), share.partitions.end(),
                                 [&self](uint32_t p) { return self.Owns(p); });
  if (share.count == map.partitions && owned) return std::nullopt;
  *endpoint = "forward_refused";
  const std::string sender = request.count(kForwardedHeader) != 0
                                 ? " by " + std::string(http::ToStd(request[kForwardedHeader]))
                                 : std::string();
  return local.error(http::status::service_unavailable, "NotAnOwner",
                     "node " + self.name + " was asked" + sender + " for its share of partitions " +
                         PartitionRanges(share.partitions) + " of " + std::to_string(share.count) +
                         ", and it owns partitions " + PartitionRanges(self.partitions) + " of " +
                         std::to_string(map.partitions) + ": the nodes' maps ([cluster]) disagree");
}

http::Response Forwarder::Merged(const http::Request& request, const Local& local) const {
  const NodeMap& map = options_.map;
  auto asked_for = [&](const std::vector<uint32_t>& partitions) {
    http::Request out = Outgoing(request);
    out.target(WithPartitionSet(http::ToStd(request.target()), partitions, map.partitions));
    return out;
  };
  // This node's share first: a bad parameter is refused here as on a single node.
  http::Response own = local.answer(asked_for(map.Self().partitions));
  if (own.result() != http::status::ok) return own;
  std::vector<std::string> parts = {std::move(own.body())};
  std::vector<bool> covered(map.partitions, false);
  for (uint32_t p : map.Self().partitions) covered[p] = true;
  std::vector<bool> tried(map.nodes.size(), false);
  tried[map.self] = true;
  std::string failures;
  for (;;) {
    // The untried node owning most of what is not covered yet: few nodes asked.
    std::size_t best = map.nodes.size();
    std::vector<uint32_t> best_share;
    for (std::size_t i = 0; i < map.nodes.size(); ++i) {
      if (tried[i]) continue;
      std::vector<uint32_t> share;
      for (uint32_t p : map.nodes[i].partitions) {
        if (!covered[p]) share.push_back(p);
      }
      if (share.size() > best_share.size()) {
        best = i;
        best_share = std::move(share);
      }
    }
    if (best == map.nodes.size()) break;
    tried[best] = true;
    http::Response answer;
    if (Status s = Ask(map.nodes[best], asked_for(best_share), &answer); !s.ok()) {
      failures += (failures.empty() ? "" : "; ") + map.nodes[best].name + ": " + s.message();
      continue;
    }
    if (answer.result() != http::status::ok) return answer;
    parts.push_back(std::move(answer.body()));
    for (uint32_t p : best_share) covered[p] = true;
  }
  for (uint32_t p = 0; p < map.partitions; ++p) {
    if (covered[p]) continue;
    return local.error(http::status::service_unavailable, "NoLiveOwner",
                       "the request needs partition " + std::to_string(p) +
                           " (one owner of each partition answers for it), which has no live owner: " + failures);
  }
  return local.merge(parts);
}

http::Request Forwarder::Outgoing(const http::Request& request) const {
  http::Request out = request;
  // What belongs to the client's hop; the owner answers uncompressed, this node compresses for
  // the client as it would its own answer.
  for (http::field f : {http::field::host, http::field::connection, http::field::keep_alive,
                        http::field::accept_encoding, http::field::te, http::field::transfer_encoding,
                        http::field::content_length, http::field::upgrade}) {
    out.erase(f);
  }
  out.set(kForwardedHeader, options_.map.Self().name);
  out.version(11);
  out.keep_alive(false);
  return out;
}

Status Forwarder::Ask(const Node& node, http::Request request, http::Response* answer) const {
  http::Response got;
  if (Status s = http::Send(node.host, node.port, std::move(request), options_.connect_timeout, options_.timeout, &got);
      !s.ok()) {
    return s;
  }
  // A node that says it cannot answer now (every connection busy, its map disagrees) is passed
  // over like one that is down.
  if (got.result() == http::status::service_unavailable) {
    return Status::Unavailable("answered 503: " + got.body().substr(0, 300));
  }
  http::Response out{got.result(), 11};
  for (const auto& f : got) {
    switch (f.name()) {
      case http::field::connection:
      case http::field::keep_alive:
      case http::field::transfer_encoding:
      case http::field::content_length:
        continue;
      default:
        out.insert(f.name_string(), f.value());
    }
  }
  out.set(kAnsweredByHeader, node.name);
  out.body() = std::move(got.body());
  *answer = std::move(out);
  return Status::OK();
}

}  // namespace readingsd::cluster
