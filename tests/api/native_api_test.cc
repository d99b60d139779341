// The native JSON API over real HTTP on loopback, against a real RocksDB store.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "tests/api/served.h"
#include "tests/support/random_numbers.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class NativeApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    StartServer();
  }

  // A second server on the same store whose pages are read by their request's thread alone.
  void ServeWithoutReadHelpers(Served* alone) {
    ServeOptions options;
    options.api.read_helpers = 0;
    options.server.port = 0;
    ASSERT_TRUE(Serve(store_.get(), options, {}, alone).ok());
  }

  HttpResult Readings(const std::string& device, const std::string& query = "") {
    return Get(port(), "/v1/devices/" + device + "/readings" + (query.empty() ? "" : "?" + query));
  }

  // The sort keys of a 200 page, in order.
  std::vector<std::string> Keys(const HttpResult& result) {
    EXPECT_EQ(result.status, 200) << result.body;
    std::vector<std::string> keys;
    const json body = result.Json();
    for (const json& item : body["items"]) keys.push_back(item["readingTs"]);
    return keys;
  }

  std::vector<std::string> Minutes(int first, int last) {
    std::vector<std::string> keys;
    for (int i = first; i <= last; ++i) keys.push_back(SampleSortKey(i));
    return keys;
  }

  // A 400 whose message begins with `prefix` (the parameter it names).
  void ExpectBadParameter(const HttpResult& result, const std::string& prefix) {
    EXPECT_EQ(result.status, 400) << result.body;
    const json body = result.Json();
    EXPECT_EQ(body["error"]["code"], "InvalidParameter");
    EXPECT_EQ(body["error"]["message"].get<std::string>().rfind(prefix, 0), 0u) << body["error"]["message"];
  }

  // Follows nextCursor until it is absent; the sort keys of all pages, in order.
  std::vector<std::string> AllPages(const std::string& device, const std::string& query, int* pages) {
    std::vector<std::string> keys;
    std::string cursor;
    *pages = 0;
    for (;;) {
      HttpResult result = Readings(device, query + (cursor.empty() ? "" : "&cursor=" + cursor));
      EXPECT_EQ(result.status, 200) << result.body;
      if (result.status != 200 || ++*pages > 100) break;
      for (const std::string& key : Keys(result)) keys.push_back(key);
      const json body = result.Json();
      if (!body.contains("nextCursor")) break;
      cursor = body["nextCursor"];
    }
    return keys;
  }
};

TEST_F(NativeApiTest, WholePartitionInTimeOrderWithTypedAttributes) {
  HttpResult result = Readings("a1");
  ASSERT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.Header("content-type"), "application/json");
  const json body = result.Json();
  EXPECT_EQ(body["deviceId"], "a1");
  EXPECT_EQ(body["count"], kA1Count);
  EXPECT_EQ(body["scannedCount"], kA1Count);
  EXPECT_FALSE(body.contains("nextCursor"));
  EXPECT_EQ(Keys(result), Minutes(0, kA1Count - 1));  // and nothing of a10
  EXPECT_EQ(body["items"][0], json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:00:00.000000000Z",
                                               "temperature":20.0,"status":"ok","door":true})"));
  EXPECT_EQ(body["items"][1]["temperature"], 20.5);
  EXPECT_EQ(body["items"][1]["door"], false);
}

TEST_F(NativeApiTest, FromAndToAreInclusiveAndAcceptAnyIsoForm) {
  // 10:20+02:00 is 08:20Z; a bare '+' (a space in form encoding) works before an offset, as %2B does.
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:10:00Z&to=2026-06-23T10:20:00+02:00")), Minutes(10, 20));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:10:00.0Z&to=2026-06-23T10:20:00%2B02:00")),
            Minutes(10, 20));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:55:00Z")), Minutes(55, 59));
  EXPECT_EQ(Keys(Readings("a1", "to=2026-06-23T08:03:00Z")), Minutes(0, 3));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:07:00Z&to=2026-06-23T08:07:00Z")), Minutes(7, 7));
}

TEST_F(NativeApiTest, AfterAndBeforeAreExclusive) {
  EXPECT_EQ(Keys(Readings("a1", "after=2026-06-23T08:10:00Z&before=2026-06-23T08:20:00Z")), Minutes(11, 19));
  EXPECT_EQ(Keys(Readings("a1", "after=2026-06-23T08:57:00Z")), Minutes(58, 59));
  EXPECT_EQ(Keys(Readings("a1", "before=2026-06-23T08:02:00Z")), Minutes(0, 1));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:10:00Z&before=2026-06-23T08:12:00Z")), Minutes(10, 11));
  EXPECT_EQ(Keys(Readings("a1", "after=2026-06-23T08:10:00Z&to=2026-06-23T08:12:00Z")), Minutes(11, 12));
  // Between two readings a nanosecond apart, or at one instant, nothing: a 200, not an error.
  EXPECT_TRUE(Keys(Readings("a1", "after=2026-06-23T08:10:00Z&before=2026-06-23T08:10:00Z")).empty());
}

