// Scan: the whole table, or one segment of a parallel scan (query/scan.h reads it).
#include <vector>

#include "api/dynamodb/internal.h"
#include "query/scan.h"
#include "query/scan_share.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb::internal {
namespace {

// Renders each item as Scan hands it over, while its bytes are still the iterator's.
class JsonSink final : public query::ScanSink {
 public:
  JsonSink(const Projection& projection, bool count_only, Json* items)
      : projection_(projection), count_only_(count_only), items_(items) {}

  void Add(const query::ScanItem& item) override {
    if (!count_only_) items_->push_back(ItemJson(item.device_id, item.sort_key, item.attributes, projection_));
  }

 private:
  const Projection& projection_;
  const bool count_only_;
  Json* items_;
};

struct ParsedScan {
  Expressions expressions;
  ReadParameters read;
  query::ScanRequest request;
};

Status ParseScan(const Context& context, const Json& body, ParsedScan* scan) {
  if (Status s = CheckMembers(body, "Scan",
                              {"TableName", "IndexName", "FilterExpression", "ScanFilter", "ConditionalOperator",
                               "ProjectionExpression", "AttributesToGet", "ExpressionAttributeNames",
                               "ExpressionAttributeValues", "Select", "Limit", "ExclusiveStartKey", "Segment",
                               "TotalSegments", "ConsistentRead", "ReturnConsumedCapacity"});
      !s.ok()) {
    return s;
  }
  std::optional<int64_t> segment, total_segments;
  std::optional<Json> start;
  for (Status s : {Get(body, "Segment", &segment), Get(body, "TotalSegments", &total_segments),
                   Get(body, "ExclusiveStartKey", &start)}) {
    if (!s.ok()) return s;
  }
  Constraints constraints;
  constraints.AtLeast(segment, "segment", 0);
  constraints.AtMost(segment, "segment", query::kMaxTotalSegments - 1);
  constraints.AtLeast(total_segments, "totalSegments", 1);
  constraints.AtMost(total_segments, "totalSegments", query::kMaxTotalSegments);
  ReadParameters& read = scan->read;
  if (Status s = ParseReadParameters(context, body, "ScanFilter", /*key_attributes_in_filter=*/true, &constraints,
                                     &scan->expressions, &read);
      !s.ok()) {
    return s;
  }
  // As DynamoDB: Segment 0 alone is the whole table; any other needs TotalSegments.
  if (segment && *segment != 0 && !total_segments) {
    return Status::InvalidArgument(
        "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
        "present");
  }
  if (total_segments) {
    if (!segment) {
      return Status::InvalidArgument(
          "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
          "present");
    }
    if (*segment >= *total_segments) {
      return Status::InvalidArgument(
          "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: " +
          std::to_string(*segment) + " is not less than TotalSegments: " + std::to_string(*total_segments));
    }
  }
  if (Status s = CheckPlaceholdersUsed(scan->expressions, read); !s.ok()) return s;

  query::ScanRequest& request = scan->request;
  request.filter = read.filter.get();
  request.limit = read.limit;
  request.max_page_bytes = context.read.limits.max_page_bytes;
  request.segment = static_cast<uint32_t>(segment.value_or(0));
  request.total_segments = static_cast<uint32_t>(total_segments.value_or(1));
  if (start) {
    query::ItemKey key;
    std::string timestamp;
    if (Status s = ParseKey(*start, "The provided starting key is invalid", &key.device_id, &timestamp); !s.ok()) {
      return s;
    }
    // Any accepted form of the timestamp; one that is no timestamp is refused by Scan.
    if (!storage::NormalizeTimestamp(timestamp, &key.sort_key).ok()) key.sort_key = timestamp;
    request.exclusive_start = std::move(key);
  }
  return Status::OK();
}

// The page from this node's store, or with `shares` from the nodes' shares of it.
http::Response ScanPage(const Context& context, const ParsedScan& scan,
                        std::optional<std::span<const std::string>> shares = std::nullopt) {
  Json items = Json::array();
  JsonSink sink(scan.read.projection, scan.read.count_only, &items);
  query::ScanResult result;
  Status s = shares ? query::MergeScanShares(scan.request, *shares, &sink, &result)
                    : query::Scan(context.read.store, scan.request, &sink, &result);
  if (!s.ok()) return ErrorFromStatus(context, s);
  for (const query::ScanResult::PartitionRead& read : result.partitions) {
    context.read.ReportPartitionRead(read.device_id, read.items, read.bytes);
  }
  Json response = Json::object();
  if (!scan.read.count_only) response["Items"] = std::move(items);
  response["Count"] = result.count;
  response["ScannedCount"] = result.scanned_count;
  if (result.last_evaluated_key) {
    response["LastEvaluatedKey"] = KeyJson(result.last_evaluated_key->device_id, result.last_evaluated_key->sort_key);
  }
  if (scan.read.capacity != Capacity::kNone) {
    response["ConsumedCapacity"] =
        ConsumedCapacityJson(context, scan.read.capacity, ReadUnits(result.scanned_bytes, scan.read.consistent));
  }
  return Ok(context, response);
}

}  // namespace

http::Response ScanOp(const Context& context, const Json& body) {
  ParsedScan scan;
  if (Status s = ParseScan(context, body, &scan); !s.ok()) return ErrorFromStatus(context, s);
  return ScanPage(context, scan);
}

http::Response ScanShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share) {
  ParsedScan scan;
  if (Status s = ParseScan(context, body, &scan); !s.ok()) return ErrorFromStatus(context, s);
  scan.request.device_wanted = [&share](std::string_view device_id) { return share.Holds(device_id); };
  query::ScanShareWriter writer;
  query::ScanResult result;
  Status s = query::Scan(context.read.store, scan.request, &writer, &result);
  if (!s.ok()) return ErrorFromStatus(context, s);
  for (const query::ScanResult::PartitionRead& read : result.partitions) {
    context.read.ReportPartitionRead(read.device_id, read.items, read.bytes);
  }
  return ShareAnswer(std::move(writer).Finish(result));
}

http::Response MergeScanOp(const Context& context, const Json& body, std::span<const std::string> shares) {
  ParsedScan scan;
  if (Status s = ParseScan(context, body, &scan); !s.ok()) return ErrorFromStatus(context, s);
  return ScanPage(context, scan, shares);
}

}  // namespace readingsd::api::dynamodb::internal
