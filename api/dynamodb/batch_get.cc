// BatchGetItem: up to 100 keys of the one table, each read as a GetItem.
#include <algorithm>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "api/dynamodb/internal.h"
#include "json/parse.h"
#include "query/query.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb::internal {
namespace {

constexpr std::size_t kMaxKeys = 100;  // DynamoDB's, over all tables of a request

struct BatchKey {
  const Json* json;  // as sent, for UnprocessedKeys
  std::string device_id;
  std::string sort_key;  // normalised; "" when no stored item can have the key
};

struct ParsedBatch {
  std::string table;
  const Json* request = nullptr;  // RequestItems' entry of the table in the body, for UnprocessedKeys
  std::vector<BatchKey> keys;
  Projection projection;
  bool consistent = false;
  Capacity capacity = Capacity::kNone;
};

Status ParseBatch(const Context& context, const Json& body, ParsedBatch* batch) {
  if (Status s = CheckMembers(body, "BatchGetItem", {"RequestItems", "ReturnConsumedCapacity"}); !s.ok()) return s;
  std::optional<Json> items;
  std::optional<std::string> capacity;
  for (Status s : {Get(body, "RequestItems", &items), Get(body, "ReturnConsumedCapacity", &capacity)}) {
    if (!s.ok()) return s;
  }
  Constraints constraints;
  constraints.OneOf(capacity, "returnConsumedCapacity", kCapacityValues);
  if (!items) constraints.Fail("null", "requestItems", "Member must not be null");
  if (items && items->empty()) {
    constraints.Fail("{}", "requestItems", "Member must have length greater than or equal to 1");
  }
  if (items) {
    for (const auto& [table, request] : items->items()) {
      const std::string member = "requestItems." + table + ".member.keys";
      if (!request.is_object()) {
        return Status::InvalidArgument("1 validation error detected: Value at 'requestItems." + table +
                                       "' failed to satisfy constraint: Member must be a map");
      }
      auto keys = request.find("Keys");
      if (keys == request.end() || keys->is_null()) {
        constraints.Fail("null", member, "Member must not be null");
      } else if (!keys->is_array()) {
        return Status::InvalidArgument("1 validation error detected: Value at '" + member +
                                       "' failed to satisfy constraint: Member must be a list");
      } else if (keys->empty()) {
        constraints.Fail("[]", member, "Member must have length greater than or equal to 1");
      } else if (keys->size() > kMaxKeys) {
        constraints.Fail("[…]", member, "Member must have length less than or equal to 100");
      }
    }
  }
  if (Status s = constraints.status(); !s.ok()) return s;
  batch->capacity = CapacityOf(capacity);

  // Views into `body`, which outlives the batch (`items` is a copy).
  const Json& request_items = body.at("RequestItems");
  for (const auto& [table, request] : request_items.items()) {
    if (table != context.table_name) return Status::NotFound("Requested resource not found");
  }
  const Json& request = request_items.begin().value();
  batch->table = request_items.begin().key();
  batch->request = &request;
  if (Status s = CheckMembers(request, "BatchGetItem",
                              {"Keys", "ProjectionExpression", "ExpressionAttributeNames", "AttributesToGet",
                               "ConsistentRead"});
      !s.ok()) {
    return s;
  }
  std::optional<std::string> projection_text;
  std::optional<bool> consistent;
  for (Status s : {Get(request, "ProjectionExpression", &projection_text), Get(request, "ConsistentRead", &consistent)}) {
    if (!s.ok()) return s;
  }
  batch->consistent = consistent.value_or(false);
  if (Status s = CheckExpressionParameters(request, {"ProjectionExpression"}, {"AttributesToGet"}); !s.ok()) return s;
  if (Status s = ParseAttributesToGet(request, &batch->projection); !s.ok()) return s;
  Expressions expressions;
  if (Status s = ParseExpressionAttributes(request, &expressions); !s.ok()) return s;
  if (projection_text) {
    batch->projection.emplace();
    Status s = expr::ParseProjectionExpression(*projection_text, expressions.context, &*batch->projection);
    if (!s.ok()) return s;
  }
  if (Status s = expr::CheckPlaceholdersUsed(expressions.context, {projection_text.value_or("")}); !s.ok()) return s;

  // Duplicates are the same item: keys compare as stored, so "…08:00:00Z" and "…10:00:00+02:00"
  // are one key twice (DynamoDB, which compares the strings as sent, would read two).
  std::set<std::pair<std::string, std::string>> seen;
  for (const Json& key : request.at("Keys")) {
    BatchKey parsed{&key, "", ""};
    std::string timestamp;
    if (Status s = ParseKey(key, "", &parsed.device_id, &timestamp); !s.ok()) return s;
    std::string sort_key;
    if (StoredKey(parsed.device_id, timestamp, &sort_key)) {
      parsed.sort_key = std::move(sort_key);
    } else {
      sort_key = "\n" + timestamp;  // no stored key: distinct from every one that is
    }
    if (!seen.emplace(parsed.device_id, parsed.sort_key.empty() ? sort_key : parsed.sort_key).second) {
      return Status::InvalidArgument("Provided list of item keys contains duplicates");
    }
    batch->keys.push_back(std::move(parsed));
  }
  if (batch->keys.size() > kMaxKeys) return Status::InvalidArgument("Too many items requested for the BatchGetItem call");
  return Status::OK();
}

}  // namespace