TEST_F(NativeApiTest, ExclusiveBoundsAreExactToTheNanosecondAcrossCarries) {
  const std::string last_2026 = "2026-12-31T23:59:59.999999999Z";
  const std::string first_2027 = "2027-01-01T00:00:00.000000000Z";
  const std::string second_2027 = "2027-01-01T00:00:00.000000001Z";
  using Keys_ = std::vector<std::string>;
  // The successor of .999999999 carries through seconds, minutes, hours, days and the year.
  EXPECT_EQ(Keys(Readings("edge", "after=" + last_2026)), (Keys_{first_2027, second_2027}));
  // The predecessor of .000000000 borrows all the way back.
  EXPECT_EQ(Keys(Readings("edge", "before=2027-01-01T00:00:00Z")), (Keys_{last_2026}));
  EXPECT_EQ(Keys(Readings("edge", "after=" + last_2026 + "&before=" + second_2027)), (Keys_{first_2027}));
  EXPECT_TRUE(Keys(Readings("edge", "after=" + first_2027 + "&before=" + second_2027)).empty());
  // Offsets are normalised first: 01:00+01:00 is the first instant of 2027 UTC.
  EXPECT_EQ(Keys(Readings("edge", "after=2027-01-01T01:00:00+01:00")), (Keys_{second_2027}));
  // No successor past the last representable instant, no predecessor before the first.
  EXPECT_TRUE(Keys(Readings("edge", "after=9999-12-31T23:59:59.999999999Z")).empty());
  EXPECT_TRUE(Keys(Readings("edge", "before=0000-01-01T00:00:00Z")).empty());
  EXPECT_EQ(Keys(Readings("edge", "after=0000-01-01T00:00:00Z")).size(), 3u);
}

// A date, or a date and an hour or minute, is its first instant (UTC unless a zone follows) in
// every bound: from=DAY&before=NEXT_DAY is the whole day, and to=DAY ends at its midnight.
TEST_F(NativeApiTest, DatesAndShortenedTimesAreTheirFirstInstant) {
  using Keys_ = std::vector<std::string>;
  const std::string last_2026 = "2026-12-31T23:59:59.999999999Z";
  const std::string first_2027 = "2027-01-01T00:00:00.000000000Z";
  const std::string second_2027 = "2027-01-01T00:00:00.000000001Z";
  EXPECT_EQ(Keys(Readings("edge", "from=2027-01-01")), (Keys_{first_2027, second_2027}));
  EXPECT_EQ(Keys(Readings("edge", "after=2027-01-01")), (Keys_{second_2027}));
  EXPECT_EQ(Keys(Readings("edge", "to=2027-01-01")), (Keys_{last_2026, first_2027}));
  EXPECT_EQ(Keys(Readings("edge", "before=2027-01-01")), (Keys_{last_2026}));
  EXPECT_EQ(Keys(Readings("edge", "from=2026-12-31&before=2027-01-01")), (Keys_{last_2026}));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23&before=2026-06-24")).size(), static_cast<std::size_t>(kA1Count));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08:10&before=2026-06-23T08:20Z")), Minutes(10, 19));
  EXPECT_EQ(Keys(Readings("a1", "after=2026-06-23T08:10&to=2026-06-23T08:12")), Minutes(11, 12));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T08&before=2026-06-23T09")).size(), static_cast<std::size_t>(kA1Count));
  EXPECT_EQ(Keys(Readings("a1", "from=2026-06-23T10:55+02:00")), Minutes(55, 59));  // '+' typed bare
  EXPECT_EQ(Keys(Readings("a1", "to=2026-06-23T10:03%2B02")), Minutes(0, 3));
  ExpectBadParameter(Readings("a1", "before=2026-06-23T08:00:00"), "before: invalid timestamp");
  ExpectBadParameter(Readings("a1", "from=2026-06-23T8"), "from: invalid timestamp \"2026-06-23T8\": expected YYYY-MM-DD,");
}

TEST_F(NativeApiTest, BeginsWith) {
  EXPECT_EQ(Keys(Readings("a1", "begins_with=2026-06-23T08:1")), Minutes(10, 19));
  EXPECT_EQ(Keys(Readings("a1", "begins_with=2026-06-23")).size(), static_cast<std::size_t>(kA1Count));
  EXPECT_TRUE(Keys(Readings("a1", "begins_with=2026-06-24")).empty());
  ExpectBadParameter(Readings("a1", "begins_with=June"), "begins_with: ");
  ExpectBadParameter(Readings("a1", "begins_with=2026&from=2026-06-23T08:00:00Z"), "begins_with: ");
}

