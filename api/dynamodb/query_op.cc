// Query and GetItem: one partition's items.
#include <algorithm>
#include <vector>

#include "api/dynamodb/internal.h"
#include "query/index_query.h"
#include "query/index_share.h"
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
  query::IndexQueryRequest index_request;  // when read.index
};

// An index's sort value as a condition or key gives it: a readingTs that is a timestamp is
// normalised as stored, anything else compared as given (as DynamoDB compares key values).
storage::IndexValue SortValue(const storage::IndexSpec& spec, const storage::AttributeValue& value) {
  if (const auto* n = std::get_if<storage::Number>(&value)) return {true, n->text};
  std::string text = std::get<std::string>(value), sort_key;
  if (spec.sort == storage::IndexSort::kReadingTs && storage::NormalizeTimestamp(text, &sort_key).ok()) text = sort_key;
  return {false, std::move(text)};
}

// KeyConditionExpression and ExclusiveStartKey of a Query with IndexName. A sharded index's
// partition value with its suffix ("2026-06-23T08#3") reads that shard, as DynamoDB would; without
// one it reads every shard, merged in sort order (readingsd's extension).
Status ParseIndexQuery(const std::optional<std::string>& key_text, const std::optional<Json>& start, bool forward,
                       ParsedQuery* query) {
  const storage::IndexSpec& spec = *query->read.index;
  if (query->read.consistent) {
    return Status::InvalidArgument("Consistent reads are not supported on global secondary indexes");
  }
  if (!key_text) {
    return Status::InvalidArgument("KeyConditionExpression is required to query an index (KeyConditions is not supported)");
  }
  std::string value;
  storage::AttributeValue a, b;
  query::IndexQueryRequest& request = query->index_request;
  if (Status s = expr::ParseKeyCondition(*key_text, query->expressions.context,
                                         spec.sort == storage::IndexSort::kNumber, &value, &request.sort.op, &a, &b);
      !s.ok()) {
    return s;
  }
  query->read.expression_texts.push_back(*key_text);
  if (value.empty()) {
    return Status::InvalidArgument("One or more parameter values are not valid. The AttributeValue for a key attribute "
                                   "cannot contain an empty string value. Key: " + std::string(spec.PartitionName()));
  }
  if (request.sort.op != query::SortKeyOp::kAll) request.sort.a = SortValue(spec, a);
  if (request.sort.op == query::SortKeyOp::kBetween) request.sort.b = SortValue(spec, b);
  const std::size_t hash = value.rfind('#');
  request.all_shards = !(spec.shards > 1 && hash != std::string::npos && hash + 1 < value.size() &&
                         value.find_first_not_of("0123456789", hash + 1) == std::string::npos &&
                         std::stol(value.substr(hash + 1, 4)) < spec.shards);
  request.index = spec.name;
  request.values = {value};
  request.filter = query->read.filter.get();
  request.limit = query->read.limit;
  request.scan_forward = forward;
  request.key_when_full = true;
  if (start) {
    const Status invalid = Status::InvalidArgument("The provided starting key is invalid: The provided key element does not match the schema");
    const bool ts_sort = spec.sort == storage::IndexSort::kReadingTs;
    if (!start->is_object() || start->size() != (ts_sort ? 3u : 4u)) return invalid;
    auto member = [&](std::string_view name, const char* type) -> const Json* {
      auto it = start->find(name);
      if (it == start->end() || !it->is_object() || it->size() != 1 || !it->contains(type) || !(*it)[type].is_string()) {
        return nullptr;
      }
      return &(*it)[type];
    };
    const Json* partition = member(spec.PartitionName(), "S");
    const Json* sort = member(spec.SortName(), spec.sort == storage::IndexSort::kNumber ? "N" : "S");
    const Json* device = member(storage::kDeviceIdAttribute, "S");
    const Json* ts = member(storage::kReadingTsAttribute, "S");
    if (!partition || !sort || !device || !ts) return invalid;
    if (partition->get<std::string>() != value) return OutsideBoundaries();
    std::string sort_key;
    storage::AttributeValue sort_value = std::string(sort->get<std::string>());
    if (spec.sort == storage::IndexSort::kNumber) {
      storage::Number n;
      if (!storage::Number::Parse(sort->get<std::string>(), &n).ok()) return invalid;
      sort_value = n;
    }
    if (!StoredKey(device->get<std::string>(), ts->get<std::string>(), &sort_key)) return invalid;
    request.exclusive_start = query::IndexPosition{value, query::IndexTail(SortValue(spec, sort_value),
                                                                           device->get<std::string>(), sort_key)};
  }
  return CheckPlaceholdersUsed(query->expressions, query->read);
}

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
  if (read.index) return ParseIndexQuery(key_text, start, forward.value_or(true), query);
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

// Renders an index's entries as items; an index key that is no stored attribute (readingHour,
// readingDay) is added as one, with the partition value the entry is under.
class IndexItems : public query::IndexItemSink {
 public:
  IndexItems(const ParsedQuery& query, Json* items) : query_(query), items_(items) {}
  void Add(const query::IndexItem& item) override {
    if (items_ == nullptr) return;
    Json json = ItemJson(item.device_id, item.sort_key, item.attributes, query_.read.projection);
    const storage::IndexSpec& spec = *query_.read.index;
    const Projection& projection = query_.read.projection;
    if (spec.partition != storage::IndexPartition::kAttribute &&
        (!projection || std::find(projection->begin(), projection->end(), spec.PartitionName()) != projection->end())) {
      json[spec.PartitionName()] = Typed("S", item.partition);
    }
    items_->push_back(std::move(json));
  }

