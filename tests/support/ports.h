// Loopback ports for servers a test starts.
#pragma once

namespace readingsd::test {

// A TCP port on 127.0.0.1 that was free a moment ago: the kernel picks it for a socket bound to
// port 0, and the socket is closed again. Another process could take it before the test binds
// it, but ephemeral ports are handed out round-robin, so that is rare. Throws on failure.
int FreeLoopbackPort();

}  // namespace readingsd::test
