#include "cluster/forward.h"

#include <algorithm>
#include <future>
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
  std::vector<const Node*> owners;
  for (const Node& node : options_.map.nodes) {
    if (node.Owns(partition)) owners.push_back(&node);
  }
  // Each request starts at the next owner, so that the owners share the reads; the failures are
  // named in map order whichever was asked first.
  const std::size_t first = turns_[partition].fetch_add(1, std::memory_order_relaxed) % owners.size();
  std::vector<std::string> failed(owners.size());
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const std::size_t at = (first + i) % owners.size();
    http::Response answer;
    const Status s = Ask(*owners[at], Outgoing(request), &answer);
    if (s.ok()) return answer;
    failed[at] = owners[at]->name + ": " + s.message();
  }
  std::string failures;
  for (const std::string& failure : failed) failures += (failures.empty() ? "" : "; ") + failure;
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

std::vector<Forwarder::Asked> Forwarder::Plan(std::vector<bool> covered, const std::vector<bool>& failed) const {
  const NodeMap& map = options_.map;
  std::vector<Asked> plan;
  std::vector<bool> planned(map.nodes.size(), false);
  for (;;) {
    // The node owning most of what is not covered yet: few nodes asked.
    Asked best{map.nodes.size(), {}};
    for (std::size_t i = 0; i < map.nodes.size(); ++i) {
      if (failed[i] || planned[i]) continue;
      std::vector<uint32_t> share;
      for (uint32_t p : map.nodes[i].partitions) {
        if (!covered[p]) share.push_back(p);
      }
      if (share.size() > best.share.size()) best = {i, std::move(share)};
    }
    if (best.node == map.nodes.size()) return plan;
    planned[best.node] = true;
    for (uint32_t p : best.share) covered[p] = true;
    plan.push_back(std::move(best));
  }
}

http::Response Forwarder::Merged(const http::Request& request, const Local& local) const {
  const NodeMap& map = options_.map;
  auto asked_for = [&](const std::vector<uint32_t>& partitions) {
    http::Request out = Outgoing(request);
    out.target(WithPartitionSet(http::ToStd(request.target()), partitions, map.partitions));
    return out;
  };
  std::vector<std::string> parts;
  std::vector<bool> covered(map.partitions, false);
  for (uint32_t p : map.Self().partitions) covered[p] = true;
  std::vector<bool> failed(map.nodes.size(), false);
  failed[map.self] = true;  // its share is answered here
  std::string failures;
  for (bool first = true;; first = false) {
    // A partition whose every owner failed: no answer but the 503.
    for (uint32_t p = 0; p < map.partitions; ++p) {
      if (covered[p]) continue;
      const bool live = std::any_of(map.nodes.begin(), map.nodes.end(), [&](const Node& node) {
        return !failed[&node - map.nodes.data()] && node.Owns(p);
      });
      if (live) continue;
      return local.error(http::status::service_unavailable, "NoLiveOwner",
                         "the request needs partition " + std::to_string(p) +
                             " (one owner of each partition answers for it), which has no live owner: " + failures);
    }
    const std::vector<Asked> plan = Plan(covered, failed);
    if (plan.empty() && !first) break;
    std::vector<http::Call> calls;
    for (const Asked& asked : plan) {
      const Node& node = map.nodes[asked.node];
      calls.push_back({.host = node.host, .port = node.port, .request = asked_for(asked.share)});
    }
    if (first) {
      // This node's share while the others answer theirs; a bad parameter is refused here as on a
      // single node, before any other node's answer.
      auto others = std::async(std::launch::async,
                               [&] { http::SendEach(calls, options_.connect_timeout, options_.timeout); });
      http::Response own = local.answer(asked_for(map.Self().partitions));
      others.wait();
      if (own.result() != http::status::ok) return own;
      parts.push_back(std::move(own.body()));
    } else {
      http::SendEach(calls, options_.connect_timeout, options_.timeout);
    }
    // In the plan's order, as the nodes were asked one after another before.
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const Node& node = map.nodes[plan[i].node];
      http::Response answer;
      if (Status s = Relayed(node, std::move(calls[i]), &answer); !s.ok()) {
        failures += (failures.empty() ? "" : "; ") + node.name + ": " + s.message();
        failed[plan[i].node] = true;
        continue;
      }
      if (answer.result() != http::status::ok) return answer;
      parts.push_back(std::move(answer.body()));
      for (uint32_t p : plan[i].share) covered[p] = true;
    }
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
  http::Call call{.host = node.host, .port = node.port};
  call.status = http::Send(node.host, node.port, std::move(request), options_.connect_timeout, options_.timeout,
                           &call.response);
  return Relayed(node, std::move(call), answer);
}

Status Forwarder::Relayed(const Node& node, http::Call call, http::Response* answer) {
  if (!call.status.ok()) return call.status;
  http::Response& got = call.response;
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
