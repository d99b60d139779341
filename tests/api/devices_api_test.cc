// GET /v1/devices over real HTTP on loopback, against a real RocksDB store and its registry.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/native/native.h"
#include "cluster/partition.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class DevicesApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    StartServer();
  }

  json Ok(const std::string& query) {
    HttpResult result = Get(port(), "/v1/devices" + query);
    EXPECT_EQ(result.status, 200) << result.body;
    EXPECT_EQ(result.Header("content-type"), "application/json");
    return result.Json();
  }

  // A 400 whose message begins with `prefix` (the parameter it names).
  void ExpectBad(const std::string& query, const std::string& prefix) {
    HttpResult result = Get(port(), "/v1/devices" + query);
    EXPECT_EQ(result.status, 400) << query << ": " << result.body;
    const json body = result.Json();
    EXPECT_EQ(body["error"]["code"], "InvalidParameter");
    EXPECT_EQ(body["error"]["message"].get<std::string>().rfind(prefix, 0), 0u) << body["error"]["message"];
  }

  // Every device id of every page, following nextCursor.
  std::vector<std::string> Walk(const std::string& query, int* pages) {
    std::vector<std::string> ids;
    *pages = 0;
    std::string cursor;
    do {
      const json page = Ok(query + (cursor.empty() ? "" : "&cursor=" + cursor));
      ++*pages;
      for (const json& d : page["devices"]) ids.push_back(d["deviceId"]);
      cursor = page.contains("nextCursor") ? page["nextCursor"].get<std::string>() : "";
    } while (!cursor.empty() && *pages < 100);
    return ids;
  }
};

TEST_F(DevicesApiTest, ListsEveryDeviceWithItsLatestReading) {
  const json body = Ok("");
  EXPECT_FALSE(body.contains("nextCursor"));
  ASSERT_EQ(body["devices"].size(), 4u);
  EXPECT_EQ(body["devices"][0], json::parse(R"({"deviceId":"a1",
      "firstReadingTs":"2026-06-23T08:00:00.000000000Z","lastReadingTs":"2026-06-23T08:59:00.000000000Z",
      "readings":60,"latest":{"deviceId":"a1","readingTs":"2026-06-23T08:59:00.000000000Z",
      "temperature":49.5,"status":"warn","door":false}})"));
  std::vector<std::string> ids;
  for (const json& d : body["devices"]) ids.push_back(d["deviceId"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"a1", "a10", "b2", "edge"}));
  EXPECT_EQ(body["devices"][3]["readings"], 3);
  EXPECT_EQ(body["devices"][3]["firstReadingTs"], "2026-12-31T23:59:59.999999999Z");
  EXPECT_EQ(body["devices"][3]["lastReadingTs"], "2027-01-01T00:00:00.000000001Z");

  EXPECT_EQ(Ok("?prefix=a1")["devices"].size(), 2u);
  EXPECT_EQ(Ok("?prefix=a10")["devices"][0]["deviceId"], "a10");
  EXPECT_EQ(Ok("?prefix=zz")["devices"], json::array());
}

TEST_F(DevicesApiTest, AnOverwriteOfTheLatestReadingIsListedAndCountsOnce) {
  ASSERT_TRUE(store_->Put(MakeReading("a10", SampleSortKey(2), {{"temperature", 12.5}})).ok());
  const json a10 = Ok("?prefix=a10")["devices"][0];
  EXPECT_EQ(a10["readings"], 3);
  EXPECT_EQ(a10["latest"]["temperature"], 12.5);
}

TEST_F(DevicesApiTest, PartitionsListOnlyTheirDevicesPageByPage) {
  for (uint32_t p = 0; p < 3; ++p) {
    std::vector<std::string> want;
    for (const char* id : {"a1", "a10", "b2", "edge"}) {
      if (cluster::PartitionOf(id, 3) == p) want.push_back(id);
    }
    int pages = 0;
    EXPECT_EQ(Walk("?limit=1&partitions=" + std::to_string(p) + "&partition_count=3", &pages), want) << p;
  }
  ExpectBad("?partitions=0-1", "partitions and partition_count go together");
  ExpectBad("?partitions=3&partition_count=3", "partitions: partition entry \"3\"");
}

// What a node with a node map does with its parts (cluster::Forwarder): the merge of the parts'
// pages is, page after page, the page of the whole listing, byte for byte.
TEST_F(DevicesApiTest, PartsOfTheListingMergeIntoThePagesOfTheWhole) {
  for (const std::string limit : {"1", "2", "3", "100"}) {
    std::string cursor;
    int pages = 0;
    do {
      const std::string query = "?limit=" + limit + (cursor.empty() ? "" : "&cursor=" + cursor);
      const HttpResult whole = Get(port(), "/v1/devices" + query);
      ASSERT_EQ(whole.status, 200) << whole.body;
      const std::vector<std::string> parts = {
          Get(port(), "/v1/devices" + query + "&partitions=0&partition_count=3").body,
          Get(port(), "/v1/devices" + query + "&partitions=1-2&partition_count=3").body};
      const http::Request request{http::verb::get, "/v1/devices" + query, 11};
      const http::Response merged = api::native::MergeDevicePages(query::ReadLimits{}, request, parts);
      ASSERT_EQ(merged.body(), whole.body) << query;
      cursor = whole.Json().contains("nextCursor") ? whole.Json()["nextCursor"].get<std::string>() : "";
    } while (!cursor.empty() && ++pages < 10);
  }
}

TEST_F(DevicesApiTest, PagesByLimitAndCursor) {
  int pages = 0;
  EXPECT_EQ(Walk("?limit=1", &pages), (std::vector<std::string>{"a1", "a10", "b2", "edge"}));
  EXPECT_EQ(pages, 4);  // the last page of a full walk carries no cursor
  EXPECT_EQ(Walk("?prefix=a&limit=1", &pages), (std::vector<std::string>{"a1", "a10"}));
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(Walk("?limit=3", &pages), (std::vector<std::string>{"a1", "a10", "b2", "edge"}));
  EXPECT_EQ(pages, 2);
}

TEST_F(DevicesApiTest, APageEndsAfterMaxPageBytes) {
  ServeOptions options;
  options.api.limits.max_page_bytes = 10;  // the first device crosses it
  StartServer(options);
  int pages = 0;
  EXPECT_EQ(Walk("?limit=100", &pages), (std::vector<std::string>{"a1", "a10", "b2", "edge"}));
  EXPECT_EQ(pages, 4);
}

TEST_F(DevicesApiTest, BadParametersAreRefusedWithTheirName) {
  ExpectBad("?limit=0", "limit:");
  ExpectBad("?limit=ten", "limit:");
  ExpectBad("?limit=10001", "limit:");
  ExpectBad("?prefix=a%2F1", "prefix:");
  ExpectBad("?cursor=%25%25", "cursor:");
  ExpectBad("?cursor=", "cursor:");
  ExpectBad("?color=red", "unknown query parameter");
  ExpectBad("?limit=1&limit=2", "limit:");
  // A readings cursor is not a listing's, nor is one of a listing with another prefix.
  const json readings = Get(port(), "/v1/devices/a1/readings?limit=1").Json();
  ExpectBad("?cursor=" + readings["nextCursor"].get<std::string>(), "cursor:");
  const std::string a_cursor = Ok("?prefix=a&limit=1")["nextCursor"];
  ExpectBad("?prefix=b&cursor=" + a_cursor, "cursor:");
  EXPECT_EQ(Get(port(), "/v1/devices/").status, 404);
}

}  // namespace
}  // namespace readingsd::test
