// http::Server, served through the real Router: connections, limits, timeouts and authentication,
// over real loopback TCP.
#include "http/server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kReadings = "/v1/devices/a1/readings?limit=1";

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  StartServer();
  HttpConnection connection(port());
  for (int i = 0; i < 3; ++i) {
    HttpResult result = connection.Get(kReadings);
    EXPECT_EQ(result.status, 200);
    EXPECT_EQ(result.Json()["count"], 1);
  }
  EXPECT_EQ(connection.Get("/healthz").body, "ok");
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  StartServer();
  HttpConnection connection(port());
  HttpResult result = connection.Get("/healthz", {{"Connection", "close"}});
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(connection.ClosedWithin(2s));
}

TEST_F(HttpServerTest, OversizedBodyIs413AndOversizedHeaderIs431) {
  ServeOptions options;
  options.server.max_body_bytes = 100;
  options.server.max_header_bytes = 512;
  StartServer(options);

  HttpResult body =
      Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.ListTables"}}, std::string(101, ' '));
  EXPECT_EQ(body.status, 413);
  EXPECT_EQ(body.Json()["error"]["code"], "PayloadTooLarge");
  EXPECT_EQ(Post(port(), "/", {{"X-Amz-Target", "DynamoDB_20120810.ListTables"}}, "{}" + std::string(98, ' '))
                .status,
            200);

  HttpResult header = Get(port(), kReadings, {{"X-Padding", std::string(600, 'p')}});
  EXPECT_EQ(header.status, 431);
  EXPECT_EQ(header.Json()["error"]["code"], "HeaderTooLarge");
  EXPECT_EQ(Get(port(), kReadings, {{"X-Padding", std::string(300, 'p')}}).status, 200);
}

TEST_F(HttpServerTest, MalformedRequestIs400AndCloses) {
  StartServer();
  HttpConnection connection(port());
  connection.Write("NOT HTTP AT ALL\r\n\r\n");
  HttpResult result = connection.ReadResponse();
  EXPECT_EQ(result.status, 400);
  EXPECT_TRUE(connection.ClosedWithin(2s));
}

TEST_F(HttpServerTest, SlowLorisIsCutOffAtTheRequestTimeout) {
  ServeOptions options;
  options.server.request_timeout = 300ms;
  StartServer(options);
  HttpConnection connection(port());
  const auto start = std::chrono::steady_clock::now();
  connection.Write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
  // A byte every 50 ms keeps the socket busy but never finishes the request.
  bool closed = false;
  for (int i = 0; i < 60 && !closed; ++i) {
    try {
      connection.Write("X");
    } catch (const std::exception&) {
      closed = true;  // the server already reset the connection
      break;
    }
    closed = connection.ClosedWithin(50ms);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed);  // a timeout that each byte restarted would never close it
  EXPECT_GE(elapsed, 250ms);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterTheTimeout) {
  ServeOptions options;
  options.server.request_timeout = 300ms;
  StartServer(options);
  HttpConnection connection(port());
  EXPECT_EQ(connection.Get("/healthz").status, 200);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(connection.ClosedWithin(3s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
}

// Each thread runs its own io_context and connections are dealt to them in turn: every thread
// serves some, and a connection's requests all run on the thread it was given.
TEST_F(HttpServerTest, ConnectionsAreSpreadOverTheThreadsAndStayOnTheirs) {
  std::mutex mu;
  std::vector<std::thread::id> seen;  // in request order
  ServeHooks hooks;
  hooks.server.on_request = [&](std::string_view, double) {
    std::lock_guard lock(mu);
    seen.push_back(std::this_thread::get_id());
  };
  ServeOptions options;
  options.server.threads = 2;
  StartServer(options, hooks);
  std::vector<std::unique_ptr<HttpConnection>> connections;
  for (int i = 0; i < 4; ++i) connections.push_back(std::make_unique<HttpConnection>(port()));
  std::vector<std::set<std::thread::id>> threads_of(connections.size());
  for (int round = 0; round < 5; ++round) {
    for (std::size_t c = 0; c < connections.size(); ++c) {
      ASSERT_EQ(connections[c]->Get("/healthz").status, 200);
      std::lock_guard lock(mu);
      threads_of[c].insert(seen.back());
    }
  }
  std::set<std::thread::id> all;
  for (const auto& ids : threads_of) {
    EXPECT_EQ(ids.size(), 1u);
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), 2u);
  server_->Stop();  // with connections open on both threads
  for (const auto& connection : connections) EXPECT_TRUE(connection->ClosedWithin(2s));
}

TEST_F(HttpServerTest, StopClosesOpenConnectionsAndIsIdempotent) {
  StartServer();
  HttpConnection connection(port());
  EXPECT_EQ(connection.Get("/healthz").status, 200);
  server_->Stop();
  EXPECT_TRUE(connection.ClosedWithin(2s));
  server_->Stop();
  server_.reset();
}

// A thread that never sleeps (busy_poll far longer than the test) still serves every
// connection, fires the idle timeout and stops at once; so does one that never polls.
TEST_F(HttpServerTest, BusyPollingOrNotServesTimesOutAndStops) {
  for (const auto busy_poll : {std::chrono::microseconds(0), std::chrono::microseconds(60s)}) {
    SCOPED_TRACE(busy_poll.count());
    ServeOptions options;
    options.server.busy_poll = busy_poll;
    options.server.request_timeout = 300ms;
    StartServer(options);
    HttpConnection first(port()), second(port());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(first.Get(kReadings).status, 200);
      EXPECT_EQ(second.Get("/healthz").status, 200);
    }
    EXPECT_TRUE(first.ClosedWithin(3s));
    const auto stop = std::chrono::steady_clock::now();
    server_->Stop();
    // A Stop that waited for the busy poll would take its 60 s; 20 s holds on a loaded machine.
    EXPECT_LT(std::chrono::steady_clock::now() - stop, 20s);
    EXPECT_TRUE(second.ClosedWithin(2s));
  }
}

