// HttpGet, the watchdog's self-probe and `readingsd query`'s client, and SendEach, the nodes'
// fan-out, against servers that misbehave: they must give up at their timeout, never wait for
// ever, and SendEach waits for its requests at once, not one after another.
#include "http/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "tests/support/ports.h"

namespace readingsd::test {
namespace {

using namespace std::chrono_literals;

// A listener that completes the handshake (the kernel does, from its backlog) and then never
// reads or answers: a wedged server.
TEST(HttpGet, GivesUpAtItsTimeoutWhenTheServerNeverAnswers) {
  int port = 0;
  const int listener = ListenOnLoopback(4, &port);
  auto get = std::async(std::launch::async, [port] {
    http::HttpGetResult result;
    return http::HttpGet("127.0.0.1", std::to_string(port), "/healthz", "", 200ms, &result);
  });
  const bool returned = get.wait_for(60s) == std::future_status::ready;
  // Closing the listener resets the queued connection, so a hung call returns and the test ends.
  ::close(listener);
  ASSERT_TRUE(returned) << "HttpGet ignored its timeout";
  const Status s = get.get();
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.ToString().find("no answer within 200 ms"), std::string::npos) << s.ToString();
}

TEST(HttpGet, ARefusedConnectionIsUnavailableAndSaysWhy) {
  const int port = FreeLoopbackPorts(1)[0];
  http::HttpGetResult result;
  const Status s = http::HttpGet("127.0.0.1", std::to_string(port), "/healthz", "", 5s, &result);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.ToString().find("refused"), std::string::npos) << s.ToString();
}

TEST(SendEach, WaitsForEveryRequestAtOnceWithinOneTimeout) {
  std::vector<int> listeners;
  std::vector<http::Call> calls;
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    listeners.push_back(ListenOnLoopback(4, &port));
    calls.push_back({.host = "127.0.0.1", .port = std::to_string(port), .request = {http::verb::get, "/healthz", 11}});
  }
  int refusing_port = 0;
  listeners.push_back(RefusingLoopbackPort(&refusing_port));  // no other test can take the port meanwhile
  calls.push_back({.host = "127.0.0.1", .port = std::to_string(refusing_port),
                   .request = {http::verb::get, "/healthz", 11}});
  const auto start = std::chrono::steady_clock::now();
  http::SendEach(calls, 5s, 500ms);
  const auto took = std::chrono::steady_clock::now() - start;
  for (int listener : listeners) ::close(listener);
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, 1000ms) << "one after another, the three wedged servers take 1500 ms";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(calls[i].status.code(), Status::Code::kUnavailable) << calls[i].status.ToString();
    EXPECT_NE(calls[i].status.ToString().find("no answer within 500 ms"), std::string::npos)
        << calls[i].status.ToString();
  }
  EXPECT_NE(calls[3].status.ToString().find("refused"), std::string::npos) << calls[3].status.ToString();
}

}  // namespace
}  // namespace readingsd::test