TEST_F(NativeApiTest, BadParametersAre400sNamingTheParameter) {
  ExpectBadParameter(Readings("a1", "from=yesterday"), "from: invalid timestamp");
  ExpectBadParameter(Readings("a1", "to=2026-02-30T00:00:00Z"), "to: invalid timestamp");
  ExpectBadParameter(Readings("a1", "after=2026-06-23t08:00:00z"), "after: invalid timestamp");
  ExpectBadParameter(Readings("a1", "before=2026-06-23T08:00:00"), "before: invalid timestamp");
  ExpectBadParameter(Readings("a1", "from="), "from: invalid timestamp");
  ExpectBadParameter(Readings("a1", "from=2026-06-23T08:00:00Z&after=2026-06-23T08:00:00Z"), "from, after: ");
  ExpectBadParameter(Readings("a1", "to=2026-06-23T08:00:00Z&before=2026-06-23T08:00:00Z"), "to, before: ");
  ExpectBadParameter(Readings("a1", "from=2026-06-23T09:00:00Z&to=2026-06-23T08:00:00Z"), "from: ");
  ExpectBadParameter(Readings("a1", "after=2026-06-23T09:00:00Z&before=2026-06-23T08:00:00Z"), "after: ");
  ExpectBadParameter(Readings("a1", "limit=0"), "limit: ");
  ExpectBadParameter(Readings("a1", "limit=10001"), "limit: ");
  ExpectBadParameter(Readings("a1", "limit=-1"), "limit: ");
  ExpectBadParameter(Readings("a1", "limit=5x"), "limit: ");
  ExpectBadParameter(Readings("a1", "order=sideways"), "order: ");
  ExpectBadParameter(Readings("a1", "cursor=not-a-cursor"), "cursor: ");
  ExpectBadParameter(Readings("a1", "cursor=%%%"), "malformed percent-encoding");
  ExpectBadParameter(Readings("a1", "filter=temperature>>3"), "filter: ");
  ExpectBadParameter(Readings("a1", "limit=5&limit=6"), "limit: given more than once");
  ExpectBadParameter(Readings("a1", "colour=red"), "unknown query parameter \"colour\"");
  ExpectBadParameter(Readings("a%20b"), "deviceId: ");
  ExpectBadParameter(Readings(std::string(129, 'x')), "deviceId: ");
}

TEST_F(NativeApiTest, LimitAndOrder) {
  HttpResult first = Readings("a1", "limit=5");
  EXPECT_EQ(Keys(first), Minutes(0, 4));
  EXPECT_TRUE(first.Json().contains("nextCursor"));
  std::vector<std::string> newest = Keys(Readings("a1", "order=desc&limit=3"));
  EXPECT_EQ(newest, (std::vector<std::string>{SampleSortKey(59), SampleSortKey(58), SampleSortKey(57)}));
  EXPECT_EQ(Keys(Readings("a1", "order=asc&limit=60")).size(), 60u);
  EXPECT_FALSE(Readings("a1", "limit=60").Json().contains("nextCursor"));  // nothing after the last
}

TEST_F(NativeApiTest, PagingReturnsEveryItemOnceInBothOrders) {
  int pages = 0;
  EXPECT_EQ(AllPages("a1", "limit=7", &pages), Minutes(0, 59));
  EXPECT_EQ(pages, 9);
  std::vector<std::string> descending = Minutes(0, 59);
  std::reverse(descending.begin(), descending.end());
  EXPECT_EQ(AllPages("a1", "limit=7&order=desc", &pages), descending);
  // Within a range too, with bounds that are exclusive.
  EXPECT_EQ(AllPages("a1", "after=2026-06-23T08:10:00Z&before=2026-06-23T08:30:00Z&limit=4", &pages),
            Minutes(11, 29));
  EXPECT_EQ(pages, 5);
  std::vector<std::string> range_desc = Minutes(11, 29);
  std::reverse(range_desc.begin(), range_desc.end());
  EXPECT_EQ(
      AllPages("a1", "after=2026-06-23T08:10:00Z&before=2026-06-23T08:30:00Z&limit=4&order=desc", &pages),
      range_desc);
}

TEST_F(NativeApiTest, FilterAppliesAfterTheReadAndAnEmptiedPageStillPages) {
  HttpResult hot = Readings("a1", "filter=" + UrlEncode("temperature>40"));
  ASSERT_EQ(hot.status, 200) << hot.body;
  EXPECT_EQ(Keys(hot), Minutes(41, 59));
  EXPECT_EQ(hot.Json()["count"], 19);
  EXPECT_EQ(hot.Json()["scannedCount"], 60);
  EXPECT_EQ(
      Keys(Readings("a1", "filter=" + UrlEncode("status=ok and door=true") + "&to=2026-06-23T08:12:00Z")),
      (std::vector<std::string>{SampleSortKey(0), SampleSortKey(6), SampleSortKey(12)}));
  // Form encoding, as curl --data-urlencode writes it: '+' is a space, %2B a plus.
  EXPECT_EQ(Keys(Readings("a1", "filter=status%3Dok+and+door%3Dtrue&to=2026-06-23T08:12:00Z")),
            (std::vector<std::string>{SampleSortKey(0), SampleSortKey(6), SampleSortKey(12)}));

  HttpResult empty = Readings("a1", "limit=5&filter=" + UrlEncode("temperature>1000"));
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_TRUE(empty.Json()["items"].empty());
  EXPECT_EQ(empty.Json()["count"], 0);
  EXPECT_EQ(empty.Json()["scannedCount"], 5);
  EXPECT_TRUE(empty.Json().contains("nextCursor"));
  int pages = 0;
  EXPECT_TRUE(AllPages("a1", "limit=5&filter=" + UrlEncode("temperature>1000"), &pages).empty());
  EXPECT_EQ(pages, 12);
  EXPECT_EQ(AllPages("a1", "limit=8&filter=" + UrlEncode("temperature>=49"), &pages), Minutes(58, 59));
}

