#include "tests/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace readingsd::test {

namespace {

// A TCP socket bound to 127.0.0.1:0, and the port it got; -1 (errno set) on failure.
int BindLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

int ListenOnLoopback(int backlog, int* port) {
  const int fd = BindLoopback(port);
  if (fd < 0 || listen(fd, backlog) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    throw std::system_error(error, std::generic_category(), "listen on 127.0.0.1:0");
  }
  return fd;
}

int RefusingLoopbackPort(int* port) {
  const int fd = BindLoopback(port);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "bind 127.0.0.1:0");
  return fd;
}

std::vector<int> FreeLoopbackPorts(int n) {
  // All held open until every port is picked, so the kernel hands out `n` different ones.
  std::vector<int> fds, ports(static_cast<std::size_t>(n));
  for (int& port : ports) {
    const int fd = BindLoopback(&port);
    if (fd < 0) {
      const int error = errno;
      for (int open : fds) close(open);
      throw std::system_error(error, std::generic_category(), "bind 127.0.0.1:0");
    }
    fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  return ports;
}

std::vector<int> StartOnFreePorts(int n, const std::function<bool(const std::vector<int>& ports)>& start) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::vector<int> ports = FreeLoopbackPorts(n);
    if (start(ports)) return ports;
  }
  throw std::runtime_error("10 picks of free loopback ports were all taken before the server could bind them");
}

}  // namespace readingsd::test
