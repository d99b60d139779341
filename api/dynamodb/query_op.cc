// Query and GetItem: one partition's items.
#include <vector>

#include "api/dynamodb/internal.h"
#include "query/query.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb::internal {
namespace {

Status OutsideBoundaries() {
  return Status::InvalidArgument(
      "The provided starting key is outside query boundaries based on provided conditions");
}

struct ParsedQuery {
  Expressions expressions;
  ReadParameters read;
  query::QueryRequest request;
};

Status ParseQuery(const Context& context, const Json& body, ParsedQuery* query) {
  if (Status s = CheckMembers(body, "Query",
                              {"TableName", "IndexName", "KeyConditionExpression", "KeyConditions",
                               "ExpressionAttributeNames", "ExpressionAttributeValues", "FilterExpression",
                               "QueryFilter", "ConditionalOperator", "ProjectionExpression", "AttributesToGet",
                               "Limit", "ScanIndexForward", "ExclusiveStartKey", "Select", "ConsistentRead",
                               "ReturnConsumedCapacity"});
      !s.ok()) {
    return s;
  }
  std::optional<std::string> key_text;
  std::optional<bool> forward;
  std::optional<Json> start, key_conditions;
  for (Status s : {Get(body, "KeyConditionExpression", &key_text), Get(body, "ScanIndexForward", &forward),
                   Get(body, "ExclusiveStartKey", &start), Get(body, "KeyConditions", &key_conditions)}) {
    if (!s.ok()) return s;
  }
  Constraints constraints;
  ReadParameters& read = query->read;
  if (Status s = ParseReadParameters(context, body, "QueryFilter", /*key_attributes_in_filter=*/false, &constraints,
                                     &query->expressions, &read);
      !s.ok()) {
    return s;
  }
  query::QueryRequest& request = query->request;
  if (key_text) {
    std::string device_id, a, b;
    query::SortKeyOp op = query::SortKeyOp::kAll;
    if (Status s = expr::ParseKeyConditionExpression(*key_text, query->expressions.context, &device_id, &op, &a, &b);
        !s.ok()) {
      return s;
    }
    if (Status s = query::MakeKeyCondition(device_id, op, a, b, &request.key, query::KeyValues::kAsDynamoDb); !s.ok()) {
      return s;
    }
    read.expression_texts.push_back(*key_text);
  } else if (key_conditions) {
    if (Status s = ParseKeyConditions(*key_conditions, &request.key); !s.ok()) return s;
  } else {
    return Status::InvalidArgument(
        "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.");
  }
  if (Status s = CheckPlaceholdersUsed(query->expressions, read); !s.ok()) return s;

  request.filter = read.filter.get();
  request.limit = read.limit;
  request.scan_forward = forward.value_or(true);
  request.max_page_bytes = context.read.limits.max_page_bytes;
  request.helpers = context.read.helpers;
  request.key_when_full = true;
  if (start) {
    std::string device_id, timestamp;
    if (Status s = ParseKey(*start, "The provided starting key is invalid", &device_id, &timestamp); !s.ok()) return s;
    if (device_id != request.key.device_id) return OutsideBoundaries();
    if (Status s = storage::NormalizeTimestamp(timestamp, &request.exclusive_start); !s.ok()) {
      return Status::InvalidArgument("The provided starting key is invalid: " + s.message());
    }
    if (!query::InSortKeyRange(request.key, request.exclusive_start)) return OutsideBoundaries();
  }
  return Status::OK();
}

}  // namespace

