// Request smuggling: every request whose body length another HTTP hop could read differently is
// answered 400 (501 for a transfer coding the server lacks) and its connection closed, so the
// bytes after it - here a request for another device's readings - are never served. Each case is
// written byte for byte over real loopback TCP.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using namespace std::chrono_literals;

// What a smuggler hides after (or inside) the first request.
constexpr const char* kSmuggled = "GET /v1/devices/b2/readings HTTP/1.1\r\nHost: x\r\n\r\n";
constexpr const char* kDynamoDb =
    "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n";
constexpr const char* kChunkedBody = "2\r\n{}\r\n0\r\n\r\n";

struct FramingCase {
  const char* name;
  std::string bytes;  // the ambiguous request, then kSmuggled
  int status;
};

void PrintTo(const FramingCase& c, std::ostream* os) { *os << c.name; }

class FramingTest : public HttpServerTest, public ::testing::WithParamInterface<FramingCase> {};

TEST_P(FramingTest, IsRefusedAndTheConnectionClosedBeforeTheNextRequest) {
  StartServer();
  HttpConnection connection(port());
  connection.Write(GetParam().bytes);
  HttpResult result = connection.ReadResponse();
  EXPECT_EQ(result.status, GetParam().status) << result.body;
  EXPECT_EQ(result.Header("connection"), "close");
  EXPECT_TRUE(result.Json()["error"]["message"].is_string()) << result.body;
  const std::optional<std::string> rest = connection.ReadUntilClosed(10s);
  ASSERT_TRUE(rest.has_value()) << "the connection stayed open";
  EXPECT_EQ(*rest, "") << "the smuggled request was answered";
}

std::string DynamoDb(const std::string& headers, const std::string& body) {
  return kDynamoDb + headers + "\r\n" + body + kSmuggled;
}

INSTANTIATE_TEST_SUITE_P(
    Ambiguities, FramingTest,
    ::testing::Values(
        // RFC 9112 §6.3: a Transfer-Encoding whose last coding is not chunked.
        FramingCase{"Xchunked", DynamoDb("Transfer-Encoding: xchunked\r\n", ""), 400},
        FramingCase{"ChunkedThenIdentity", DynamoDb("Transfer-Encoding: chunked, identity\r\n", ""), 400},
        FramingCase{"ChunkedTwice", DynamoDb("Transfer-Encoding: chunked, chunked\r\n", ""), 400},
        FramingCase{"EmptyTransferEncoding", DynamoDb("Transfer-Encoding: \r\n", ""), 400},
        FramingCase{"ChunkedThenIdentityInTwoFields",
                    DynamoDb("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", ""), 400},
        // The last coding is chunked, but the one before is none the server implements.
        FramingCase{"GzipThenChunkedInTwoFields",
                    DynamoDb("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", kChunkedBody), 501},
        // Transfer-Encoding beside Content-Length, in either order, whatever the coding.
        FramingCase{"XchunkedAndContentLength",
                    DynamoDb("Transfer-Encoding: xchunked\r\nContent-Length: 2\r\n", "{}"), 400},
        FramingCase{"ContentLengthAndChunked",
                    DynamoDb("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", kChunkedBody), 400},
        FramingCase{"ChunkedAndContentLength",
                    DynamoDb("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n", kChunkedBody), 400},
        // Transfer-Encoding means nothing to an HTTP/1.0 hop.
        FramingCase{
            "ChunkedInHttp10",
            std::string("POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: chunked\r\n\r\n") +
                kChunkedBody + kSmuggled,
            400},
        // More than one Content-Length, equal or not, in one field or two.
        FramingCase{"EqualContentLengths", DynamoDb("Content-Length: 2\r\nContent-Length: 2\r\n", "{}"), 400},
        FramingCase{"ContentLengthList", DynamoDb("Content-Length: 2, 2\r\n", "{}"), 400},
        FramingCase{"ConflictingContentLengths",
                    DynamoDb("Content-Length: 2\r\nContent-Length: 49\r\n", "{}"), 400},
        // RFC 9112 §5.2: obsolete line folding, anywhere, and in Transfer-Encoding.
        FramingCase{
            "ObsFold",
            std::string(
                "GET /v1/devices/a1/readings?limit=1 HTTP/1.1\r\nHost: x\r\nX-Note: a\r\n b\r\n\r\n") +
                kSmuggled,
            400},
        FramingCase{"ObsFoldWithTab", DynamoDb("X-Note: a\r\n\tb\r\nContent-Length: 2\r\n", "{}"), 400},
        FramingCase{"ObsFoldInTransferEncoding", DynamoDb("Transfer-Encoding:\r\n chunked\r\n", kChunkedBody),
                    400},
        // RFC 9112 §5.1 and §2.2: whitespace before a colon or before the first field.
        FramingCase{"SpaceBeforeColon", DynamoDb("Transfer-Encoding : chunked\r\n", kChunkedBody), 400},
        FramingCase{"WhitespaceBeforeFirstField",
                    std::string("POST / HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: x\r\n\r\n") +
                        kChunkedBody + kSmuggled,
                    400},
        // RFC 9112 §2.2: a bare LF ends no line; here it would hide a Content-Length in a value.
        FramingCase{"BareLineFeed", DynamoDb("Transfer-Encoding: chunked\nContent-Length: 2\r\n", "{}"), 400},
        // A chunk size that does not fit 64 bits.
        FramingCase{"ChunkSizeOverflow",
                    DynamoDb("Transfer-Encoding: chunked\r\n", "10000000000000002\r\n{}\r\n0\r\n\r\n"), 400}),
    [](const ::testing::TestParamInfo<FramingCase>& info) { return std::string(info.param.name); });

// What is unambiguous keeps working: chunked (in any case), Content-Length, none, pipelined.
TEST_F(HttpServerTest, UnambiguousFramingsArePipelinedOnOneConnection) {
  StartServer();
  HttpConnection connection(port());
  connection.Write(std::string(kDynamoDb) + "Transfer-Encoding: Chunked\r\n\r\n" + kChunkedBody + kDynamoDb +
                   "Content-Length: 2\r\n\r\n{}" + kSmuggled);
  for (int i = 0; i < 2; ++i) {
    HttpResult list_tables = connection.ReadResponse();
    EXPECT_EQ(list_tables.status, 200) << list_tables.body;
    EXPECT_EQ(list_tables.Json()["TableNames"][0], "readings");
  }
  HttpResult readings = connection.ReadResponse();
  EXPECT_EQ(readings.status, 200) << readings.body;
  EXPECT_EQ(readings.Json()["count"], 1);
  EXPECT_EQ(connection.Get("/healthz").status, 200);
}

}  // namespace
}  // namespace readingsd::test
