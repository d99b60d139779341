#include "query/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "base/text.h"
#include "query/dynamodb_api.h"
#include "query/http_api.h"
#include "query/native_api.h"

namespace readingsd::query {
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
  explicit ServerState(const HttpServerOptions& o)
      : options(o), connections(static_cast<std::size_t>(o.max_connections)) {}

  HttpServerOptions options;
  const storage::Store* store = nullptr;
  HttpHooks hooks;
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
  uint64_t request_id_salt = 0;  // random, so request ids differ across restarts
  std::atomic<uint64_t> requests{0};
  ConnectionTable connections;
  std::unique_ptr<ReadHelpers> read_helpers;
};

// Time depends on the presented credential's length only, never on how much of a token it
// matches, so a client cannot guess a token byte by byte. `secret` is never empty.
bool ConstantTimeEquals(std::string_view presented, std::string_view secret) {
  unsigned diff = presented.size() != secret.size();
  for (std::size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

// The credential a request presents: `Bearer <token>`, or the access key id of a SigV4
// `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/dynamodb/aws4_request, ...`, the only
// place an AWS client can carry it. Empty when there is none.
std::string_view PresentedCredential(std::string_view authorization) {
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos) return {};
  const std::string_view scheme = authorization.substr(0, space);
  std::string_view rest = authorization.substr(space + 1);
  while (rest.starts_with(' ')) rest.remove_prefix(1);
  if (EqualsIgnoreCase(scheme, "Bearer")) return rest;
  constexpr std::string_view kCredential = "Credential=";
  if (scheme != "AWS4-HMAC-SHA256" || !rest.starts_with(kCredential)) return {};
  rest.remove_prefix(kCredential.size());
  return rest.substr(0, rest.find_first_of("/, "));
}

bool Authorized(const std::vector<std::string>& tokens, const HttpRequest& request) {
  if (tokens.empty()) return true;
  const std::string_view presented = PresentedCredential(ToStd(request[http::field::authorization]));
  bool match = false;
  for (const std::string& token : tokens) match |= ConstantTimeEquals(presented, token);  // no early exit
  return match && !presented.empty();
}

std::string NextRequestId(ServerState& state) {
  char id[33];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(state.request_id_salt),
                static_cast<unsigned long long>(state.requests.fetch_add(1)));
  return id;
}

