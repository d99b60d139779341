// format=csv on the native readings endpoint (#27), over real HTTP against a real RocksDB store.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

class CsvApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    StartServer();
  }

  HttpResult Csv(const std::string& device, const std::string& query, const Headers& headers = {}) {
    return Get(port(), "/v1/devices/" + device + "/readings?format=csv" + (query.empty() ? "" : "&" + query),
               headers);
  }

  // Follows X-Next-Cursor until it is absent: the first page whole, then each later page
  // without its header line, which must be the first page's. With `coding` (gzip or deflate),
  // every page is asked for in it, must come in it and is inflated.
  std::string AllPages(const std::string& device, const std::string& query, int* pages, const std::string& coding = "") {
    std::string whole, header, cursor;
    for (*pages = 0; *pages < 200; ++*pages) {
      HttpResult page = Csv(device, query + (cursor.empty() ? "" : "&cursor=" + cursor),
                            coding.empty() ? Headers{} : Headers{{"Accept-Encoding", coding}});
      EXPECT_EQ(page.status, 200) << page.body;
      if (page.status != 200) break;
      EXPECT_EQ(page.Header("content-encoding"), coding);
      if (!coding.empty()) page.body = Inflate(page.body, coding == "gzip");
      const std::string page_header = page.body.substr(0, page.body.find("\r\n") + 2);
      if (*pages == 0) header = page_header;
      EXPECT_EQ(page_header, header) << "page " << *pages;
      whole += *pages == 0 ? page.body : page.body.substr(page_header.size());
      cursor = page.Header("x-next-cursor");
      if (cursor.empty()) {
        ++*pages;
        break;
      }
    }
    return whole;
  }

  void Write(const std::vector<storage::Reading>& readings) {
    Status s = store_->Write(readings);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
};

TEST_F(CsvApiTest, HeaderRowsAndCountsInHeaders) {
  HttpResult page = Csv("a1", "limit=3");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.Header("content-type"), "text/csv; charset=utf-8; header=present");
  EXPECT_EQ(page.body,
            "deviceId,readingTs,temperature,status,door\r\n"
            "a1,2026-06-23T08:00:00.000000000Z,20,ok,true\r\n"
            "a1,2026-06-23T08:01:00.000000000Z,20.5,warn,false\r\n"
            "a1,2026-06-23T08:02:00.000000000Z,21,ok,false\r\n");
  EXPECT_EQ(page.Header("x-count"), "3");
  EXPECT_EQ(page.Header("x-scanned-count"), "3");
  // The cursor is the JSON page's: either format continues the other.
  const HttpResult json_page = Get(port(), "/v1/devices/a1/readings?limit=3");
  EXPECT_EQ(page.Header("x-next-cursor"), json_page.Json()["nextCursor"]);
  EXPECT_EQ(Get(port(), "/v1/devices/a1/readings?format=rows&limit=3").body, json_page.body);

  // The last page has no cursor; a filter's counts differ as in JSON.
  HttpResult last = Csv("a1", "from=" + SampleSortKey(58) + "&filter=" + UrlEncode("status = warn"));
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_EQ(last.body, "deviceId,readingTs,temperature,status,door\r\na1,2026-06-23T08:59:00.000000000Z,49.5,warn,false\r\n");
  EXPECT_EQ(last.Header("x-count"), "1");
  EXPECT_EQ(last.Header("x-scanned-count"), "2");
  EXPECT_FALSE(last.headers.contains("x-next-cursor"));
}

