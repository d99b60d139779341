// The DynamoDB-compatible endpoint at the wire level: what botocore parses and verifies.
#include <gtest/gtest.h>

#include <boost/crc.hpp>
#include <string>

#include "json/parse.h"
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
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("not supported"), std::string::npos);
  r = request;
  r["QueryFilter"] = json::object();
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("not supported"), std::string::npos);

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
  r = Between("a1", "tuesday", "2026-06-23T08:00:00Z");
  EXPECT_NE(ErrorOf(Call("Query", r), "ValidationException").find("invalid timestamp"), std::string::npos);
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
  ErrorOf(Call("Scan", {{"TableName", "readings"}}), "UnknownOperationException");
  ErrorOf(Post(port(), "/", {}, "{}"), "UnknownOperationException");
  ErrorOf(Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.Query"}}, "{not json"),
          "SerializationException");
  ErrorOf(Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.Query"}}, "[1,2]"),
          "SerializationException");
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
                .find("ExclusiveStartKey: The provided key element does not match the schema"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Send(connection, "Query", with_start_key(kMaxJsonDepth)), "ValidationException")
                .find("Nesting Levels have exceeded supported limits"),
            std::string::npos);
}

}  // namespace
}  // namespace readingsd::test
