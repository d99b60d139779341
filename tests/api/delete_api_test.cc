// DELETE /v1/devices/{id}/readings over real HTTP on loopback, against a real RocksDB store: the
// range parameters as the GET takes them, the refusal of a delete without one, and what the
// registry lists afterwards.
#include <gtest/gtest.h>

#include <string>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

class DeleteApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    ServeHooks hooks;
    hooks.api.delete_readings = [this](std::string_view device, const query::SortKeyRange& range,
                                  api::native::DeleteOutcome* outcome) {
      ++calls_;
      return store_->DeleteReadings(device, range.lower, range.upper, nullptr, &outcome->deleted);
    };
    StartServer({}, std::move(hooks));
  }

  HttpResult Delete(const std::string& target) {
    HttpConnection connection(port());
    return connection.Send("DELETE", target);
  }
  uint64_t Deleted(const std::string& target) {
    HttpResult result = Delete(target);
    EXPECT_EQ(result.status, 200) << target << ": " << result.body;
    if (result.status != 200) return 0;
    return result.Json()["deleted"].get<uint64_t>();
  }
  void ExpectBad(const std::string& target, const std::string& prefix) {
    HttpResult result = Delete(target);
    EXPECT_EQ(result.status, 400) << target << ": " << result.body;
    const std::string message = result.Json()["error"]["message"];
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << target << ": " << message;
  }
  json Device(const std::string& id) {
    HttpResult result = Get(port(), "/v1/devices?prefix=" + id);
    EXPECT_EQ(result.status, 200) << result.body;
    const json body = result.Json();
    for (const json& d : body["devices"]) {
      if (d["deviceId"] == id) return d;
    }
    return json::object();
  }

  int calls_ = 0;
};

TEST_F(DeleteApiTest, DeletesTheRangeTheReadingsGetWouldAnswer) {
  // a1 has a reading every minute from 08:00 to 08:59. Inclusive and exclusive bounds, a date
  // or an hour as a bound, and an offset, as the GET takes them.
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?from=2026-06-23T08:10:00Z&to=2026-06-23T08:12:00Z"), 3u);
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?after=2026-06-23T10:20:00%2B02:00&before=2026-06-23T08:23:00Z"), 2u);
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?begins_with=2026-06-23T08:3"), 10u);
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?before=2026-06-23T08:05"), 5u);
  // Already gone, and a range that holds no possible key: nothing, and no error.
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?from=2026-06-23T08:10:00Z&to=2026-06-23T08:12:00Z"), 0u);
  EXPECT_EQ(Deleted("/v1/devices/a1/readings?after=2026-06-23T08:00:00Z&before=2026-06-23T08:00:00.000000001Z"), 0u);

  HttpResult page = Get(port(), "/v1/devices/a1/readings?limit=100");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.Json()["count"], kA1Count - 20);
  EXPECT_EQ(page.Json()["items"][0]["readingTs"], "2026-06-23T08:05:00.000000000Z");
  json a1 = Device("a1");
  EXPECT_EQ(a1["readings"], kA1Count - 20);
  EXPECT_EQ(a1["firstReadingTs"], "2026-06-23T08:05:00.000000000Z");

  // Every reading, with all=true: the device is no longer listed; the others are untouched.
  HttpResult all = Delete("/v1/devices/a1/readings?all=true");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.Json(), json::parse(R"({"deviceId":"a1","deleted":40})"));
  EXPECT_TRUE(Device("a1").empty());
  EXPECT_EQ(Device("a10")["readings"], 3);
  EXPECT_EQ(Get(port(), "/v1/devices/a1/latest").Json()["count"], 0);
}

TEST_F(DeleteApiTest, ADeleteWithoutARangeOrWithABadOneIsRefusedAndDeletesNothing) {
  ExpectBad("/v1/devices/a1/readings", "give the range to delete (from, to, after, before or begins_with), or all=true");
  ExpectBad("/v1/devices/a1/readings?all=yes", "all: expected true");
  ExpectBad("/v1/devices/a1/readings?all=true&from=2026-06-23", "all: cannot be combined");
  ExpectBad("/v1/devices/a1/readings?from=yesterday", "from: ");
  ExpectBad("/v1/devices/a1/readings?from=2026-06-23&after=2026-06-23", "from, after: give at most one");
  ExpectBad("/v1/devices/a1/readings?begins_with=2026-06-23&to=2026-06-24", "begins_with: cannot be combined");
  ExpectBad("/v1/devices/a1/readings?limit=5&all=true", "unknown query parameter \"limit\"");
  ExpectBad("/v1/devices/a%2F1/readings?all=true", "deviceId: ");
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(Device("a1")["readings"], kA1Count);

  // Elsewhere DELETE is not allowed, and /readings says it is.
  HttpResult latest = Delete("/v1/devices/a1/latest");
  EXPECT_EQ(latest.status, 405);
  EXPECT_EQ(latest.Header("allow"), "GET");
  HttpConnection connection(port());
  HttpResult put = connection.Send("PUT", "/v1/devices/a1/readings", {}, "{}");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.Header("allow"), "GET, DELETE");
}

TEST_F(DeleteApiTest, WithoutADeleteHookAReadOnlyStoreRefusesIt) {
  StartServer();
  HttpResult result = Delete("/v1/devices/a1/readings?all=true");
  EXPECT_EQ(result.status, 503) << result.body;
  EXPECT_EQ(result.Json()["error"]["code"], "ReadOnly");
  EXPECT_EQ(Device("a1")["readings"], kA1Count);
}

TEST_F(DeleteApiTest, NeedsATokenWhenAuthIsOn) {
  ServeOptions options;
  options.api.bearer_tokens = {"s3cret"};
  ServeHooks hooks;
  hooks.api.delete_readings = [this](std::string_view device, const query::SortKeyRange& range,
                                  api::native::DeleteOutcome* outcome) {
    return store_->DeleteReadings(device, range.lower, range.upper, nullptr, &outcome->deleted);
  };
  StartServer(options, std::move(hooks));
  HttpConnection anonymous(port());
  EXPECT_EQ(anonymous.Send("DELETE", "/v1/devices/a1/readings?all=true").status, 401);
  HttpConnection wrong(port());
  EXPECT_EQ(wrong.Send("DELETE", "/v1/devices/a1/readings?all=true", {{"Authorization", "Bearer nope"}}).status, 401);
  HttpConnection authorised(port());
  HttpResult ok = authorised.Send("DELETE", "/v1/devices/a1/readings?all=true", {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.Json()["deleted"], kA1Count);
}

}  // namespace
}  // namespace readingsd::test
