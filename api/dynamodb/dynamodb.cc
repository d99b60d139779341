#include "api/dynamodb/dynamodb.h"

#include <algorithm>
#include <boost/crc.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "expr/expr.h"
#include "json/dump.h"
#include "json/parse.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb {
namespace {

using Json = OrderedJson;
using query::FilterExpr;
using query::QueryRequest;
using query::QueryResult;
using query::SortKeyOp;

constexpr std::string_view kTargetPrefix = "DynamoDB_20120810.";
constexpr std::string_view kErrorTypePrefix = "com.amazonaws.dynamodb.v20120810#";
constexpr std::string_view kReadOnly =
    " is not supported: the table is read-only over HTTP (readings arrive over MQTT)";

http::Response DynamoDbResponse(const Context& context, http::status status, const Json& body) {
  http::Response res{status, 11};
  res.set(http::field::content_type, "application/x-amz-json-1.0");
  res.set("x-amzn-RequestId", context.request_id);
  res.body() = DumpJson(body);
  boost::crc_32_type crc;
  crc.process_bytes(res.body().data(), res.body().size());
  res.set("x-amz-crc32", std::to_string(crc.checksum()));
  return res;
}

http::Response Ok(const Context& context, const Json& body) {
  return DynamoDbResponse(context, http::status::ok, body);
}

// InvalidArgument is the caller's ValidationException and NotFound the table it named; anything
// else is the store failing.
http::Response ErrorFromStatus(const Context& context, const Status& s) {
  if (s.IsInvalidArgument())
    return Error(context, http::status::bad_request, "ValidationException", s.message());
  if (s.IsNotFound()) {
    return Error(context, http::status::bad_request, "ResourceNotFoundException", s.message());
  }
  return Error(context, http::status::internal_server_error, "InternalServerError", s.ToString());
}

Status CheckTable(const Context& context, const std::optional<std::string>& table) {
  if (!table) {
    return Status::InvalidArgument(
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must "
        "not be null");
  }
  if (*table != context.table_name) return Status::NotFound("Requested resource not found");
  return Status::OK();
}

// Every operation names the members it understands; anything else is refused rather than
// silently ignored, the legacy (pre-expression) parameters with their replacement.
Status CheckMembers(const Json& request, std::string_view operation,
                    std::initializer_list<std::string_view> accepted) {
  static const std::map<std::string_view, std::string_view> kLegacy = {
      {"KeyConditions", "KeyConditionExpression"},
      {"QueryFilter", "FilterExpression"},
      {"ConditionalOperator", "FilterExpression"},
      {"AttributesToGet", "ProjectionExpression"},
  };
  for (const auto& [name, value] : request.items()) {
    if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) continue;
    const std::string prefix = std::string(operation) + ": parameter " + name + " is not supported";
    auto legacy = kLegacy.find(name);
    return Status::InvalidArgument(
        legacy == kLegacy.end() ? prefix : prefix + " (legacy); use " + std::string(legacy->second));
  }
  return Status::OK();
}

// An optional member of the request of type T (std::string, bool, int64_t or a JSON object).
template <typename T>
Status Get(const Json& request, const char* name, std::optional<T>* out) {
  auto it = request.find(name);
  if (it == request.end() || it->is_null()) return Status::OK();
  bool typed;
  std::string_view type;
  if constexpr (std::is_same_v<T, std::string>) {
    typed = it->is_string(), type = "string";
  } else if constexpr (std::is_same_v<T, bool>) {
    typed = it->is_boolean(), type = "boolean";
  } else if constexpr (std::is_same_v<T, int64_t>) {
    typed = it->is_number_integer(), type = "integer";
  } else {
    static_assert(std::is_same_v<T, Json>);
    typed = it->is_object(), type = "map";
  }
  if (!typed) {
    return Status::InvalidArgument("1 validation error detected: Value at '" + std::string(name) +
                                   "' failed to satisfy constraint: Member must be a " + std::string(type));
  }
  *out = it->template get<T>();
  return Status::OK();
}

Json Typed(std::string_view type, Json value) {
  Json av = Json::object();
  av[type] = std::move(value);
  return av;
}

