#include "http/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "http/compress.h"
#include "http/framing.h"

namespace readingsd::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
// Each io_context is run by exactly one thread, so its handlers never run concurrently: that is
// Asio's implicit strand, and a session needs no explicit one. The concrete executor type (not
// any_io_executor) also spares every operation a type-erased, reference-counted executor copy.
using Executor = net::io_context::executor_type;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Acceptor = net::basic_socket_acceptor<tcp, Executor>;

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadSize = 65536;  // most bytes one read takes, as Beast's own reads

class Session;

// The connections the server holds, at most options.max_connections. A connection beyond that
// makes room by shedding one that waits for a request, slow clients first (see
// Session::shed_order_): a waiting client loses nothing it was promised, while one being
// answered is never shed. Only when every connection is being answered is the new one refused.
// Thread-safe: the acceptor admits on its thread, sessions leave from theirs, under one mutex
// taken once per connection, never per request (a session ranks itself with an atomic).
class ConnectionTable {
 public:
  enum class Admission { kAdmitted, kAdmittedByShedding, kRefused };

  explicit ConnectionTable(std::size_t capacity) : capacity_(capacity) {}

  // On the acceptor's thread. A shed session is closed on its own thread soon after.
  Admission Admit(Session& session);
  // From the session's destructor; nothing when it was shed or never admitted.
  void Leave(Session& session);

 private:
  std::mutex mutex_;
  std::list<Session*> sessions_;  // each admitted session until it leaves or is shed
  const std::size_t capacity_;
};

// What all sessions share: fixed at Start, apart from the counter and the table.
struct ServerState {
  ServerState(const ServerOptions& o, Handler* h, ServerHooks k)
      : options(o), handler(h), hooks(std::move(k)), connections(static_cast<std::size_t>(o.max_connections)) {}

  ServerOptions options;
  Handler* handler;
  ServerHooks hooks;
  ConnectionTable connections;
};

