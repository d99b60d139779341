// HttpGet, the watchdog's self-probe and `readingsd query`'s client, against servers that
// misbehave: it must give up at its timeout, never wait for ever.
#include "http/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

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

}  // namespace
}  // namespace readingsd::test
