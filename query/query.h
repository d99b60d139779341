// Query: DynamoDB-style key conditions over one partition, each compiled to an iterator seek
// within bounds (never a scan plus a filter), with Limit, direction and paging.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/filter.h"
#include "query/key_condition.h"
#include "query/read_helpers.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::query {

inline constexpr std::size_t kMaxPageBytes = 1u << 20;  // DynamoDB's 1 MB page

// What one request may read at most, whatever it asks for.
struct ReadLimits {
  std::size_t max_limit = 10000;                // largest page (native limit / n, DynamoDB Limit)
  std::size_t max_page_bytes = kMaxPageBytes;  // a page also ends after this many bytes read
  // BatchGetItem answers at most this many bytes of items (DynamoDB's 16 MB); the keys past it
  // are returned as UnprocessedKeys.
  std::size_t max_batch_get_bytes = 16u << 20;
  // An aggregate (query/aggregate.h) answers with at most this many buckets: 35 days of 5m
  // buckets; and reads at most this many readings: 115 days of one reading every 10 s.
  std::size_t max_aggregate_buckets = 10000;
  std::size_t max_aggregate_scan = 1000000;

  bool operator==(const ReadLimits&) const = default;
};

// Once per query or get: the partition, the items read and their storage::ItemSize total,
// filtered out or not (a filter does not make a read cheaper). Called from any thread.
using PartitionReadHook =
    std::function<void(std::string_view device_id, std::size_t items, std::size_t bytes)>;
// The same for each partition of a secondary index a query read: the partition value with its
// shard suffix ("2026-06-23T08#3"). Called from any thread.
using IndexPartitionReadHook = std::function<void(std::string_view index, std::string_view partition,
                                                  std::size_t items, std::size_t bytes)>;

// What an API reads with on a request's behalf, the same for every API. Made once by whoever
// serves requests and shared by their threads (nothing in it changes).
struct ReadContext {
  const storage::Store& store;
  ReadLimits limits;
  ReadHelpers* helpers = nullptr;  // optional: for QueryRequest::helpers
  PartitionReadHook on_partition_read;  // optional
  IndexPartitionReadHook on_index_partition_read;  // optional

  void ReportPartitionRead(std::string_view device_id, std::size_t items, std::size_t bytes) const {
    if (on_partition_read) on_partition_read(device_id, items, bytes);
  }
  void ReportIndexPartitionRead(std::string_view index, std::string_view partition, std::size_t items,
                                std::size_t bytes) const {
    if (on_index_partition_read) on_index_partition_read(index, partition, items, bytes);
  }
};

struct QueryRequest {
  KeyCondition key;
  // Maximum items *read* (DynamoDB's Limit, counted before the filter); 0 = no limit.
  std::size_t limit = 0;
  bool scan_forward = true;  // false = newest first
  // Sort key of the previous page's LastEvaluatedKey; empty = from the beginning. Must be a
  // normalised sort key (InvalidArgument otherwise); the page resumes just past it in the scan
  // direction, within the key condition's range.
  std::string exclusive_start;
  const FilterExpr* filter = nullptr;  // optional, not owned
  // A page stops once this many bytes of items were read (stored key + encoded value, counted
  // before the filter; the item crossing the cap is included; 0 = no cap), so a page can be
  // empty (everything filtered out) and still carry a next key: paging ends only when that key
  // is absent.
  std::size_t max_page_bytes = kMaxPageBytes;
  // Optional, not owned: an idle helper may read the later part of a long page meanwhile (see
  // ReadHelpers); the page is the same as when one thread reads it.
  ReadHelpers* helpers = nullptr;
  // false: a page that stopped at limit or max_page_bytes has a next key only when an item
  // follows (Query reads one ahead). true, as DynamoDB: whenever it stopped there, even on the
  // range's last item (the next page is then empty and has none).
  bool key_when_full = false;
};

// What Query hands each item it returns, while the bytes are still the iterator's. Query has
// read the value whole (`attributes`, views into `encoded_attributes`), so a damaged value is its
// error before the sink sees it; the items before it were handed over, and a caller that gets
// the error drops them. All three arguments are valid only during the call.
class ItemSink {
 public:
  virtual ~ItemSink() = default;
  virtual void Add(std::string_view sort_key, std::string_view encoded_attributes,
                   std::span<const storage::AttributeView> attributes) = 0;

  // For a page read in two parts at once: an empty sink of the same kind that a helper thread
  // fills with the later part, of about `expected_items`. nullptr (the default) keeps the page
  // on one thread.
  virtual std::unique_ptr<ItemSink> NewPart(std::size_t /*expected_items*/) const { return nullptr; }
  // Appends the first `n` items given to `part` (made by this sink's NewPart) after its own.
  virtual void AppendPart(ItemSink* /*part*/, std::size_t /*n*/) {}
};

// The items of a page as stored: sort keys and encoded values (storage/reading.h) side by side
// in a few fixed-size chunks, never moved once written. A 600-item page is two allocations
// instead of three per item.
class Items final : public ItemSink {
 public:
  struct Item {
    std::string_view sort_key;
    std::string_view encoded_attributes;  // read whole by Query
  };

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Item operator[](std::size_t i) const;
  // The item as a Reading of `device_id`, for callers that need owned attributes.
  Status ToReading(std::size_t i, std::string_view device_id, storage::Reading* reading) const;

  void Append(std::string_view sort_key, std::string_view encoded_attributes);
  void Add(std::string_view sort_key, std::string_view encoded_attributes,
           std::span<const storage::AttributeView>) override {
    Append(sort_key, encoded_attributes);
  }
  std::unique_ptr<ItemSink> NewPart(std::size_t) const override { return std::make_unique<Items>(); }
  void AppendPart(ItemSink* part, std::size_t n) override;

 private:
  static constexpr std::size_t kChunkBytes = 32u << 10;
  struct Span {
    std::size_t chunk;
    std::size_t begin;  // of the sort key in its chunk; the encoded value follows it
    std::size_t sort_key_size;
    std::size_t size;
  };
  std::vector<std::string> chunks_;  // each filled only up to the capacity it was given
  std::vector<Span> items_;
};

struct QueryResult {
  Items items;                    // unless Query was given a sink
  std::size_t count = 0;          // items returned (after the filter)
  std::size_t scanned_count = 0;  // items read (before the filter)
  // storage::ItemSize of every item read, filtered out or not: what DynamoDB bills reads on.
  std::size_t scanned_bytes = 0;
  // Set when the page stopped at limit or max_page_bytes and, unless request.key_when_full,
  // more items remain in range (Query reads one item ahead to know).
  std::optional<std::string> last_evaluated_sort_key;
};

// Reads only the key condition's range: one iterator bounded to it, one seek, then Next / Prev
// (none when key.matches_nothing).
// Iterator and decoding errors are returned; `result` is reset first. Items go to `sink` when
// given (the native API renders them straight into its page, without copying them first),
// otherwise to result->items.
Status Query(const storage::Store& store, const QueryRequest& request, QueryResult* result,
             ItemSink* sink = nullptr);

}  // namespace readingsd::query
