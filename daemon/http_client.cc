#include "daemon/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace readingsd::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

std::string LoopbackFor(const std::string& host) {
  if (host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

namespace {

Status Exchange(const std::string& host, const std::string& port, http::request<http::string_body> req,
                const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  const std::string url =
      std::string(req.method_string()) + " http://" + host + ":" + port + std::string(req.target()) + ": ";
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  req.set(http::field::host, host);
  if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  // Asynchronous steps under one run_for: a tcp_stream's deadline binds only its asynchronous
  // operations, and a server that accepts and never answers must not hang the watchdog's probe
  // (and with it the main loop) or `readingsd query`.
  std::optional<beast::error_code> outcome;
  resolver.async_resolve(host, port, [&](beast::error_code ec, const tcp::resolver::results_type& endpoints) {
    if (ec) return void(outcome = ec);
    stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return void(outcome = ec);
      http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
        if (ec) return void(outcome = ec);
        http::async_read(stream, buffer, res, [&](beast::error_code ec, std::size_t) { outcome = ec; });
      });
    });
  });
  io.run_for(timeout);
  if (!outcome) return Status::Unavailable(url + "no answer within " + std::to_string(timeout.count()) + " ms");
  if (*outcome) return Status::Unavailable(url + outcome->message());
  result->status = static_cast<int>(res.result_int());
  result->body = std::move(res.body());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return Status::OK();
}

}  // namespace

Status HttpGet(const std::string& host, const std::string& port, const std::string& target,
               const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return Exchange(host, port, http::request<http::string_body>{http::verb::get, target, 11}, bearer_token, timeout,
                  result);
}

Status HttpDelete(const std::string& host, const std::string& port, const std::string& target,
                  const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  return Exchange(host, port, http::request<http::string_body>{http::verb::delete_, target, 11}, bearer_token, timeout,
                  result);
}

Status HttpPost(const std::string& host, const std::string& port, const std::string& target,
                const std::string& bearer_token, const std::string& content_type, std::string body,
                std::chrono::milliseconds timeout, HttpGetResult* result) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::content_type, content_type);
  req.body() = std::move(body);
  return Exchange(host, port, std::move(req), bearer_token, timeout, result);
}

}  // namespace readingsd::daemon