http::Response QueryOp(const Context& context, const Json& body) {
  ParsedQuery query;
  if (Status s = ParseQuery(context, body, &query); !s.ok()) return ErrorFromStatus(context, s);
  query::QueryResult result;
  if (Status s = query::Query(context.read.store, query.request, &result); !s.ok()) return ErrorFromStatus(context, s);
  const std::string& device_id = query.request.key.device_id;
  // A device id no partition can have is not one to count reads of.
  if (!query.request.key.matches_nothing) {
    context.read.ReportPartitionRead(device_id, result.scanned_count, result.scanned_bytes);
  }

  Json response = Json::object();
  if (!query.read.count_only) {
    response["Items"] = Json::array();
    std::vector<storage::AttributeView> attributes;
    for (std::size_t i = 0; i < result.items.size(); ++i) {
      const query::Items::Item item = result.items[i];
      if (Status s = storage::ReadAttributes(item.encoded_attributes, &attributes); !s.ok()) {
        return ErrorFromStatus(context, s);
      }
      response["Items"].push_back(ItemJson(device_id, item.sort_key, attributes, query.read.projection));
    }
  }
  response["Count"] = result.count;
  response["ScannedCount"] = result.scanned_count;
  if (result.last_evaluated_sort_key) {
    response["LastEvaluatedKey"] = KeyJson(device_id, *result.last_evaluated_sort_key);
  }
  if (query.read.capacity != Capacity::kNone) {
    response["ConsumedCapacity"] = ConsumedCapacityJson(
        context, query.read.capacity, ReadUnits(result.scanned_bytes, query.read.consistent));
  }
  return Ok(context, response);
}

http::Response GetItemOp(const Context& context, const Json& body) {
  std::optional<std::string> table, projection_text, capacity_text;
  std::optional<Json> key;
  std::optional<bool> consistent;
  Expressions expressions;
  Projection projection;
  std::string device_id, timestamp;
  Status parsed = [&] {
    if (Status s = CheckMembers(body, "GetItem",
                                {"TableName", "Key", "ProjectionExpression", "ExpressionAttributeNames",
                                 "AttributesToGet", "ConsistentRead", "ReturnConsumedCapacity"});
        !s.ok()) {
      return s;
    }
    for (Status s : {Get(body, "TableName", &table), Get(body, "ProjectionExpression", &projection_text),
                     Get(body, "Key", &key), Get(body, "ConsistentRead", &consistent),
                     Get(body, "ReturnConsumedCapacity", &capacity_text)}) {
      if (!s.ok()) return s;
    }
    Constraints constraints;
    if (!key) constraints.Fail("null", "key", "Member must not be null");
    constraints.OneOf(capacity_text, "returnConsumedCapacity", kCapacityValues);
    if (Status s = constraints.status(); !s.ok()) return s;
    if (Status s = CheckTable(context, table); !s.ok()) return s;
    if (Status s = CheckExpressionParameters(body, {"ProjectionExpression"}, {"AttributesToGet"}); !s.ok()) return s;
    if (Status s = ParseExpressionAttributes(body, &expressions); !s.ok()) return s;
    if (Status s = ParseAttributesToGet(body, &projection); !s.ok()) return s;
    if (projection_text) {
      projection.emplace();
      if (Status s = expr::ParseProjectionExpression(*projection_text, expressions.context, &*projection); !s.ok()) {
        return s;
      }
    }
    if (Status s = expr::CheckPlaceholdersUsed(expressions.context, {projection_text.value_or("")}); !s.ok()) return s;
    return ParseKey(*key, "", &device_id, &timestamp);
  }();
  if (!parsed.ok()) return ErrorFromStatus(context, parsed);

  const Capacity capacity = CapacityOf(capacity_text);
  Json response = Json::object();
  std::size_t bytes = 0;
  std::string sort_key;
  storage::Reading reading;
  // A key no stored item can have is simply not found, as in DynamoDB (and no partition's read).
  const bool storable = StoredKey(device_id, timestamp, &sort_key);
  Status s = storable ? context.read.store.Get(device_id, sort_key, &reading) : Status::NotFound("no such key");
  if (s.ok()) {
    bytes = storage::ItemSize(reading);
    response["Item"] = ItemJson(device_id, sort_key, storage::ViewsOf(reading.attributes), projection);
    context.read.ReportPartitionRead(device_id, 1, bytes);
  } else if (s.IsNotFound()) {
    if (storable) context.read.ReportPartitionRead(device_id, 0, 0);
  } else {
    return Error(context, http::status::internal_server_error, "InternalServerError", s.ToString());
  }
  if (capacity != Capacity::kNone) {
    response["ConsumedCapacity"] = ConsumedCapacityJson(context, capacity, ReadUnits(bytes, consistent.value_or(false)));
  }
  return Ok(context, response);
}

}  // namespace readingsd::api::dynamodb::internal
