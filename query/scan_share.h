// A Scan answered by several nodes, each holding some partitions of the device space
// (docs/cluster.md), as an index query is (index_share.h): each node scans only its own devices
// (ScanRequest::device_wanted) into a share, in the scan's order (device, then sort key), and the
// node asked merges the shares into the page one node holding every partition gives: the same
// items in the same order, the same Count, ScannedCount and LastEvaluatedKey, so that its key
// resumes on any node. Segments split by device hash, so each node applies the same split to its
// own devices.
//
// A share holds every item the node read, the ones the filter refused too (only their key and
// sizes): the page ends after `limit` items read or max_page_bytes, counted over all nodes' items
// in one order. Each node reads `limit` items of its own from the same start, so the merged items
// up to the page's end are all there.
#pragma once

#include <span>
#include <string>

#include "base/status.h"
#include "query/scan.h"

namespace readingsd::query {

// Records a node's share of a Scan as it reads it: the sink Scan is given.
// Not thread-safe: one per Scan.
class ScanShareWriter final : public ScanSink {
 public:
  void Add(const ScanItem& item) override { Append(item, true); }
  void Pass(const ScanItem& item) override { Append(item, false); }
  // The share's bytes (binary; never shown to a client): its items, and whether the node has more
  // after them (`result`'s last_evaluated_key).
  std::string Finish(const ScanResult& result) &&;

 private:
  void Append(const ScanItem& item, bool in_page);

  std::string items_;
};

// The page of `request` from the shares of nodes that together hold every device once: `sink`
// gets its items (with their attributes) in order, `result` its counts and last_evaluated_key (no
// partitions: each node reports its own reads). Corruption when a share is not one.
Status MergeScanShares(const ScanRequest& request, std::span<const std::string> shares, ScanSink* sink,
                       ScanResult* result);

}  // namespace readingsd::query
