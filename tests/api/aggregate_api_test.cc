// GET /v1/devices/{id}/aggregate over real HTTP on loopback, against a real RocksDB store.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class AggregateApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    StartServer();
  }

  HttpResult Aggregate(const std::string& device, const std::string& query) {
    return Get(port(), "/v1/devices/" + device + "/aggregate?" + query);
  }

  json Ok(const HttpResult& result) {
    EXPECT_EQ(result.status, 200) << result.body;
    EXPECT_EQ(result.Header("content-type"), "application/json");
    return result.Json();
  }

  // A 400 whose message begins with `prefix` (the parameter or cap it names).
  void ExpectBad(const HttpResult& result, const std::string& prefix) {
    EXPECT_EQ(result.status, 400) << result.body;
    const json body = result.Json();
    EXPECT_EQ(body["error"]["code"], "InvalidParameter");
    EXPECT_EQ(body["error"]["message"].get<std::string>().rfind(prefix, 0), 0u) << body["error"]["message"];
  }

  static constexpr const char* kHour = "from=2026-06-23T08:00:00Z&to=2026-06-23T08:59:59Z";
};

// a1 holds one reading a minute from 08:00: temperature 20 + 0.5 i, status "ok" on even minutes
// else "warn", door true every third minute.
TEST_F(AggregateApiTest, FiveMinuteBucketsOfNumbersBooleansAndStrings) {
  const json body = Ok(Aggregate("a1", std::string(kHour) +
                                           "&step=5m&fn=avg,min,max,count,sum,first,last"
                                           "&attributes=temperature,door,status"));
  EXPECT_EQ(body["deviceId"], "a1");
  EXPECT_EQ(body["step"], "5m");
  EXPECT_EQ(body["scannedCount"], 60);
  ASSERT_EQ(body["buckets"].size(), 12u);
  const json& first = body["buckets"][0];
  EXPECT_EQ(first["start"], "2026-06-23T08:00:00Z");
  EXPECT_EQ(first["count"], 5);
  EXPECT_EQ(first["temperature"],
            json::parse(R"({"avg":21,"min":20,"max":22,"count":5,"sum":105,"first":20,"last":22})"));
  // Minutes 0 and 3 are true: as 0/1 they average 0.4; first and last stay booleans.
  EXPECT_EQ(first["door"],
            json::parse(R"({"avg":0.4,"min":0,"max":1,"count":5,"sum":2,"first":true,"last":false})"));
  // A string only counts and is kept: avg, min, max and sum are left out, not an error.
  EXPECT_EQ(first["status"], json::parse(R"({"count":5,"first":"ok","last":"ok"})"));
  EXPECT_EQ(body["buckets"][11]["start"], "2026-06-23T08:55:00Z");
  EXPECT_EQ(body["buckets"][11]["temperature"]["max"], 49.5);
}

TEST_F(AggregateApiTest, DefaultFunctionsInTheIssuesShape) {
  const HttpResult result = Aggregate("a1", std::string(kHour) + "&step=30m&attributes=temperature");
  const json body = Ok(result);
  ASSERT_EQ(body["buckets"].size(), 2u);
  EXPECT_EQ(body["buckets"][1]["count"], 30);
  // In the order asked for, so the bytes are the documented shape.
  EXPECT_NE(result.body.find(R"({"start":"2026-06-23T08:30:00Z","count":30,"temperature":{"avg":42.25,)"
                             R"("min":35,"max":49.5,"count":30}})"),
            std::string::npos)
      << result.body;
}

TEST_F(AggregateApiTest, EmptyWindowsAndBucketsLeftOut) {
  EXPECT_EQ(Ok(Aggregate("a1", "from=2026-06-24T00:00:00Z&to=2026-06-25T00:00:00Z&step=1h&attributes=t"))["buckets"],
            json::array());
  const std::string nothing = "after=" + UrlEncode("2026-06-23T08:00:00Z") + "&before=" +
                              UrlEncode("2026-06-23T08:00:00.000000001Z") + "&step=1s&attributes=temperature";
  const json none = Ok(Aggregate("a1", nothing));
  EXPECT_EQ(none["buckets"], json::array());
  EXPECT_EQ(none["scannedCount"], 0);
  // Hours of a1 and a10's three readings: only the hour with readings is there.
  const json sparse = Ok(Aggregate("a10", "from=2026-06-23T00:00:00Z&to=2026-06-23T23:59:59Z&step=1h&attributes=temperature,humidity"));
  ASSERT_EQ(sparse["buckets"].size(), 1u);
  EXPECT_EQ(sparse["buckets"][0]["count"], 3);
  EXPECT_FALSE(sparse["buckets"][0].contains("humidity"));  // no reading has it
}

