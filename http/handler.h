// The whole contract between http::Server and what it serves: one whole request in, one
// response out. The server knows no API; a Handler (api/router.h) picks one.
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <string_view>

namespace readingsd::http {

using boost::beast::http::field;
using boost::beast::http::status;
using boost::beast::http::verb;
using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// Beast 1.74 hands out boost::string_view.
inline std::string_view ToStd(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Called from every I/O thread at once: implementations are thread-safe.
class Handler {
 public:
  virtual ~Handler() = default;
  // Status, headers and body; the server adds version, keep-alive and Content-Length.
  // `endpoint` (preset to "other", static storage) labels the request for ServerHooks::on_request.
  virtual Response Handle(const Request& request, std::string_view* endpoint) = 0;
  // The answer to what the server refuses itself: malformed or ambiguous framing (400, 501),
  // too large (413, 431), every connection busy (503), or Handle threw (500).
  virtual Response Error(status status, std::string_view code, std::string_view message) = 0;
};

}  // namespace readingsd::http
