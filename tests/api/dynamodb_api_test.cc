// The DynamoDB-compatible endpoint at the wire level: what botocore parses and verifies.
#include <gtest/gtest.h>

#include <boost/crc.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "json/parse.h"
#include "storage/reading.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class DynamoDbApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    StartServer();
  }

  HttpResult Call(const std::string& operation, const json& body) {
    return Post(
        port(), "/",
        {{"X-Amz-Target", "DynamoDB_20120810." + operation}, {"Content-Type", "application/x-amz-json-1.0"}},
        body.dump());
  }

  static json Between(const std::string& device, const std::string& a, const std::string& b) {
    return {{"TableName", "readings"},
            {"KeyConditionExpression", "deviceId = :d AND readingTs BETWEEN :a AND :b"},
            {"ExpressionAttributeValues", {{":d", {{"S", device}}}, {":a", {{"S", a}}}, {":b", {{"S", b}}}}}};
  }

  HttpResult Send(HttpConnection& connection, const std::string& operation, const std::string& body) {
    return connection.Send(
        "POST", "/",
        {{"X-Amz-Target", "DynamoDB_20120810." + operation}, {"Content-Type", "application/x-amz-json-1.0"}},
        body);
  }

  static json Scan(json more = json::object()) {
    json request = {{"TableName", "readings"}};
    request.update(more);
    return request;
  }

  // Every item of a Scan, page by page; `pages` counts the requests.
  std::vector<json> ScanAll(json request, int* pages = nullptr) {
    std::vector<json> items;
    for (int page = 1; page < 1000; ++page) {
      HttpResult result = Call("Scan", request);
      EXPECT_EQ(result.status, 200) << result.body;
      const json body = result.Json();
      for (const json& item : body["Items"]) items.push_back(item);
      if (pages) *pages = page;
      if (!body.contains("LastEvaluatedKey")) break;
      request["ExclusiveStartKey"] = body["LastEvaluatedKey"];
    }
    return items;
  }

  static std::string KeyOf(const json& item) {
    return item["deviceId"]["S"].get<std::string>() + "/" + item["readingTs"]["S"].get<std::string>();
  }

  // The sum of storage::ItemSize over the keys given as (device, sort key).
  std::size_t StoredBytes(const std::vector<std::pair<std::string, std::string>>& keys) {
    std::size_t bytes = 0;
    for (const auto& [device, sort_key] : keys) {
      storage::Reading reading;
      EXPECT_TRUE(store_->Get(device, sort_key, &reading).ok()) << device << " " << sort_key;
      bytes += storage::ItemSize(reading);
    }
    return bytes;
  }

  static constexpr int kItems = kA1Count + 3 + 1 + 3;  // a1, a10, b2, edge

  // A DynamoDB error: status 400, x-amzn-ErrorType and __type agree; returns the message.
  static std::string ErrorOf(const HttpResult& result, const std::string& type) {
    EXPECT_EQ(result.status, 400) << result.body;
    EXPECT_EQ(result.Header("x-amzn-errortype"), type);
    const json body = result.Json();
    EXPECT_EQ(body["__type"], "com.amazonaws.dynamodb.v20120810#" + type);
    return body.value("message", "");
  }
};

TEST_F(DynamoDbApiTest, ResponsesCarryRequestIdAndTheBodysCrc32) {
  HttpResult first = Call("Query", Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:02:00Z"));
  HttpResult error = Call("Query", json{{"TableName", "nope"}});
  for (const HttpResult* r : {&first, &error}) {
    boost::crc_32_type crc;
    crc.process_bytes(r->body.data(), r->body.size());
    EXPECT_EQ(r->Header("x-amz-crc32"), std::to_string(crc.checksum()));
    EXPECT_EQ(r->Header("content-type"), "application/x-amz-json-1.0");
    EXPECT_EQ(r->Header("x-amzn-requestid").size(), 32u);
  }
  EXPECT_NE(first.Header("x-amzn-requestid"), error.Header("x-amzn-requestid"));
}

TEST_F(DynamoDbApiTest, QueryReturnsTypedItemsAndPagesWithLastEvaluatedKey) {
  json request = Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T10:09:00+02:00");
  request["Limit"] = 4;
  HttpResult page = Call("Query", request);
  ASSERT_EQ(page.status, 200) << page.body;
  json body = page.Json();
  EXPECT_EQ(body["Count"], 4);
  EXPECT_EQ(body["ScannedCount"], 4);
  EXPECT_EQ(body["Items"][0],
            json::parse(R"({"deviceId":{"S":"a1"},"readingTs":{"S":"2026-06-23T08:00:00.000000000Z"},
                                              "temperature":{"N":"20"},"status":{"S":"ok"},"door":{"BOOL":true}})"));
  EXPECT_EQ(body["Items"][1]["temperature"], json::parse(R"({"N":"20.5"})"));
  EXPECT_EQ(body["LastEvaluatedKey"],
            json::parse(R"({"deviceId":{"S":"a1"},"readingTs":{"S":"2026-06-23T08:03:00.000000000Z"}})"));

  int total = 4;
  while (body.contains("LastEvaluatedKey")) {
    request["ExclusiveStartKey"] = body["LastEvaluatedKey"];
    body = Call("Query", request).Json();
    total += body["Count"].get<int>();
  }
  EXPECT_EQ(total, 10);  // 08:00 .. 08:09 inclusive

  request.erase("ExclusiveStartKey");
  request["ScanIndexForward"] = false;
  EXPECT_EQ(Call("Query", request).Json()["Items"][0]["readingTs"]["S"], "2026-06-23T08:09:00.000000000Z");
}

TEST_F(DynamoDbApiTest, QueryWithProjectionFilterAndCount) {
  json request = Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:59:00Z");
  request["FilterExpression"] = "#s = :ok AND temperature > :t";
  request["ProjectionExpression"] = "readingTs, #s";
  request["ExpressionAttributeNames"] = {{"#s", "status"}};
  request["ExpressionAttributeValues"][":ok"] = {{"S", "ok"}};
  request["ExpressionAttributeValues"][":t"] = {{"N", "46"}};
  HttpResult result = Call("Query", request);
  ASSERT_EQ(result.status, 200) << result.body;
  json body = result.Json();
  EXPECT_EQ(body["Count"], 3);  // minutes 54, 56 and 58: above 46 degrees and "ok"
  EXPECT_EQ(body["ScannedCount"], 60);
  EXPECT_EQ(body["Items"][0],
            json::parse(R"({"readingTs":{"S":"2026-06-23T08:54:00.000000000Z"},"status":{"S":"ok"}})"));

  request.erase("ProjectionExpression");
  request["Select"] = "COUNT";
  body = Call("Query", request).Json();
  EXPECT_FALSE(body.contains("Items"));
  EXPECT_EQ(body["Count"], 3);

  json prefix = {{"TableName", "readings"},
                 {"KeyConditionExpression", "deviceId = :d AND begins_with(readingTs, :p)"},
                 {"ExpressionAttributeValues", {{":d", {{"S", "a1"}}}, {":p", {{"S", "2026-06-23T08:3"}}}}}};
  EXPECT_EQ(Call("Query", prefix).Json()["Count"], 10);
}

TEST_F(DynamoDbApiTest, QueryValidation) {
  json request = Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:59:00Z");
  json r = request;
  r["TableName"] = "other";
  EXPECT_EQ(ErrorOf(Call("Query", r), "ResourceNotFoundException"), "Requested resource not found");

  r = request;
  r["KeyConditions"] = json::object();
  EXPECT_EQ(ErrorOf(Call("Query", r), "ValidationException"),
            "Can not use both expression and non-expression parameters in the same request: Non-expression "
            "parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}");
  r = request;
  r["QueryFilter"] = json::object();
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("Non-expression parameters: {QueryFilter}"),
            std::string::npos);

  r = request;
  r["ExpressionAttributeValues"][":unused"] = {{"S", "x"}};
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find(":unused"), std::string::npos);

  r = request;
  r["ExclusiveStartKey"] =
      json::parse(R"({"deviceId":{"S":"a10"},"readingTs":{"S":"2026-06-23T08:00:00Z"}})");
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("starting key"), std::string::npos);

  r = request;
  r["Limit"] = 0;
  ErrorOf(Call("Query", r), "ValidationException");
  r = request;
  r["Limit"] = "ten";
  ErrorOf(Call("Query", r), "ValidationException");

  r = Between("a1", "2026-06-23T09:00:00Z", "2026-06-23T08:00:00Z");
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("BETWEEN"), std::string::npos);
  // "tuesday" is no timestamp: compared as the string it is, as DynamoDB does, it is above the bound.
  r = Between("a1", "tuesday", "2026-06-23T08:00:00Z");
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("BETWEEN"), std::string::npos);
  r = request;
  r["KeyConditionExpression"] = "deviceId = :d AND readingTs BETWEEN :a";
  ErrorOf(Call("Query", r), "ValidationException");
  r = request;
  r["ExpressionAttributeValues"][":d"] = {{"L", json::array()}};
  ErrorOf(Call("Query", r), "ValidationException");
  r = request;
  r.erase("KeyConditionExpression");
  ErrorOf(Call("Query", r), "ValidationException");
}