TEST_F(AggregateApiTest, DaysAreUtcAndABoundaryOnAReadingStartsItsBucket) {
  // "edge": 2026-12-31T23:59:59.999999999Z, then 2027-01-01T00:00:00Z and one nanosecond after.
  const json body = Ok(Aggregate("edge", "from=2026-12-31T00:00:00Z&to=2027-01-01T00:00:00.5Z&step=1d&fn=count&attributes=v"));
  ASSERT_EQ(body["buckets"].size(), 2u);
  EXPECT_EQ(body["buckets"][0]["start"], "2026-12-31T00:00:00Z");
  EXPECT_EQ(body["buckets"][0]["count"], 1);
  EXPECT_EQ(body["buckets"][1]["start"], "2027-01-01T00:00:00Z");
  EXPECT_EQ(body["buckets"][1]["v"]["count"], 2);
  // A step larger than the window: one bucket, aligned to the step, not to the window.
  const json week = Ok(Aggregate("a1", std::string(kHour) + "&step=7d&fn=count&attributes=door"));
  ASSERT_EQ(week["buckets"].size(), 1u);
  EXPECT_EQ(week["buckets"][0]["start"], "2026-06-18T00:00:00Z");  // 1970-01-01 was a Thursday
}

// format=columns: the buckets transposed, a function of an attribute where some bucket has a
// value, null in the others.
TEST_F(AggregateApiTest, ColumnsAreTheBucketsTransposed) {
  const std::vector<storage::Reading> mix = {
      MakeReading("mix", "2026-06-23T08:00:00.000000000Z", {{"temperature", 1.0}}),
      MakeReading("mix", "2026-06-23T08:10:00.000000000Z", {{"humidity", 2.0}}),
      MakeReading("mix", "2026-06-23T08:20:00.000000000Z", {{"temperature", 3.0}, {"humidity", std::string("x")}})};
  ASSERT_TRUE(store_->Write(mix).ok());
  const std::string window = std::string(kHour) + "&step=10m&fn=avg,count,last&attributes=temperature,humidity,wind";
  const HttpResult columns = Aggregate("mix", window + "&format=columns");
  EXPECT_EQ(Ok(columns), json::parse(R"({"deviceId":"mix","step":"10m",
      "start":["2026-06-23T08:00:00Z","2026-06-23T08:10:00Z","2026-06-23T08:20:00Z"],"count":[1,1,1],
      "columns":{"temperature":{"avg":[1,null,3],"count":[1,null,1],"last":[1,null,3]},
                 "humidity":{"avg":[null,2,null],"count":[null,1,1],"last":[null,2,"x"]}},
      "scannedCount":3})"));
  EXPECT_NE(columns.body.find(R"("columns":{"temperature":{"avg":[1,null,3],"count":[1,null,1],"last":[1,null,3]},)"),
            std::string::npos)
      << columns.body;  // in the order asked

  // The same numbers as rows, on a1's hour of numbers, booleans and strings.
  const std::string hour = std::string(kHour) + "&step=5m&fn=avg,min,max,count,sum,first,last&attributes=temperature,door,status";
  const json rows = Ok(Aggregate("a1", hour));
  const json transposed = Ok(Aggregate("a1", hour + "&format=columns"));
  ASSERT_EQ(transposed["start"].size(), rows["buckets"].size());
  EXPECT_EQ(transposed["scannedCount"], rows["scannedCount"]);
  for (std::size_t b = 0; b < rows["buckets"].size(); ++b) {
    const json& bucket = rows["buckets"][b];
    EXPECT_EQ(transposed["start"][b], bucket["start"]);
    EXPECT_EQ(transposed["count"][b], bucket["count"]);
    for (const char* attribute : {"temperature", "door", "status"}) {
      for (const auto& [fn, column] : transposed["columns"][attribute].items()) {
        EXPECT_EQ(column[b], bucket[attribute].value(fn, json())) << attribute << " " << fn << " " << b;
      }
      EXPECT_EQ(transposed["columns"][attribute].size(), bucket[attribute].size()) << attribute;
    }
  }
  EXPECT_EQ(Ok(Aggregate("a1", "from=2026-06-24T00:00:00Z&to=2026-06-25T00:00:00Z&step=1h&attributes=t&format=columns")),
            json::parse(R"({"deviceId":"a1","step":"1h","start":[],"count":[],"columns":{},"scannedCount":0})"));
  ExpectBad(Aggregate("a1", hour + "&format=table"), "format: expected rows or columns");
}