TEST_F(CsvApiTest, QuotingNumbersAsStoredAndMissingCells) {
  storage::Number big;
  ASSERT_TRUE(storage::Number::Parse("12345678901234567890.123456789", &big).ok());
  Write({MakeReading("q1", SampleSortKey(0),
                     {{"note", std::string("say \"hi\", <script>alert(1)</script>")},
                      {"lines", std::string("one\r\ntwo\nthree")},
                      {"x,\"y\"", std::string("plain")},
                      {"big", big},
                      {"empty", std::string()}}),
         MakeReading("q1", SampleSortKey(1), {{"later", true}, {"big", storage::Number(-7)}})});
  HttpResult page = Csv("q1", "");
  ASSERT_EQ(page.status, 200) << page.body;
  // Columns: the union over the page in first-seen order (a reading's attributes as written).
  EXPECT_EQ(page.body,
            "deviceId,readingTs,note,lines,\"x,\"\"y\"\"\",big,empty,later\r\n"
            "q1,2026-06-23T08:00:00.000000000Z,\"say \"\"hi\"\", <script>alert(1)</script>\",\"one\r\ntwo\nthree\","
            "plain,12345678901234567890.123456789,\"\",\r\n"
            "q1,2026-06-23T08:01:00.000000000Z,,,,-7,,true\r\n");
}

TEST_F(CsvApiTest, ProjectionNamesTheColumnsInItsOrder) {
  HttpResult page = Csv("a1", "limit=2&attributes=temperature,absent,door");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.body,
            "deviceId,readingTs,temperature,absent,door\r\n"
            "a1,2026-06-23T08:00:00.000000000Z,20,,true\r\n"
            "a1,2026-06-23T08:01:00.000000000Z,20.5,,false\r\n");
  // A range that holds no possible key reads nothing and is the header alone.
  HttpResult empty = Csv("a1", "attributes=temperature&after=" + SampleSortKey(3) + "&before=" +
                                   UrlEncode("2026-06-23T08:03:00.000000001Z"));
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.body, "deviceId,readingTs,temperature\r\n");
  EXPECT_EQ(empty.Header("x-count"), "0");
}

TEST_F(CsvApiTest, PagesConcatenateToTheWholeWindow) {
  const std::string window = "from=" + SampleSortKey(5) + "&to=" + SampleSortKey(50);
  const HttpResult whole = Csv("a1", window + "&limit=1000");
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_FALSE(whole.headers.contains("x-next-cursor"));
  int pages = 0;
  EXPECT_EQ(AllPages("a1", window + "&limit=7", &pages), whole.body);
  EXPECT_EQ(pages, 7);  // 46 readings
  const HttpResult desc = Csv("a1", window + "&order=desc&limit=1000");
  EXPECT_EQ(AllPages("a1", window + "&order=desc&limit=10", &pages), desc.body);
  EXPECT_EQ(pages, 5);
}

TEST_F(CsvApiTest, SameCapsAsJson) {
  // limit above max_limit is the JSON page's 400.
  HttpResult over = Csv("a1", "limit=10001");
  EXPECT_EQ(over.status, 400);
  EXPECT_NE(over.body.find("limit: expected an integer from 1 to 10000"), std::string::npos) << over.body;
  // A page also ends after max_page_bytes read; paging still gives every reading once.
  server_.reset();
  ServeOptions options;
  options.api.limits.max_page_bytes = 200;
  StartServer(options);
  HttpResult first = Csv("a1", "attributes=temperature");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_LT(std::stoi(first.Header("x-count")), kA1Count);
  EXPECT_FALSE(first.Header("x-next-cursor").empty());
  int pages = 0;
  const std::string all = AllPages("a1", "attributes=temperature", &pages);
  EXPECT_GT(pages, 1);
  std::string expected = "deviceId,readingTs,temperature\r\n";
  for (int i = 0; i < kA1Count; ++i) {
    expected += "a1," + SampleSortKey(i) + "," + storage::Number(20 + 0.5 * i).text + "\r\n";
  }
  EXPECT_EQ(all, expected);
}