// The read-side expression language end to end: IN, size(), contains(), attribute_type(),
// document paths, a key condition written value first.
TEST_F(DynamoDbApiTest, QueryWithTheWholeExpressionLanguage) {
  json request = {{"TableName", "readings"},
                  {"KeyConditionExpression", ":d = deviceId AND :t > readingTs"},
                  {"FilterExpression",
                   "#s IN (:ok, :none) AND size(#s) = :two AND contains(#s, :k) AND "
                   "attribute_type(temperature, :n) AND attribute_not_exists(temperature.x)"},
                  {"ProjectionExpression", "readingTs, temperature.x, door, #s[0]"},
                  {"ExpressionAttributeNames", {{"#s", "status"}}},
                  {"ExpressionAttributeValues",
                   {{":d", {{"S", "a1"}}},
                    {":t", {{"S", "2026-06-23T08:10:00Z"}}},
                    {":ok", {{"S", "ok"}}},
                    {":none", {{"S", "none"}}},
                    {":two", {{"N", "2"}}},
                    {":k", {{"S", "k"}}},
                    {":n", {{"S", "N"}}}}}};
  HttpResult result = Call("Query", request);
  ASSERT_EQ(result.status, 200) << result.body;
  json body = result.Json();
  EXPECT_EQ(body["ScannedCount"], 10);  // minutes 0 .. 9, before 08:10
  EXPECT_EQ(body["Count"], 5);          // the even ones, "ok"
  // temperature.x and status[0] find nothing below a scalar: only readingTs and door remain.
  EXPECT_EQ(body["Items"][0],
            json::parse(R"({"readingTs":{"S":"2026-06-23T08:00:00.000000000Z"},"door":{"BOOL":true}})"));
  EXPECT_EQ(body["Items"][1], json::parse(R"({"readingTs":{"S":"2026-06-23T08:02:00.000000000Z"},"door":{"BOOL":false}})"));

  request["ProjectionExpression"] = "temperature.x";
  request.erase("ExpressionAttributeNames");
  request["ExpressionAttributeValues"].erase(":ok");
  request["FilterExpression"] = "size(temperature) > :two OR temperature.x IN (:none, :k, :n)";
  body = Call("Query", request).Json();
  EXPECT_EQ(body["Count"], 0) << body.dump();  // a number has no size; a path below it is missing
  EXPECT_EQ(body["ScannedCount"], 10);

  json bad = request;
  std::string list;
  for (int i = 0; i <= 100; ++i) {
    list += (i ? ", :v" : ":v") + std::to_string(i);
    bad["ExpressionAttributeValues"][":v" + std::to_string(i)] = {{"N", std::to_string(i)}};
  }
  bad["FilterExpression"] = "size(temperature) > :two OR temperature.x IN (:none, :k, :n) OR temperature IN (" + list + ")";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "Invalid FilterExpression: The IN operator is provided with too many operands; number of operands: 101");
  bad = request;
  bad["KeyConditionExpression"] = "deviceId.x = :d AND :t > readingTs";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "Invalid KeyConditionExpression: KeyConditionExpressions cannot have conditions on nested attributes");
  bad = request;
  bad["ProjectionExpression"] = "readingTs.x";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: readingTs");
  bad = request;
  bad["ExpressionAttributeValues"][":n"] = {{"S", "DOG"}};
  bad["FilterExpression"] = "attribute_type(temperature, :n) OR size(temperature) > :two OR contains(:k, :none)";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "Invalid FilterExpression: Invalid attribute type name found; type: DOG, valid types: "
            "{B,NULL,SS,BOOL,L,BS,N,NS,S,M}");

  json get = {{"TableName", "readings"},
              {"Key", {{"deviceId", {{"S", "b2"}}}, {"readingTs", {{"S", "2026-06-24T00:00:00Z"}}}}},
              {"ProjectionExpression", "humidity[0][1], #h[2]"},
              {"ExpressionAttributeNames", {{"#h", "humidity"}}}};
  EXPECT_EQ(Call("GetItem", get).Json(), json::parse(R"({"Item":{}})"));  // the item, with nothing there
}

