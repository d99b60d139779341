// The DynamoDB-compatible read path (the Router sends it `POST /` and anything with an
// X-Amz-Target header).
//
// POST / with `X-Amz-Target: DynamoDB_20120810.<Op>`, JSON 1.0 protocol, so the AWS CLI and SDKs
// work with --endpoint-url. One table (Context::table_name) keyed deviceId (HASH, S) +
// readingTs (RANGE, S). Operations: Query, GetItem, Scan, BatchGetItem, DescribeTable,
// ListTables, with the expression parameters and their legacy forms, and ReturnConsumedCapacity.
// The table is read-only here (readings arrive over MQTT): write operations get a
// ValidationException. api/dynamodb/internal.h lists what the operations' files share.
//
// SigV4 signatures are not checked. Access control is the bind address and, when bearer tokens
// are configured, the request's access key id, which the Router compares with the tokens.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "cluster/node_map.h"
#include "http/handler.h"
#include "query/query.h"

namespace readingsd::api::dynamodb {

struct Context {
  const query::ReadContext& read;
  std::string_view table_name;  // the one table
  std::chrono::system_clock::time_point server_started;  // DescribeTable's CreationDateTime
  std::string request_id;  // unique per request: x-amzn-RequestId
  std::string_view region;  // in the table's ARN
};

// Thread-safe: it keeps nothing between calls. `endpoint` is set to the name reported to
// http::ServerHooks::on_request: dynamodb.<Op> or dynamodb.other.
http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint);

// What `request` needs of the fleet when this node holds only some partitions: GetItem and a
// Query of the table are kDevice (the device their key names), a Query of an index, Scan and
// BatchGetItem kMerged (each node answers its share: partitions=…&partition_count=… on the
// target, cluster::PartitionSet). What this module refuses anyway (a malformed body, an unknown
// operation) and the table's metadata are kLocal.
cluster::Reach ReachOf(const http::Request& request, std::string* device_id);

// The answer to a Query of an index, a Scan or a BatchGetItem (Reach::kMerged) from the shares
// several nodes answered for it (cluster::Forwarder): what one node holding every partition gives,
// with the same Count, ScannedCount and LastEvaluatedKey, or Responses and UnprocessedKeys.
http::Response Merge(const Context& context, const http::Request& request, std::span<const std::string> shares);

// A DynamoDB-shaped error: x-amzn-ErrorType, {"__type":"com.amazonaws.dynamodb.v20120810#<type>",
// "message":…}, x-amzn-RequestId and x-amz-crc32 (which botocore verifies).
http::Response Error(const Context& context, http::status status, std::string_view type, std::string_view message);

}  // namespace readingsd::api::dynamodb
