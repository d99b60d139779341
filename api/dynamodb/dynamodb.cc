#include "api/dynamodb/dynamodb.h"

#include <algorithm>
#include <optional>
#include <string>

#include "api/dynamodb/internal.h"
#include "json/parse.h"

namespace readingsd::api::dynamodb {
namespace {

using internal::ErrorFromStatus;
using internal::Json;

constexpr std::string_view kTargetPrefix = "DynamoDB_20120810.";
constexpr std::string_view kErrorTypePrefix = "com.amazonaws.dynamodb.v20120810#";
constexpr std::string_view kReadOnly =
    " is not supported: the table is read-only over HTTP (readings arrive over MQTT)";

struct Operation {
  std::string_view name;
  std::string_view endpoint;  // the on_request label
  http::Response (*handler)(const Context&, const Json&);
};

constexpr Operation kOperations[] = {
    {"Query", "dynamodb.Query", &internal::QueryOp},
    {"GetItem", "dynamodb.GetItem", &internal::GetItemOp},
    {"Scan", "dynamodb.Scan", &internal::ScanOp},
    {"BatchGetItem", "dynamodb.BatchGetItem", &internal::BatchGetItemOp},
    {"DescribeTable", "dynamodb.DescribeTable", &internal::DescribeTableOp},
    {"ListTables", "dynamodb.ListTables", &internal::ListTablesOp},
};

constexpr std::string_view kWriteOperations[] = {"PutItem",        "UpdateItem",         "DeleteItem",
                                                 "BatchWriteItem", "TransactWriteItems", "CreateTable",
                                                 "UpdateTable",    "DeleteTable"};

}  // namespace

http::Response Error(const Context& context, http::status status, std::string_view type,
                           std::string_view message) {
  Json body = Json::object();
  body["__type"] = std::string(kErrorTypePrefix) + std::string(type);
  body["message"] = message;
  http::Response res = internal::Respond(context, status, body);
  res.set("x-amzn-ErrorType", std::string(type));
  return res;
}

cluster::Reach ReachOf(const http::Request& request, std::string* device_id) {
  const std::string_view target = http::ToStd(request["X-Amz-Target"]);
  if (request.method() != http::verb::post || !target.starts_with(kTargetPrefix)) return cluster::Reach::kLocal;
  const std::string_view name = target.substr(kTargetPrefix.size());
  if (name == "Scan" || name == "BatchGetItem") return cluster::Reach::kMerged;
  if (name != "Query" && name != "GetItem") return cluster::Reach::kLocal;
  Json body;
  if (ParseJson(request.body(), &body) != JsonParseError::kNone || !body.is_object()) return cluster::Reach::kLocal;
  try {
    return internal::ReachOfRead(name, body, device_id);
  } catch (const Json::exception&) {
    return cluster::Reach::kLocal;
  }
}

http::Response HandleRequest(const Context& context, const http::Request& request,
                                   std::string_view* endpoint) {
  *endpoint = "dynamodb.other";
  if (request.method() != http::verb::post) {
    http::Response res = Error(context, http::status::method_not_allowed, "UnknownOperationException",
                                     "the DynamoDB endpoint takes POST requests");
    res.set(http::field::allow, "POST");
    return res;
  }
  const std::string_view target = http::ToStd(request["X-Amz-Target"]);
  if (!target.starts_with(kTargetPrefix)) {
    return Error(context, http::status::bad_request, "UnknownOperationException",
                         "expected an X-Amz-Target header of the form DynamoDB_20120810.<Operation>");
  }
  const std::string_view name = target.substr(kTargetPrefix.size());
  const Operation* operation = nullptr;
  for (const Operation& op : kOperations) {
    if (op.name == name) operation = &op;
  }
  if (!operation) {
    const bool write = std::find(std::begin(kWriteOperations), std::end(kWriteOperations), name) !=
                       std::end(kWriteOperations);
    return write
               ? ErrorFromStatus(context, Status::InvalidArgument(std::string(name) + std::string(kReadOnly)))
               : Error(
                     context, http::status::bad_request, "UnknownOperationException",
                     "operation " + std::string(name) +
                         " is not supported (readingsd serves Query, GetItem, Scan, BatchGetItem, DescribeTable and ListTables)");
  }
  *endpoint = operation->endpoint;
  Json body;
  const JsonParseError error = ParseJson(request.body(), &body);
  if (error == JsonParseError::kTooDeep) {
    // DynamoDB's words for an item nested past its 32 levels; every body DynamoDB accepts is within.
    return ErrorFromStatus(context, Status::InvalidArgument(
                                        "Nesting Levels have exceeded supported limits: the request body nests "
                                        "deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
  }
  if (error != JsonParseError::kNone || !body.is_object()) {
    return Error(context, http::status::bad_request, "SerializationException",
                         "the request body is not a JSON object");
  }
  // partitions=…&partition_count=… on the target: a node's share of a request merged across nodes.
  std::optional<cluster::PartitionSet> share;
  if (Status s = cluster::PartitionSetOf(http::ToStd(request.target()), &share); !s.ok()) {
    return ErrorFromStatus(context, s);
  }
  if (share && name != "Query" && name != "Scan" && name != "BatchGetItem") {
    return ErrorFromStatus(context, Status::InvalidArgument("partitions: only a Query of an index, Scan and "
                                                            "BatchGetItem are answered in shares (docs/cluster.md)"));
  }
  // The typed accessors check before they convert; this only keeps a missed case a 400.
  try {
    if (share) {
      if (name == "Query") return internal::QueryShareOp(context, body, *share);
      if (name == "Scan") return internal::ScanShareOp(context, body, *share);
      return internal::BatchGetShareOp(context, body, *share);
    }
    return operation->handler(context, body);
  } catch (const Json::exception& e) {
    return Error(context, http::status::bad_request, "SerializationException", e.what());
  }
}

http::Response Merge(const Context& context, const http::Request& request, std::span<const std::string> shares) {
  // Only a Query of an index, Scan and BatchGetItem are merged (ReachOf), and this node's own share
  // parsed the body.
  Json body;
  if (ParseJson(request.body(), &body) != JsonParseError::kNone || !body.is_object()) {
    return Error(context, http::status::bad_request, "SerializationException", "the request body is not a JSON object");
  }
  try {
    const std::string_view target = http::ToStd(request["X-Amz-Target"]);
    if (target.ends_with(".BatchGetItem")) return internal::MergeBatchGetOp(context, body, shares);
    if (target.ends_with(".Scan")) return internal::MergeScanOp(context, body, shares);
    return internal::MergeQueryOp(context, body, shares);
  } catch (const Json::exception& e) {
    return Error(context, http::status::bad_request, "SerializationException", e.what());
  }
}

}  // namespace readingsd::api::dynamodb