TEST_F(DynamoDbApiTest, GetItemDescribeTableAndListTables) {
  json get = {{"TableName", "readings"},
              {"Key", {{"deviceId", {{"S", "b2"}}}, {"readingTs", {{"S", "2026-06-24T02:00:00+02:00"}}}}}};
  HttpResult item = Call("GetItem", get);
  ASSERT_EQ(item.status, 200) << item.body;
  EXPECT_EQ(item.Json(),
            json::parse(R"({"Item":{"deviceId":{"S":"b2"},"readingTs":{"S":"2026-06-24T00:00:00.000000000Z"},
                                         "humidity":{"N":"40"}}})"));
  get["ProjectionExpression"] = "humidity";
  EXPECT_EQ(Call("GetItem", get).Json(), json::parse(R"({"Item":{"humidity":{"N":"40"}}})"));
  get["Key"]["readingTs"]["S"] = "2026-06-25T00:00:00Z";
  EXPECT_EQ(Call("GetItem", get).Json(), json::object());
  get["Key"].erase("readingTs");
  ErrorOf(Call("GetItem", get), "ValidationException");

  HttpResult describe = Call("DescribeTable", {{"TableName", "readings"}});
  ASSERT_EQ(describe.status, 200) << describe.body;
  const json table = describe.Json()["Table"];
  EXPECT_EQ(table["TableName"], "readings");
  EXPECT_EQ(table["TableStatus"], "ACTIVE");
  EXPECT_EQ(table["KeySchema"], json::parse(R"([{"AttributeName":"deviceId","KeyType":"HASH"},
                                                 {"AttributeName":"readingTs","KeyType":"RANGE"}])"));
  EXPECT_EQ(table["AttributeDefinitions"][1],
            json::parse(R"({"AttributeName":"readingTs","AttributeType":"S"})"));
  EXPECT_GE(table["ItemCount"].get<int>(), 60);
  EXPECT_TRUE(table["CreationDateTime"].is_number());
  EXPECT_EQ(table["BillingModeSummary"]["BillingMode"], "PAY_PER_REQUEST");
  EXPECT_EQ(table["ProvisionedThroughput"],
            json::parse(R"({"NumberOfDecreasesToday":0,"ReadCapacityUnits":0,"WriteCapacityUnits":0})"));
  EXPECT_EQ(table["TableArn"], "arn:aws:dynamodb:us-east-1:000000000000:table/readings");
  const std::string table_id = table["TableId"];
  EXPECT_EQ(table_id.size(), 36u);
  EXPECT_EQ(table_id[14], '4') << "a version 4 UUID";
  ErrorOf(Call("DescribeTable", {{"TableName", "nope"}}), "ResourceNotFoundException");

  EXPECT_EQ(Call("ListTables", json::object()).Json(), json::parse(R"({"TableNames":["readings"]})"));
  EXPECT_EQ(Call("ListTables", {{"ExclusiveStartTableName", "readings"}}).Json(),
            json::parse(R"({"TableNames":[]})"));
}

