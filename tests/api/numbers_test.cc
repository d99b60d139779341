// Numbers through both APIs (issue #22): every accepted number comes back digit for digit in
// plain decimal and compares exactly in filters; a store written when numbers were doubles
// (value format 1) is read as the decimals those doubles meant.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "storage/key.h"
#include "storage/rocks_options.h"
#include "tests/api/served.h"
#include "tests/support/random_numbers.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class NumbersApiTest : public ::testing::Test {
 protected:
  void OpenAndServe() {
    ASSERT_TRUE(storage::Store::Open({.path = path_}, &store_).ok());
    ServeOptions options;
    options.server.port = 0;
    Status s = Serve(store_.get(), options, {}, &served_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  uint16_t port() const { return served_.server->port(); }

  HttpResult Call(const std::string& operation, const json& body) {
    return Post(port(), "/",
                {{"X-Amz-Target", "DynamoDB_20120810." + operation}, {"Content-Type", "application/x-amz-json-1.0"}},
                body.dump());
  }
  json QueryAll(const std::string& device, const std::string& filter = "", const json& value = nullptr) {
    json request = {{"TableName", "readings"},
                    {"KeyConditionExpression", "deviceId = :d"},
                    {"ExpressionAttributeValues", {{":d", {{"S", device}}}}}};
    if (!filter.empty()) {
      request["FilterExpression"] = filter;
      request["ExpressionAttributeValues"][":v"] = value;
    }
    HttpResult result = Call("Query", request);
    EXPECT_EQ(result.status, 200) << result.body;
    return result.Json();
  }
  int NativeCount(const std::string& device, const std::string& filter) {
    HttpResult result = Get(port(), "/v1/devices/" + device + "/readings?limit=1000&filter=" + UrlEncode(filter));
    EXPECT_EQ(result.status, 200) << result.body;
    return result.Json()["count"].get<int>();
  }

  TempDir dir_{"readingsd-numbers-test"};
  const std::string path_ = dir_.File("db");
  std::unique_ptr<storage::Store> store_;
  Served served_;
};

TEST_F(NumbersApiTest, AnyAcceptedNumberComesBackDigitForDigitAndComparesExactly) {
  OpenAndServe();
  std::mt19937_64 rng(22);
  std::vector<DrawnNumber> drawn;
  std::vector<storage::Reading> readings;
  for (int i = 0; i < 300; ++i) {
    drawn.push_back(DrawNumber(rng));
    storage::Number number;
    ASSERT_TRUE(storage::Number::Parse(drawn.back().Json(rng), &number).ok());
    readings.push_back({"num", storage::SortKeyAtSeconds(1782201600.0 + i), {{"n", number}}});
  }
  ASSERT_TRUE(store_->Write(readings).ok());

  HttpResult native = Get(port(), "/v1/devices/num/readings?limit=1000");
  ASSERT_EQ(native.status, 200);
  std::size_t at = 0;
  for (const DrawnNumber& d : drawn) {
    at = native.body.find("\"n\":" + d.Plain() + "}", at);
    ASSERT_NE(at, std::string::npos) << d.Plain();
  }
  const json items = QueryAll("num")["Items"];
  ASSERT_EQ(items.size(), drawn.size());
  for (std::size_t i = 0; i < drawn.size(); ++i) EXPECT_EQ(items[i]["n"]["N"], drawn[i].Plain()) << i;

  for (int pivot = 0; pivot < 20; ++pivot) {
    const DrawnNumber& p = drawn[rng() % drawn.size()];
    int above = 0;
    for (const DrawnNumber& d : drawn) above += d.ReferenceCompare(p) > 0;
    EXPECT_EQ(QueryAll("num", "n > :v", {{"N", p.Json(rng)}})["Count"], above) << p.Plain();
    EXPECT_EQ(QueryAll("num", "n = :v", {{"N", p.Json(rng)}})["Count"], 1) << p.Plain();
    EXPECT_EQ(NativeCount("num", "n>" + p.Plain()), above) << p.Plain();
  }
}

TEST_F(NumbersApiTest, NumbersBeyondDynamoDbsAreRefusedInItsWords) {
  OpenAndServe();
  const auto message = [&](const std::string& n) {
    HttpResult result = Call("Query", {{"TableName", "readings"},
                                       {"KeyConditionExpression", "deviceId = :d"},
                                       {"FilterExpression", "n = :v"},
                                       {"ExpressionAttributeValues", {{":d", {{"S", "x"}}}, {":v", {{"N", n}}}}}});
    EXPECT_EQ(result.status, 400) << result.body;
    return result.Json().value("message", "");
  };
  EXPECT_NE(message(std::string(39, '9')).find("Attempting to store more than 38 significant digits in a Number"),
            std::string::npos);
  EXPECT_NE(message("1e126").find("Number overflow."), std::string::npos);
  EXPECT_NE(message("1e-131").find("Number underflow."), std::string::npos);
  EXPECT_NE(message("1,5").find("The parameter cannot be converted to a numeric value: 1,5"), std::string::npos);
  HttpResult native = Get(port(), "/v1/devices/x/readings?filter=" + UrlEncode("n>" + std::string(39, '1')));
  EXPECT_EQ(native.status, 400);
  EXPECT_NE(native.body.find("38 significant digits"), std::string::npos) << native.body;
}

// Value format 1: version byte 1, then name length, name, 'n' and a little-endian double.
std::string LegacyValue(const std::vector<std::pair<std::string, double>>& numbers) {
  std::string value(1, '\1');
  for (const auto& [name, number] : numbers) {
    value.push_back(static_cast<char>(name.size()));
    value += name;
    value.push_back('n');
    char bytes[sizeof number];
    std::memcpy(bytes, &number, sizeof bytes);
    value.append(bytes, sizeof bytes);
  }
  return value;
}

TEST_F(NumbersApiTest, AStoreWrittenWhenNumbersWereDoublesReadsAsTheirDecimals) {
  ASSERT_TRUE(storage::Store::Open({.path = path_}, &store_).ok());
  store_.reset();
  const std::string sort_key = storage::SortKeyAtSeconds(1782201600.0);
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(storage::internal::MakeOptions({.path = path_}, nullptr, true), path_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), storage::EncodeKey("old1", sort_key),
                        LegacyValue({{"a", 0.1}, {"b", 1e21}, {"c", -0.0}, {"d", 123456789012345678.0}, {"e", 22.0}}))
                    .ok());
  }
  OpenAndServe();
  HttpResult native = Get(port(), "/v1/devices/old1/readings");
  ASSERT_EQ(native.status, 200);
  EXPECT_NE(native.body.find(R"("a":0.1,"b":1000000000000000000000,"c":0,"d":123456789012345680,"e":22})"),
            std::string::npos)
      << native.body;
  const json item = QueryAll("old1")["Items"].at(0);
  EXPECT_EQ(item["a"]["N"], "0.1");
  EXPECT_EQ(item["b"]["N"], "1000000000000000000000");
  EXPECT_EQ(item["d"]["N"], "123456789012345680");
  EXPECT_EQ(NativeCount("old1", "a=0.1"), 1);
  EXPECT_EQ(NativeCount("old1", "d>123456789012345679"), 1);
  EXPECT_EQ(QueryAll("old1", "b = :v", {{"N", "1e21"}})["Count"], 1);
}

}  // namespace
}  // namespace readingsd::test
