// The DynamoDB-compatible read path (internal to readingsd_query; the Router routes `/` here).
//
// POST / with `X-Amz-Target: DynamoDB_20120810.<Op>`, JSON 1.0 protocol, so the AWS CLI and SDKs
// work with --endpoint-url. One table (RouterOptions::table_name) keyed deviceId (HASH, S) +
// readingTs (RANGE, S). Operations: Query, GetItem, DescribeTable, ListTables. The table is
// read-only here (readings arrive over MQTT): write operations get a ValidationException.
//
// SigV4 signatures are not checked. Access control is the bind address and, when bearer tokens
// are configured, the request's access key id, which the Router compares with the tokens.
#pragma once

#include <string_view>

#include "query/http_api.h"

namespace readingsd::query {

http::Response HandleDynamoDbRequest(const ApiContext& context, const http::Request& request,
                                   std::string_view* endpoint);

// A DynamoDB-shaped error: x-amzn-ErrorType, {"__type":"com.amazonaws.dynamodb.v20120810#<type>",
// "message":…}, x-amzn-RequestId and x-amz-crc32 (which botocore verifies).
http::Response DynamoDbError(const ApiContext& context, http::status status, std::string_view type,
                           std::string_view message);

}  // namespace readingsd::query