TEST_F(DynamoDbApiTest, WritesUnknownOperationsAndBadBodies) {
  EXPECT_NE(ErrorOf(Call("PutItem", {{"TableName", "readings"}}), "ValidationException").find("read-only"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Call("DeleteItem", {{"TableName", "readings"}}), "ValidationException").find("MQTT"),
            std::string::npos);
  ErrorOf(Call("TransactGetItems", {{"TableName", "readings"}}), "UnknownOperationException");
  ErrorOf(Post(port(), "/", {}, "{}"), "UnknownOperationException");
  ErrorOf(Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.Query"}}, "{not json"),
          "SerializationException");
  ErrorOf(Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.Query"}}, "[1,2]"),
          "SerializationException");
}

TEST_F(DynamoDbApiTest, ScanReadsTheWholeTableInPagesAndSegments) {
  HttpResult all = Call("Scan", Scan());
  ASSERT_EQ(all.status, 200) << all.body;
  json body = all.Json();
  EXPECT_EQ(body["Count"], kItems);
  EXPECT_EQ(body["ScannedCount"], kItems);
  EXPECT_FALSE(body.contains("LastEvaluatedKey"));
  // Key order: partition by partition (a1, a10, b2, edge), each in time order.
  EXPECT_EQ(body["Items"][0],
            json::parse(R"({"deviceId":{"S":"a1"},"readingTs":{"S":"2026-06-23T08:00:00.000000000Z"},
                            "temperature":{"N":"20"},"status":{"S":"ok"},"door":{"BOOL":true}})"));
  EXPECT_EQ(body["Items"][kA1Count]["deviceId"]["S"], "a10");
  std::vector<std::string> keys;
  for (const json& item : body["Items"]) keys.push_back(KeyOf(item));

  int pages = 0;
  std::vector<std::string> paged;
  for (const json& item : ScanAll(Scan({{"Limit", 10}}), &pages)) paged.push_back(KeyOf(item));
  EXPECT_EQ(paged, keys);
  EXPECT_EQ(pages, kItems / 10 + 1);

  // Four segments, each paged, are the table exactly once.
  std::multiset<std::string> segmented;
  for (int segment = 0; segment < 4; ++segment) {
    for (const json& item : ScanAll(Scan({{"Limit", 5}, {"Segment", segment}, {"TotalSegments", 4}}))) {
      segmented.insert(KeyOf(item));
    }
  }
  EXPECT_EQ(segmented, std::multiset<std::string>(keys.begin(), keys.end()));
  EXPECT_EQ(Call("Scan", Scan({{"Segment", 0}, {"TotalSegments", 1}})).Json()["Count"], kItems);
  EXPECT_EQ(Call("Scan", Scan({{"Segment", 0}})).Json()["Count"], kItems);

  // The 1 MB rule, here one item: every full page has a key, the last (empty) one none.
  ServeOptions small;
  small.api.limits.max_page_bytes = 1;
  StartServer(small);
  EXPECT_EQ(ScanAll(Scan(), &pages).size(), static_cast<std::size_t>(kItems));
  EXPECT_EQ(pages, kItems + 1);
}

TEST_F(DynamoDbApiTest, ScanReportsEachPartitionItRead) {
  std::mutex mu;
  std::map<std::string, std::size_t> items;
  ServeHooks hooks;
  hooks.api.on_partition_read = [&](std::string_view device, std::size_t n, std::size_t) {
    std::lock_guard lock(mu);
    items[std::string(device)] += n;
  };
  StartServer({}, std::move(hooks));
  ASSERT_EQ(Call("Scan", Scan({{"Limit", kA1Count + 1}})).status, 200);
  std::lock_guard lock(mu);
  EXPECT_EQ(items, (std::map<std::string, std::size_t>{{"a1", kA1Count}, {"a10", 1}}));
}

TEST_F(DynamoDbApiTest, ScanFilterProjectionAndSelect) {
  json request = Scan({{"FilterExpression", "deviceId = :d OR humidity > :h"},
                       {"ProjectionExpression", "deviceId, #t, humidity"},
                       {"ExpressionAttributeNames", {{"#t", "temperature"}}},
                       {"ExpressionAttributeValues", {{":d", {{"S", "a10"}}}, {":h", {{"N", "39.5"}}}}}});
  HttpResult result = Call("Scan", request);
  ASSERT_EQ(result.status, 200) << result.body;
  json body = result.Json();
  EXPECT_EQ(body["Count"], 4);
  EXPECT_EQ(body["ScannedCount"], kItems);
  EXPECT_EQ(body["Items"][0], json::parse(R"({"deviceId":{"S":"a10"},"temperature":{"N":"99"}})"));
  EXPECT_EQ(body["Items"][3], json::parse(R"({"deviceId":{"S":"b2"},"humidity":{"N":"40"}})"));

  request.erase("ProjectionExpression");
  request.erase("ExpressionAttributeNames");
  request["Select"] = "COUNT";
  body = Call("Scan", request).Json();
  EXPECT_FALSE(body.contains("Items"));
  EXPECT_EQ(body["Count"], 4);

  request["Limit"] = 61;  // a1 and the first reading of a10
  body = Call("Scan", request).Json();
  EXPECT_EQ(body["Count"], 1);
  EXPECT_EQ(body["ScannedCount"], 61);
  EXPECT_EQ(body["LastEvaluatedKey"],
            json::parse(R"({"deviceId":{"S":"a10"},"readingTs":{"S":"2026-06-23T08:00:00.000000000Z"}})"));
}

TEST_F(DynamoDbApiTest, ScanValidation) {
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"Segment", 1}})), "ValidationException"),
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
            "present");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"TotalSegments", 2}})), "ValidationException"),
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
            "present");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"Segment", 4}, {"TotalSegments", 4}})), "ValidationException"),
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 4 is not "
            "less than TotalSegments: 4");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"Segment", -1}, {"TotalSegments", 1000001}, {"Limit", 0}})),
                    "ValidationException"),
            "3 validation errors detected: Value '-1' at 'segment' failed to satisfy constraint: Member must have "
            "value greater than or equal to 0; Value '1000001' at 'totalSegments' failed to satisfy constraint: "
            "Member must have value less than or equal to 1000000; Value '0' at 'limit' failed to satisfy "
            "constraint: Member must have value greater than or equal to 1");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"Select", "SOME"}})), "ValidationException"),
            "1 validation error detected: Value 'SOME' at 'select' failed to satisfy constraint: Member must satisfy "
            "enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"ReturnConsumedCapacity", "ALL"}})), "ValidationException"),
            "1 validation error detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: "
            "Member must satisfy enum value set: [INDEXES, TOTAL, NONE]");
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"IndexName", "byTemperature"}})), "ValidationException"),
            "The table does not have the specified index: byTemperature");
  ErrorOf(Call("Scan", json{{"TableName", "other"}}), "ResourceNotFoundException");

  // A start key of another segment.
  json first = Call("Scan", Scan({{"Limit", 1}, {"Segment", 0}, {"TotalSegments", 2}})).Json();
  ASSERT_TRUE(first.contains("LastEvaluatedKey")) << first;
  EXPECT_EQ(ErrorOf(Call("Scan", Scan({{"Segment", 1}, {"TotalSegments", 2}, {"ExclusiveStartKey", first["LastEvaluatedKey"]}})),
                    "ValidationException"),
            "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with "
            "correct Segment. TotalSegments: 2 Segment: 1");
}