TEST_F(CsvApiTest, BadFormatAndTooManyColumns) {
  HttpResult bad = Get(port(), "/v1/devices/a1/readings?format=xml");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Json()["error"]["message"], "format: expected rows, columns or csv, got \"xml\"");
  EXPECT_EQ(Get(port(), "/v1/devices/a1/latest?format=csv").status, 400);  // readings only

  std::vector<storage::Reading> wide;
  for (int i = 0; i <= 1000; ++i) {
    char ts[40];
    std::snprintf(ts, sizeof ts, "2026-06-25T%02d:%02d:%02d.000000000Z", i / 3600, i / 60 % 60, i % 60);
    wide.push_back(MakeReading("wide", ts, {{"a" + std::to_string(i), storage::Number(i)}}));
  }
  Write(wide);
  HttpResult page = Csv("wide", "limit=2000");
  EXPECT_EQ(page.status, 400);
  EXPECT_NE(page.body.find("format: the readings of this page hold more than 1000 distinct attributes"),
            std::string::npos)
      << page.body.substr(0, 300);
  // Named columns are always fine; so is a page with fewer.
  EXPECT_EQ(Csv("wide", "limit=2000&attributes=a7").status, 200);
  EXPECT_EQ(Csv("wide", "limit=1000").status, 200);
}

// Pages too long for one part are rendered and sent in parts (chunked), compressed part by part
// through one zlib stream: inflated, each page is the page sent uncompressed, and the pages
// together the whole window's CSV, whether a helper thread read part of a page or not.
TEST_F(CsvApiTest, StreamedPagesInflateToTheWholeWindow) {
  std::vector<storage::Reading> readings;
  std::string expected = "deviceId,readingTs,temperature,note\r\n";
  for (int i = 0; i < 3000; ++i) {
    char ts[40];
    std::snprintf(ts, sizeof ts, "2026-06-23T%02d:%02d:%02d.000000000Z", 8 + i / 3600, i / 60 % 60, i % 60);
    const storage::Number temperature(20 + 0.25 * i);
    readings.push_back(MakeReading("s1", ts, {{"temperature", temperature},
                                              {"note", "reading " + std::to_string(i) + ", \"quoted\""}}));
    expected += std::string("s1,") + ts + "," + temperature.text + ",\"reading " + std::to_string(i) +
                ", \"\"quoted\"\"\"\r\n";
  }
  Write(readings);
  const std::string columns = "attributes=temperature,note";
  for (const int helpers : {1, 0}) {
    SCOPED_TRACE(helpers ? "read helpers on" : "read helpers off");
    server_.reset();
    ServeOptions options;
    options.api.read_helpers = helpers;
    StartServer(options);
    const HttpResult whole = Csv("s1", columns + "&limit=5000");
    ASSERT_EQ(whole.status, 200);
    EXPECT_EQ(whole.Header("transfer-encoding"), "chunked");
    EXPECT_EQ(whole.Header("content-length"), "");
    EXPECT_EQ(whole.Header("x-count"), "3000");  // known before the first row is rendered
    EXPECT_FALSE(whole.headers.contains("x-next-cursor"));
    EXPECT_EQ(whole.body, expected);
    const HttpResult gzip = Csv("s1", columns + "&limit=5000", {{"Accept-Encoding", "gzip"}});
    EXPECT_EQ(gzip.Header("content-encoding"), "gzip");
    EXPECT_EQ(gzip.Header("transfer-encoding"), "chunked");
    EXPECT_LT(gzip.body.size(), expected.size() / 3);
    EXPECT_EQ(Inflate(gzip.body, true), expected);

    int pages = 0;
    EXPECT_EQ(AllPages("s1", columns + "&limit=700", &pages), expected);
    EXPECT_EQ(pages, 5);
    for (const std::string coding : {"gzip", "deflate"}) {
      EXPECT_EQ(AllPages("s1", columns + "&limit=700", &pages, coding), expected) << coding;
      EXPECT_EQ(pages, 5);
    }
    if (helpers && std::thread::hardware_concurrency() >= 2) {  // with a core to spare, the helpers' path ran
      EXPECT_GT(router_->read_helper_tasks(), 0u);
    }
  }
}

}  // namespace
}  // namespace readingsd::test