Json ToAttributeValue(const storage::AttributeValue& value) {
  if (const auto* n = std::get_if<storage::Number>(&value)) return Typed("N", n->text);
  if (const std::string* s = std::get_if<std::string>(&value)) return Typed("S", *s);
  return Typed("BOOL", std::get<bool>(value));
}

// Readings hold S, N and BOOL values only; other DynamoDB types could never compare equal.
Status FromAttributeValue(const Json& av, std::string_view where, storage::AttributeValue* out) {
  if (!av.is_object() || av.size() != 1) {
    return Status::InvalidArgument(
        std::string(where) +
        ": Supplied AttributeValue is empty, must contain exactly one of the supported datatypes");
  }
  const std::string& type = av.begin().key();
  const Json& value = av.begin().value();
  if (type == "S" && value.is_string()) {
    *out = value.get<std::string>();
  } else if (type == "BOOL" && value.is_boolean()) {
    *out = value.get<bool>();
  } else if (type == "N" && value.is_string()) {
    storage::Number number;
    if (Status s = storage::Number::Parse(value.get_ref<const std::string&>(), &number); !s.ok()) {
      return Status::InvalidArgument(std::string(where) + ": " + s.message());
    }
    *out = std::move(number);
  } else {
    return Status::InvalidArgument(std::string(where) + ": attribute value type " + type +
                                   " is not supported (readings hold S, N and BOOL values)");
  }
  return Status::OK();
}

Json KeyJson(std::string_view device_id, std::string_view sort_key) {
  Json key = Json::object();
  key[storage::kDeviceIdAttribute] = Typed("S", device_id);
  key[storage::kReadingTsAttribute] = Typed("S", sort_key);
  return key;
}

// {"deviceId":{"S":…},"readingTs":{"S":…}}; the timestamp may be any accepted ISO-8601 form.
Status ParseKey(const Json& key, std::string_view what, std::string* device_id, std::string* sort_key) {
  const Status mismatch =
      Status::InvalidArgument(std::string(what) + ": The provided key element does not match the schema");
  auto string_member = [&key](std::string_view name) -> const Json* {
    auto it = key.find(name);
    if (it == key.end() || !it->is_object() || it->size() != 1 || !it->contains("S") ||
        !(*it)["S"].is_string()) {
      return nullptr;
    }
    return &(*it)["S"];
  };
  if (key.size() != 2) return mismatch;
  const Json* device = string_member(storage::kDeviceIdAttribute);
  const Json* ts = string_member(storage::kReadingTsAttribute);
  if (!device || !ts) return mismatch;
  *device_id = device->get<std::string>();
  if (Status s = storage::ValidateDeviceId(*device_id); !s.ok()) {
    return Status::InvalidArgument(std::string(what) + ": " + s.message());
  }
  if (Status s = storage::NormalizeTimestamp(ts->get<std::string>(), sort_key); !s.ok()) {
    return Status::InvalidArgument(std::string(what) + ": " + s.message());
  }
  return Status::OK();
}

Json ItemJson(const storage::Reading& reading, const std::optional<std::vector<std::string>>& projection) {
  auto wanted = [&](std::string_view name) {
    return !projection || std::find(projection->begin(), projection->end(), name) != projection->end();
  };
  Json item = Json::object();
  if (wanted(storage::kDeviceIdAttribute)) item[storage::kDeviceIdAttribute] = Typed("S", reading.device_id);
  if (wanted(storage::kReadingTsAttribute)) item[storage::kReadingTsAttribute] = Typed("S", reading.sort_key);
  for (const storage::Attribute& a : reading.attributes) {
    if (wanted(a.name)) item[a.name] = ToAttributeValue(a.value);
  }
  return item;
}

// ExpressionAttributeNames / ExpressionAttributeValues and the context the parsers read them
// through. Not copyable: `context` points into this object.
struct Expressions {
  Expressions() = default;
  Expressions(const Expressions&) = delete;
  Expressions& operator=(const Expressions&) = delete;

  std::map<std::string, std::string> names;
  std::map<std::string, storage::AttributeValue> values;
  expr::ExpressionContext context{&names, &values};
};