TEST_F(DynamoDbApiTest, ConsumedCapacityFollowsDynamoDbsReadUnits) {
  std::vector<std::pair<std::string, std::string>> a1;
  for (int i = 0; i < kA1Count; ++i) a1.emplace_back("a1", SampleSortKey(i));
  const std::size_t a1_bytes = StoredBytes(a1);
  const double a1_units = static_cast<double>((a1_bytes + 4095) / 4096);
  ASSERT_GT(a1_units, 1) << "the partition must span more than one 4 KB unit";

  json query = {{"TableName", "readings"},
                {"KeyConditionExpression", "deviceId = :d"},
                {"ExpressionAttributeValues", {{":d", {{"S", "a1"}}}}},
                {"ReturnConsumedCapacity", "TOTAL"}};
  EXPECT_EQ(Call("Query", query).Json()["ConsumedCapacity"],
            json({{"TableName", "readings"}, {"CapacityUnits", a1_units / 2}}));
  query["ConsistentRead"] = true;
  query["ReturnConsumedCapacity"] = "INDEXES";
  EXPECT_EQ(Call("Query", query).Json()["ConsumedCapacity"],
            json({{"TableName", "readings"}, {"CapacityUnits", a1_units}, {"Table", {{"CapacityUnits", a1_units}}}}));
  // A filter does not make a read cheaper; nothing read still costs one unit.
  query["FilterExpression"] = "temperature > :t";
  query["ExpressionAttributeValues"][":t"] = {{"N", "1000"}};
  EXPECT_EQ(Call("Query", query).Json()["ConsumedCapacity"]["CapacityUnits"], a1_units);
  query["ExpressionAttributeValues"][":d"] = {{"S", "nobody"}};
  EXPECT_EQ(Call("Query", query).Json()["ConsumedCapacity"]["CapacityUnits"], 1.0);
  query["ReturnConsumedCapacity"] = "NONE";
  EXPECT_FALSE(Call("Query", query).Json().contains("ConsumedCapacity"));

  json scan = Scan({{"ReturnConsumedCapacity", "TOTAL"}, {"Limit", kA1Count}});
  EXPECT_EQ(Call("Scan", scan).Json()["ConsumedCapacity"]["CapacityUnits"], a1_units / 2);

  json get = {{"TableName", "readings"},
              {"Key", {{"deviceId", {{"S", "b2"}}}, {"readingTs", {{"S", "2026-06-24T00:00:00Z"}}}}},
              {"ReturnConsumedCapacity", "TOTAL"}};
  EXPECT_EQ(Call("GetItem", get).Json()["ConsumedCapacity"], json({{"TableName", "readings"}, {"CapacityUnits", 0.5}}));
  get["ConsistentRead"] = true;
  get["Key"]["readingTs"]["S"] = "2030-01-01T00:00:00Z";  // absent: still a read
  EXPECT_EQ(Call("GetItem", get).Json(),
            json({{"ConsumedCapacity", {{"TableName", "readings"}, {"CapacityUnits", 1.0}}}}));

  // BatchGetItem: each item rounded up on its own, then added up.
  json batch = {{"RequestItems",
                 {{"readings",
                   {{"Keys", json::array({{{"deviceId", {{"S", "a1"}}}, {"readingTs", {{"S", SampleSortKey(0)}}}},
                                          {{"deviceId", {{"S", "a1"}}}, {"readingTs", {{"S", SampleSortKey(1)}}}},
                                          {{"deviceId", {{"S", "zz"}}}, {"readingTs", {{"S", SampleSortKey(1)}}}}})}}}}},
                {"ReturnConsumedCapacity", "INDEXES"}};
  EXPECT_EQ(Call("BatchGetItem", batch).Json()["ConsumedCapacity"],
            json::array({{{"TableName", "readings"}, {"CapacityUnits", 1.5}, {"Table", {{"CapacityUnits", 1.5}}}}}));
}

TEST_F(DynamoDbApiTest, QueryAsDynamoDbAnswersIt) {
  // Limit stopped the page on the range's last item: a key all the same, then an empty page.
  json request = Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:03:00Z");
  request["Limit"] = 4;
  json body = Call("Query", request).Json();
  EXPECT_EQ(body["Count"], 4);
  ASSERT_EQ(body["LastEvaluatedKey"],
            json::parse(R"({"deviceId":{"S":"a1"},"readingTs":{"S":"2026-06-23T08:03:00.000000000Z"}})"));
  request["ExclusiveStartKey"] = body["LastEvaluatedKey"];
  body = Call("Query", request).Json();
  EXPECT_EQ(body["Count"], 0);
  EXPECT_FALSE(body.contains("LastEvaluatedKey"));

  // A start key outside the key condition's range.
  request["ExclusiveStartKey"]["readingTs"]["S"] = "2026-06-23T08:30:00Z";
  EXPECT_EQ(ErrorOf(Call("Query", request), "ValidationException"),
            "The provided starting key is outside query boundaries based on provided conditions");
  request["ExclusiveStartKey"]["readingTs"]["S"] = "2026-06-23T08:02:00+00:00";  // any form of one inside
  EXPECT_EQ(Call("Query", request).Json()["Count"], 1);

  // Key values no stored key can have: nothing found, as in DynamoDB.
  EXPECT_EQ(Call("Query", Between("a 1", "2026-06-23T08:00:00Z", "2026-06-23T09:00:00Z")).Json(),
            json::parse(R"({"Items":[],"Count":0,"ScannedCount":0})"));
  json equal = {{"TableName", "readings"},
                {"KeyConditionExpression", "deviceId = :d AND readingTs = :t"},
                {"ExpressionAttributeValues", {{":d", {{"S", "a1"}}}, {":t", {{"S", "tuesday"}}}}}};
  EXPECT_EQ(Call("Query", equal).Json()["Count"], 0);
  equal["KeyConditionExpression"] = "deviceId = :d AND readingTs < :t";  // every timestamp is below "t…"
  EXPECT_EQ(Call("Query", equal).Json()["Count"], kA1Count);
  equal["KeyConditionExpression"] = "deviceId = :d AND begins_with(readingTs, :t)";
  EXPECT_EQ(Call("Query", equal).Json()["Count"], 0);
  json get = {{"TableName", "readings"}, {"Key", {{"deviceId", {{"S", "a#1"}}}, {"readingTs", {{"S", "x"}}}}}};
  EXPECT_EQ(Call("GetItem", get).Json(), json::object());
  get["Key"]["deviceId"]["S"] = "";
  EXPECT_NE(ErrorOf(Call("GetItem", get), "ValidationException").find("cannot contain an empty string value"),
            std::string::npos);
}