 private:
  const ParsedQuery& query_;
  Json* items_;
};

// The page from this node's store, or with `shares` from the nodes' shares of it.
http::Response IndexQueryOp(const Context& context, const ParsedQuery& query,
                            std::optional<std::span<const std::string>> shares = std::nullopt) {
  Json response = Json::object();
  if (!query.read.count_only) response["Items"] = Json::array();
  IndexItems items(query, query.read.count_only ? nullptr : &response["Items"]);
  query::IndexQueryResult result;
  Status s = shares ? query::MergeIndexShares(query.index_request, *shares, &items, &result)
                    : query::IndexQuery(context.read.store, query.index_request, &items, &result);
  for (const query::IndexPartitionRead& read : result.partitions_read) {
    context.read.ReportIndexPartitionRead(query.index_request.index, read.partition, read.items, read.bytes);
  }
  if (!s.ok()) return ErrorFromStatus(context, s);
  response["Count"] = result.count;
  response["ScannedCount"] = result.scanned_count;
  if (result.last_evaluated) {
    const storage::IndexSpec& spec = *query.read.index;
    storage::IndexValue sort;
    std::string_view device_id, sort_key;
    query::SplitIndexTail(result.last_evaluated->tail, &sort, &device_id, &sort_key);
    Json key = KeyJson(device_id, sort_key);
    key[spec.PartitionName()] = Typed("S", result.last_evaluated->value);
    key[spec.SortName()] = Typed(sort.is_number ? "N" : "S", sort.text);
    response["LastEvaluatedKey"] = std::move(key);
  }
  if (query.read.capacity != Capacity::kNone) {
    response["ConsumedCapacity"] = ConsumedCapacityJson(
        context, query.read.capacity, ReadUnits(result.scanned_bytes, query.read.consistent));
  }
  return Ok(context, response);
}

// A Query of an index, parsed; InvalidArgument for any other.
Status ParseIndexQueryOnly(const Context& context, const Json& body, ParsedQuery* query) {
  if (Status s = ParseQuery(context, body, query); !s.ok()) return s;
  if (!query->read.index) {
    return Status::InvalidArgument("partitions: only a Query of an index is answered in shares (docs/cluster.md)");
  }
  return Status::OK();
}

http::Response QueryShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share) {
  ParsedQuery query;
  if (Status s = ParseIndexQueryOnly(context, body, &query); !s.ok()) return ErrorFromStatus(context, s);
  query.index_request.device_wanted = [&share](std::string_view device_id) { return share.Holds(device_id); };
  query::IndexShareWriter writer;
  query::IndexQueryResult result;
  Status s = query::IndexQuery(context.read.store, query.index_request, &writer, &result);
  for (const query::IndexPartitionRead& read : result.partitions_read) {
    context.read.ReportIndexPartitionRead(query.index_request.index, read.partition, read.items, read.bytes);
  }
  if (!s.ok()) return ErrorFromStatus(context, s);
  return ShareAnswer(std::move(writer).Finish(result));
}

http::Response MergeQueryOp(const Context& context, const Json& body, std::span<const std::string> shares) {
  ParsedQuery query;
  if (Status s = ParseIndexQueryOnly(context, body, &query); !s.ok()) return ErrorFromStatus(context, s);
  return IndexQueryOp(context, query, shares);
}

http::Response QueryOp(const Context& context, const Json& body) {
  ParsedQuery query;
  if (Status s = ParseQuery(context, body, &query); !s.ok()) return ErrorFromStatus(context, s);
  if (query.read.index) return IndexQueryOp(context, query);
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

cluster::Reach ReachOfRead(std::string_view operation, const Json& body, std::string* device_id) {
  std::string device, timestamp;
  if (operation == "GetItem") {
    const auto key = body.find("Key");
    if (key == body.end() || !ParseKey(*key, "", &device, &timestamp).ok()) return cluster::Reach::kLocal;
  } else if (body.contains("IndexName")) {
    return cluster::Reach::kMerged;
  } else {
    std::optional<std::string> key_text;
    std::optional<Json> key_conditions;
    Expressions expressions;
    if (!Get(body, "KeyConditionExpression", &key_text).ok() || !Get(body, "KeyConditions", &key_conditions).ok() ||
        !ParseExpressionAttributes(body, &expressions).ok()) {
      return cluster::Reach::kLocal;
    }
    std::string a, b;
    query::SortKeyOp op = query::SortKeyOp::kAll;
    query::KeyCondition key;
    if (key_text ? !expr::ParseKeyConditionExpression(*key_text, expressions.context, &device, &op, &a, &b).ok()
                 : !key_conditions || !ParseKeyConditions(*key_conditions, &key).ok()) {
      return cluster::Reach::kLocal;
    }
    if (!key_text) device = key.device_id;
  }
  if (!storage::ValidateDeviceId(device).ok()) return cluster::Reach::kLocal;
  *device_id = std::move(device);
  return cluster::Reach::kDevice;
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
