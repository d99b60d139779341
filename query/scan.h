// Scan: every reading of the table, or of one segment of a parallel scan, a page at a time, with
// DynamoDB's Limit, filter, 1 MB page and paging by the last key read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/filter.h"
#include "query/query.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::query {

inline constexpr uint32_t kMaxTotalSegments = 1000000;  // DynamoDB's

// The segment of `total_segments` (1..kMaxTotalSegments) a partition belongs to, as DynamoDB
// divides its partition-key hash space into equal ranges: the partitions whose device id hashes
// (64-bit FNV-1a with MurmurHash3's finaliser, fixed for good, so segments never move between
// pages or releases) into the `segment`-th of `total_segments` equal ranges. Every partition, and
// so every item, is in exactly one segment, and partitions spread evenly whatever their ids share.
uint32_t SegmentOf(std::string_view device_id, uint32_t total_segments);

struct ItemKey {
  std::string device_id;
  std::string sort_key;  // normalised

  bool operator==(const ItemKey&) const = default;
};

struct ScanRequest {
  // Maximum items *read* (DynamoDB's Limit, counted before the filter); 0 = no limit.
  std::size_t limit = 0;
  // As QueryRequest::max_page_bytes; 0 = no cap.
  std::size_t max_page_bytes = kMaxPageBytes;
  // Optional, not owned. It may name the key attributes (deviceId, readingTs), which a Scan's
  // filter may use: they are matched as S values with the item's attributes.
  const FilterExpr* filter = nullptr;
  uint32_t segment = 0;         // < total_segments
  uint32_t total_segments = 1;  // 1..kMaxTotalSegments
  // The previous page's LastEvaluatedKey: the page resumes just after it. It must be an item key
  // of this segment (a valid device id of the segment, a normalised sort key): InvalidArgument
  // otherwise, in DynamoDB's words.
  std::optional<ItemKey> exclusive_start;
  // Set: the partitions of the devices it refuses are passed over as if absent (neither read nor
  // counted): a node's share of a Scan merged across nodes (scan_share.h).
  std::function<bool(std::string_view device_id)> device_wanted;
};

// One item handed to the sink. Views valid only during the call.
struct ScanItem {
  std::string_view device_id;
  std::string_view sort_key;
  std::string_view encoded_attributes;
  std::span<const storage::AttributeView> attributes;  // its own, not the key attributes
  std::size_t page_bytes = 0;  // what it adds to the page's size (max_page_bytes)
  std::size_t item_bytes = 0;  // storage::ItemSize, what it adds to scanned_bytes
};

class ScanSink {
 public:
  virtual ~ScanSink() = default;
  // An item of the page.
  virtual void Add(const ScanItem& item) = 0;
  // An item read and counted that the filter refused. Only a node's share of a merged Scan keeps
  // it (scan_share.h).
  virtual void Pass(const ScanItem& /*item*/) {}
};

struct ScanResult {
  std::size_t count = 0;          // items returned (after the filter)
  std::size_t scanned_count = 0;  // items read (before the filter)
  std::size_t scanned_bytes = 0;  // storage::ItemSize of every item read: what reads are billed on
  // Set whenever the page stopped at limit or max_page_bytes, as DynamoDB does (the next page may
  // then be empty); absent once the segment is read to its end.
  std::optional<ItemKey> last_evaluated_key;

  // What the page read of each partition, in order: for ReadContext::ReportPartitionRead.
  struct PartitionRead {
    std::string device_id;
    std::size_t items = 0;
    std::size_t bytes = 0;  // storage::ItemSize
  };
  std::vector<PartitionRead> partitions;
};

// Reads the segment in key order (by device id, then time) from one table iterator, skipping
// the partitions of other segments with one seek each. Iterator and decoding errors are
// returned; `result` is reset first; items go to `sink`.
Status Scan(const storage::Store& store, const ScanRequest& request, ScanSink* sink, ScanResult* result);

// What Scan does with each item it reads, and MergeScanShares with each of the shares'
// (scan_share.h): counts it, hands it to `sink` (Add when `returned`, else Pass) and adds its size
// to *page_bytes; when the page is full after it, sets result->last_evaluated_key and returns true.
bool CountScanItem(const ScanRequest& request, const ScanItem& item, bool returned, ScanSink* sink, ScanResult* result,
                   std::size_t* page_bytes);

}  // namespace readingsd::query
