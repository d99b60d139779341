// Query on a declared secondary index (storage/index.h): one or more partition values of the
// index, a condition on its sort value, filter, Limit, direction and paging, as Query on the
// table. Several shards of one value are merged in sort order; several values (time buckets) are
// read one after another, in the order given.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/filter.h"
#include "query/key_condition.h"
#include "storage/index.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::query {

// The condition on an index's sort value (kAll, or one operator). Values of the index's sort
// type: numbers canonical, kBeginsWith only on strings (and readingTs, whose values are strings).
struct IndexSortCondition {
  SortKeyOp op = SortKeyOp::kAll;
  storage::IndexValue a;
  storage::IndexValue b;  // kBetween's upper bound (inclusive)
};

// Where a page stopped: the partition value it was reading (as given in `values`) and the entry's
// key after that partition's prefix (value(sort) deviceId SEP sortKey, storage/key.h).
struct IndexPosition {
  std::string value;
  std::string tail;

  bool operator==(const IndexPosition&) const = default;
};

struct IndexQueryRequest {
  std::string index;
  // Partition values in reading order. With `all_shards`, each stands for all of the index's
  // shards ("v#0" .. "v#n-1"), merged in sort order; otherwise it is read as given (a value with
  // its shard suffix reads one shard, as DynamoDB would).
  std::vector<std::string> values;
  bool all_shards = true;
  IndexSortCondition sort;
  std::size_t limit = 0;  // items read, before the filter; 0 = no limit
  bool scan_forward = true;
  std::optional<IndexPosition> exclusive_start;  // one of `values` and a tail there
  const FilterExpr* filter = nullptr;  // optional, not owned
  // Optional: entries whose reading's sort key lies outside [readings_from, readings_to] (empty =
  // unbounded) are read and counted, never returned, as a filter does: a time window that does
  // not fall on bucket boundaries.
  std::string readings_from, readings_to;
  std::size_t max_page_bytes = 1u << 20;  // as QueryRequest::max_page_bytes
  bool key_when_full = false;             // as QueryRequest::key_when_full
  // Set: entries of the devices it refuses are passed over as if absent (neither read nor
  // counted): a node's share of a query merged across nodes (index_share.h).
  std::function<bool(std::string_view device_id)> device_wanted;
};

// One entry handed to the sink. Views valid only during the call.
struct IndexItem {
  std::string_view value;      // the one of IndexQueryRequest::values it was read under
  std::string_view partition;  // the index partition value, with its shard suffix
  std::string_view sort;       // value(sort) as stored (storage/key.h): storage::ReadIndexValue reads it
  std::string_view device_id;
  std::string_view sort_key;
  std::string_view encoded_attributes;
  std::span<const storage::AttributeView> attributes;  // read whole before the call
  std::size_t page_bytes = 0;  // what it adds to the page's size (max_page_bytes)
  std::size_t item_bytes = 0;  // storage::ItemSize, what it adds to scanned_bytes
};

class IndexItemSink {
 public:
  virtual ~IndexItemSink() = default;
  // An entry of the page.
  virtual void Add(const IndexItem& item) = 0;
  // An entry read and counted but not in the page (outside the readings' window, or the filter
  // refused it). Only a node's share of a merged query keeps it (index_share.h).
  virtual void Pass(const IndexItem& /*item*/) {}
};

// What a query read from one partition of the index, for the hotness metrics.
struct IndexPartitionRead {
  std::string partition;  // with its shard suffix
  std::size_t items = 0;
  std::size_t bytes = 0;  // storage::ItemSize
};

struct IndexQueryResult {
  std::size_t count = 0;
  std::size_t scanned_count = 0;
  std::size_t scanned_bytes = 0;  // storage::ItemSize of every item read
  std::optional<IndexPosition> last_evaluated;
  std::vector<IndexPartitionRead> partitions_read;  // each partition an item was read from, once
};

// The index's declaration and state, or InvalidArgument when the store has no index `name`
// (the message in DynamoDB's words) and Unavailable while it is being built ("index is still being
// built (N %)").
Status FindIndex(const storage::Store& store, std::string_view name, storage::IndexSpec* spec);

// Reads the request's partitions, within the sort condition's range, seeking each iterator once.
// A sort value of the other type than the index's is InvalidArgument.
Status IndexQuery(const storage::Store& store, const IndexQueryRequest& request, IndexItemSink* sink,
                  IndexQueryResult* result);

// What IndexQuery does with each entry it reads, and MergeIndexShares with each of the shares'
// (index_share.h): counts it, hands it to `sink` (Add when `in_page`, else Pass) and adds its
// size to *page_bytes; true when the page is full after it.
bool CountEntry(const IndexQueryRequest& request, const IndexItem& item, bool in_page, IndexItemSink* sink,
                IndexQueryResult* result, std::size_t* page_bytes);

// The tail of an entry (for IndexPosition) and back; false when `tail` is not one. A null `sort`
// is passed over, not read (storage::ReadIndexValue).
std::string IndexTail(const storage::IndexValue& sort, std::string_view device_id, std::string_view sort_key);
bool SplitIndexTail(std::string_view tail, storage::IndexValue* sort, std::string_view* device_id,
                    std::string_view* sort_key);

}  // namespace readingsd::query
