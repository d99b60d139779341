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
#include <optional>
#include <random>
#include <thread>

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

// What all sessions share: fixed at Start, apart from the two counters.
struct ServerState {
  HttpServerOptions options;
  const storage::Store* store = nullptr;
  HttpHooks hooks;
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
  uint64_t request_id_salt = 0;  // random, so request ids differ across restarts
  std::atomic<uint64_t> requests{0};
  std::atomic<int> connections{0};
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

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
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

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)), state_(std::move(state)) {
    ++state_->connections;
  }
  ~Session() { --state_->connections; }

  void Run() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::Read, shared_from_this()));
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
    parser_->body_limit(state_->options.max_body_bytes);
    // One deadline for the whole request, not one per read: a client that trickles bytes (slow
    // loris) or idles on a keep-alive connection is cut off when it passes.
    stream_.expires_after(state_->options.request_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    const auto started = std::chrono::steady_clock::now();
    std::string_view endpoint = "other";
    HttpResponse response;
    bool keep_alive = false;
    if (ec == http::error::header_limit) {
      response = NativeError(
          http::status::request_header_fields_too_large, "HeaderTooLarge",
          "request header larger than " + std::to_string(state_->options.max_header_bytes) + " bytes");
    } else if (ec == http::error::body_limit) {
      response = NativeError(
          http::status::payload_too_large, "PayloadTooLarge",
          "request body larger than " + std::to_string(state_->options.max_body_bytes) + " bytes");
    } else if (ec && ec != http::error::end_of_stream && ec != http::error::partial_message &&
               ec.category() == http::make_error_code(http::error::bad_target).category()) {
      response =
          NativeError(http::status::bad_request, "BadRequest", "malformed HTTP request: " + ec.message());
    } else if (ec) {
      return Close();  // the peer left, timed out, or the socket failed: nobody to answer
    } else {
      const HttpRequest& request = parser_->get();
      keep_alive = request.keep_alive();
      try {
        ReadHelpers::ScopedRequest answering(*state_->read_helpers);
        response = Dispatch(*state_, request, &endpoint);
      } catch (const std::exception&) {
        // The APIs return errors as values; this is only for allocation failure and the like.
        response = NativeError(http::status::internal_server_error, "InternalError", "internal error");
      }
      response.version(request.version());
    }
    response.keep_alive(keep_alive);
    response.prepare_payload();
    if (state_->hooks.on_request) {
      state_->hooks.on_request(
          endpoint, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
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
    if (ec || close) return Close();
    Read();
  }

  // Half-close: the client reads the last response to its end before the socket goes.
  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::basic_stream<tcp, Executor> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;  // fresh per request
  HttpResponse response_;
  std::shared_ptr<ServerState> state_;
};

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
    // Sessions only ever leave concurrently, so counting here cannot overshoot the cap.
    if (state_->connections.load() >= state_->options.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), state_)->Run();
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
  impl->state = std::make_shared<ServerState>();
  impl->state->options = options;
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
