// Response compression (http/compress.h): the coding each Accept-Encoding gets, and responses of
// the real Router and of a bare handler over real loopback TCP, inflated by zlib and compared
// with the identity response.
#include "http/compress.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "http/server.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using http::Coding;
using http::PreferredCoding;

TEST(PreferredCodingTest, HonoursQValuesAndTheWildcard) {
  EXPECT_EQ(PreferredCoding(""), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("identity"), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("gzip"), Coding::kGzip);
  EXPECT_EQ(PreferredCoding("x-gzip"), Coding::kGzip);
  EXPECT_EQ(PreferredCoding("GZIP"), Coding::kGzip);
  EXPECT_EQ(PreferredCoding("deflate"), Coding::kDeflate);
  EXPECT_EQ(PreferredCoding("gzip, deflate, br"), Coding::kGzip);  // a tie goes to gzip
  EXPECT_EQ(PreferredCoding("deflate, gzip"), Coding::kGzip);
  EXPECT_EQ(PreferredCoding("gzip;q=0.5, deflate"), Coding::kDeflate);
  EXPECT_EQ(PreferredCoding("gzip ; q=0.8 , deflate;q=0.9"), Coding::kDeflate);
  EXPECT_EQ(PreferredCoding("gzip;q=0"), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("gzip;q=0.000, deflate;q=0"), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("br, zstd"), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("*"), Coding::kGzip);
  EXPECT_EQ(PreferredCoding("*;q=0.1, gzip;q=0"), Coding::kDeflate);
  EXPECT_EQ(PreferredCoding("*;q=0"), Coding::kIdentity);
  EXPECT_EQ(PreferredCoding("identity;q=0"), Coding::kIdentity);  // nothing else it could read
  EXPECT_EQ(PreferredCoding("gzip;q=2, deflate;q=abc"), Coding::kIdentity);  // unparsable: ignored
}

TEST(CompressTest, RoundTripsBothCodings) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "{\"readingTs\":\"2026-06-23T08:" + std::to_string(i) + "\"},";
  for (Coding coding : {Coding::kGzip, Coding::kDeflate}) {
    std::string compressed;
    ASSERT_TRUE(http::Compress(text, coding, &compressed));
    EXPECT_LT(compressed.size(), text.size() / 4);
    EXPECT_EQ(Inflate(compressed, coding == Coding::kGzip), text);
  }
  std::string empty;
  ASSERT_TRUE(http::Compress("", Coding::kGzip, &empty));
  EXPECT_EQ(Inflate(empty, true), "");
}

constexpr const char* kPage = "/v1/devices/a1/readings?limit=60";

TEST_F(HttpServerTest, ALargeResponseIsCompressedAsAsked) {
  StartServer();
  HttpConnection connection(port());
  const HttpResult identity = connection.Get(kPage);
  ASSERT_EQ(identity.status, 200);
  ASSERT_GT(identity.body.size(), 1024u);
  EXPECT_EQ(identity.Header("content-encoding"), "");
  EXPECT_EQ(identity.Header("vary"), "Accept-Encoding");
  EXPECT_EQ(identity.Json()["count"], kA1Count);

  const HttpResult gzip = connection.Get(kPage, {{"Accept-Encoding", "gzip, deflate"}});
  ASSERT_EQ(gzip.status, 200);
  EXPECT_EQ(gzip.Header("content-encoding"), "gzip");
  EXPECT_EQ(gzip.Header("vary"), "Accept-Encoding");
  EXPECT_EQ(gzip.Header("content-length"), std::to_string(gzip.body.size()));
  EXPECT_LT(gzip.body.size(), identity.body.size());
  EXPECT_EQ(Inflate(gzip.body, true), identity.body);

  const HttpResult deflate = connection.Get(kPage, {{"Accept-Encoding", "gzip;q=0.5, deflate"}});
  EXPECT_EQ(deflate.Header("content-encoding"), "deflate");
  EXPECT_EQ(Inflate(deflate.body, false), identity.body);

  for (const char* refused : {"gzip;q=0", "identity", "br"}) {
    const HttpResult plain = connection.Get(kPage, {{"Accept-Encoding", refused}});
    EXPECT_EQ(plain.Header("content-encoding"), "") << refused;
    EXPECT_EQ(plain.body, identity.body) << refused;
  }
}