Status ParseExpressionAttributes(const Json& request, Expressions* out) {
  std::optional<Json> names, values;
  if (Status s = Get(request, "ExpressionAttributeNames", &names); !s.ok()) return s;
  if (Status s = Get(request, "ExpressionAttributeValues", &values); !s.ok()) return s;
  if (names) {
    if (names->empty()) return Status::InvalidArgument("ExpressionAttributeNames must not be empty");
    for (const auto& [placeholder, name] : names->items()) {
      if (!name.is_string()) {
        return Status::InvalidArgument("ExpressionAttributeNames contains invalid value for key " +
                                       placeholder);
      }
      out->names[placeholder] = name.get<std::string>();
    }
  }
  if (values) {
    if (values->empty()) return Status::InvalidArgument("ExpressionAttributeValues must not be empty");
    for (const auto& [placeholder, av] : values->items()) {
      Status s =
          FromAttributeValue(av, "ExpressionAttributeValues contains invalid value for key " + placeholder,
                             &out->values[placeholder]);
      if (!s.ok()) return s;
    }
  }
  return Status::OK();
}

struct ParsedQuery {
  QueryRequest request;
  std::unique_ptr<FilterExpr> filter;
  std::optional<std::vector<std::string>> projection;
  bool count_only = false;
};

Status ParseQuery(const Context& context, const Json& body, ParsedQuery* query) {
  if (Status s = CheckMembers(
          body, "Query",
          {"TableName", "KeyConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues",
           "FilterExpression", "ProjectionExpression", "Limit", "ScanIndexForward", "ExclusiveStartKey",
           "Select", "ConsistentRead", "ReturnConsumedCapacity"});
      !s.ok()) {
    return s;
  }
  std::optional<std::string> table, key_text, filter_text, projection_text, select;
  std::optional<int64_t> limit;
  std::optional<bool> forward;
  std::optional<Json> start;
  for (Status s :
       {Get(body, "TableName", &table), Get(body, "KeyConditionExpression", &key_text),
        Get(body, "FilterExpression", &filter_text), Get(body, "ProjectionExpression", &projection_text),
        Get(body, "Select", &select), Get(body, "Limit", &limit), Get(body, "ScanIndexForward", &forward),
        Get(body, "ExclusiveStartKey", &start), CheckTable(context, table)}) {
    if (!s.ok()) return s;
  }
  if (!key_text) {
    return Status::InvalidArgument(
        "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.");
  }
  Expressions expressions;
  if (Status s = ParseExpressionAttributes(body, &expressions); !s.ok()) return s;

  std::string device_id, a, b;
  SortKeyOp op = SortKeyOp::kAll;
  if (Status s = expr::ParseKeyConditionExpression(*key_text, expressions.context, &device_id, &op, &a, &b);
      !s.ok()) {
    return s;
  }
  if (Status s = query::MakeKeyCondition(device_id, op, a, b, &query->request.key); !s.ok()) return s;
  if (filter_text) {
    if (Status s = expr::ParseFilterExpression(*filter_text, expressions.context, &query->filter); !s.ok())
      return s;
    query->request.filter = query->filter.get();
  }
  if (projection_text) {
    query->projection.emplace();
    Status s = expr::ParseProjectionExpression(*projection_text, expressions.context, &*query->projection);
    if (!s.ok()) return s;
  }
  Status used = expr::CheckPlaceholdersUsed(expressions.context,
                                      {*key_text, filter_text.value_or(""), projection_text.value_or("")});
  if (!used.ok()) return used;

  if (select && *select == "COUNT") {
    if (projection_text)
      return Status::InvalidArgument("Cannot specify a ProjectionExpression when Select is COUNT");
    query->count_only = true;
  } else if (select && *select == "SPECIFIC_ATTRIBUTES") {
    if (!projection_text) {
      return Status::InvalidArgument("Select SPECIFIC_ATTRIBUTES requires a ProjectionExpression");
    }
  } else if (select && *select != "ALL_ATTRIBUTES") {
    return Status::InvalidArgument(
        "Select " + *select +
        " is not supported (ALL_ATTRIBUTES, SPECIFIC_ATTRIBUTES or COUNT; the table has no indexes)");
  }

  // DynamoDB may end a page early and does so at 1 MB; max_limit is one more such bound, so a
  // larger Limit only means a shorter page with a LastEvaluatedKey.
  if (limit && *limit < 1) {
    return Status::InvalidArgument(
        "1 validation error detected: Value '" + std::to_string(*limit) +
        "' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1");
  }
  const std::size_t max_limit = context.read.limits.max_limit;
  query->request.limit = limit ? std::min(static_cast<std::size_t>(*limit), max_limit) : max_limit;
  query->request.scan_forward = forward.value_or(true);
  query->request.max_page_bytes = context.read.limits.max_page_bytes;
  query->request.helpers = context.read.helpers;
  if (start) {
    std::string start_device;
    if (Status s = ParseKey(*start, "ExclusiveStartKey", &start_device, &query->request.exclusive_start);
        !s.ok()) {
      return s;
    }
    if (start_device != device_id) {
      return Status::InvalidArgument(
          "The provided starting key is outside query boundaries based on provided conditions");
    }
  }
  return Status::OK();
}