// One connection. Every member is touched only on its io_context's thread, except shed_order_
// (an atomic the acceptor reads and, to shed it, sets) and the table bookkeeping (guarded by the
// ConnectionTable's mutex).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)), state_(std::move(state)) {}
  ~Session() { state_->connections.Leave(*this); }

  // Serves requests until the connection closes; only for an admitted session.
  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(false); });
  }

  // Answers 503 without reading a request, then closes; for a session the table refused.
  void Refuse() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      Response response = self->state_->handler->Error(status::service_unavailable, "ServiceUnavailable",
                                                        "every connection is being answered; retry shortly");
      response.set(http::field::retry_after, "1");
      response.keep_alive(false);
      response.prepare_payload();
      self->Write(std::move(response));
    });
  }

 private:
  friend class ConnectionTable;

  // shed_order_ ranks a session waiting for (the rest of) a request: the table sheds the lowest.
  // Caught mid-request, it ranks by when the request started, before every session with nothing
  // of its next request received (a new or idle kept-alive connection), which rank by when they
  // started waiting. A slow loris is caught mid-request; a new connection's request may be unread
  // only because its thread is busy. Else the session is answering or shed.
  static constexpr int64_t kAnswering = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kShed = kAnswering - 1;
  // Added to a time, it ranks after every plain time: 2^62 ns of uptime are 146 years.
  static constexpr int64_t kNothingReceived = int64_t{1} << 62;
  static int64_t Ticks(Clock::time_point t) { return t.time_since_epoch().count(); }

  // Both false when the table shed the session meanwhile: then it answers nothing and closes.
  bool StartAnswering() { return SetShedOrder(kAnswering); }
  // Before waiting for more of a request already begun.
  bool CaughtMidRequest() {
    if (mid_request_) return true;
    mid_request_ = true;
    return SetShedOrder(Ticks(request_started_));
  }
  bool SetShedOrder(int64_t order) {
    int64_t old = shed_order_.load();
    return old != kShed && shed_order_.compare_exchange_strong(old, order);  // fails only for kShed
  }

  // From the acceptor's thread, once the table has marked the session shed.
  void Shed() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->stream_.close(); });
  }

  // Reads the next request. The connection idles up to request_timeout for its first byte when
  // `kept_alive` and nothing of it is buffered; from its start (the accept, or that first byte)
  // its header must be whole within header_timeout, and the request within request_timeout.
  void Read(bool kept_alive) {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
    parser_->body_limit(state_->options.max_body_bytes);
    mid_request_ = false;
    idle_ = kept_alive && buffer_.size() == 0;
    if (idle_) {
      stream_.expires_after(state_->options.request_timeout);
    } else {
      StartRequest();
    }
    ReadHeader();
  }

  // One deadline for the header and one for the whole request, not one per read: a client that
  // trickles bytes (slow loris) is cut off when it passes.
  void StartRequest() {
    request_started_ = Clock::now();
    stream_.expires_at(request_started_ +
                       std::min(state_->options.header_timeout, state_->options.request_timeout));
  }

  // Beast's own read loop (http::async_read_header), but it sees the bytes each put() consumes,
  // for obsolete line folding, which Beast accepts without a trace in what it parses.
  void ReadHeader() {
    beast::error_code ec = beast::http::error::need_more;
    if (buffer_.size() > 0) {
      const net::const_buffer bytes = buffer_.data();
      const std::size_t used = parser_->put(bytes, ec);
      const bool folded = HasObsFold({static_cast<const char*>(bytes.data()), used});
      buffer_.consume(used);
      if (folded) return Reject(status::bad_request, "BadRequest", "obsolete line folding");
    }
    if (ec == beast::http::error::need_more) {
      if (parser_->got_some() && !CaughtMidRequest()) return;
      stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadSize)),
                              beast::bind_front_handler(&Session::OnReadSome, shared_from_this()));
    } else if (ec) {
      OnRead(ec);
    } else {
      OnHeader();
    }
  }

  void OnReadSome(beast::error_code ec, std::size_t bytes) {
    if (ec) return;  // the peer left, timed out or was shed: nobody to answer
    buffer_.commit(bytes);
    if (idle_) {
      idle_ = false;
      StartRequest();
    }
    ReadHeader();
  }

  void OnHeader() {
    if (const auto error = AmbiguousFraming(parser_->get())) {
      return Reject(error->status,
                    error->status == status::bad_request ? "BadRequest" : "NotImplemented",
                    "ambiguous message framing: " + std::string(error->message));
    }
    // A small body mostly comes with its header: parsed here, it costs no round through the
    // io_context, which http::async_read takes even when it has nothing to read.
    beast::error_code ec;
    if (!parser_->is_done() && buffer_.size() > 0) {
      parser_->eager(true);
      buffer_.consume(parser_->put(buffer_.data(), ec));
    }
    if (parser_->is_done() || (ec && ec != beast::http::error::need_more)) return OnRead(ec);
    if (!CaughtMidRequest()) return;
    stream_.expires_at(request_started_ + state_->options.request_timeout);
    beast::http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t = 0) {
    if (ec == beast::http::error::header_limit) {
      return Reject(
          status::request_header_fields_too_large, "HeaderTooLarge",
          "request header larger than " + std::to_string(state_->options.max_header_bytes) + " bytes");
    }
    if (ec == beast::http::error::body_limit) {
      return Reject(status::payload_too_large, "PayloadTooLarge",
                    "request body larger than " + std::to_string(state_->options.max_body_bytes) + " bytes");
    }
    if (ec && ec != beast::http::error::end_of_stream && ec != beast::http::error::partial_message &&
        ec.category() == beast::http::make_error_code(beast::http::error::bad_target).category()) {
      return Reject(status::bad_request, "BadRequest", "malformed HTTP request: " + ec.message());
    }
    if (ec || !StartAnswering()) return;  // the peer left, timed out or was shed: nobody to answer
    const auto started = Clock::now();
    const Request& request = parser_->get();
    std::string_view endpoint = "other";
    Response response;
    try {
      response = state_->handler->Handle(request, &endpoint);
      if (response.stream) TakeFirstPart(&response);
    } catch (const std::exception&) {
      // Handlers return errors as values; this is only for allocation failure and the like.
      response = state_->handler->Error(status::internal_server_error, "InternalError", "internal error");
    }
    const std::string_view accept_encoding = ToStd(request[field::accept_encoding]);
    if (response.stream) {
      const Coding coding = ResponseCoding(accept_encoding, state_->options.compress_min_bytes, &response);
      if (coding != Coding::kIdentity) deflater_.emplace(coding);
    } else {
      CompressResponse(accept_encoding, state_->options.compress_min_bytes, &response);
    }
    response.version(request.version());
    Respond(std::move(response), endpoint, request.keep_alive(), started, request.method() == verb::head);
  }

  // The stream's first part, before the header is sent: a body that is done at once is sent
  // whole (with a Content-Length, compressed only above compress_min_bytes, as any other), and
  // an error there can still be a 500.
  void TakeFirstPart(Response* response) {
    part_.clear();
    bool done = false;
    if (Status s = response->stream->Next(&part_, &done); !s.ok()) {
      *response = state_->handler->Error(status::internal_server_error, "InternalError", s.ToString());
    } else if (done) {
      response->stream.reset();
      response->body() = std::move(part_);
    }
  }

  // A request the server will not read further: answered, then the connection closes, so
  // nothing after it is taken for a request.
  void Reject(http::status status, std::string_view code, const std::string& message) {
    if (!StartAnswering()) return;
    Respond(state_->handler->Error(status, code, message), "other", false, Clock::now());
  }

  // `head`: the answer to a HEAD request, the headers a GET would get (Content-Length or
  // Transfer-Encoding, and Content-Encoding) and no body (RFC 9110 §9.3.2).
  void Respond(Response response, std::string_view endpoint, bool keep_alive, Clock::time_point started,
               bool head = false) {
    response.keep_alive(keep_alive);
    if (response.stream) {
      // HTTP/1.0 knows no chunks: there the body ends where the connection does.
      if (response.version() >= 11) {
        response.chunked(true);
      } else {
        response.keep_alive(false);
      }
    } else {
      response.prepare_payload();
      if (head) response.body().clear();
    }
    if (state_->hooks.on_request) {
      state_->hooks.on_request(endpoint, std::chrono::duration<double>(Clock::now() - started).count());
    }
    if (response.stream) return WriteStream(std::move(response), head);
    Write(std::move(response));
  }

  void Write(Response response) {
    response_ = std::move(response);
    stream_.expires_after(state_->options.request_timeout);
    beast::http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this(), response_.need_eof()));
  }

  void OnWrite(bool close, beast::error_code ec, std::size_t) {
    if (ec) return;
    streaming_.reset();
    deflater_.reset();
    shed_order_.store(kNothingReceived + Ticks(Clock::now()));
    if (close) return Linger();
    Read(true);
  }

  // A streamed body, as chunks: the header, then each part the BodyStream makes (part_ holds
  // the first), compressed by deflater_ when set, each written before the next is made, so a
  // client that reads slowly slows the stream instead of growing a buffer. Every write must end
  // within request_timeout, as a whole response's. HEAD: the header alone.
  void WriteStream(Response response, bool head) {
    streaming_ = std::make_unique<Streaming>(std::move(response));
    stream_.expires_after(state_->options.request_timeout);
    beast::http::async_write_header(stream_, streaming_->serializer,
                                    [self = shared_from_this(), head](beast::error_code ec, std::size_t) {
                                      if (ec) return;
                                      if (head) return self->OnWrite(self->streaming_->response.need_eof(), ec, 0);
                                      self->WriteChunk(false);
                                    });
  }

  // Makes the next part and writes it.
  void NextChunk() {
    bool done = false;
    do {
      Status s;
      try {
        s = streaming_->body_stream->Next(&part_, &done);
      } catch (const std::exception&) {
        s = Status::IOError("body stream threw");
      }
      if (!s.ok()) return Abort();
    } while (part_.empty() && !done);
    WriteChunk(done);
  }

  // Writes part_ as a chunk (compressed when deflater_ is set); `last`: it ends the body.
  void WriteChunk(bool last) {
    wire_.clear();
    if (!deflater_) {
      wire_.swap(part_);
    } else if (!deflater_->Append(part_, last, &wire_)) {
      return Abort();
    }
    part_.clear();
    if (wire_.empty()) return last ? WriteLastChunk() : NextChunk();
    auto& body = streaming_->response.body();
    body.data = wire_.data();
    body.size = wire_.size();
    body.more = true;
    stream_.expires_after(state_->options.request_timeout);
    beast::http::async_write(stream_, streaming_->serializer,
                             beast::bind_front_handler(&Session::OnChunkWritten, shared_from_this(), last));
  }

  void WriteLastChunk() {
    auto& body = streaming_->response.body();
    body.data = nullptr;
    body.size = 0;
    body.more = false;
    stream_.expires_after(state_->options.request_timeout);
    beast::http::async_write(stream_, streaming_->serializer,
                             beast::bind_front_handler(&Session::OnChunkWritten, shared_from_this(), false));
  }

  void OnChunkWritten(bool last, beast::error_code ec, std::size_t) {
    if (ec == beast::http::error::need_buffer) ec = {};  // Beast's word for "this chunk is written"
    if (ec) return;  // the client left or timed out: the stream is freed with the session
    if (streaming_->serializer.is_done()) return OnWrite(streaming_->response.need_eof(), ec, 0);
    if (last) return WriteLastChunk();
    NextChunk();
  }

  // A stream that failed after its header: closing without the last chunk tells the client the
  // body is cut; nothing else can, the status being sent.
  void Abort() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  // Half-closes, then drops what the client still sends until it closes too (or header_timeout
  // passes): closing with unread bytes would reset the connection, and a reset can destroy the
  // last response before the client has read it.
  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(state_->options.header_timeout);
    Discard();
  }

  void Discard() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadSize)),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) self->Discard();
                            });
  }

  beast::basic_stream<tcp, Executor> stream_;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;  // fresh per request
  bool idle_ = false;         // no byte of the next request yet
  bool mid_request_ = false;  // shed_order_ says so
  Clock::time_point request_started_;
  Response response_;
  // A streamed response being written: its header and the chunk in flight (buffer_body points
  // into wire_), and the handler's stream, which the serializer never sees.
  struct Streaming {
    explicit Streaming(Response&& r)
        : body_stream(std::move(r.stream)), response(std::move(r.base())), serializer(response) {}
    std::unique_ptr<BodyStream> body_stream;
    beast::http::response<beast::http::buffer_body> response;
    beast::http::response_serializer<beast::http::buffer_body> serializer;
  };
  std::unique_ptr<Streaming> streaming_;
  std::optional<Deflater> deflater_;  // while a streamed response is compressed
  std::string part_;                  // the stream's next part, as made
  std::string wire_;                  // the chunk being written: part_ compressed (or part_ itself)
  std::shared_ptr<ServerState> state_;
  std::atomic<int64_t> shed_order_{kNothingReceived + Ticks(Clock::now())};
  std::list<Session*>::iterator table_entry_;  // valid while in_table_
  bool in_table_ = false;
};