TEST_F(NativeApiTest, FilterWithInSizeContainsAndAttributeType) {
  const std::string window = "&to=2026-06-23T08:09:00Z";
  HttpResult in = Readings("a1", "filter=" + UrlEncode("status in (ok, none) and door in (true)") + window);
  ASSERT_EQ(in.status, 200) << in.body;
  EXPECT_EQ(Keys(in), (std::vector<std::string>{SampleSortKey(0), SampleSortKey(6)}));
  EXPECT_EQ(in.Json()["scannedCount"], 10);
  EXPECT_EQ(Keys(Readings("a1", "filter=" + UrlEncode("size(status) > 2 and contains(status, ar)") + window)),
            (std::vector<std::string>{SampleSortKey(1), SampleSortKey(3), SampleSortKey(5), SampleSortKey(7),
                                      SampleSortKey(9)}));
  EXPECT_EQ(Keys(Readings("a1", "filter=" + UrlEncode("attribute_type(temperature, N) and temperature in (20, 24.5)") +
                                    window)),
            (std::vector<std::string>{SampleSortKey(0), SampleSortKey(9)}));
  EXPECT_TRUE(Keys(Readings("a1", "filter=" + UrlEncode("size(temperature) >= 0") + window)).empty());
  ExpectBadParameter(Readings("a1", "filter=" + UrlEncode("attribute_type(temperature, DOG)")),
                     "filter: unknown attribute type 'DOG'");
}

TEST_F(NativeApiTest, CursorIsBoundToItsDevice) {
  const std::string cursor = Readings("a1", "limit=2").Json()["nextCursor"];
  ExpectBadParameter(Readings("a10", "cursor=" + cursor), "cursor: belongs to another device");
  EXPECT_EQ(Keys(Readings("a1", "limit=2&cursor=" + cursor)), Minutes(2, 3));
  // A cursor is only ever one the API produced.
  std::string tampered = cursor;
  tampered[3] = tampered[3] == 'A' ? 'B' : 'A';
  ExpectBadParameter(Readings("a1", "cursor=" + tampered), "cursor: ");
}

TEST_F(NativeApiTest, PageBytesEndAPageEarly) {
  server_.reset();
  ServeOptions options;
  options.api.limits.max_page_bytes = 200;
  StartServer(options);
  HttpResult page = Readings("a1");
  const json body = page.Json();
  EXPECT_LT(body["count"].get<int>(), kA1Count);
  EXPECT_GT(body["count"].get<int>(), 0);
  EXPECT_TRUE(body.contains("nextCursor"));
  int pages = 0;
  EXPECT_EQ(AllPages("a1", "limit=100", &pages), Minutes(0, 59));
  EXPECT_GT(pages, 1);
}

// A long page whose later part a read helper renders is byte for byte the page one thread
// renders: the same items, commas, counts and cursor, with filters, projections and both orders.
TEST_F(NativeApiTest, PagesWithAReadHelperAreByteForByteThePagesWithout) {
  std::vector<storage::Reading> readings;
  for (int i = 0; i < 3000; ++i) {
    char ts[40];
    std::snprintf(ts, sizeof ts, "2026-06-25T%02d:%02d:%02d.%09dZ", i / 3600, i / 60 % 60, i % 60, i % 7);
    readings.push_back(MakeReading("long", ts, {{"temperature", 20.0 + i % 13 * 0.25},
                                                {"status", std::string(i % 2 ? "ok" : "warn")}}));
  }
  ASSERT_TRUE(store_->Write(readings).ok());
  Served alone;
  ASSERT_NO_FATAL_FAILURE(ServeWithoutReadHelpers(&alone));

  for (const std::string& query : std::vector<std::string>{
           "", "limit=1000", "from=2026-06-25T00:10:00Z&to=2026-06-25T00:40:00Z", "order=desc&limit=900",
        "filter=" + UrlEncode("status = 'ok'") + "&limit=2000", "attributes=status&limit=800",
        "after=2026-06-25T00:05:00Z&order=desc&limit=700"}) {
    std::string cursor;
    for (int page = 0; page < 10; ++page) {
      const std::string target = "/v1/devices/long/readings?" + query + (cursor.empty() ? "" : "&cursor=" + cursor);
      const HttpResult helped = Get(port(), target);
      ASSERT_EQ(helped.status, 200) << target << " " << helped.body;
      ASSERT_EQ(helped.body, Get(alone.server->port(), target).body) << target;
      const json body = helped.Json();
      if (!body.contains("nextCursor")) break;
      cursor = body["nextCursor"];
    }
  }
  EXPECT_EQ(Get(port(), "/v1/devices/long/latest?n=1000").body,
            Get(alone.server->port(), "/v1/devices/long/latest?n=1000").body);
}

