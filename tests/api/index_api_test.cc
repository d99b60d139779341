// GET /v1/indexes/{name}/readings and the refusal of GET /v1/readings, over real HTTP and a
// real store with declared indexes.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

// The fixture's readings (a1: 60 at 08:MM, temperature 20 + 0.5 i; a10: 3 at 08:00..02, 99)
// and three more hours of a2, so that a window spans buckets.
class IndexApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    indexes_ = HotAndStatusIndexes(3);
    HttpServerTest::SetUp();
    std::vector<storage::Reading> more;
    for (int h = 9; h <= 11; ++h) {
      more.push_back(MakeReading("a2", "2026-06-23T" + std::string(h < 10 ? "0" : "") + std::to_string(h) + ":30:00.000000000Z",
                                {{"temperature", 40.0 + h}}));
    }
    ASSERT_TRUE(store_->Write(more).ok());
    StartServer();
  }
  json GetJson(const std::string& target, int want_status = 200) {
    HttpResult r = Get(port(), target);
    EXPECT_EQ(r.status, want_status) << target << ": " << r.body;
    return json::parse(r.body);
  }
};

TEST_F(IndexApiTest, AWindowOfManyBucketsWithASortConditionPagedByOneCursor) {
  const std::string base = "/v1/indexes/hot_by_hour/readings?from=2026-06-23T08:50:00Z&to=2026-06-23T11:00:00Z&gt=45";
  json all = GetJson(base);
  // 08: a1 minutes 51..59 (45.5 .. 49.5) then a10's 99s fall before 08:50 (outside the window);
  // 09: 49; 10: 50; 11:30 is after the window.
  std::vector<std::string> temperatures;
  for (const json& item : all["items"]) temperatures.push_back(item["temperature"].dump());
  EXPECT_EQ(temperatures, (std::vector<std::string>{"45.5", "46", "46.5", "47", "47.5", "48", "48.5", "49", "49.5",
                                                    "49", "50"}));
  EXPECT_EQ(all["count"], 11);
  EXPECT_EQ(all["scannedCount"], 15);  // a10's three and a2's 11:30 are read, dropped by the window
  EXPECT_FALSE(all.contains("nextCursor"));
  EXPECT_TRUE(all["items"][0]["readingHour"].get<std::string>().starts_with("2026-06-23T08#"));

  std::vector<std::string> paged;
  std::string cursor;
  for (int pages = 0; pages < 20; ++pages) {
    json page = GetJson(base + "&limit=4" + (cursor.empty() ? "" : "&cursor=" + cursor));
    for (const json& item : page["items"]) paged.push_back(item["temperature"].dump());
    if (!page.contains("nextCursor")) break;
    cursor = page["nextCursor"];
  }
  EXPECT_EQ(paged, temperatures);

  json desc = GetJson(base + "&order=desc&limit=3");  // 11:30 (read, outside the window), 50, 49
  EXPECT_EQ(desc["items"][0]["temperature"].dump(), "50");
  EXPECT_EQ(desc["items"][1]["temperature"].dump(), "49");
}

TEST_F(IndexApiTest, AStringPartitionAndErrors) {
  json warn = GetJson("/v1/indexes/by_status/readings?value=warn&ge=2026-06-23T08:10&le=2026-06-23T08:14:00Z");
  ASSERT_EQ(warn["items"].size(), 2u);
  EXPECT_EQ(warn["items"][0]["readingTs"], SampleSortKey(11));
  EXPECT_FALSE(warn["items"][0].contains("readingHour"));

  EXPECT_EQ(GetJson("/v1/indexes/nope/readings?value=x", 404)["error"]["code"], "NotFound");
  EXPECT_EQ(GetJson("/v1/indexes/by_status/readings", 400)["error"]["code"], "InvalidParameter");
  EXPECT_EQ(GetJson("/v1/indexes/hot_by_hour/readings?from=2026-06-23", 400)["error"]["code"], "InvalidParameter");
  EXPECT_EQ(GetJson("/v1/indexes/hot_by_hour/readings?from=2026-06-23&to=2026-06-24&gt=warm", 400)["error"]["code"],
            "InvalidParameter");
  EXPECT_EQ(GetJson("/v1/indexes/hot_by_hour/readings?from=2026-06-23&to=2026-06-24&cursor=AAAA", 400)["error"]["code"],
            "InvalidParameter");
}