// `/` is DynamoDB's, everything else the native API's. Only /healthz answers without
// credentials, and the 401 looks the same whatever was asked for; a request that says it is a
// DynamoDB call gets it in DynamoDB's shape, so AWS clients print it.
HttpResponse Dispatch(ServerState& state, const HttpRequest& request, std::string_view* endpoint) {
  const std::string_view target = ToStd(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  // Only DynamoDB responses carry a request id; the native API is spared formatting one.
  const bool dynamodb = path == "/" || request.count("X-Amz-Target");
  const ApiContext context{state.options, *state.store, state.hooks, state.started,
                           dynamodb ? NextRequestId(state) : std::string(), state.read_helpers.get()};
  if (path != "/healthz" && !Authorized(state.options.bearer_tokens, request)) {
    *endpoint = "unauthorized";
    HttpResponse res =
        request.count("X-Amz-Target")
            ? DynamoDbError(context, http::status::unauthorized, "UnrecognizedClientException",
                            "The security token included in the request is invalid.")
            : NativeError(http::status::unauthorized, "Unauthorized", "missing or invalid credentials");
    res.set(http::field::www_authenticate, "Bearer");
    return res;
  }
  if (path == "/") return HandleDynamoDbRequest(context, request, endpoint);
  return HandleNativeRequest(context, request, endpoint);
}

// Why a request's body length is ambiguous, as the status and message to answer with.
struct FramingError {
  http::status status;
  std::string_view message;
};

// Beast reads a body by Content-Length or by the chunked coding, and lets through some framings
// that another HTTP hop (a proxy in front) may read differently: the bytes one takes for a body
// the other takes for a second request. RFC 9112 §6.1 and §6.3 make these errors. Equal
// duplicate Content-Lengths, which Beast accepts and RFC 9110 §8.6 allows either way, are
// refused too: no client sends them, and a hop that keeps only one may read a different one.
std::optional<FramingError> AmbiguousFraming(const HttpRequest& request) {
  const auto codings = request.equal_range(http::field::transfer_encoding);
  if (codings.first != codings.second) {
    if (request.version() < 11)
      return FramingError{http::status::bad_request, "Transfer-Encoding in HTTP/1.0"};
    if (request.count(http::field::content_length) > 0) {
      return FramingError{http::status::bad_request, "both Transfer-Encoding and Content-Length"};
    }
    int count = 0, chunked = 0;
    bool last_is_chunked = false;
    for (auto field = codings.first; field != codings.second; ++field) {  // one list over all fields
      const http::opt_token_list list{field->value()};
      if (!http::validate_list(list))
        return FramingError{http::status::bad_request, "malformed Transfer-Encoding"};
      for (const auto& coding : list) {
        ++count;
        last_is_chunked = beast::iequals(coding, "chunked");
        chunked += last_is_chunked;
      }
    }
    if (!last_is_chunked)
      return FramingError{http::status::bad_request, "the last transfer coding is not chunked"};
    if (chunked > 1) return FramingError{http::status::bad_request, "chunked more than once"};
    if (count > 1)
      return FramingError{http::status::not_implemented, "no transfer coding but chunked is supported"};
  }
  if (request.count(http::field::content_length) > 1 ||
      ToStd(request[http::field::content_length]).find(',') != std::string_view::npos) {
    return FramingError{http::status::bad_request, "more than one Content-Length"};
  }
  return std::nullopt;
}

// Whether header bytes hold an obsolete line folding (a line that starts with a space or a tab,
// continuing the previous field). Beast joins the lines, as RFC 9112 §5.2 allows; a hop that
// does not may read another value, so the request is refused instead. `bytes` are what one
// Beast put() consumed: whole fields, as Beast takes a field only once it has seen that the next
// line does not continue it, so a folding never straddles two calls.
bool HasObsFold(std::string_view bytes) {
  for (auto eol = bytes.find("\r\n"); eol != std::string_view::npos; eol = bytes.find("\r\n", eol + 2)) {
    if (eol + 2 < bytes.size() && (bytes[eol + 2] == ' ' || bytes[eol + 2] == '\t')) return true;
  }
  return false;
}

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
      HttpResponse response = NativeError(http::status::service_unavailable, "ServiceUnavailable",
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
    beast::error_code ec = http::error::need_more;
    if (buffer_.size() > 0) {
      const net::const_buffer bytes = buffer_.data();
      const std::size_t used = parser_->put(bytes, ec);
      const bool folded = HasObsFold({static_cast<const char*>(bytes.data()), used});
      buffer_.consume(used);
      if (folded) return Reject(http::status::bad_request, "BadRequest", "obsolete line folding");
    }
    if (ec == http::error::need_more) {
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
                    error->status == http::status::bad_request ? "BadRequest" : "NotImplemented",
                    "ambiguous message framing: " + std::string(error->message));
    }
    // A small body mostly comes with its header: parsed here, it costs no round through the
    // io_context, which http::async_read takes even when it has nothing to read.
    beast::error_code ec;
    if (!parser_->is_done() && buffer_.size() > 0) {
      parser_->eager(true);
      buffer_.consume(parser_->put(buffer_.data(), ec));
    }
    if (parser_->is_done() || (ec && ec != http::error::need_more)) return OnRead(ec);
    if (!CaughtMidRequest()) return;
    stream_.expires_at(request_started_ + state_->options.request_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t = 0) {
    if (ec == http::error::header_limit) {
      return Reject(
          http::status::request_header_fields_too_large, "HeaderTooLarge",
          "request header larger than " + std::to_string(state_->options.max_header_bytes) + " bytes");
    }
    if (ec == http::error::body_limit) {
      return Reject(http::status::payload_too_large, "PayloadTooLarge",
                    "request body larger than " + std::to_string(state_->options.max_body_bytes) + " bytes");
    }
    if (ec && ec != http::error::end_of_stream && ec != http::error::partial_message &&
        ec.category() == http::make_error_code(http::error::bad_target).category()) {
      return Reject(http::status::bad_request, "BadRequest", "malformed HTTP request: " + ec.message());
    }
    if (ec || !StartAnswering()) return;  // the peer left, timed out or was shed: nobody to answer
    const auto started = Clock::now();
    const HttpRequest& request = parser_->get();
    std::string_view endpoint = "other";
    HttpResponse response;
    try {
      ReadHelpers::ScopedRequest answering(*state_->read_helpers);
      response = Dispatch(*state_, request, &endpoint);
    } catch (const std::exception&) {
      // The APIs return errors as values; this is only for allocation failure and the like.
      response = NativeError(http::status::internal_server_error, "InternalError", "internal error");
    }
    response.version(request.version());
    Respond(std::move(response), endpoint, request.keep_alive(), started);
  }

  // A request the server will not read further: answered, then the connection closes, so
  // nothing after it is taken for a request.
  void Reject(http::status status, std::string_view code, const std::string& message) {
    if (!StartAnswering()) return;
    Respond(NativeError(status, code, message), "other", false, Clock::now());
  }

  void Respond(HttpResponse response, std::string_view endpoint, bool keep_alive, Clock::time_point started) {
    response.keep_alive(keep_alive);
    response.prepare_payload();
    if (state_->hooks.on_request) {
      state_->hooks.on_request(endpoint, std::chrono::duration<double>(Clock::now() - started).count());
    }
    Write(std::move(response));
  }

  void Write(HttpResponse response) {
    response_ = std::move(response);
    stream_.expires_after(state_->options.request_timeout);
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this(), response_.need_eof()));
  }

  void OnWrite(bool close, beast::error_code ec, std::size_t) {
    if (ec) return;
    shed_order_.store(kNothingReceived + Ticks(Clock::now()));
    if (close) return Linger();
    Read(true);
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
  std::optional<http::request_parser<http::string_body>> parser_;  // fresh per request
  bool idle_ = false;         // no byte of the next request yet
  bool mid_request_ = false;  // shed_order_ says so
  Clock::time_point request_started_;
  HttpResponse response_;
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
// where the idle vCPU halts, about 10 µs each way). Costs at most busy_poll of CPU per idle spell.
void RunIoThread(net::io_context& ioc, std::chrono::microseconds busy_poll) {
  using Clock = std::chrono::steady_clock;
  for (auto idle_since = Clock::now(); !ioc.stopped();) {
    if (ioc.poll_one() > 0) {
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since >= busy_poll) {
      ioc.run_one();
      idle_since = Clock::now();
    }
  }
}

Status ValidateOptions(const HttpServerOptions& options) {
  if (options.threads < 1) return Status::InvalidArgument("threads must be at least 1");
  if (options.read_helpers < 0) return Status::InvalidArgument("read_helpers must not be negative");
  if (options.busy_poll.count() < 0) return Status::InvalidArgument("busy_poll must not be negative");
  if (options.max_connections < 1) return Status::InvalidArgument("max_connections must be at least 1");
  if (options.max_limit < 1) return Status::InvalidArgument("max_limit must be at least 1");
  if (options.max_header_bytes < 1 || options.max_header_bytes > UINT32_MAX) {
    return Status::InvalidArgument("max_header_bytes must be from 1 to 2^32-1");
  }
  if (options.request_timeout.count() <= 0)
    return Status::InvalidArgument("request_timeout must be positive");
  if (options.header_timeout.count() <= 0) return Status::InvalidArgument("header_timeout must be positive");
  if (options.table_name.empty()) return Status::InvalidArgument("table_name must not be empty");
  for (const std::string& token : options.bearer_tokens) {
    if (token.empty()) return Status::InvalidArgument("a bearer token is empty");
  }
  return Status::OK();
}

}  // namespace

