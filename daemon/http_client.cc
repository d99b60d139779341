#include "daemon/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace readingsd::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

std::string LoopbackFor(const std::string& host) {
  if (host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

Status HttpGet(const std::string& host, const std::string& port, const std::string& target,
               const std::string& bearer_token, std::chrono::milliseconds timeout, HttpGetResult* result) {
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host, port));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, host);
    if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    result->status = static_cast<int>(res.result_int());
    result->body = std::move(res.body());
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return Status::OK();
  } catch (const std::exception& e) {
    return Status::Unavailable("GET http://" + host + ":" + port + target + ": " + e.what());
  }
}

}  // namespace readingsd::daemon