// format=columns on an index: every page of multi-page questions through both indexes is the
// rows page transposed (deviceId a column, readingHour a column, null where an item lacks an
// attribute), with the same counts and cursor; a server without read helpers answers the same.
TEST_F(IndexApiTest, ColumnsPagesAreTheRowsPagesTransposed) {
  std::vector<storage::Reading> readings;
  for (int i = 0; i < 1800; ++i) {
    char device[8], ts[40];
    std::snprintf(device, sizeof device, "f%02d", i % 30);
    std::snprintf(ts, sizeof ts, "2026-06-23T%02d:%02d:%02d.%09dZ", 12 + i / 600, i / 10 % 60, i % 60, i % 7);
    std::vector<storage::Attribute> attributes{{"temperature", 15.0 + i % 101 * 0.25}};
    if (i % 3 == 0) attributes.push_back({"status", std::string(i % 9 == 0 ? "warn" : "ok")});
    if (i % 97 == 5) attributes.push_back({"humidity", 40.0 + i % 5});
    if (i % 250 == 249) attributes.push_back({"door \"front\"", i % 500 == 249});
    if (i % 400 == 399) attributes.push_back({"note", std::string("a \"quoted\" \u00e9")});
    readings.push_back(MakeReading(device, ts, std::move(attributes)));
  }
  ASSERT_TRUE(store_->Write(readings).ok());
  ServeOptions options;
  options.api.read_helpers = 0;
  Served alone;
  ASSERT_TRUE(Serve(store_.get(), options, {}, &alone).ok());

  const auto check = [&](const std::string& target) {
    return ExpectColumnsAreRowsTransposed(port(), alone.server->port(), target);
  };
  const std::string window = "/v1/indexes/hot_by_hour/readings?from=2026-06-23T12:00:00Z&to=2026-06-23T14:59:59Z";
  int pages = 0;
  for (const std::string& target : std::vector<std::string>{
           window + "&limit=500", window + "&gt=30&limit=77", window + "&order=desc&limit=250",
           window + "&attributes=status,humidity&limit=300", window + "&filter=" + UrlEncode("status = 'ok'") + "&limit=400",
           window + "&le=20&order=desc&limit=1000",
           "/v1/indexes/hot_by_hour/readings?from=2026-06-23T08:00:00Z&to=2026-06-23T13:30:00Z&limit=1000",
           "/v1/indexes/by_status/readings?value=ok&limit=150",
           "/v1/indexes/by_status/readings?value=warn&ge=2026-06-23T13&order=desc&limit=45"}) {
    std::string cursor;
    for (int page = 0; page < 20; ++page, ++pages) {
      const json rows = check(target + (cursor.empty() ? "" : "&cursor=" + cursor));
      if (!rows.contains("nextCursor")) break;
      cursor = rows["nextCursor"];
    }
  }
  EXPECT_GT(pages, 20);
  check("/v1/indexes/hot_by_hour/readings?from=2030-01-01T00:00:00Z&to=2030-01-01T01:00:00Z");  // no items
}