// Every page of multi-page windows in format=columns is the rows page transposed, with the same
// cursor, whether a read helper rendered the later part of the page or not: the helper's part
// starts its own columns (one appearing only late in it, one only in what it read past the
// page's end, one it lacks), which the page joins.
TEST_F(NativeApiTest, ColumnsPagesAreTheRowsPagesTransposedWithAndWithoutReadHelpers) {
  std::vector<storage::Reading> readings;
  for (int i = 0; i < 3000; ++i) {
    char ts[40];
    std::snprintf(ts, sizeof ts, "2026-06-25T%02d:%02d:%02d.%09dZ", i / 3600, i / 60 % 60, i % 60, i % 7);
    std::vector<storage::Attribute> attributes{{"temperature", 20.0 + i % 13 * 0.25}};
    if (i % 2 == 0) attributes.push_back({"status", std::string(i % 4 ? "ok" : "w\"arn")});
    if (i % 97 == 5) attributes.push_back({"humidity", 40.0 + i % 5});
    if (i % 250 == 249) attributes.push_back({"door \"front\"", i % 500 == 249});
    if (i % 400 == 399) attributes.push_back({"rare", std::string("x")});
    readings.push_back(MakeReading("long", ts, std::move(attributes)));
  }
  ASSERT_TRUE(store_->Write(readings).ok());
  Served alone;
  ASSERT_NO_FATAL_FAILURE(ServeWithoutReadHelpers(&alone));

  const auto check = [&](const std::string& target) {
    return ExpectColumnsAreRowsTransposed(port(), alone.server->port(), target);
  };
  int pages = 0;
  for (const std::string& query : std::vector<std::string>{
           "limit=1000", "from=2026-06-25T00:10:00Z&to=2026-06-25T00:40:00Z&limit=700", "order=desc&limit=900",
           "filter=" + UrlEncode("status = 'ok'") + "&limit=2000", "attributes=status,humidity&limit=800",
           "after=2026-06-25T00:05:00Z&order=desc&limit=333", "limit=10000", "limit=300", "order=desc&limit=450",
           "limit=550&filter=" + UrlEncode("temperature > 21")}) {
    std::string cursor;
    for (int page = 0; page < 10; ++page, ++pages) {
      const json rows =
          check("/v1/devices/long/readings?" + query + (cursor.empty() ? "" : "&cursor=" + cursor));
      if (!rows.contains("nextCursor")) break;
      cursor = rows["nextCursor"];
    }
  }
  EXPECT_GT(pages, 10);
  check("/v1/devices/long/latest?n=1000");
  check("/v1/devices/long/latest?n=3");
  check("/v1/devices/long/readings?from=2027-01-01");  // no items
  check("/v1/devices/a1/readings?limit=7");
  if (std::thread::hardware_concurrency() >= 2) {  // with a core to spare, the helpers' path ran
    EXPECT_GT(router_->read_helper_tasks(), 0u);
  }
}

TEST_F(NativeApiTest, ColumnsInTheDocumentedShape) {
  const json body = Readings("a1", "limit=3&attributes=temperature,door&format=columns").Json();
  EXPECT_EQ(body, json::parse(R"({"deviceId":"a1",
      "readingTs":["2026-06-23T08:00:00.000000000Z","2026-06-23T08:01:00.000000000Z","2026-06-23T08:02:00.000000000Z"],
      "columns":{"door":[true,false,false],"temperature":[20,20.5,21]},
      "count":3,"scannedCount":3,"nextCursor":")" + Readings("a1", "limit=3").Json()["nextCursor"].get<std::string>() +
                                  R"("})"));
  EXPECT_EQ(Readings("nobody", "format=columns").body,
            R"({"deviceId":"nobody","readingTs":[],"columns":{},"count":0,"scannedCount":0})");
  ExpectBadParameter(Readings("a1", "format=table"), "format: expected rows, columns or csv");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?format=csv"), "format: expected rows or columns");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?format=Columns"), "format: expected rows or columns");
  EXPECT_EQ(Readings("a1", "format=rows").body, Readings("a1").body);
}