TEST_F(AggregateApiTest, BadParametersAreNamed) {
  const std::string hour = kHour;
  ExpectBad(Aggregate("a1", "to=2026-06-23T09:00:00Z&step=5m&attributes=t"), "from: required");
  ExpectBad(Aggregate("a1", "from=2026-06-23T09:00:00Z&step=5m&attributes=t"), "to: required");
  ExpectBad(Aggregate("a1", "from=x&to=2026-06-23T09:00:00Z&step=5m&attributes=t"), "from: ");
  ExpectBad(Aggregate("a1", hour + "&attributes=t"), "step: required");
  for (const char* step : {"5", "m", "5x", "0m", "-5m", "1.5h", "10001d", "5m5s", "99999999999999999999s"}) {
    ExpectBad(Aggregate("a1", hour + "&step=" + UrlEncode(step) + "&attributes=t"), "step: expected");
  }
  EXPECT_EQ(Aggregate("a1", hour + "&step=10000d&attributes=t").status, 200);
  ExpectBad(Aggregate("a1", hour + "&step=5m&fn=median&attributes=t"), "fn: expected");
  ExpectBad(Aggregate("a1", hour + "&step=5m&fn=avg,,max&attributes=t"), "fn: expected");
  ExpectBad(Aggregate("a1", hour + "&step=5m&fn=avg,avg&attributes=t"), "fn: \"avg\" is listed twice");
  ExpectBad(Aggregate("a1", hour + "&step=5m"), "attributes: required");
  ExpectBad(Aggregate("a1", hour + "&step=5m&attributes=t,,h"), "attributes: expected");
  ExpectBad(Aggregate("a1", hour + "&step=5m&attributes=t,count"), "attributes: \"count\" would clash");
  ExpectBad(Aggregate("a1", hour + "&step=5m&attributes=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"), "attributes: at most 16");
  ExpectBad(Aggregate("a1", hour + "&step=5m&attributes=t&limit=5"), "unknown query parameter \"limit\"");
  ExpectBad(Aggregate("a1", hour + "&step=5m&attributes=t&begins_with=2026"), "unknown query parameter");
}

TEST_F(AggregateApiTest, CapsAre400sNamingTheCap) {
  // A day of 1 s buckets is 86400, past the 10000 buckets an aggregate may have.
  ExpectBad(Aggregate("a1", "from=2026-06-23T00:00:00Z&to=2026-06-23T23:59:59Z&step=1s&attributes=temperature"),
            "max buckets: ");
  ServeOptions options;
  options.api.limits.max_aggregate_scan = 59;
  StartServer(options);
  // 150 s is no multiple of the rollups' 300 s granule: every reading is read, and capped.
  ExpectBad(Aggregate("a1", std::string(kHour) + "&step=150s&attributes=temperature"), "max scan: ");
  EXPECT_EQ(Ok(Aggregate("a1", "from=2026-06-23T08:00:00Z&to=2026-06-23T08:58:00Z&step=150s&attributes=temperature"))
                ["scannedCount"],
            59);
  // 5 m is: the readings of whole granules are not read, so the hour is within the cap.
  EXPECT_EQ(Ok(Aggregate("a1", std::string(kHour) + "&step=5m&attributes=temperature"))["scannedCount"], 60);
}

TEST_F(AggregateApiTest, ReportsItsEndpointAndTheReadingsItRead) {
  std::mutex mu;
  std::vector<std::string> endpoints;
  std::vector<std::tuple<std::string, std::size_t, std::size_t>> reads;
  ServeHooks hooks;
  hooks.server.on_request = [&](std::string_view endpoint, double) {
    std::lock_guard lock(mu);
    endpoints.emplace_back(endpoint);
  };
  hooks.api.on_partition_read = [&](std::string_view device, std::size_t items, std::size_t bytes) {
    std::lock_guard lock(mu);
    reads.emplace_back(std::string(device), items, bytes);
  };
  StartServer({}, std::move(hooks));
  Ok(Aggregate("a1", std::string(kHour) + "&step=1h&attributes=temperature"));
  std::lock_guard lock(mu);
  EXPECT_EQ(endpoints, std::vector<std::string>{"aggregate"});
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(std::get<0>(reads[0]), "a1");
  EXPECT_EQ(std::get<1>(reads[0]), 60u);
  EXPECT_GT(std::get<2>(reads[0]), 0u);
}

}  // namespace
}  // namespace readingsd::test