// The process's CPU time so far (every thread's).
std::chrono::nanoseconds ProcessCpu() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// Requests that come further apart than busy_poll make every spin time out: a thread that kept
// spinning would burn busy_poll of CPU per request (60 x 5 ms here), one that stops after two
// misses spins once every 16 idle spells. CPU time, not wall time: a loaded machine only
// lowers it. The bound leaves room for the 60 requests' own cost, which under ASan alone came
// to 100 ms: a spinning thread adds 300 ms to that.
TEST_F(HttpServerTest, AThreadWhoseSpinsFindNothingStopsSpinning) {
  ServeOptions options;
  options.server.busy_poll = 5ms;
  StartServer(options);
  HttpConnection connection(port());
  const auto before = ProcessCpu();
  for (int i = 0; i < 60; ++i) {
    ASSERT_EQ(connection.Get("/healthz").status, 200);
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_LT(ProcessCpu() - before, 200ms);
}

TEST_F(HttpServerTest, StartReportsBadOptionsAndBusyPorts) {
  Served served;
  ServeOptions options;
  options.server.port = 0;
  options.server.address = "not-an-address";
  EXPECT_TRUE(Serve(store_.get(), options, {}, &served).IsInvalidArgument());
  options.server.address = "127.0.0.1";
  options.server.threads = 0;
  EXPECT_TRUE(Serve(store_.get(), options, {}, &served).IsInvalidArgument());
  options.server.threads = 1;
  options.api.bearer_tokens = {""};
  EXPECT_TRUE(Serve(store_.get(), options, {}, &served).IsInvalidArgument());
  options.api.bearer_tokens = {};
  options.server.busy_poll = std::chrono::microseconds(-1);
  EXPECT_TRUE(Serve(store_.get(), options, {}, &served).IsInvalidArgument());
  options.server.busy_poll = {};

  StartServer();
  options.server.port = port();
  Status busy = Serve(store_.get(), options, {}, &served);
  EXPECT_EQ(busy.code(), Status::Code::kIOError) << busy.ToString();
  EXPECT_NE(busy.message().find(std::to_string(port())), std::string::npos) << busy.message();
}

class AuthTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    ServeOptions options;
    options.api.bearer_tokens = {"first-token", "second-token"};
    StartServer(options);
  }

  static std::string SigV4(const std::string& key_id) {
    return "AWS4-HMAC-SHA256 Credential=" + key_id +
           "/20260623/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
  }
};

TEST_F(AuthTest, MissingOrWrongTokenIs401ThatRevealsNothing) {
  HttpResult missing = Get(port(), kReadings);
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.Header("www-authenticate"), "Bearer");
  HttpResult wrong = Get(port(), kReadings, {{"Authorization", "Bearer first-tokeN"}});
  HttpResult prefix = Get(port(), kReadings, {{"Authorization", "Bearer first-token-and-more"}});
  HttpResult short_one = Get(port(), kReadings, {{"Authorization", "Bearer f"}});
  HttpResult no_route = Get(port(), "/no/such/route", {{"Authorization", "Bearer wrong"}});
  HttpResult wrong_method = Post(port(), "/v1/devices/a1/readings", {}, "x");
  HttpResult basic = Get(port(), kReadings, {{"Authorization", "Basic Zmlyc3QtdG9rZW4="}});
  for (const HttpResult* r : {&wrong, &prefix, &short_one, &no_route, &wrong_method, &basic}) {
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->body, missing.body);  // the same for a route that exists and one that does not
    EXPECT_EQ(r->Header("www-authenticate"), "Bearer");
  }
  EXPECT_EQ(missing.Json()["error"]["code"], "Unauthorized");
}

TEST_F(AuthTest, EitherTokenIsAcceptedAndHealthzNeedsNone) {
  EXPECT_EQ(Get(port(), kReadings, {{"Authorization", "Bearer first-token"}}).status, 200);
  EXPECT_EQ(Get(port(), kReadings, {{"Authorization", "bearer second-token"}}).status, 200);
  EXPECT_EQ(Get(port(), "/readyz", {{"Authorization", "Bearer second-token"}}).status, 200);
  EXPECT_EQ(Get(port(), "/readyz").status, 401);
  EXPECT_EQ(Get(port(), "/metrics").status, 401);
  EXPECT_EQ(Get(port(), "/healthz").status, 200);
  EXPECT_EQ(Get(port(), "/nope", {{"Authorization", "Bearer first-token"}}).status, 404);
}

TEST_F(AuthTest, DynamoDbEndpointTakesTheTokenAsAccessKeyId) {
  const Headers list_tables = {{"X-Amz-Target", "DynamoDB_20120810.ListTables"},
                               {"Content-Type", "application/x-amz-json-1.0"}};
  Headers good = list_tables, bad = list_tables;
  good["Authorization"] = SigV4("second-token");
  bad["Authorization"] = SigV4("AKIAIOSFODNN7EXAMPLE");
  HttpResult ok = Post(port(), "/", good, "{}");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.Json()["TableNames"], json::parse(R"(["readings"])"));

  HttpResult denied = Post(port(), "/", bad, "{}");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.Header("x-amzn-errortype"), "UnrecognizedClientException");
  EXPECT_EQ(denied.Json()["__type"], "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException");
  EXPECT_EQ(Post(port(), "/", list_tables, "{}").status, 401);
}

}  // namespace
}  // namespace readingsd::test