TEST_F(NativeApiTest, LatestIsNewestFirstAndContinuesWithReadings) {
  HttpResult latest = Get(port(), "/v1/devices/a1/latest");
  std::vector<std::string> expected;
  for (int i = 59; i >= 50; --i) expected.push_back(SampleSortKey(i));
  EXPECT_EQ(Keys(latest), expected);
  EXPECT_EQ(Keys(Get(port(), "/v1/devices/a1/latest?n=2")),
            (std::vector<std::string>{SampleSortKey(59), SampleSortKey(58)}));
  const std::string cursor = latest.Json()["nextCursor"];
  EXPECT_EQ(Keys(Readings("a1", "order=desc&limit=2&cursor=" + cursor)),
            (std::vector<std::string>{SampleSortKey(49), SampleSortKey(48)}));
  EXPECT_TRUE(Keys(Get(port(), "/v1/devices/nobody/latest")).empty());
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?n=0"), "n: ");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?n=10001"), "n: ");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?limit=3"), "unknown query parameter \"limit\"");
}

TEST_F(NativeApiTest, OneItemByTimestampInAnyForm) {
  const json expected = json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:05:00.000000000Z",
                                        "temperature":22.5,"status":"warn","door":false})");
  for (const char* ts :
       {"2026-06-23T08:05:00Z", "2026-06-23T08:05:00.000000000Z", "2026-06-23T10:05:00%2B02:00",
        "2026-06-23T10:05:00+02:00", "2026-06-23T03:05:00-05:00"}) {
    HttpResult item = Get(port(), std::string("/v1/devices/a1/readings/") + ts);
    ASSERT_EQ(item.status, 200) << ts << " " << item.body;
    EXPECT_EQ(item.Json(), expected) << ts;
  }
  HttpResult absent = Get(port(), "/v1/devices/a1/readings/2026-06-23T08:05:00.5Z");
  EXPECT_EQ(absent.status, 404);
  EXPECT_EQ(absent.Json()["error"]["code"], "NotFound");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/readings/08:05"), "timestamp: invalid timestamp");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/readings/2026-06-23T08:05:00Z?x=1"),
                     "unknown query parameter");
}

// Pages are written without a JSON DOM: every string that needs escaping must survive a parse
// of the body, and every number must be in it digit for digit.
TEST_F(NativeApiTest, PagesRenderEveryValueExactly) {
  const std::vector<std::string> fixed = {
      "", "plain", "quote\" backslash\\ slash/", "tab\t newline\n nul", std::string("nul\0byte", 8),
      "\x01\x1f control", "°C ünïcödé 温度 😀", "</script>"};
  // Plain strings are written as they are: each byte that needs escaping (or is not ASCII, or
  // not UTF-8) at every offset of a longer string must still be caught, in strings shorter than
  // IsPlain's 16-byte blocks, of one and a bit, and of several.
  std::vector<std::string> strings = fixed;
  for (const std::string special : {"\"", "\\", "\x01", "\x1f", "\n", "\xc3\xa9", "\xff"}) {
    for (std::size_t size : {std::size_t{9}, std::size_t{18}, std::size_t{41}}) {
      for (std::size_t at = 0; at < size; ++at) {
        strings.push_back(std::string(at, ' ') + special + std::string(size - 1 - at, '~'));
      }
    }
  }
  // Numbers are written as their canonical text: doubles as written before numbers were exact
  // (the shortest decimal of each, however long its plain form), and numbers across DynamoDB's
  // whole range.
  std::vector<storage::Number> numbers;
  for (double d : {0.0, -0.0, 21.5, 22.0, -7.0, 0.1, 1.0 / 3, 1e-7, 1e15, 1e16, 1e300, -1e-300, 5e-324,
                   1.7976931348623157e308, 123456789.125, 9007199254740993.0, 0.30000000000000004}) {
    numbers.emplace_back(d);
  }
  std::mt19937_64 random(20261203);
  for (int i = 0; i < 1000; ++i) {
    storage::Number n;
    ASSERT_TRUE(storage::Number::Parse(DrawNumber(random).Json(random), &n).ok());
    numbers.push_back(n);
  }
  std::vector<storage::Attribute> attributes;
  for (std::size_t i = 0; i < strings.size(); ++i) attributes.push_back({"s" + std::to_string(i), strings[i]});
  for (std::size_t i = 0; i < numbers.size(); ++i) attributes.push_back({"n" + std::to_string(i), numbers[i]});
  attributes.push_back({"t", true});
  attributes.push_back({"f", false});
  attributes.push_back({"name \"with\" \\ escapes\n°", 1.0});
  // The most an attribute can take when rendered: one-byte control-character names (\u00XX) on
  // the longest numbers and on booleans, and a string of control characters only.
  for (char c = 1; c < 0x15; ++c) attributes.push_back({std::string(1, c), 5e-324});
  for (char c = 0x15; c < 0x1f; ++c) attributes.push_back({std::string(1, c), c % 2 == 0});
  attributes.push_back({"\x1f", std::string(1000, '\x01')});
  const std::string sort_key = "2026-06-25T00:00:00.000000000Z";
  ASSERT_TRUE(store_->Put(MakeReading("render", sort_key, attributes)).ok());

  auto check = [&](const json& item) {
    EXPECT_EQ(item["deviceId"], "render");
    EXPECT_EQ(item["readingTs"], sort_key);
    ASSERT_EQ(item.size(), attributes.size() + 2) << item.dump();
    for (const storage::Attribute& a : attributes) {
      ASSERT_TRUE(item.contains(a.name)) << a.name;
      const json& v = item[a.name];
      if (std::holds_alternative<storage::Number>(a.value)) {
        EXPECT_TRUE(v.is_number()) << a.name << " = " << v.dump();  // its digits: ExpectNumbersVerbatim
      } else if (const auto* b = std::get_if<bool>(&a.value)) {
        EXPECT_EQ(v, *b) << a.name;
      } else {  // as nlohmann writes it: invalid UTF-8 becomes U+FFFD
        const std::string& stored = std::get<std::string>(a.value);
        EXPECT_EQ(v, json::parse(json(stored).dump(-1, ' ', false, json::error_handler_t::replace))) << a.name;
      }
    }
  };
  // A JSON parser reads numbers as doubles: the digits are checked in the body itself.
  auto check_numbers_verbatim = [&](const std::string& body) {
    for (const storage::Attribute& a : attributes) {
      const auto* n = std::get_if<storage::Number>(&a.value);
      if (n == nullptr) continue;
      const std::string field = json(a.name).dump() + ":" + n->text;
      const std::size_t at = body.find(field);
      ASSERT_NE(at, std::string::npos) << field;
      EXPECT_TRUE(body[at + field.size()] == ',' || body[at + field.size()] == '}') << field;
    }
  };
  HttpResult page = Readings("render");
  ASSERT_EQ(page.status, 200) << page.body;
  ASSERT_EQ(page.Json()["items"].size(), 1u);
  check(page.Json()["items"][0]);
  check_numbers_verbatim(page.body);
  HttpResult item = Get(port(), "/v1/devices/render/readings/" + sort_key);
  ASSERT_EQ(item.status, 200) << item.body;
  check(item.Json());
  check_numbers_verbatim(item.body);
}

