// Loopback ports for servers a test starts.
//
// A server that can bind port 0 and say which port it got (http::Server, readingsd with
// --http.listen=127.0.0.1:0) should do that: then no one can take its port. A program that must
// be told its ports up front (mosquitto, prometheus) is started through StartOnFreePorts, which
// tries again with fresh ports when one was taken between the pick and the program's bind.
#pragma once

#include <functional>
#include <vector>

namespace readingsd::test {

// `n` distinct TCP ports on 127.0.0.1 that were free a moment ago: the kernel's picks for
// sockets bound to port 0, which are closed again. Throws on failure.
std::vector<int> FreeLoopbackPorts(int n);

// A TCP socket listening on 127.0.0.1 at a port of the kernel's choosing, which goes to *port:
// for a test that plays a server itself. Throws on failure.
int ListenOnLoopback(int backlog, int* port);

// A TCP socket bound on 127.0.0.1 at a port of the kernel's choosing (*port), never listening:
// a connection to that port is refused, and no other program can take the port while the socket
// is open (a stopped server's port can be taken by another test at once). Close it when done.
// Throws on failure.
int RefusingLoopbackPort(int* port);

// Calls `start` with `n` fresh ports until it returns true, and returns those ports. `start`
// returns false when the program could not bind a port because it was taken ("address already
// in use") and throws on any other failure. Throws after 10 taken ports in a row.
std::vector<int> StartOnFreePorts(int n, const std::function<bool(const std::vector<int>& ports)>& start);

}  // namespace readingsd::test