ConnectionTable::Admission ConnectionTable::Admit(Session& session) {
  std::shared_ptr<Session> shed;
  bool shedding = false;
  {
    std::lock_guard lock(mutex_);
    while (sessions_.size() >= capacity_) {
      auto first = sessions_.end();
      int64_t first_order = Session::kShed;
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
        const int64_t order = (*it)->shed_order_.load();
        if (order < first_order) {
          first = it;
          first_order = order;
        }
      }
      if (first == sessions_.end()) return Admission::kRefused;
      // Fails when its order has just changed (it received or answered something): look again.
      if (!(*first)->shed_order_.compare_exchange_strong(first_order, Session::kShed)) continue;
      shed = (*first)->weak_from_this().lock();  // empty when it is being destroyed: closed anyway
      (*first)->in_table_ = false;
      sessions_.erase(first);
      shedding = true;
    }
    session.table_entry_ = sessions_.insert(sessions_.end(), &session);
    session.in_table_ = true;
  }
  if (shed) shed->Shed();
  return shedding ? Admission::kAdmittedByShedding : Admission::kAdmitted;
}

void ConnectionTable::Leave(Session& session) {
  std::lock_guard lock(mutex_);
  if (session.in_table_) sessions_.erase(session.table_entry_);
}

// Accepts on the first io_context and hands connections round-robin to all of them. Each runs on
// its own thread, so a session's handlers always run where its socket's events arrive: one
// io_context shared by every thread woke a second thread (a futex and a context switch) for
// most events, a third of a small request's time.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(const std::vector<std::unique_ptr<net::io_context>>& iocs, Acceptor acceptor, std::shared_ptr<ServerState> state)
      : iocs_(iocs),
        acceptor_(std::move(acceptor)),
        retry_(acceptor_.get_executor()),
        state_(std::move(state)) {}

  void Accept() {
    net::io_context& ioc = *iocs_[next_++ % iocs_.size()];
    acceptor_.async_accept(ioc, beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }

 private:
  void OnAccept(beast::error_code ec, Socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors, typically: wait a little instead of spinning on the error.
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
        if (!wait_ec) self->Accept();
      });
      return;
    }
    auto session = std::make_shared<Session>(std::move(socket), state_);
    switch (state_->connections.Admit(*session)) {
      case ConnectionTable::Admission::kAdmittedByShedding:
        if (state_->hooks.on_connection_shed) state_->hooks.on_connection_shed();
        [[fallthrough]];
      case ConnectionTable::Admission::kAdmitted:
        session->Run();
        break;
      case ConnectionTable::Admission::kRefused:
        if (state_->hooks.on_connection_refused) state_->hooks.on_connection_refused();
        session->Refuse();
        break;
    }
    Accept();
  }

  const std::vector<std::unique_ptr<net::io_context>>& iocs_;
  std::size_t next_ = 0;  // only touched on the acceptor's thread
  Acceptor acceptor_;
  net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>, Executor> retry_;
  std::shared_ptr<ServerState> state_;
};

