// DescribeTable and ListTables: the one table.
#include <chrono>

#include "api/dynamodb/internal.h"
#include "storage/key.h"
#include "storage/store.h"

namespace readingsd::api::dynamodb::internal {
namespace {

Json KeyAttribute(std::string_view name, std::string_view field, std::string_view value) {
  Json attribute = Json::object();
  attribute["AttributeName"] = name;
  attribute[field] = value;
  return attribute;
}

}  // namespace

http::Response DescribeTableOp(const Context& context, const Json& body) {
  std::optional<std::string> table;
  for (Status s : {CheckMembers(body, "DescribeTable", {"TableName"}), Get(body, "TableName", &table)}) {
    if (!s.ok()) return ErrorFromStatus(context, s);
  }
  if (Status s = CheckTable(context, table); !s.ok()) {
    return ErrorFromStatus(
        context, s.IsNotFound() ? Status::NotFound("Requested resource not found: Table: " + *table + " not found") : s);
  }
  const storage::StoreStats stats = context.read.store.Stats();
  const std::string name(context.table_name);
  // The store keeps no creation time; the server's start is the closest honest instant.
  const double created = std::chrono::duration<double>(context.server_started.time_since_epoch()).count();
  Json description = Json::object();
  description["TableName"] = name;
  const std::string table_id = context.read.store.TableId();
  if (!table_id.empty()) description["TableId"] = table_id;
  description["TableArn"] = "arn:aws:dynamodb:" + std::string(context.region) + ":000000000000:table/" + name;
  description["TableStatus"] = "ACTIVE";
  description["KeySchema"] = Json::array({KeyAttribute(storage::kDeviceIdAttribute, "KeyType", "HASH"),
                                          KeyAttribute(storage::kReadingTsAttribute, "KeyType", "RANGE")});
  Json definitions = Json::array({KeyAttribute(storage::kDeviceIdAttribute, "AttributeType", "S"),
                                  KeyAttribute(storage::kReadingTsAttribute, "AttributeType", "S")});
  Json indexes = Json::array();
  for (const storage::IndexStatus& index : context.read.store.Indexes()) {
    const storage::IndexSpec& spec = index.spec;
    auto define = [&definitions](std::string_view name, std::string_view type) {
      for (const Json& d : definitions) {
        if (d["AttributeName"] == name) return;
      }
      definitions.push_back(KeyAttribute(name, "AttributeType", type));
    };
    define(spec.PartitionName(), "S");
    define(spec.SortName(), spec.sort == storage::IndexSort::kNumber ? "N" : "S");
    Json gsi = Json::object();
    gsi["IndexName"] = spec.name;
    gsi["KeySchema"] = Json::array({KeyAttribute(spec.PartitionName(), "KeyType", "HASH"),
                                    KeyAttribute(spec.SortName(), "KeyType", "RANGE")});
    gsi["Projection"] = Json::object({{"ProjectionType", "ALL"}});
    gsi["IndexStatus"] = index.active ? "ACTIVE" : "CREATING";
    if (!index.active) gsi["Backfilling"] = true;
    gsi["IndexArn"] = "arn:aws:dynamodb:" + std::string(context.region) + ":000000000000:table/" + name + "/index/" +
                      spec.name;
    gsi["ProvisionedThroughput"] =
        Json::object({{"NumberOfDecreasesToday", 0}, {"ReadCapacityUnits", 0}, {"WriteCapacityUnits", 0}});
    indexes.push_back(std::move(gsi));
  }
  description["AttributeDefinitions"] = std::move(definitions);
  // RocksDB's estimate, as DynamoDB's own ItemCount is an estimate refreshed now and then.
  description["ItemCount"] = stats.estimated_keys;
  // Flushed data on disk, compressed: the memtable figure is arena memory, not item bytes.
  description["TableSizeBytes"] = stats.sst_bytes;
  description["CreationDateTime"] = created;
  // As an on-demand table reports itself: no provisioned throughput, billed per request.
  description["ProvisionedThroughput"] =
      Json::object({{"NumberOfDecreasesToday", 0}, {"ReadCapacityUnits", 0}, {"WriteCapacityUnits", 0}});
  description["BillingModeSummary"] =
      Json::object({{"BillingMode", "PAY_PER_REQUEST"}, {"LastUpdateToPayPerRequestDateTime", created}});
  if (!indexes.empty()) description["GlobalSecondaryIndexes"] = std::move(indexes);
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
  Constraints constraints;
  constraints.AtLeast(limit, "limit", 1);
  constraints.AtMost(limit, "limit", 100);
  if (Status s = constraints.status(); !s.ok()) return ErrorFromStatus(context, s);
  Json names = Json::array();
  if (!start || *start < context.table_name) names.push_back(context.table_name);
  Json response = Json::object();
  response["TableNames"] = std::move(names);
  return Ok(context, response);
}

}  // namespace readingsd::api::dynamodb::internal
