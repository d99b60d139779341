#include "tests/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace readingsd::test {

std::vector<int> FreeLoopbackPorts(int n) {
  std::vector<int> fds, ports;
  std::system_error failure(0, std::generic_category());
  bool failed = false;
  // All held open until every port is picked, so the kernel hands out `n` different ones.
  for (int i = 0; i < n && !failed; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      failure = std::system_error(errno, std::generic_category(), "bind 127.0.0.1:0");
      failed = true;
    } else {
      ports.push_back(ntohs(addr.sin_port));
    }
    if (fd >= 0) fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  if (failed) throw failure;
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
