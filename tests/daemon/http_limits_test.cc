// The http.* connection limits reach the real binary's server, and shedding shows in /metrics.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"

namespace readingsd::test {
namespace {

using namespace std::chrono_literals;

// A loopback connection to `port` that first sends `bytes`.
int Connect(int port, std::string_view bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  return fd;
}

// Reads until `needle` has arrived (true), or the peer closes or `timeout` passes (false).
bool ReceivedWithin(int fd, std::string_view needle, std::chrono::milliseconds timeout) {
  std::string received;
  for (const auto deadline = std::chrono::steady_clock::now() + timeout;
       received.find(needle) == std::string::npos;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    char buf[4096];
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    received.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

// True when the peer closes within `timeout`.
bool ClosedWithin(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  char buf[4096];
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 && ::recv(fd, buf, sizeof buf, 0) <= 0;
}

TEST(HttpLimits, HeaderTimeoutAndSheddingFollowTheConfig) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(),
                 .extra_args = {"--http.max_connections=2", "--http.header_timeout_ms=300",
                                "--http.request_timeout_ms=60000"}});
  daemon.Start();

  // Cut at header_timeout_ms: request_timeout_ms is far beyond the deadline.
  const int silent = Connect(daemon.http_port(), "GET /healthz HTTP/1.1\r\n");
  EXPECT_TRUE(ClosedWithin(silent, 20s));
  ::close(silent);

  // Two kept-alive connections take both slots; a third connection sheds the older one. (The
  // server may also have shed a slot whose client had already gone, such as `silent`'s, if it had
  // not yet seen the close: so at least one, and never a refusal.)
  const int first = Connect(daemon.http_port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(ReceivedWithin(first, "ok", 10s));
  const int second = Connect(daemon.http_port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(ReceivedWithin(second, "ok", 10s));
  auto [status, metrics] = Get(daemon.http_port(), "/metrics");
  EXPECT_EQ(status, 200);
  EXPECT_GE(MetricValue(metrics, "readingsd_http_connections_shed_total"), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, "readingsd_http_connections_refused_total"), 0) << metrics;
  EXPECT_TRUE(ClosedWithin(first, 10s));
  ::close(first);
  ::close(second);
  EXPECT_EQ(daemon.Terminate(), 0);
}

}  // namespace
}  // namespace readingsd::test