http::Response QueryOp(const Context& context, const Json& body) {
  ParsedQuery query;
  if (Status s = ParseQuery(context, body, &query); !s.ok()) return ErrorFromStatus(context, s);
  QueryResult result;
  if (Status s = query::Query(context.read.store, query.request, &result); !s.ok()) return ErrorFromStatus(context, s);
  const std::string& device_id = query.request.key.device_id;
  context.read.ReportPartitionRead(device_id, result.scanned_count, result.scanned_bytes);

  Json response = Json::object();
  if (!query.count_only) {
    response["Items"] = Json::array();
    storage::Reading reading;
    for (std::size_t i = 0; i < result.items.size(); ++i) {
      if (Status s = result.items.ToReading(i, device_id, &reading); !s.ok()) return ErrorFromStatus(context, s);
      response["Items"].push_back(ItemJson(reading, query.projection));
    }
  }
  response["Count"] = result.count;
  response["ScannedCount"] = result.scanned_count;
  if (result.last_evaluated_sort_key)
    response["LastEvaluatedKey"] = KeyJson(device_id, *result.last_evaluated_sort_key);
  return Ok(context, response);
}

Status ParseGetItem(const Context& context, const Json& body, std::string* device_id,
                    std::string* sort_key, std::optional<std::vector<std::string>>* projection) {
  if (Status s = CheckMembers(body, "GetItem",
                              {"TableName", "Key", "ProjectionExpression", "ExpressionAttributeNames",
                               "ConsistentRead", "ReturnConsumedCapacity"});
      !s.ok()) {
    return s;
  }
  std::optional<std::string> table, projection_text;
  std::optional<Json> key;
  for (Status s : {Get(body, "TableName", &table), Get(body, "ProjectionExpression", &projection_text),
                   Get(body, "Key", &key), CheckTable(context, table)}) {
    if (!s.ok()) return s;
  }
  if (!key) {
    return Status::InvalidArgument(
        "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be "
        "null");
  }
  if (Status s = ParseKey(*key, "Key", device_id, sort_key); !s.ok()) return s;
  Expressions expressions;
  if (Status s = ParseExpressionAttributes(body, &expressions); !s.ok()) return s;
  if (projection_text) {
    projection->emplace();
    if (Status s = expr::ParseProjectionExpression(*projection_text, expressions.context, &**projection); !s.ok()) {
      return s;
    }
  }
  return expr::CheckPlaceholdersUsed(expressions.context, {projection_text.value_or("")});
}

http::Response GetItemOp(const Context& context, const Json& body) {
  std::string device_id, sort_key;
  std::optional<std::vector<std::string>> projection;
  if (Status s = ParseGetItem(context, body, &device_id, &sort_key, &projection); !s.ok())
    return ErrorFromStatus(context, s);

  storage::Reading reading;
  Status s = context.read.store.Get(device_id, sort_key, &reading);
  if (s.IsNotFound()) {
    context.read.ReportPartitionRead(device_id, 0, 0);
    return Ok(context, Json::object());
  }
  if (!s.ok())
    return Error(context, http::status::internal_server_error, "InternalServerError", s.ToString());
  context.read.ReportPartitionRead(device_id, 1, storage::ItemSize(reading));
  Json response = Json::object();
  response["Item"] = ItemJson(reading, projection);
  return Ok(context, response);
}