TEST_F(HttpServerTest, ASmallResponseIsNotCompressed) {
  StartServer();
  const HttpResult healthz = Get(port(), "/healthz", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(healthz.body, "ok");
  EXPECT_EQ(healthz.Header("content-encoding"), "");
  EXPECT_EQ(healthz.Header("vary"), "");
  const HttpResult one = Get(port(), "/v1/devices/a1/readings?limit=1", {{"Accept-Encoding", "gzip"}});
  EXPECT_LT(one.body.size(), 1024u);
  EXPECT_EQ(one.Header("content-encoding"), "");
  EXPECT_EQ(one.Json()["count"], 1);
}

TEST_F(HttpServerTest, CompressionCanBeTurnedOff) {
  ServeOptions options;
  options.server.compress_min_bytes = 0;
  StartServer(options);
  const HttpResult page = Get(port(), kPage, {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(page.Header("content-encoding"), "");
  EXPECT_EQ(page.Header("vary"), "");
  EXPECT_EQ(page.Json()["count"], kA1Count);
}

// A handler that answers every request, whatever its method, with `body`, and sets
// `content_encoding` when not empty (as the remote read API sets snappy).
class FixedHandler final : public http::Handler {
 public:
  FixedHandler(std::string body, std::string content_encoding)
      : body_(std::move(body)), content_encoding_(std::move(content_encoding)) {}
  http::Response Handle(const http::Request&, std::string_view*) override {
    http::Response response{http::status::ok, 11};
    response.set(http::field::content_type, "text/plain");
    if (!content_encoding_.empty()) response.set(http::field::content_encoding, content_encoding_);
    response.body() = body_;
    return response;
  }
  http::Response Error(http::status status, std::string_view, std::string_view message) override {
    http::Response response{status, 11};
    response.body() = std::string(message);
    return response;
  }

 private:
  const std::string body_;
  const std::string content_encoding_;
};

std::string LargeText() {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

TEST(HttpCompressServerTest, HeadGetsTheHeadersOfGetAndNoBody) {
  FixedHandler handler(LargeText(), "");
  std::unique_ptr<http::Server> server;
  http::ServerOptions options;
  options.port = 0;
  ASSERT_TRUE(http::Server::Start(options, &handler, {}, &server).ok());
  HttpConnection connection(server->port());
  const HttpResult get = connection.Get("/", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(Inflate(get.body, true), LargeText());
  for (int i = 0; i < 2; ++i) {  // any body bytes sent would be misread as the next response
    const HttpResult head = connection.Send("HEAD", "/", {{"Accept-Encoding", "gzip"}});
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.Header("content-encoding"), "gzip");
    EXPECT_EQ(head.Header("content-length"), std::to_string(get.body.size()));
    EXPECT_EQ(head.body, "");
  }
  EXPECT_EQ(connection.Get("/").body, LargeText());
}

TEST(HttpCompressServerTest, ABodyAlreadyEncodedIsLeftAlone) {
  FixedHandler handler(LargeText(), "snappy");
  std::unique_ptr<http::Server> server;
  http::ServerOptions options;
  options.port = 0;
  ASSERT_TRUE(http::Server::Start(options, &handler, {}, &server).ok());
  const HttpResult get = Get(server->port(), "/", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(get.Header("content-encoding"), "snappy");
  EXPECT_EQ(get.body, LargeText());
}

TEST_F(HttpServerTest, HeadOfAnEndpointThatRefusesItCarriesNoBody) {
  StartServer();
  HttpConnection connection(port());
  for (int i = 0; i < 2; ++i) {
    const HttpResult head = connection.Send("HEAD", kPage);
    EXPECT_EQ(head.status, 405);
    EXPECT_EQ(head.body, "");
  }
  EXPECT_EQ(connection.Get(kPage).Json()["count"], kA1Count);
}

}  // namespace
}  // namespace readingsd::test