// Runs `ioc` until it is stopped. Once idle, the thread keeps polling its sockets for
// `busy_poll` before it sleeps in epoll_wait: a client's next request often comes within
// microseconds of its response, and waking a sleeping thread costs more than that (on a VM,
// where the idle vCPU halts, about 10 µs each way). A spin only pays while it finds work: when
// clients and server together want more cores than there are, the spinning thread holds the
// core a client needs to send its next request, and the spin times out. So after two spins in a
// row that found nothing the thread sleeps at once when idle, and tries one spin again every
// kProbeEvery idle spells.
void RunIoThread(net::io_context& ioc, std::chrono::microseconds busy_poll) {
  using Clock = std::chrono::steady_clock;
  constexpr int kMissesBeforeSleeping = 2;
  constexpr unsigned kProbeEvery = 16;
  int misses = 0;          // spins in a row that timed out
  unsigned idle_spells = 0;
  while (!ioc.stopped()) {
    while (ioc.poll_one() > 0) {
    }
    bool found = false;
    if (busy_poll.count() > 0 && (misses < kMissesBeforeSleeping || ++idle_spells % kProbeEvery == 0)) {
      for (const auto until = Clock::now() + busy_poll; !found && !ioc.stopped() && Clock::now() < until;) {
        found = ioc.poll_one() > 0;
      }
      misses = found ? 0 : misses + 1;
    }
    if (!found) ioc.run_one();
  }
}