Json KeyAttribute(std::string_view name, std::string_view field, std::string_view value) {
  Json attribute = Json::object();
  attribute["AttributeName"] = name;
  attribute[field] = value;
  return attribute;
}

http::Response DescribeTableOp(const Context& context, const Json& body) {
  std::optional<std::string> table;
  for (Status s : {CheckMembers(body, "DescribeTable", {"TableName"}), Get(body, "TableName", &table)}) {
    if (!s.ok()) return ErrorFromStatus(context, s);
  }
  if (Status s = CheckTable(context, table); !s.ok()) {
    return ErrorFromStatus(
        context, s.IsNotFound()
                     ? Status::NotFound("Requested resource not found: Table: " + *table + " not found")
                     : s);
  }
  const storage::StoreStats stats = context.read.store.Stats();
  const std::string name(context.table_name);
  Json description = Json::object();
  description["TableName"] = name;
  description["TableArn"] = "arn:aws:dynamodb:local:000000000000:table/" + name;
  description["TableStatus"] = "ACTIVE";
  description["KeySchema"] = Json::array({KeyAttribute(storage::kDeviceIdAttribute, "KeyType", "HASH"),
                                          KeyAttribute(storage::kReadingTsAttribute, "KeyType", "RANGE")});
  description["AttributeDefinitions"] =
      Json::array({KeyAttribute(storage::kDeviceIdAttribute, "AttributeType", "S"),
                   KeyAttribute(storage::kReadingTsAttribute, "AttributeType", "S")});
  // RocksDB's estimate, as DynamoDB's own ItemCount is an estimate refreshed now and then.
  description["ItemCount"] = stats.estimated_keys;
  // Flushed data on disk, compressed: the memtable figure is arena memory, not item bytes.
  description["TableSizeBytes"] = stats.sst_bytes;
  // The store keeps no creation time; the server's start is the closest honest instant.
  description["CreationDateTime"] =
      std::chrono::duration<double>(context.server_started.time_since_epoch()).count();
  description["BillingModeSummary"] = Json::object({{"BillingMode", "PAY_PER_REQUEST"}});
  Json response = Json::object();
  response["Table"] = std::move(description);
  return Ok(context, response);
}

http::Response ListTablesOp(const Context& context, const Json& body) {
  std::optional<std::string> start;
  std::optional<int64_t> limit;
  for (Status s : {CheckMembers(body, "ListTables", {"ExclusiveStartTableName", "Limit"}),
                   Get(body, "ExclusiveStartTableName", &start), Get(body, "Limit", &limit)}) {
    if (!s.ok()) return ErrorFromStatus(context, s);
  }
  if (limit && (*limit < 1 || *limit > 100)) {
    return ErrorFromStatus(context, Status::InvalidArgument("ListTables: Limit must be from 1 to 100"));
  }
  Json names = Json::array();
  if (!start || *start < context.table_name) names.push_back(context.table_name);
  Json response = Json::object();
  response["TableNames"] = std::move(names);
  return Ok(context, response);
}

struct Operation {
  std::string_view name;
  std::string_view endpoint;  // the on_request label
  http::Response (*handler)(const Context&, const Json&);
};

constexpr Operation kOperations[] = {
    {"Query", "dynamodb.Query", &QueryOp},
    {"GetItem", "dynamodb.GetItem", &GetItemOp},
    {"DescribeTable", "dynamodb.DescribeTable", &DescribeTableOp},
    {"ListTables", "dynamodb.ListTables", &ListTablesOp},
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
  http::Response res = DynamoDbResponse(context, status, body);
  res.set("x-amzn-ErrorType", std::string(type));
  return res;
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
                         " is not supported (readingsd serves Query, GetItem, DescribeTable and ListTables)");
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
  // The typed accessors check before they convert; this only keeps a missed case a 400.
  try {
    return operation->handler(context, body);
  } catch (const Json::exception& e) {
    return Error(context, http::status::bad_request, "SerializationException", e.what());
  }
}

}  // namespace readingsd::api::dynamodb