// Issue #25: a date is a bound in the native API and the CLI, meaning its first instant. Here it
// stays what DynamoDB makes of it, a string compared with the stored sort keys: "2026-06-24" sorts
// before every key of that day, so BETWEEN two dates holds the first day whole and none of the
// second, and the instant 2026-06-24T00:00:00Z (which `to=2026-06-24` includes) is outside.
TEST_F(DynamoDbApiTest, ADateIsAStringBoundAsInDynamoDb) {
  EXPECT_EQ(Call("Query", Between("a1", "2026-06-23", "2026-06-24")).Json()["Count"], kA1Count);
  EXPECT_EQ(Call("Query", Between("b2", "2026-06-23", "2026-06-24")).Json()["Count"], 0);
  EXPECT_EQ(Call("Query", Between("b2", "2026-06-24", "2026-06-25")).Json()["Count"], 1);
  const json year_end = Call("Query", Between("edge", "2026-12-31", "2027-01-01")).Json();
  ASSERT_EQ(year_end["Count"], 1) << year_end;
  EXPECT_EQ(year_end["Items"][0]["readingTs"]["S"], "2026-12-31T23:59:59.999999999Z");
  json compare = {{"TableName", "readings"},
                  {"KeyConditionExpression", "deviceId = :d AND readingTs >= :t"},
                  {"ExpressionAttributeValues", {{":d", {{"S", "edge"}}}, {":t", {{"S", "2027-01-01"}}}}}};
  EXPECT_EQ(Call("Query", compare).Json()["Count"], 2);
  compare["KeyConditionExpression"] = "deviceId = :d AND readingTs <= :t";
  EXPECT_EQ(Call("Query", compare).Json()["Count"], 1);
  compare["KeyConditionExpression"] = "deviceId = :d AND readingTs = :t";
  EXPECT_EQ(Call("Query", compare).Json()["Count"], 0);  // not the instant 2027-01-01T00:00:00Z
  compare["KeyConditionExpression"] = "deviceId = :d AND begins_with(readingTs, :t)";
  EXPECT_EQ(Call("Query", compare).Json()["Count"], 2);
}

TEST_F(DynamoDbApiTest, BatchGetItem) {
  auto key = [](const std::string& device, const std::string& ts) {
    return json{{"deviceId", {{"S", device}}}, {"readingTs", {{"S", ts}}}};
  };
  json batch = {{"RequestItems",
                 {{"readings",
                   {{"Keys", json::array({key("a1", SampleSortKey(0)), key("b2", "2026-06-24T02:00:00+02:00"),
                                          key("a1", "2030-01-01T00:00:00Z"), key("a 1", "x")})},
                    {"ProjectionExpression", "deviceId, #t, humidity"},
                    {"ExpressionAttributeNames", {{"#t", "temperature"}}}}}}}};
  HttpResult result = Call("BatchGetItem", batch);
  ASSERT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.Json(), json::parse(R"({"Responses":{"readings":[
      {"deviceId":{"S":"a1"},"temperature":{"N":"20"}},{"deviceId":{"S":"b2"},"humidity":{"N":"40"}}]},
      "UnprocessedKeys":{}})"));

  // Past the response cap, the rest comes back as UnprocessedKeys with the table's parameters.
  ServeOptions small;
  small.api.limits.max_batch_get_bytes = StoredBytes({{"a1", SampleSortKey(0)}, {"a1", SampleSortKey(1)}});
  StartServer(small);
  json keys = json::array();
  for (int i = 0; i < 5; ++i) keys.push_back(key("a1", SampleSortKey(i)));
  batch["RequestItems"]["readings"]["Keys"] = keys;
  HttpResult capped = Call("BatchGetItem", batch);
  ASSERT_EQ(capped.status, 200) << capped.body;
  json body = capped.Json();
  EXPECT_EQ(body["Responses"]["readings"].size(), 2u);
  EXPECT_EQ(body["UnprocessedKeys"]["readings"]["Keys"], json(keys.begin() + 2, keys.end()));
  EXPECT_EQ(body["UnprocessedKeys"]["readings"]["ProjectionExpression"], "deviceId, #t, humidity");

  batch["RequestItems"]["readings"]["Keys"] = json::array({key("a1", SampleSortKey(0)), key("a1", "2026-06-23T10:00:00+02:00")});
  EXPECT_EQ(ErrorOf(Call("BatchGetItem", batch), "ValidationException"), "Provided list of item keys contains duplicates");
  keys = json::array();
  for (int i = 0; i < 101; ++i) keys.push_back(key("a1", SampleSortKey(i)));
  batch["RequestItems"]["readings"]["Keys"] = keys;
  EXPECT_NE(ErrorOf(Call("BatchGetItem", batch), "ValidationException")
                .find("at 'requestItems.readings.member.keys' failed to satisfy constraint: Member must have length "
                      "less than or equal to 100"),
            std::string::npos);
  batch["RequestItems"]["readings"]["Keys"] = json::array({key("a1", SampleSortKey(0))});
  batch["RequestItems"]["readings"]["AttributesToGet"] = json::array({"temperature"});
  EXPECT_NE(ErrorOf(Call("BatchGetItem", batch), "ValidationException").find("Can not use both expression"),
            std::string::npos);
  ErrorOf(Call("BatchGetItem", json{{"RequestItems", {{"other", {{"Keys", json::array({key("a1", "x")})}}}}}}),
          "ResourceNotFoundException");
  EXPECT_EQ(ErrorOf(Call("BatchGetItem", json::object()), "ValidationException"),
            "1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not "
            "be null");
}

// What a node with a node map does with the shares of a BatchGetItem (cluster::Forwarder): each
// node reads its partitions' keys, and the merge of the shares is the whole answer, also past the
// response's cap, where UnprocessedKeys are the same keys one node leaves.
TEST_F(DynamoDbApiTest, SharesOfABatchGetItemMergeIntoTheWholeAnswer) {
  auto key = [](const std::string& device, const std::string& ts) {
    return json{{"deviceId", {{"S", device}}}, {"readingTs", {{"S", ts}}}};
  };
  json keys = json::array({key("b2", "2026-06-24T02:00:00+02:00"), key("a10", "2030-01-01T00:00:00Z")});
  for (int i = 0; i < 6; ++i) keys.push_back(key(i % 2 ? "a1" : "a10", SampleSortKey(i)));
  keys.push_back(key("a1", "not a time"));
  const json batch = {{"RequestItems", {{"readings", {{"Keys", keys}, {"ProjectionExpression", "deviceId, humidity"}}}}},
                      {"ReturnConsumedCapacity", "TOTAL"}};
  for (const std::size_t cap : {std::size_t{16} << 20, StoredBytes({{"a1", SampleSortKey(1)}, {"a1", SampleSortKey(3)}})}) {
    ServeOptions options;
    options.api.limits.max_batch_get_bytes = cap;
    StartServer(options);
    const HttpResult whole = Call("BatchGetItem", batch);
    ASSERT_EQ(whole.status, 200) << whole.body;
    const Headers headers = {{"X-Amz-Target", "DynamoDB_20120810.BatchGetItem"},
                             {"Content-Type", "application/x-amz-json-1.0"}};
    const std::vector<std::string> shares = {Post(port(), "/?partitions=0&partition_count=3", headers, batch.dump()).body,
                                             Post(port(), "/?partitions=1-2&partition_count=3", headers, batch.dump()).body};
    const query::ReadContext read{*store_, options.api.limits};
    http::Request request{http::verb::post, "/", 11};
    request.set("X-Amz-Target", "DynamoDB_20120810.BatchGetItem");
    request.body() = batch.dump();
    const http::Response merged = api::dynamodb::Merge({read, "readings", {}, "id", "us-east-1"}, request, shares);
    EXPECT_EQ(json::parse(merged.body()), whole.Json()) << cap;
    EXPECT_EQ(whole.Json()["UnprocessedKeys"].empty(), cap == std::size_t{16} << 20);
  }
}