// What a node with a node map does with the shares of an index query (cluster::Forwarder): the
// merge of two nodes' shares (their partitions' devices only) is, page after page, the page of
// the whole, byte for byte, also when pages end at max_page_bytes, and when the nodes' shares end
// sooner than the merging node's pages would (a smaller max_page_bytes there).
TEST_F(IndexApiTest, SharesOfAQueryMergeIntoThePagesOfTheWhole) {
  const std::string window = "/v1/indexes/hot_by_hour/readings?from=2026-06-23T08:00:00Z&to=2026-06-23T11:59:59Z";
  for (const std::size_t max_page_bytes : {std::size_t{1} << 20, std::size_t{400}}) {
    ServeOptions options;
    options.api.limits.max_page_bytes = max_page_bytes;
    StartServer(options);
    const query::ReadContext read{*store_, options.api.limits};
    const api::native::OpsHooks ops;
    const api::native::DeleteHook remove;
    for (const std::string& target : std::vector<std::string>{
             window + "&limit=7", window + "&limit=5&order=desc&format=columns", window + "&gt=30&limit=4",
             window + "&filter=" + UrlEncode("status = 'ok'") + "&limit=6&attributes=status",
             "/v1/indexes/by_status/readings?value=ok&limit=3", "/v1/indexes/by_status/readings?value=warn"}) {
      std::string cursor;
      for (int page = 0; page < 100; ++page) {
        const std::string path = target + (cursor.empty() ? "" : "&cursor=" + cursor);
        const HttpResult whole = Get(port(), path);
        ASSERT_EQ(whole.status, 200) << path << ": " << whole.body;
        const std::vector<std::string> shares = {Get(port(), path + "&partitions=0&partition_count=3").body,
                                                 Get(port(), path + "&partitions=1-2&partition_count=3").body};
        const http::Request request{http::verb::get, path, 11};
        EXPECT_EQ(api::native::Merge({read, ops, remove}, request, shares).body(), whole.body) << path;
        if (!whole.Json().contains("nextCursor")) break;
        cursor = whole.Json()["nextCursor"].get<std::string>();
      }
    }
  }
  // Shares cut at 200 bytes merged by a node that would cut at 1 MB: the page ends where a share
  // ended, and its cursor resumes there.
  ServeOptions options;
  options.api.limits.max_page_bytes = 200;
  StartServer(options);
  const query::ReadContext read{*store_, query::ReadLimits{}};
  const api::native::OpsHooks ops;
  const api::native::DeleteHook remove;
  std::vector<std::string> merged_items, whole_items;
  std::string cursor;
  for (int page = 0; page < 200; ++page) {  // the whole, from this node's own short pages
    const json whole = GetJson(window + "&limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor));
    for (const json& item : whole["items"]) whole_items.push_back(item.dump());
    if (!whole.contains("nextCursor")) break;
    cursor = whole["nextCursor"].get<std::string>();
  }
  cursor.clear();
  int pages = 0;
  for (; pages < 200; ++pages) {
    const std::string path = window + "&limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor);
    const std::vector<std::string> shares = {Get(port(), path + "&partitions=0&partition_count=3").body,
                                             Get(port(), path + "&partitions=1-2&partition_count=3").body};
    const http::Request request{http::verb::get, path, 11};
    const json merged = json::parse(api::native::Merge({read, ops, remove}, request, shares).body());
    for (const json& item : merged["items"]) merged_items.push_back(item.dump());
    if (!merged.contains("nextCursor")) break;
    cursor = merged["nextCursor"].get<std::string>();
  }
  EXPECT_GT(pages, 1);
  EXPECT_EQ(merged_items, whole_items);
}

TEST_F(IndexApiTest, ColumnsInTheDocumentedShape) {
  const std::string target =
      "/v1/indexes/hot_by_hour/readings?from=2026-06-23T08:00:00Z&to=2026-06-23T08:59:59Z&ge=48.5&limit=3"
      "&attributes=temperature,door";
  const json rows = GetJson(target);
  ASSERT_EQ(rows["items"].size(), 3u);
  json hours = json::array();
  for (const json& item : rows["items"]) hours.push_back(item["readingHour"]);
  EXPECT_EQ(GetJson(target + "&format=columns"),
            json({{"index", "hot_by_hour"},
                  {"deviceId", {"a1", "a1", "a1"}},
                  {"readingTs", {SampleSortKey(57), SampleSortKey(58), SampleSortKey(59)}},
                  {"columns", {{"temperature", {48.5, 49, 49.5}}, {"door", {true, false, false}}, {"readingHour", hours}}},
                  {"count", 3},
                  {"scannedCount", 3},
                  {"nextCursor", rows["nextCursor"]}}));
  EXPECT_EQ(Get(port(), "/v1/indexes/hot_by_hour/readings?from=2030-01-01T00:00:00Z&to=2030-01-01T01:00:00Z&format=columns")
                .body,
            R"({"index":"hot_by_hour","deviceId":[],"readingTs":[],"columns":{},"count":0,"scannedCount":0})");
  EXPECT_EQ(GetJson("/v1/indexes/by_status/readings?value=ok&limit=2&format=columns")["columns"].contains("readingHour"),
            false);
  EXPECT_EQ(GetJson(target + "&format=csv", 400)["error"]["message"], "format: expected rows or columns, got \"csv\"");
}

TEST_F(IndexApiTest, AFleetWideQuestionWithoutAnIndexIsRefusedNamingOne) {
  json refused = GetJson("/v1/readings?from=2026-06-23&to=2026-06-24&filter=humidity%20%3E%2030", 400);
  EXPECT_EQ(refused["error"]["code"], "IndexRequired");
  const std::string message = refused["error"]["message"];
  EXPECT_NE(message.find("[[index]] name = \"humidity_by_hour\", partition = \"readingHour\", sort = \"humidity\""),
            std::string::npos)
      << message;
  json use = GetJson("/v1/readings?filter=temperature%20%3E%2030", 400);
  EXPECT_NE(use["error"]["message"].get<std::string>().find("GET /v1/indexes/hot_by_hour/readings"), std::string::npos);
}

// Each index partition a query reads is reported once, with its shard suffix, for the index's
// hotness; through both APIs, and the items add up to scannedCount.
TEST_F(IndexApiTest, EveryIndexPartitionAQueryReadsIsReportedForHotness) {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, std::size_t> reads;  // (index, partition) -> items
  std::size_t calls = 0;
  ServeHooks hooks;
  hooks.api.on_index_partition_read = [&](std::string_view index, std::string_view partition, std::size_t items,
                                          std::size_t bytes) {
    std::lock_guard lock(mu);
    ++calls;
    reads[{std::string(index), std::string(partition)}] += items;
    EXPECT_GT(bytes, 0u);
  };
  StartServer({}, std::move(hooks));

  json all = GetJson("/v1/indexes/hot_by_hour/readings?from=2026-06-23T08:00:00Z&to=2026-06-23T08:59:59Z");
  std::size_t reported = 0;
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(calls, reads.size());  // once per partition
    for (const auto& [key, items] : reads) {
      EXPECT_EQ(key.first, "hot_by_hour");
      EXPECT_TRUE(key.second.starts_with("2026-06-23T08#")) << key.second;
      reported += items;
    }
    EXPECT_GE(reads.size(), 2u);  // 63 readings spread over 3 shards
  }
  EXPECT_EQ(reported, all["scannedCount"].get<std::size_t>());

  {
    std::lock_guard lock(mu);
    reads.clear();
  }
  const json query = {{"TableName", "readings"},
                      {"IndexName", "by_status"},
                      {"KeyConditionExpression", "#s = :s"},
                      {"ExpressionAttributeNames", {{"#s", "status"}}},
                      {"ExpressionAttributeValues", {{":s", {{"S", "warn"}}}}}};
  HttpResult r = Post(port(), "/",
                      {{"X-Amz-Target", "DynamoDB_20120810.Query"}, {"Content-Type", "application/x-amz-json-1.0"}},
                      query.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::lock_guard lock(mu);
  std::size_t warn = 0;
  for (const auto& [key, items] : reads) {
    EXPECT_EQ(key.first, "by_status");
    warn += items;
  }
  EXPECT_EQ(warn, json::parse(r.body)["ScannedCount"].get<std::size_t>());
  EXPECT_GT(warn, 0u);
}

}  // namespace
}  // namespace readingsd::test
