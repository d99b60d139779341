// HttpServer: the read side of readingsd over HTTP/1.1 — the native JSON API (query/native_api.h)
// and a DynamoDB-compatible endpoint (query/dynamodb_api.h) on one listening socket.
//
// A small fixed number of threads, each running its own io_context; connections are handed to
// them round-robin. One session per connection, run by its io_context's one thread; the only
// connection state other threads see is whether it waits for a request, which the acceptor reads
// to choose a connection to shed when all are taken. Queries run on the I/O threads: a page is
// bounded by max_limit and max_page_bytes, so no request holds a thread (and the connections it
// serves) for long. A long page may have its later part read by an idle read helper meanwhile.
//
// Requests whose body length another HTTP hop could read differently (RFC 9112 §6.3: a
// Transfer-Encoding not ending in chunked, beside Content-Length, or on HTTP/1.0; more than one
// Content-Length; obsolete line folding) get 400 and the connection is closed, so no request can
// hide in another's body (request smuggling).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::query {

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 8080;  // 0 = an ephemeral port, see HttpServer::port()
  int threads = 2;
  // Threads that read the later part of a long page while the request's thread reads the first
  // (query/read_helpers.h); 0 = every page is read by its request's thread alone.
  int read_helpers = 1;
  // An idle I/O thread polls its sockets this long before it sleeps, so that a request arriving
  // right after the previous response needs no wake-up; 0 = sleep at once (least CPU).
  std::chrono::microseconds busy_poll{20};
  std::size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  std::size_t max_header_bytes = 8192;   // larger request headers get 431
  std::size_t max_limit = 10000;         // largest page (native limit / n, DynamoDB Limit)
  std::size_t max_page_bytes = 1 << 20;  // a page also ends after this many bytes read
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
  // Non-empty: every endpoint but /healthz needs `Authorization: Bearer <token>` or, for AWS
  // clients that cannot send one, a SigV4 Authorization header whose access key id is a token.
  std::vector<std::string> bearer_tokens;
  std::string table_name = "readings";  // the one table of the DynamoDB endpoint
};

// Called from the I/O threads, possibly concurrently: each must be thread-safe. Any may be empty.
struct HttpHooks {
  std::function<std::string()> metrics;            // GET /metrics body (Prometheus text)
  std::function<bool(std::string* detail)> ready;  // GET /readyz: 200 when true, else 503
  // Once per response, with one of a fixed set of endpoint names (readings, latest, item,
  // healthz, readyz, metrics, dynamodb.<Op>, dynamodb.other, unauthorized, other) and the
  // time taken to build it.
  std::function<void(std::string_view endpoint, double seconds)> on_request;
  // Once per query or get: the partition, the items read and the bytes of items returned.
  std::function<void(std::string_view device_id, std::size_t items, std::size_t bytes)> on_partition_read;
  // A connection was closed to make room for a new one (see max_connections).
  std::function<void()> on_connection_shed;
  // A new connection got a 503 because every connection was being answered.
  std::function<void()> on_connection_refused;
};

class HttpServer {
 public:
  // Listens and starts the threads. `store` is not owned and must outlive the server.
  // InvalidArgument for unusable options, IOError when the address cannot be bound.
  static Status Start(const HttpServerOptions& options, const storage::Store* store, HttpHooks hooks,
                      std::unique_ptr<HttpServer>* server);

  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;

  // Stops accepting, closes every connection and joins the threads. Idempotent; not to be
  // called from a hook (it would join its own thread).
  void Stop();

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace readingsd::query