// What a node with a node map does with the shares of a Scan (cluster::Forwarder): the merge of
// three nodes' shares (their partitions' devices only) is, page after page, the page of the whole:
// with a Limit or none, a filter, a projection, Select COUNT, a segment, and pages ending at
// max_page_bytes.
TEST_F(DynamoDbApiTest, SharesOfAScanMergeIntoThePagesOfTheWhole) {
  const json filter = {{"FilterExpression", "deviceId = :d OR humidity > :h"},
                       {"ExpressionAttributeValues", {{":d", {{"S", "a10"}}}, {":h", {{"N", "39.5"}}}}}};
  std::vector<json> requests;
  for (int limit : {0, 1, 7, 61}) {
    json request = Scan({{"ReturnConsumedCapacity", "TOTAL"}});
    if (limit != 0) request["Limit"] = limit;
    requests.push_back(request);
    request.update(filter);
    requests.push_back(request);
    request["ProjectionExpression"] = "deviceId, humidity";
    requests.push_back(request);
    request.erase("ProjectionExpression");
    request["Select"] = "COUNT";
    requests.push_back(request);
  }
  for (int segment = 0; segment < 3; ++segment) {
    requests.push_back(Scan({{"Limit", 5}, {"Segment", segment}, {"TotalSegments", 3}}));
  }
  const Headers headers = {{"X-Amz-Target", "DynamoDB_20120810.Scan"}, {"Content-Type", "application/x-amz-json-1.0"}};
  for (const std::size_t max_page_bytes : {std::size_t{1} << 20, std::size_t{200}}) {
    ServeOptions options;
    options.api.limits.max_page_bytes = max_page_bytes;
    StartServer(options);
    const query::ReadContext read{*store_, options.api.limits};
    for (json body : requests) {
      int scanned = 0;
      for (;;) {
        const HttpResult whole = Call("Scan", body);
        ASSERT_EQ(whole.status, 200) << whole.body;
        std::vector<std::string> shares;
        for (const std::string p : {"0", "1", "2"}) {
          const HttpResult share = Post(port(), "/?partitions=" + p + "&partition_count=3", headers, body.dump());
          ASSERT_EQ(share.status, 200) << share.body;
          shares.push_back(share.body);
        }
        http::Request request{http::verb::post, "/", 11};
        request.set("X-Amz-Target", "DynamoDB_20120810.Scan");
        request.body() = body.dump();
        const http::Response merged = api::dynamodb::Merge({read, "readings", {}, "id", "us-east-1"}, request, shares);
        ASSERT_EQ(json::parse(merged.body()), whole.Json()) << body.dump() << " " << max_page_bytes;
        scanned += whole.Json()["ScannedCount"].get<int>();
        if (!whole.Json().contains("LastEvaluatedKey")) break;
        body["ExclusiveStartKey"] = whole.Json()["LastEvaluatedKey"];
      }
      if (!body.contains("Segment")) {
        EXPECT_EQ(scanned, kItems) << body.dump();
      }
    }
  }
}

TEST_F(DynamoDbApiTest, LegacyParametersAnswerAsTheirExpressions) {
  json expression = Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:19:00Z");
  expression["FilterExpression"] = "#s = :ok OR temperature >= :t";
  expression["ProjectionExpression"] = "readingTs, #s";
  expression["ExpressionAttributeNames"] = {{"#s", "status"}};
  expression["ExpressionAttributeValues"][":ok"] = {{"S", "ok"}};
  expression["ExpressionAttributeValues"][":t"] = {{"N", "29"}};
  json legacy = {
      {"TableName", "readings"},
      {"KeyConditions",
       {{"deviceId", {{"ComparisonOperator", "EQ"}, {"AttributeValueList", {{{"S", "a1"}}}}}},
        {"readingTs",
         {{"ComparisonOperator", "BETWEEN"},
          {"AttributeValueList", {{{"S", "2026-06-23T08:00:00Z"}}, {{"S", "2026-06-23T08:19:00Z"}}}}}}}},
      {"QueryFilter",
       {{"status", {{"ComparisonOperator", "EQ"}, {"AttributeValueList", {{{"S", "ok"}}}}}},
        {"temperature", {{"ComparisonOperator", "GE"}, {"AttributeValueList", {{{"N", "29"}}}}}}}},
      {"ConditionalOperator", "OR"},
      {"AttributesToGet", {"readingTs", "status"}}};
  HttpResult a = Call("Query", expression), b = Call("Query", legacy);
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(a.Json(), b.Json());
  EXPECT_EQ(b.Json()["Count"], 11);  // the 10 even minutes, and minute 19 (29.5 degrees)

  json scan = Scan({{"ScanFilter", {{"deviceId", {{"ComparisonOperator", "IN"},
                                                  {"AttributeValueList", {{{"S", "b2"}}, {{"S", "edge"}}}}}}}}});
  EXPECT_EQ(Call("Scan", scan).Json()["Count"], 4);
  scan["ScanFilter"] = {{"humidity", {{"ComparisonOperator", "NOT_NULL"}}}};
  EXPECT_EQ(Call("Scan", scan).Json()["Count"], 1);
  // "warn" holds "ar": a1's 30 odd minutes; NOT_CONTAINS is the other 37 of the 67 readings,
  // those without a status among them.
  scan["ScanFilter"] = {{"status", {{"ComparisonOperator", "CONTAINS"}, {"AttributeValueList", {{{"S", "ar"}}}}}}};
  EXPECT_EQ(Call("Scan", scan).Json()["Count"], 30);
  scan["ScanFilter"]["status"]["ComparisonOperator"] = "NOT_CONTAINS";
  EXPECT_EQ(Call("Scan", scan).Json()["Count"], 37);

  json mixed = legacy;
  mixed["FilterExpression"] = "temperature > :t";
  mixed["ExpressionAttributeValues"] = {{":t", {{"N", "1"}}}};
  EXPECT_EQ(ErrorOf(Call("Query", mixed), "ValidationException"),
            "Can not use both expression and non-expression parameters in the same request: Non-expression "
            "parameters: {AttributesToGet, QueryFilter, ConditionalOperator} Expression parameters: "
            "{FilterExpression}");
  json names_alone = legacy;
  names_alone["ExpressionAttributeNames"] = {{"#s", "status"}};
  EXPECT_EQ(ErrorOf(Call("Query", names_alone), "ValidationException"),
            "ExpressionAttributeNames can only be specified when using expressions");
  json bad = legacy;
  bad["QueryFilter"] = {{"readingTs", {{"ComparisonOperator", "NOT_NULL"}}}};
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "QueryFilter can only contain non-primary key attributes: Primary key attribute: readingTs");
  bad = legacy;
  bad["KeyConditions"]["deviceId"]["ComparisonOperator"] = "BEGINS_WITH";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"), "Query key condition not supported");
  bad = legacy;
  bad["KeyConditions"]["readingTs"]["ComparisonOperator"] = "EQ";
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator");
  bad = legacy;
  bad["AttributesToGet"] = {"status", "status"};
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"),
            "One or more parameter values were invalid: Duplicate value in attribute name: status");
  bad = legacy;
  bad["KeyConditions"].erase("deviceId");
  EXPECT_EQ(ErrorOf(Call("Query", bad), "ValidationException"), "Query condition missed key schema element: deviceId");

  json get = {{"TableName", "readings"},
              {"Key", {{"deviceId", {{"S", "b2"}}}, {"readingTs", {{"S", "2026-06-24T00:00:00Z"}}}}},
              {"AttributesToGet", {"humidity"}}};
  EXPECT_EQ(Call("GetItem", get).Json(), json::parse(R"({"Item":{"humidity":{"N":"40"}}})"));
}

