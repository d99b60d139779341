// Streamed response bodies (http::BodyStream) through a real http::Server over real loopback TCP:
// chunked and whole, compressed part by part, HEAD, and a client that leaves or stops reading
// mid-stream (the stream must be freed, the server unharmed).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "http/server.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

// Part i of a stream: a few hundred bytes of text that compresses, numbered so that a part lost,
// repeated or reordered shows.
std::string Part(int i) {
  std::string part;
  for (int line = 0; line < 10; ++line) part += "part " + std::to_string(i) + " line " + std::to_string(line) + "\n";
  return part;
}

std::string Parts(int n) {
  std::string all;
  for (int i = 0; i < n; ++i) all += Part(i);
  return all;
}

// What every stream of one handler shares with its test.
struct StreamLog {
  std::atomic<int> made{0};   // parts made, of every stream
  std::atomic<int> freed{0};  // streams destroyed
};

// `parts` parts (-1: never done), failing instead of making part `fail_at` (-1: never).
class CountedParts final : public http::BodyStream {
 public:
  CountedParts(int parts, int fail_at, StreamLog* log) : parts_(parts), fail_at_(fail_at), log_(log) {}
  ~CountedParts() override { ++log_->freed; }

  Status Next(std::string* out, bool* done) override {
    if (next_ == fail_at_) return Status::IOError("the part failed");
    out->append(Part(next_++));
    ++log_->made;
    *done = next_ == parts_;
    return Status::OK();
  }

 private:
  const int parts_;
  const int fail_at_;
  StreamLog* log_;
  int next_ = 0;
};

class StreamHandler final : public http::Handler {
 public:
  StreamHandler(int parts, int fail_at = -1) : parts_(parts), fail_at_(fail_at) {}
  http::Response Handle(const http::Request&, std::string_view*) override {
    http::Response response{http::status::ok, 11};
    response.set(http::field::content_type, "text/plain");
    response.stream = std::make_unique<CountedParts>(parts_, fail_at_, &log);
    return response;
  }
  http::Response Error(http::status status, std::string_view, std::string_view message) override {
    http::Response response{status, 11};
    response.body() = std::string(message);
    return response;
  }

  StreamLog log;

 private:
  const int parts_;
  const int fail_at_;
};

std::unique_ptr<http::Server> Start(http::Handler* handler, http::ServerOptions options = {}) {
  options.port = 0;
  std::unique_ptr<http::Server> server;
  EXPECT_TRUE(http::Server::Start(options, handler, {}, &server).ok());
  return server;
}

// True once `freed` reaches `n` within 10 s.
bool FreedWithin(const StreamLog& log, int n) {
  for (int i = 0; i < 1000 && log.freed < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return log.freed == n;
}

TEST(HttpStreamTest, AStreamIsSentInChunksAndCompressedPartByPart) {
  StreamHandler handler(200);
  auto server = Start(&handler);
  HttpConnection connection(server->port());
  const HttpResult plain = connection.Get("/");
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.Header("transfer-encoding"), "chunked");
  EXPECT_EQ(plain.Header("content-length"), "");
  EXPECT_EQ(plain.Header("vary"), "Accept-Encoding");
  EXPECT_EQ(plain.body, Parts(200));
  for (const bool gzip : {true, false}) {  // on the same connection: each body ends where it should
    const HttpResult compressed = connection.Get("/", {{"Accept-Encoding", gzip ? "gzip" : "deflate"}});
    EXPECT_EQ(compressed.Header("content-encoding"), gzip ? "gzip" : "deflate");
    EXPECT_EQ(compressed.Header("transfer-encoding"), "chunked");
    EXPECT_LT(compressed.body.size(), plain.body.size() / 2);  // parts of 200 bytes, each flushed
    EXPECT_EQ(Inflate(compressed.body, gzip), Parts(200));
  }
  EXPECT_TRUE(FreedWithin(handler.log, 3));  // each freed once its last write completes
}

TEST(HttpStreamTest, AStreamDoneInItsFirstPartIsSentWhole) {
  StreamHandler handler(1);
  auto server = Start(&handler);
  const HttpResult small = Get(server->port(), "/", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(small.body, Part(0));
  EXPECT_EQ(small.Header("content-length"), std::to_string(Part(0).size()));
  EXPECT_EQ(small.Header("transfer-encoding"), "");
  EXPECT_EQ(small.Header("content-encoding"), "");  // under compress_min_bytes, as a whole body
}

TEST(HttpStreamTest, HeadGetsTheHeadersOfGetAndNoBody) {
  StreamHandler handler(50);
  auto server = Start(&handler);
  HttpConnection connection(server->port());
  for (int i = 0; i < 2; ++i) {  // any body bytes sent would be misread as the next response
    const HttpResult head = connection.Send("HEAD", "/", {{"Accept-Encoding", "gzip"}});
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.Header("transfer-encoding"), "chunked");
    EXPECT_EQ(head.Header("content-encoding"), "gzip");
    EXPECT_EQ(head.body, "");
  }
  EXPECT_EQ(connection.Get("/").body, Parts(50));
  EXPECT_TRUE(FreedWithin(handler.log, 3));  // each freed once its last write completes
}

TEST(HttpStreamTest, AFailureBeforeTheHeaderIsA500AndAfterItCutsTheBody) {
  StreamHandler first(10, /*fail_at=*/0);
  StreamHandler later(10, /*fail_at=*/3);
  auto server = Start(&first);
  EXPECT_EQ(Get(server->port(), "/").status, 500);

  server = Start(&later);
  HttpConnection connection(server->port());
  connection.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::optional<std::string> received = connection.ReadUntilClosed(std::chrono::seconds(10));
  ASSERT_TRUE(received.has_value()) << "the connection stays open";
  EXPECT_NE(received->find("200 OK"), std::string::npos);
  EXPECT_NE(received->find(Part(2)), std::string::npos);
  EXPECT_EQ(received->find("\r\n0\r\n\r\n"), std::string::npos) << "the cut body was ended as if whole";
  EXPECT_TRUE(FreedWithin(later.log, 1));
}

TEST(HttpStreamTest, AClientLeavingMidStreamFreesTheStream) {
  StreamHandler handler(-1);  // endless: only the client's leaving ends it
  auto server = Start(&handler);
  {
    HttpConnection connection(server->port());
    connection.Write("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    while (handler.log.made < 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // closed, with the stream's bytes unread
  EXPECT_TRUE(FreedWithin(handler.log, 1));
  EXPECT_EQ(handler.log.freed, 1);
  // The server goes on answering.
  HttpConnection next(server->port());
  next.Write("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(next.ReadResponse(/*head=*/true).status, 200);
}

TEST(HttpStreamTest, AClientThatStopsReadingTimesOut) {
  StreamHandler handler(-1);
  http::ServerOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  auto server = Start(&handler, options);
  HttpConnection connection(server->port());
  connection.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  // Never read: once the socket buffers are full, a chunk's write waits, and after
  // request_timeout the server gives up on it and frees the stream.
  EXPECT_TRUE(FreedWithin(handler.log, 1));
  const int made = handler.log.made;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(handler.log.made, made);
}

}  // namespace
}  // namespace readingsd::test