namespace {

// A node's share of a BatchGetItem merged across nodes: per key of the request, in order, null
// (not of its partitions), {"Size":…,"Item":…} (read), {"Size":0} (no such item) or "Unprocessed"
// (past its response's size): what the node asked needs to answer as if it had read every key.
constexpr std::string_view kUnprocessed = "Unprocessed";

// The shares' entry of each key: exactly one share answers for it. False when they are not that.
bool TakeShares(std::span<const std::string> shares, std::size_t keys, std::vector<Json>* decoded,
                std::vector<const Json*>* taken) {
  decoded->reserve(shares.size());
  taken->assign(keys, nullptr);
  for (const std::string& share : shares) {
    Json& json = decoded->emplace_back();
    if (ParseJson(share, &json) != JsonParseError::kNone || !json.is_object() || !json.contains("Keys") ||
        !json["Keys"].is_array() || json["Keys"].size() != keys) {
      return false;
    }
  }
  for (const Json& json : *decoded) {
    for (std::size_t i = 0; i < keys; ++i) {
      const Json& entry = json["Keys"][i];
      if (entry.is_null()) continue;
      if ((*taken)[i] != nullptr || !(entry.is_string() || (entry.is_object() && entry.contains("Size") &&
                                                            entry["Size"].is_number_unsigned()))) {
        return false;
      }
      (*taken)[i] = &entry;
    }
  }
  return std::all_of(taken->begin(), taken->end(), [](const Json* entry) { return entry != nullptr; });
}

// The keys read here (`share` set: only its partitions', answered as a share), or with `shares`
// taken from the nodes' shares; either way the response's size cap and UnprocessedKeys as one
// node reading every key gives them.
http::Response BatchGet(const Context& context, const Json& body, const cluster::PartitionSet* share,
                        std::span<const std::string> shares) {
  ParsedBatch batch;
  if (Status s = ParseBatch(context, body, &batch); !s.ok()) return ErrorFromStatus(context, s);
  const bool merged = !shares.empty();
  std::vector<Json> decoded;
  std::vector<const Json*> taken;
  if (merged && !TakeShares(shares, batch.keys.size(), &decoded, &taken)) {
    return Error(context, http::status::bad_gateway, "InternalServerError", "a node's share of BatchGetItem is not one");
  }

  Json items = Json::array();
  Json unprocessed = Json::array();
  Json share_keys = Json::array();
  double units = 0;
  std::size_t response_bytes = 0;
  storage::Reading reading;
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    const BatchKey& key = batch.keys[i];
    if (share && !share->Holds(key.device_id)) {
      share_keys.push_back(nullptr);
      continue;
    }
    // The response is full: the rest is for the next call.
    if (!unprocessed.empty() || (merged && taken[i]->is_string())) {
      unprocessed.push_back(*key.json);
      share_keys.push_back(kUnprocessed);
      continue;
    }
    std::size_t bytes = 0;
    Json item;
    if (merged) {
      bytes = (*taken[i])["Size"].get<std::size_t>();
      if (taken[i]->contains("Item")) item = (*taken[i])["Item"];
    } else {
      Status s = key.sort_key.empty() ? Status::NotFound("no such key")
                                      : context.read.store.Get(key.device_id, key.sort_key, &reading);
      if (s.ok()) {
        bytes = storage::ItemSize(reading);
        item = ItemJson(key.device_id, key.sort_key, storage::ViewsOf(reading.attributes), batch.projection);
      } else if (!s.IsNotFound()) {
        return ErrorFromStatus(context, s);
      }
      if (!key.sort_key.empty()) context.read.ReportPartitionRead(key.device_id, s.ok() ? 1 : 0, bytes);
    }
    if (!item.is_null() && response_bytes + bytes > context.read.limits.max_batch_get_bytes) {
      unprocessed.push_back(*key.json);
      share_keys.push_back(kUnprocessed);
      continue;
    }
    Json entry = Json::object({{"Size", bytes}});
    if (!item.is_null()) {
      response_bytes += bytes;
      items.push_back(item);
      entry["Item"] = std::move(item);
    }
    share_keys.push_back(std::move(entry));
    units += ReadUnits(bytes, batch.consistent);
  }
  if (share) return Ok(context, Json::object({{"Keys", std::move(share_keys)}}));

  Json response = Json::object();
  response["Responses"] = Json::object({{batch.table, std::move(items)}});
  response["UnprocessedKeys"] = Json::object();
  if (!unprocessed.empty()) {
    // The table's request as sent, with the keys still to read.
    Json rest = *batch.request;
    rest["Keys"] = std::move(unprocessed);
    response["UnprocessedKeys"][batch.table] = std::move(rest);
  }
  if (batch.capacity != Capacity::kNone) {
    response["ConsumedCapacity"] = Json::array({ConsumedCapacityJson(context, batch.capacity, units)});
  }
  return Ok(context, response);
}

}  // namespace

http::Response BatchGetItemOp(const Context& context, const Json& body) { return BatchGet(context, body, nullptr, {}); }

http::Response BatchGetShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share) {
  return BatchGet(context, body, &share, {});
}

http::Response MergeBatchGetOp(const Context& context, const Json& body, std::span<const std::string> shares) {
  return BatchGet(context, body, nullptr, shares);
}

}  // namespace readingsd::api::dynamodb::internal