// attributes= keeps the named attributes besides the key; the filter still sees them all.
TEST_F(NativeApiTest, AttributesKeepTheNamedOnesAndTheKey) {
  HttpResult page = Readings("a1", "attributes=door,temperature&limit=2");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.Json()["items"][0], json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:00:00.000000000Z",
                                                     "temperature":20.0,"door":true})"));
  EXPECT_EQ(page.Json()["items"][1], json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:01:00.000000000Z",
                                                     "temperature":20.5,"door":false})"));
  HttpResult filtered =
      Readings("a1", "attributes=temperature&to=2026-06-23T08:12:00Z&filter=" + UrlEncode("status=ok and door=true"));
  EXPECT_EQ(Keys(filtered), (std::vector<std::string>{SampleSortKey(0), SampleSortKey(6), SampleSortKey(12)}));
  const json filtered_body = filtered.Json();
  for (const json& item : filtered_body["items"]) EXPECT_EQ(item.size(), 3u) << item.dump();
  // Naming only the key, or what no item holds, leaves the key.
  const json key_only = json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:00:00.000000000Z"})");
  EXPECT_EQ(Readings("a1", "attributes=readingTs&limit=1").Json()["items"][0], key_only);
  EXPECT_EQ(Readings("a1", "attributes=humidity&limit=1").Json()["items"][0], key_only);
  EXPECT_EQ(Get(port(), "/v1/devices/a1/latest?n=1&attributes=status").Json()["items"][0],
            json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:59:00.000000000Z","status":"warn"})"));
  EXPECT_EQ(Get(port(), "/v1/devices/a1/readings/2026-06-23T08:05:00Z?attributes=status,door").Json(),
            json::parse(R"({"deviceId":"a1","readingTs":"2026-06-23T08:05:00.000000000Z",
                            "status":"warn","door":false})"));

  for (const std::string& bad : std::vector<std::string>{"", "door,,status", "door,", ",door", std::string(256, 'x')}) {
    ExpectBadParameter(Readings("a1", "attributes=" + bad), "attributes: expected comma-separated names of 1 to 255");
  }
  ExpectBadParameter(Readings("a1", "attributes=door,status,door"), "attributes: \"door\" is listed twice");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/latest?attributes=door,door"), "attributes: ");
  ExpectBadParameter(Get(port(), "/v1/devices/a1/readings/2026-06-23T08:05:00Z?attributes="), "attributes: ");
}