TEST_F(DynamoDbApiTest, DescribeTableNamesTheConfiguredRegionAndAStableId) {
  const std::string id = Call("DescribeTable", {{"TableName", "readings"}}).Json()["Table"]["TableId"];
  ServeOptions options;
  options.api.region = "eu-central-1";
  StartServer(options);
  const json table = Call("DescribeTable", {{"TableName", "readings"}}).Json()["Table"];
  EXPECT_EQ(table["TableArn"], "arn:aws:dynamodb:eu-central-1:000000000000:table/readings");
  EXPECT_EQ(table["TableId"], id);
  // Kept in the store: the same after it is opened again.
  server_.reset();
  router_.reset();
  store_.reset();
  storage::StoreOptions reopen;
  reopen.path = dir_.File("db");
  ASSERT_TRUE(storage::Store::Open(reopen, &store_).ok());
  EXPECT_EQ(store_->TableId(), id);
}

// A JSON value `levels` deep: {"M":{"M":…{}…}}.
std::string NestedMaps(int levels) {
  std::string text;
  for (int i = 1; i < levels; ++i) text += R"({"M":)";
  text += "{}";
  text.append(levels - 1, '}');
  return text;
}

// {"L":[{"L":[…]}]}, two levels per wrap.
std::string NestedLists(int wraps) {
  std::string text;
  for (int i = 0; i < wraps; ++i) text += R"({"L":[)";
  for (int i = 0; i < wraps; ++i) text += "]}";
  return text;
}

constexpr std::string_view kQueryHead =
    R"({"TableName":"readings","KeyConditionExpression":"deviceId = :d",)";

// Issue #20: about 90,000 levels (well under the 1 MB body cap) overflowed the stack of the
// thread that copied the tree, and the process died. Now the parser stops at the limit.
TEST_F(DynamoDbApiTest, RequestsNestedTooDeepAreRefusedAndTheServerStaysUp) {
  constexpr int kDeep = 100000;
  const std::pair<std::string, std::string> requests[] = {
      {"Query", std::string(kQueryHead) + R"("ExpressionAttributeValues":{":d":{"S":"a1"}},"ExclusiveStartKey":)" +
                    NestedMaps(kDeep) + "}"},
      {"Query", std::string(kQueryHead) + R"("ExpressionAttributeValues":{":d":)" + NestedMaps(kDeep) + "}}"},
      {"Query", std::string(kQueryHead) + R"("ExpressionAttributeValues":{":d":)" + NestedLists(kDeep) + "}}"},
      {"GetItem", R"({"TableName":"readings","Key":)" + NestedMaps(kDeep) + "}"},
  };
  HttpConnection connection(port());
  for (const auto& [operation, body] : requests) {
    ASSERT_LT(body.size(), http::ServerOptions{}.max_body_bytes);  // not the 413 path
    const std::string message = ErrorOf(Send(connection, operation, body), "ValidationException");
    EXPECT_NE(message.find("Nesting Levels have exceeded supported limits"), std::string::npos) << message;
    // The same connection is still served.
    HttpResult next = Send(connection, "Query", Between("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:01:00Z").dump());
    ASSERT_EQ(next.status, 200) << next.body;
    EXPECT_EQ(next.Json()["Count"], 2);
  }
}

// The body object is level 1. Every request DynamoDB itself accepts nests far less deep.
TEST_F(DynamoDbApiTest, NestingUpToTheLimitIsParsedOneLevelDeeperIsRefused) {
  auto with_start_key = [](int levels) {
    return std::string(kQueryHead) + R"("ExpressionAttributeValues":{":d":{"S":"a1"}},"ExclusiveStartKey":)" +
           NestedMaps(levels) + "}";
  };
  HttpConnection connection(port());
  EXPECT_NE(ErrorOf(Send(connection, "Query", with_start_key(kMaxJsonDepth - 1)), "ValidationException")
                .find("The provided starting key is invalid: The provided key element does not match the schema"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Send(connection, "Query", with_start_key(kMaxJsonDepth)), "ValidationException")
                .find("Nesting Levels have exceeded supported limits"),
            std::string::npos);
}

}  // namespace
}  // namespace readingsd::test