Status ValidateOptions(const ServerOptions& options) {
  if (options.threads < 1) return Status::InvalidArgument("threads must be at least 1");
  if (options.busy_poll.count() < 0) return Status::InvalidArgument("busy_poll must not be negative");
  if (options.max_connections < 1) return Status::InvalidArgument("max_connections must be at least 1");
  if (options.max_header_bytes < 1 || options.max_header_bytes > UINT32_MAX) {
    return Status::InvalidArgument("max_header_bytes must be from 1 to 2^32-1");
  }
  if (options.request_timeout.count() <= 0)
    return Status::InvalidArgument("request_timeout must be positive");
  if (options.header_timeout.count() <= 0) return Status::InvalidArgument("header_timeout must be positive");
  return Status::OK();
}

}  // namespace

class Server::Impl {
 public:
  std::shared_ptr<ServerState> state;
  // One per thread. Emptied by Stop: that frees the handlers still queued, and with them the
  // listener and every session, closing their sockets.
  std::vector<std::unique_ptr<net::io_context>> iocs;
  std::vector<std::thread> threads;
  uint16_t port = 0;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

uint16_t Server::port() const { return impl_->port; }

Status Server::Start(const ServerOptions& options, Handler* handler, ServerHooks hooks,
                     std::unique_ptr<Server>* server) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  if (!handler) return Status::InvalidArgument("no handler");
  auto impl = std::make_unique<Impl>();
  impl->state = std::make_shared<ServerState>(options, handler, std::move(hooks));
  for (int i = 0; i < options.threads; ++i) impl->iocs.push_back(std::make_unique<net::io_context>(1));

  beast::error_code ec;
  const auto address = net::ip::make_address(options.address, ec);
  if (ec) return Status::InvalidArgument("address \"" + options.address + "\": " + ec.message());
  const tcp::endpoint endpoint{address, options.port};
  Acceptor acceptor(impl->iocs.front()->get_executor());
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError("cannot listen on " + options.address + ":" + std::to_string(options.port) + ": " +
                           ec.message());
  }
  impl->port = acceptor.local_endpoint().port();

  std::make_shared<Listener>(impl->iocs, std::move(acceptor), impl->state)->Accept();
  for (auto& ioc : impl->iocs) {
    // Without the guard an io_context with no connection yet would return from run() at once.
    impl->threads.emplace_back([ioc = ioc.get(), guard = net::make_work_guard(*ioc), busy_poll = options.busy_poll] {
      RunIoThread(*ioc, busy_poll);
    });
  }
  server->reset(new Server(std::move(impl)));
  return Status::OK();
}

void Server::Stop() {
  if (impl_->iocs.empty()) return;
  for (auto& ioc : impl_->iocs) ioc->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // The acceptor's io_context first: its pending accept holds a socket of another io_context,
  // which must still be there when that socket is destroyed.
  for (auto& ioc : impl_->iocs) ioc.reset();
  impl_->iocs.clear();
}

}  // namespace readingsd::http
