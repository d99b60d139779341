// An index query answered by several nodes, each holding some partitions of the device space
// (docs/cluster.md): each node reads the query's entries of its own devices
// (IndexQueryRequest::device_wanted) into a share, and the node asked merges the shares into the
// page one node holding every partition gives: the same items in the same order, the same
// Count, ScannedCount and last_evaluated, so its cursor resumes on any node.
//
// A share holds every entry the node read, in the page's order, the ones the filter or the
// readings' window refused too (only their key and sizes): the page ends after `limit` entries
// read or max_page_bytes, counted over all nodes' entries in one order. Each node reads `limit`
// entries of its own from the same start, so the merged entries up to the page's end are all
// there.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/index_query.h"

namespace readingsd::query {

// Records a node's share of an index query as it reads it: the sink IndexQuery is given.
// Not thread-safe: one per query.
class IndexShareWriter final : public IndexItemSink {
 public:
  void Add(const IndexItem& item) override { Append(item, true); }
  void Pass(const IndexItem& item) override { Append(item, false); }
  // The share's bytes (binary; never shown to a client): its entries, and whether the node has
  // more after them (`result`'s last_evaluated).
  std::string Finish(const IndexQueryResult& result) &&;

 private:
  void Append(const IndexItem& item, bool in_page);

  std::string entries_;
};

// The page of `request` from the shares of nodes that together hold every device once: `sink`
// gets its items (with their attributes) in order, `result` its counts and last_evaluated (no
// partitions_read: each node reports its own reads). Corruption when a share is not one.
Status MergeIndexShares(const IndexQueryRequest& request, std::span<const std::string> shares, IndexItemSink* sink,
                        IndexQueryResult* result);

}  // namespace readingsd::query
