// http::Server: HTTP/1.1 on one listening socket, serving whatever Handler it is given
// (http/handler.h). It knows no API: the daemon gives it api/router.h.
//
// A small fixed number of threads, each running its own io_context; connections are handed to
// them round-robin. One session per connection, run by its io_context's one thread; the only
// connection state other threads see is whether it waits for a request, which the acceptor reads
// to choose a connection to shed when all are taken. Handlers run on the I/O threads, so a
// handler bounds the work of one request (the APIs bound a page by max_limit and max_page_bytes),
// and a streamed body (BodyStream) the work of each part, made only once the last is written.
//
// Requests whose body length another HTTP hop could read differently (RFC 9112 §6.3: a
// Transfer-Encoding not ending in chunked, beside Content-Length, or on HTTP/1.0; more than one
// Content-Length; obsolete line folding) get 400 and the connection is closed, so no request can
// hide in another's body (request smuggling; http/framing.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "http/handler.h"

namespace readingsd::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 8080;  // 0 = an ephemeral port, see Server::port()
  int threads = 2;
  // An idle I/O thread polls its sockets this long before it sleeps, so that a request arriving
  // right after the previous response needs no wake-up; 0 = sleep at once (least CPU).
  std::chrono::microseconds busy_poll{20};
  std::size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  std::size_t max_header_bytes = 8192;   // larger request headers get 431
  // A response body of at least this many bytes is compressed when the request's Accept-Encoding
  // allows gzip or deflate (http/compress.h); 0 = never.
  std::size_t compress_min_bytes = 1024;
  // A connection beyond it sheds one that waits for a request: the one longest in the middle of
  // sending one (a slow client), else the one idle longest. One being answered is never shed;
  // when every connection is being answered, the new one gets a 503 with Retry-After instead.
  // So a slow client cannot lock the others out.
  int max_connections = 256;
  // A request must arrive whole within this time, and an idle keep-alive connection is closed
  // after it: a slow or silent client cannot hold a connection.
  std::chrono::milliseconds request_timeout{10000};
  // A request's header must arrive whole within this time of its start: the accept, or its first
  // byte on a kept-alive connection. Far shorter than request_timeout, because a header is
  // small and a client that trickles it (slow loris) is holding a connection, not sending.
  std::chrono::milliseconds header_timeout{3000};

  bool operator==(const ServerOptions&) const = default;
};

// Called from the I/O threads, possibly concurrently: each must be thread-safe. Any may be empty.
struct ServerHooks {
  // Once per response, with the endpoint name the handler set ("other" when it set none, and
  // for what the server refused itself) and the time taken to build it.
  std::function<void(std::string_view endpoint, double seconds)> on_request;
  // A connection was closed to make room for a new one (see max_connections).
  std::function<void()> on_connection_shed;
  // A new connection got a 503 because every connection was being answered.
  std::function<void()> on_connection_refused;
};

class Server {
 public:
  // Listens and starts the threads. `handler` is not owned and must outlive the server.
  // InvalidArgument for unusable options, IOError when the address cannot be bound.
  static Status Start(const ServerOptions& options, Handler* handler, ServerHooks hooks,
                      std::unique_ptr<Server>* server);

  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;

  // Stops accepting, closes every connection and joins the threads. Idempotent; not to be
  // called from a hook (it would join its own thread).
  void Stop();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace readingsd::http
