// The DynamoDB-compatible endpoint (api::dynamodb::HandleRequest) with a fuzzed request body, against a
// real Store (fuzz/api_fixture.h). The request parser is internal to api/dynamodb/dynamodb.cc, so the
// whole handler is driven, as the Router drives it for POST /.
//
// Input layout: a first byte 0x01-0x07 picks the operation (GetItem, DescribeTable, ListTables,
// PutItem, Scan, BatchGetItem, an unknown one) and the rest is the body; any other first byte means Query and the
// whole input is the body. So Query seeds are plain JSON files.
//
// Properties: no crash, no UB, no uncaught exception; and every response
//   - is 200 or 400 (a 5xx would blame the store for the client's input);
//   - carries x-amzn-RequestId and an x-amz-crc32 that matches the body;
//   - has a JSON object body: on errors {"__type":"com.amazonaws.dynamodb.v20120810#<T>",
//     "message":…} with x-amzn-ErrorType <T>; for a Query or Scan, Count == |Items| (absent with
//     Select COUNT), Count <= ScannedCount <= max_limit, and a LastEvaluatedKey that names the
//     key schema.
#include <boost/crc.hpp>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/dynamodb/dynamodb.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_util.h"

using namespace readingsd;
using readingsd::fuzz::AsView;
namespace http = readingsd::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const fuzz::ApiFixture& fixture = fuzz::ApiFixture::Get();
  std::string_view body = AsView(data, size);
  std::string_view operation = "Query";
  if (!body.empty() && body[0] >= 0x01 && body[0] <= 0x07) {
    constexpr std::string_view kOthers[] = {"GetItem", "DescribeTable", "ListTables", "PutItem",
                                            "Scan",    "BatchGetItem",  "TransactGetItems"};
    operation = kOthers[body[0] - 1];
    body.remove_prefix(1);
  }

  http::Request request{http::verb::post, "/", 11};
  request.set("X-Amz-Target", "DynamoDB_20120810." + std::string(operation));
  request.set(http::field::content_type, "application/x-amz-json-1.0");
  request.body() = std::string(body);
  request.prepare_payload();

  const auto context = fixture.DynamoDbContext();
  std::string_view endpoint;
  const http::Response response = api::dynamodb::HandleRequest(context, request, &endpoint);

  FUZZ_CHECK(!endpoint.empty());
  const unsigned status = response.result_int();
  FUZZ_CHECK(status == 200 || status == 400);
  FUZZ_CHECK(http::ToStd(response["x-amzn-RequestId"]) == context.request_id);
  boost::crc_32_type crc;
  crc.process_bytes(response.body().data(), response.body().size());
  FUZZ_CHECK(http::ToStd(response["x-amz-crc32"]) == std::to_string(crc.checksum()));

  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(!json.is_discarded() && json.is_object());
  if (status != 200) {
    FUZZ_CHECK(json.contains("__type") && json["__type"].is_string());
    FUZZ_CHECK(json.contains("message") && json["message"].is_string());
    const std::string type = json["__type"].get<std::string>();
    constexpr std::string_view kPrefix = "com.amazonaws.dynamodb.v20120810#";
    FUZZ_CHECK(type.starts_with(kPrefix));
    FUZZ_CHECK(http::ToStd(response["x-amzn-ErrorType"]) == type.substr(kPrefix.size()));
    return 0;
  }
  FUZZ_CHECK(operation != "PutItem" && operation != "TransactGetItems");
  if (operation == "Query" || operation == "Scan") {
    FUZZ_CHECK(json.contains("Count") && json["Count"].is_number_unsigned());
    FUZZ_CHECK(json.contains("ScannedCount") && json["ScannedCount"].is_number_unsigned());
    const auto count = json["Count"].get<std::size_t>();
    const auto scanned = json["ScannedCount"].get<std::size_t>();
    FUZZ_CHECK(count <= scanned && scanned <= fixture.limits().max_limit);
    if (json.contains("Items")) {
      FUZZ_CHECK(json["Items"].is_array() && json["Items"].size() == count);
    }
    if (json.contains("LastEvaluatedKey")) {
      const nlohmann::ordered_json& key = json["LastEvaluatedKey"];
      FUZZ_CHECK(key.size() == 2 && key.contains("deviceId") && key.contains("readingTs"));
    }
  }
  return 0;
}
