#include "http/client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <optional>
#include <vector>

namespace readingsd::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = boost::asio::ip::tcp;

std::string LoopbackFor(const std::string& host) {
  if (host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

namespace {

// An answer relayed from another node may be a whole page of CSV; far above any page's bound.
constexpr std::uint64_t kMaxAnswerBytes = 256u << 20;

// One request and its answer, on an io_context another runs: the steps are asynchronous, so
// that one run_for bounds them all (a tcp_stream's deadline binds only its asynchronous
// operations, and a server that accepts and never answers must not hang the watchdog's probe, and
// with it the main loop, `readingsd query` or a relayed request), and several go at once.
class Exchange {
 public:
  Exchange(boost::asio::io_context& io, const std::string& host, const std::string& port, Request req,
           std::chrono::milliseconds connect_timeout)
      : url_(std::string(req.method_string()) + " http://" + host + ":" + port + std::string(req.target()) + ": "),
        host_(host),
        port_(port),
        req_(std::move(req)),
        connect_timeout_(connect_timeout),
        resolver_(io),
        stream_(io) {
    req_.set(field::host, host);
    req_.prepare_payload();
    parser_.body_limit(kMaxAnswerBytes);
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void Start() {
    resolver_.async_resolve(host_, port_, [this](beast::error_code ec, const tcp::resolver::results_type& endpoints) {
      if (ec) return void(outcome_ = ec);
      stream_.expires_after(connect_timeout_);
      stream_.async_connect(endpoints, [this](beast::error_code ec, const tcp::endpoint&) {
        if (ec) return void(outcome_ = ec);
        connected_ = true;
        stream_.expires_never();
        bhttp::async_write(stream_, req_, [this](beast::error_code ec, std::size_t) {
          if (ec) return void(outcome_ = ec);
          bhttp::async_read(stream_, buffer_, parser_, [this](beast::error_code ec, std::size_t) { outcome_ = ec; });
        });
      });
    });
  }

  // Once the io_context ran for `timeout` (or out of work).
  Status Finish(std::chrono::milliseconds timeout, Response::Message* res) {
    if (!outcome_) {
      return Status::Unavailable(url_ + (connected_ ? "no answer within " : "no connection within ") +
                                 std::to_string(timeout.count()) + " ms");
    }
    if (*outcome_ == beast::error::timeout) {
      return Status::Unavailable(url_ + "no connection within " + std::to_string(connect_timeout_.count()) + " ms");
    }
    if (*outcome_) return Status::Unavailable(url_ + outcome_->message());
    *res = parser_.release();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return Status::OK();
  }

 private:
  const std::string url_;  // for the messages
  const std::string host_;
  const std::string port_;
  Request req_;
  const std::chrono::milliseconds connect_timeout_;
  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  bhttp::response_parser<bhttp::string_body> parser_;
  std::optional<beast::error_code> outcome_;
  bool connected_ = false;
};

Status SendOne(const std::string& host, const std::string& port, Request req, std::chrono::milliseconds connect_timeout,
               std::chrono::milliseconds timeout, Response::Message* res) {
  boost::asio::io_context io;
  Exchange exchange(io, host, port, std::move(req), connect_timeout);
  exchange.Start();
  io.run_for(timeout);
  return exchange.Finish(timeout, res);
}

Status SendAuthorized(const std::string& host, const std::string& port, Request req, const std::string& bearer_token,
                      std::chrono::milliseconds timeout, HttpGetResult* result) {
  if (!bearer_token.empty()) req.set(field::authorization, "Bearer " + bearer_token);
  Response::Message res;
  if (Status s = SendOne(host, port, std::move(req), timeout, timeout, &res); !s.ok()) return s;
  result->status = static_cast<int>(res.result_int());
  result->body = std::move(res.body());
  return Status::OK();
}

}  // namespace

Status HttpGet(const std::string& host, const std::string& port, const std::string& target,
               const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return SendAuthorized(host, port, Request{verb::get, target, 11}, bearer_token, timeout, result);
}

Status HttpDelete(const std::string& host, const std::string& port, const std::string& target,
                  const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return SendAuthorized(host, port, Request{verb::delete_, target, 11}, bearer_token, timeout, result);
}

Status HttpPost(const std::string& host, const std::string& port, const std::string& target,
                const std::string& bearer_token, const std::string& content_type, std::string body,
                std::chrono::milliseconds timeout, HttpGetResult* result) {
  Request req{verb::post, target, 11};
  req.set(field::content_type, content_type);
  req.body() = std::move(body);
  return SendAuthorized(host, port, std::move(req), bearer_token, timeout, result);
}

Status Send(const std::string& host, const std::string& port, Request request,
            std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout, Response* response) {
  return SendOne(host, port, std::move(request), connect_timeout, timeout, response);
}

void SendEach(std::span<Call> calls, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout) {
  boost::asio::io_context io;
  std::vector<std::unique_ptr<Exchange>> exchanges;
  exchanges.reserve(calls.size());
  for (Call& call : calls) {
    exchanges.push_back(std::make_unique<Exchange>(io, call.host, call.port, std::move(call.request), connect_timeout));
    exchanges.back()->Start();
  }
  io.run_for(timeout);
  for (std::size_t i = 0; i < calls.size(); ++i) calls[i].status = exchanges[i]->Finish(timeout, &calls[i].response);
}

}  // namespace readingsd::http
