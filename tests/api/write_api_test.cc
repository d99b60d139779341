// The write API's JSON endpoints over real HTTP on loopback, into a real RocksDB store, through
// the same write and rejection hooks the daemon wires (ingest::WriteReadings).
#include <gtest/gtest.h>
#include <zlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "ingest/write.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

// gzip of `text`, as curl --data-binary @file.gz or a Content-Encoding: gzip client sends it.
std::string Gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

class WriteApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    Start();
  }

  void Start(ServeOptions options = {}) {
    ServeHooks hooks;
    hooks.api.write.write = [this](std::span<const storage::Reading> readings) {
      if (fail_writes_) return Status::IOError("disk full");
      return ingest::WriteReadings(store_.get(), ingest_hooks_, readings);
    };
    hooks.api.write.on_rejected = [this](std::string_view source, const ingest::Rejection& r) {
      std::lock_guard lock(mutex_);
      rejected_.push_back(std::string(source) + " " + std::string(ingest::ReasonName(r.reason)));
    };
    ingest_hooks_.on_batch_written = [this](std::span<const storage::Reading> batch, std::chrono::duration<double>) {
      std::lock_guard lock(mutex_);
      written_ += batch.size();
    };
    StartServer(std::move(options), std::move(hooks));
  }

  HttpResult PostJson(const std::string& target, const std::string& body, Headers headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return Post(port(), target, headers, body);
  }

  bool Stored(const std::string& device, const std::string& sort_key, storage::Reading* reading = nullptr) {
    storage::Reading r;
    const bool found = store_->Get(device, sort_key, &r).ok();
    if (reading) *reading = r;
    return found;
  }

  std::atomic<bool> fail_writes_{false};
  ingest::IngestHooks ingest_hooks_;
  std::mutex mutex_;
  std::vector<std::string> rejected_;
  std::size_t written_ = 0;
};

TEST_F(WriteApiTest, OneReadingIsStoredBeforeThe204) {
  HttpResult r = PostJson("/v1/readings",
                          R"({"deviceId":"w1","readingTs":"2026-06-23T08:00:00Z","t":21.5,"n":18446744073709551615,"ok":true,"s":"x"})");
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(r.body, "");
  storage::Reading got;
  ASSERT_TRUE(Stored("w1", "2026-06-23T08:00:00.000000000Z", &got));
  ASSERT_EQ(got.attributes.size(), 4u);
  for (const storage::Attribute& a : got.attributes) {
    if (a.name == "n") {
      EXPECT_EQ(std::get<storage::Number>(a.value).text, "18446744073709551615");  // exact
    }
  }
  EXPECT_EQ(written_, 1u);  // counted through on_batch_written, as MQTT's writes are
}

TEST_F(WriteApiTest, SomeBadReadingsAnswer207WithIndexAndReasonAndTheRestAreStored) {
  HttpResult r = PostJson("/v1/readings", R"([
    {"deviceId":"w1","readingTs":"2026-06-23T08:00:00Z","t":1},
    {"deviceId":"w1","readingTs":"not a time","t":2},
    {"deviceId":"bad id","readingTs":"2026-06-23T08:00:02Z","t":3},
    {"deviceId":"w1","readingTs":"2026-06-23T08:00:03Z","t":{"nested":1}},
    {"deviceId":"w2","readingTs":"2026-06-23T08:00:04Z","t":5}])");
  ASSERT_EQ(r.status, 207) << r.body;
  EXPECT_EQ(r.Header("content-type"), "application/json");
  const json body = r.Json();
  EXPECT_EQ(body["written"], 2);
  ASSERT_EQ(body["rejected"].size(), 3u);
  EXPECT_EQ(body["rejected"][0]["index"], 1);
  EXPECT_EQ(body["rejected"][0]["reason"], "invalid_timestamp");
  EXPECT_EQ(body["rejected"][1]["index"], 2);
  EXPECT_EQ(body["rejected"][1]["reason"], "invalid_device_id");
  EXPECT_EQ(body["rejected"][2]["index"], 3);
  EXPECT_EQ(body["rejected"][2]["reason"], "invalid_attribute");
  EXPECT_FALSE(body["rejected"][2]["message"].get<std::string>().empty());
  EXPECT_TRUE(Stored("w1", "2026-06-23T08:00:00.000000000Z"));
  EXPECT_TRUE(Stored("w2", "2026-06-23T08:00:04.000000000Z"));
  EXPECT_EQ(rejected_, (std::vector<std::string>{"POST /v1/readings invalid_timestamp",
                                                 "POST /v1/readings invalid_device_id",
                                                 "POST /v1/readings invalid_attribute"}));
}

TEST_F(WriteApiTest, NothingWrittenIs400WithTheSameShape) {
  HttpResult r = PostJson("/v1/readings", R"({"readingTs":"2026-06-23T08:00:00Z"})");
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.Json()["written"], 0);
  EXPECT_EQ(r.Json()["rejected"][0]["reason"], "missing_device_id");
  r = PostJson("/v1/readings", "{");
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.Json()["rejected"][0]["reason"], "malformed_json");
  r = PostJson("/v1/readings", "[]");
  EXPECT_EQ(r.Json()["rejected"][0]["reason"], "empty_batch");
}