class HttpServer::Impl {
 public:
  std::shared_ptr<ServerState> state;
  // One per thread. Emptied by Stop: that frees the handlers still queued, and with them the
  // listener and every session, closing their sockets.
  std::vector<std::unique_ptr<net::io_context>> iocs;
  std::vector<std::thread> threads;
  uint16_t port = 0;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

uint16_t HttpServer::port() const { return impl_->port; }

Status HttpServer::Start(const HttpServerOptions& options, const storage::Store* store, HttpHooks hooks,
                         std::unique_ptr<HttpServer>* server) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  if (!store) return Status::InvalidArgument("no store");
  auto impl = std::make_unique<Impl>();
  impl->state = std::make_shared<ServerState>(options);
  impl->state->store = store;
  impl->state->hooks = std::move(hooks);
  impl->state->request_id_salt = std::random_device{}() * 0x100000000ull + std::random_device{}();
  impl->state->read_helpers = std::make_unique<ReadHelpers>(options.read_helpers);
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
  server->reset(new HttpServer(std::move(impl)));
  return Status::OK();
}

void HttpServer::Stop() {
  if (impl_->iocs.empty()) return;
  for (auto& ioc : impl_->iocs) ioc->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // The acceptor's io_context first: its pending accept holds a socket of another io_context,
  // which must still be there when that socket is destroyed.
  for (auto& ioc : impl_->iocs) ioc.reset();
  impl_->iocs.clear();
}

}  // namespace readingsd::query
