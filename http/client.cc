#include "http/client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

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

Status Exchange(const std::string& host, const std::string& port, Request req, std::chrono::milliseconds connect_timeout,
                std::chrono::milliseconds timeout, Response::Message* res) {
  const std::string url =
      std::string(req.method_string()) + " http://" + host + ":" + port + std::string(req.target()) + ": ";
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  req.set(field::host, host);
  req.prepare_payload();
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  // Asynchronous steps under one run_for: a tcp_stream's deadline binds only its asynchronous
  // operations, and a server that accepts and never answers must not hang the watchdog's probe
  // (and with it the main loop), `readingsd query` or a relayed request.
  std::optional<beast::error_code> outcome;
  bool connected = false;
  resolver.async_resolve(host, port, [&](beast::error_code ec, const tcp::resolver::results_type& endpoints) {
    if (ec) return void(outcome = ec);
    stream.expires_after(connect_timeout);
    stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return void(outcome = ec);
      connected = true;
      stream.expires_never();
      bhttp::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
        if (ec) return void(outcome = ec);
        bhttp::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) { outcome = ec; });
      });
    });
  });
  io.run_for(timeout);
  if (!outcome) {
    return Status::Unavailable(url + (connected ? "no answer within " : "no connection within ") +
                               std::to_string(timeout.count()) + " ms");
  }
  if (*outcome == beast::error::timeout) {
    return Status::Unavailable(url + "no connection within " + std::to_string(connect_timeout.count()) + " ms");
  }
  if (*outcome) return Status::Unavailable(url + outcome->message());
  *res = parser.release();
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return Status::OK();
}

Status Call(const std::string& host, const std::string& port, Request req, const std::string& bearer_token,
            std::chrono::milliseconds timeout, HttpGetResult* result) {
  if (!bearer_token.empty()) req.set(field::authorization, "Bearer " + bearer_token);
  Response::Message res;
  if (Status s = Exchange(host, port, std::move(req), timeout, timeout, &res); !s.ok()) return s;
  result->status = static_cast<int>(res.result_int());
  result->body = std::move(res.body());
  return Status::OK();
}

}  // namespace

Status HttpGet(const std::string& host, const std::string& port, const std::string& target,
               const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return Call(host, port, Request{verb::get, target, 11}, bearer_token, timeout, result);
}

Status HttpDelete(const std::string& host, const std::string& port, const std::string& target,
                  const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return Call(host, port, Request{verb::delete_, target, 11}, bearer_token, timeout, result);
}

Status HttpPost(const std::string& host, const std::string& port, const std::string& target,
                const std::string& bearer_token, const std::string& content_type, std::string body,
                std::chrono::milliseconds timeout, HttpGetResult* result) {
  Request req{verb::post, target, 11};
  req.set(field::content_type, content_type);
  req.body() = std::move(body);
  return Call(host, port, std::move(req), bearer_token, timeout, result);
}

Status Send(const std::string& host, const std::string& port, Request request,
            std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout, Response* response) {
  return Exchange(host, port, std::move(request), connect_timeout, timeout, response);
}

}  // namespace readingsd::http