TEST_F(WriteApiTest, TheDevicePathNamesTheDevice) {
  EXPECT_EQ(PostJson("/v1/devices/w3/readings", R"([{"readingTs":"2026-06-23T08:00:00Z","t":1},
                                                   {"deviceId":"w3","readingTs":"2026-06-23T08:00:01Z","t":2}])")
                .status,
            204);
  EXPECT_TRUE(Stored("w3", "2026-06-23T08:00:00.000000000Z"));
  EXPECT_TRUE(Stored("w3", "2026-06-23T08:00:01.000000000Z"));
  HttpResult r = PostJson("/v1/devices/w3/readings", R"({"deviceId":"w4","readingTs":"2026-06-23T08:00:02Z"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Json()["rejected"][0]["reason"], "device_id_mismatch");
  EXPECT_FALSE(Stored("w4", "2026-06-23T08:00:02.000000000Z"));
  r = PostJson("/v1/devices/bad%20id/readings", R"({"readingTs":"2026-06-23T08:00:02Z"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Json()["error"]["code"], "InvalidParameter");
  // GET on the same path still reads.
  EXPECT_EQ(Get(port(), "/v1/devices/w3/readings").status, 200);
}

TEST_F(WriteApiTest, GzipBodiesAreInflated) {
  std::string batch = "[";
  for (int i = 0; i < 500; ++i) {
    batch += std::string(i ? "," : "") + R"({"deviceId":"gz","readingTs":")" + SampleSortKey(i) + R"(","v":)" +
             std::to_string(i) + "}";
  }
  batch += "]";
  HttpResult r = PostJson("/v1/readings", Gzip(batch), {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(Stored("gz", SampleSortKey(0)));
  EXPECT_TRUE(Stored("gz", SampleSortKey(499)));
  // Two gzip members one after the other are one body, as `cat a.gz b.gz` is.
  r = PostJson("/v1/readings",
               Gzip(R"([{"deviceId":"gz2","readingTs":"2026-06-23T08:00:00Z"},)") +
                   Gzip(R"({"deviceId":"gz2","readingTs":"2026-06-23T08:00:01Z"}])"),
               {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(Stored("gz2", "2026-06-23T08:00:01.000000000Z"));

  r = PostJson("/v1/readings", "not gzip at all", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.Json()["error"]["code"], "MalformedBody");
  const std::string whole = Gzip(batch);
  r = PostJson("/v1/readings", whole.substr(0, whole.size() / 2), {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 400) << r.body;
  r = PostJson("/v1/readings", batch, {{"Content-Encoding", "br"}});
  EXPECT_EQ(r.status, 415) << r.body;
}

TEST_F(WriteApiTest, AGzipBombIs413WithoutInflatingIt) {
  ServeOptions options;
  options.api.write.max_body_bytes = 1 << 20;
  Start(options);
  // 64 MiB of spaces inflate from about 64 KiB: JSON whitespace, so only the bound can refuse it.
  const std::string bomb = Gzip(std::string(64u << 20, ' ') + "{}");
  ASSERT_LT(bomb.size(), 1u << 20);
  HttpResult r = PostJson("/v1/readings", bomb, {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.Json()["error"]["code"], "PayloadTooLarge");
  // The same bound holds for a plain body.
  r = PostJson("/v1/readings", std::string((1 << 20) + 1, ' '));
  EXPECT_EQ(r.status, 413) << r.body;
}

TEST_F(WriteApiTest, ARequestCarriesAtMostMaxReadings) {
  ServeOptions options;
  options.api.write.max_readings = 2;
  Start(options);
  const std::string three = R"([{"deviceId":"c","readingTs":"2026-06-23T08:00:00Z"},
                                {"deviceId":"c","readingTs":"2026-06-23T08:00:01Z"},
                                {"deviceId":"c","readingTs":"2026-06-23T08:00:02Z"}])";
  HttpResult r = PostJson("/v1/readings", three);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.Json()["rejected"][0]["reason"], "batch_too_large");
  EXPECT_FALSE(Stored("c", "2026-06-23T08:00:00.000000000Z"));
}

TEST_F(WriteApiTest, AFailedWriteIs503AndNotAcknowledged) {
  fail_writes_ = true;
  HttpResult r = PostJson("/v1/readings", R"({"deviceId":"f","readingTs":"2026-06-23T08:00:00Z"})");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.Json()["error"]["code"], "StoreUnavailable");
  EXPECT_FALSE(Stored("f", "2026-06-23T08:00:00.000000000Z"));
}

TEST_F(WriteApiTest, WritesNeedCredentialsWhenTokensAreSet) {
  ServeOptions options;
  options.api.bearer_tokens = {"s3cret"};
  Start(options);
  const std::string one = R"({"deviceId":"a","readingTs":"2026-06-23T08:00:00Z"})";
  EXPECT_EQ(PostJson("/v1/readings", one).status, 401);
  EXPECT_FALSE(Stored("a", "2026-06-23T08:00:00.000000000Z"));
  EXPECT_EQ(PostJson("/v1/readings", one, {{"Authorization", "Bearer s3cret"}}).status, 204);
  EXPECT_TRUE(Stored("a", "2026-06-23T08:00:00.000000000Z"));
}

TEST_F(WriteApiTest, InfluxWriteStoresEveryGoodLineAndNamesEachBadOne) {
  const std::string body =
      "weather,device=lp1,site=north temp=21.5,ok=true 1782201600\n"
      "weather,device=lp1 temp=hot 1782201601\n"
      "weather,site=north temp=1 1782201602\n"
      "weather,device=lp1 temp=22i 1782201603\n";
  HttpResult r = Post(port(), "/write?db=telegraf&precision=s", {}, body);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_FALSE(r.Header("x-influxdb-version").empty());
  const std::string error = r.Json()["error"];
  EXPECT_EQ(error.rfind("partial write: line 2: malformed_line: column", 0), 0u) << error;
  EXPECT_NE(error.find("line 3: missing_device_id"), std::string::npos) << error;
  EXPECT_NE(error.find("dropped=2"), std::string::npos) << error;
  EXPECT_EQ(error.rfind(r.Header("x-influxdb-error"), 0), 0u);  // its first 200 bytes
  storage::Reading got;
  ASSERT_TRUE(Stored("lp1", "2026-06-23T08:00:00.000000000Z", &got));
  EXPECT_EQ(got.attributes.size(), 3u);  // temp, ok, site
  EXPECT_TRUE(Stored("lp1", "2026-06-23T08:00:03.000000000Z"));
  EXPECT_EQ(rejected_, (std::vector<std::string>{"POST /write malformed_line", "POST /write missing_device_id"}));
  EXPECT_EQ(written_, 2u);

  EXPECT_EQ(Post(port(), "/write?db=x", {}, "m,device=lp2 v=1 1782201600000000000\n").status, 204);
  EXPECT_TRUE(Stored("lp2", "2026-06-23T08:00:00.000000000Z"));
  r = Post(port(), "/write?precision=fortnights", {}, "m,device=lp2 v=1 1\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.Json()["error"].get<std::string>().find("precision"), std::string::npos);
}

TEST_F(WriteApiTest, InfluxV2WriteWithTokenGzipAndPrecision) {
  ServeOptions options;
  options.api.bearer_tokens = {"s3cret"};
  Start(options);
  const std::string body = "m,device=v2 v=1 1782201600000\nm,device=v2 v=2 1782201601000\n";
  HttpResult r = Post(port(), "/api/v2/write?org=o&bucket=b&precision=ms", {{"Content-Encoding", "gzip"}}, Gzip(body));
  EXPECT_EQ(r.status, 401);
  r = Post(port(), "/api/v2/write?org=o&bucket=b&precision=ms",
           {{"Content-Encoding", "gzip"}, {"Authorization", "Token s3cret"}}, Gzip(body));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(Stored("v2", "2026-06-23T08:00:01.000000000Z"));
  r = Post(port(), "/api/v2/write?precision=h", {{"Authorization", "Token s3cret"}}, body);  // 1.x only
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Json()["code"], "invalid");
  r = Post(port(), "/api/v2/write", {{"Authorization", "Token s3cret"}}, "m,device=v2 v=oops 1\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Json()["code"], "invalid");
  EXPECT_NE(r.Json()["message"].get<std::string>().find("line 1: malformed_line"), std::string::npos);

  // 1.x clients: the token as p, or as the password of Basic auth.
  EXPECT_EQ(Post(port(), "/write?db=d&u=me&p=s3cret", {}, "m,device=v1 v=1 1782201600000000000").status, 204);
  EXPECT_EQ(Post(port(), "/write?db=d&u=me&p=wrong", {}, "m,device=v1 v=1 1782201600000000000").status, 401);
  EXPECT_EQ(Post(port(), "/v1/readings?p=s3cret", {}, "{}").status, 401);  // p is /write's alone
  EXPECT_EQ(Post(port(), "/write?db=d", {{"Authorization", "Basic bWU6czNjcmV0"}},  // me:s3cret
                 "m,device=v1 v=1 1782201601000000000")
                .status,
            204);
  EXPECT_TRUE(Stored("v1", "2026-06-23T08:00:01.000000000Z"));
  // /ping answers without credentials, as InfluxDB's.
  r = Get(port(), "/ping");
  EXPECT_EQ(r.status, 204);
  EXPECT_FALSE(r.Header("x-influxdb-version").empty());
}

TEST_F(WriteApiTest, InfluxBodyBounds) {
  ServeOptions options;
  options.api.write.max_body_bytes = 1 << 16;
  options.api.write.max_readings = 2;
  Start(options);
  HttpResult r = Post(port(), "/write", {{"Content-Encoding", "gzip"}}, Gzip(std::string(1 << 20, '\n')));
  EXPECT_EQ(r.status, 413) << r.body;
  r = Post(port(), "/write", {}, "m,device=b v=1 1\nm,device=b v=1 2\nm,device=b v=1 3\n");
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_FALSE(Stored("b", "1970-01-01T00:00:00.000000001Z"));
}

}  // namespace
}  // namespace readingsd::test