TEST_F(NativeApiTest, UnknownRoutesAre404AndWrongMethods405) {
  for (const char* target :
       {"/v2/devices/a1/readings", "/v1/devices/a1/other", "/v1/devices/a1",
        "/v1/devices/a1/readings/2026-06-23T08:05:00Z/x", "/v1//a1/readings", "/healthz/"}) {
    HttpResult result = Get(port(), target);
    EXPECT_EQ(result.status, 404) << target;
    EXPECT_EQ(result.Json()["error"]["code"], "NotFound") << target;
  }
  HttpResult post = Post(port(), "/v1/devices/a1/latest", {}, "{}");  // POST .../readings writes
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.Header("allow"), "GET");
  EXPECT_EQ(post.Json()["error"]["code"], "MethodNotAllowed");
  HttpConnection connection(port());
  HttpResult del = connection.Send("DELETE", "/v1/devices/a1/readings/2026-06-23T08:05:00Z");
  EXPECT_EQ(del.status, 405);
  HttpResult root = Get(port(), "/");  // the DynamoDB endpoint
  EXPECT_EQ(root.status, 405);
  EXPECT_EQ(root.Header("allow"), "POST");
}

TEST_F(NativeApiTest, HealthReadinessAndMetrics) {
  HttpResult health = Get(port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");

  EXPECT_EQ(Get(port(), "/readyz").status, 200);   // no hook: ready
  EXPECT_EQ(Get(port(), "/metrics").status, 404);  // no exporter configured
  ExpectBadParameter(Get(port(), "/healthz?verbose=1"), "unknown query parameter");

  server_.reset();
  std::atomic<bool> ready{false};
  ServeHooks hooks;
  hooks.api.ops.ready = [&ready](std::string* detail) {
    *detail = ready ? "caught up" : "replaying the MQTT backlog";
    return ready.load();
  };
  hooks.api.ops.metrics = [] { return std::string("readingsd_up 1\n"); };
  StartServer({}, std::move(hooks));
  HttpResult not_ready = Get(port(), "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_EQ(not_ready.Json(), json::parse(R"({"ready":false,"detail":"replaying the MQTT backlog"})"));
  ready = true;
  EXPECT_EQ(Get(port(), "/readyz").Json(), json::parse(R"({"ready":true,"detail":"caught up"})"));
  HttpResult metrics = Get(port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.Header("content-type"), "text/plain; version=0.0.4");
  EXPECT_EQ(metrics.body, "readingsd_up 1\n");
}

TEST_F(NativeApiTest, HooksSeeEveryRequestAndPartitionRead) {
  server_.reset();
  std::mutex mu;
  std::vector<std::string> endpoints;
  std::vector<std::tuple<std::string, std::size_t, std::size_t>> reads;
  ServeHooks hooks;
  hooks.server.on_request = [&](std::string_view endpoint, double seconds) {
    EXPECT_GE(seconds, 0);
    std::lock_guard lock(mu);
    endpoints.emplace_back(endpoint);
  };
  hooks.api.on_partition_read = [&](std::string_view device, std::size_t items, std::size_t bytes) {
    std::lock_guard lock(mu);
    reads.emplace_back(std::string(device), items, bytes);
  };
  StartServer({}, std::move(hooks));
  Readings("a1", "limit=4&filter=" + UrlEncode("temperature>100"));
  Get(port(), "/v1/devices/a1/latest?n=1");
  Get(port(), "/v1/devices/a1/latest?n=1&attributes=door");
  Get(port(), "/v1/devices/b2/readings/2026-06-24T00:00:00Z");
  Get(port(), "/v1/devices/b2/readings/2026-06-25T00:00:00Z");
  Get(port(), "/healthz");
  Get(port(), "/readyz");
  Get(port(), "/metrics");
  Get(port(), "/nope");
  Readings("a1", "limit=0");

  std::lock_guard lock(mu);
  EXPECT_EQ(endpoints, (std::vector<std::string>{"readings", "latest", "latest", "item", "item", "healthz",
                                                 "readyz", "metrics", "other", "readings"}));
  ASSERT_EQ(reads.size(), 5u);  // the rejected request read nothing
  // All four filtered out, and still billed: a1's first readings alternate status "ok"/"warn".
  // Temperatures 20, 20.5, 21, 21.5 bill 2, 3, 2, 3 bytes (a byte per two significant digits, plus one).
  EXPECT_EQ(reads[0], std::make_tuple(std::string("a1"), std::size_t{4}, std::size_t{75 + 78 + 75 + 78}));
  EXPECT_EQ(std::get<1>(reads[1]), 1u);
  // deviceId a1 + readingTs + its three attributes, as DynamoDB sizes an item.
  EXPECT_EQ(std::get<2>(reads[1]), (8 + 2) + (9 + 30) + (11 + 3) + (6 + 4) + (4 + 1));
  EXPECT_EQ(reads[2], reads[1]);  // only what is sent is cut: the read is billed whole
  EXPECT_EQ(reads[3],
            std::make_tuple(std::string("b2"), std::size_t{1}, std::size_t{(8 + 2) + (9 + 30) + (8 + 2)}));
  EXPECT_EQ(reads[4], std::make_tuple(std::string("b2"), std::size_t{0}, std::size_t{0}));
}

}  // namespace
}  // namespace readingsd::test
