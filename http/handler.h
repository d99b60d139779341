// The whole contract between http::Server and what it serves: one whole request in, one
// response out, its body whole or made while it is sent (BodyStream). The server knows no API;
// a Handler (api/router.h) picks one.
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace readingsd::http {

using boost::beast::http::field;
using boost::beast::http::status;
using boost::beast::http::verb;
using Request = boost::beast::http::request<boost::beast::http::string_body>;

// A response body made part by part while the server sends it, so that neither the handler nor
// the server holds it whole. Called on the connection's I/O thread only, one call at a time, so
// an implementation needs no locking; it may be destroyed before it is done (the client left).
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // Appends the next part of the body to `*out` (a part may be empty) and sets `*done` with
  // the last. Each call's work should be small: other connections of the thread
  // wait meanwhile. An error after the first part can no longer change the status: the server
  // then closes the connection without ending the body, which a client sees as a cut answer.
  virtual Status Next(std::string* out, bool* done) = 0;
};

// Status, headers and a body: the string, or `stream` when set (the string is then unused).
class Response : public boost::beast::http::response<boost::beast::http::string_body> {
 public:
  using Message = boost::beast::http::response<boost::beast::http::string_body>;
  using Message::Message;
  std::unique_ptr<BodyStream> stream;
};

// Beast 1.74 hands out boost::string_view.
inline std::string_view ToStd(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Called from every I/O thread at once: implementations are thread-safe.
class Handler {
 public:
  virtual ~Handler() = default;
  // Status, headers and body; the server adds version, keep-alive and Content-Length (or, for
  // a stream, Transfer-Encoding: chunked). `endpoint` (preset to "other", static storage)
  // labels the request for ServerHooks::on_request.
  virtual Response Handle(const Request& request, std::string_view* endpoint) = 0;
  // The answer to what the server refuses itself: malformed or ambiguous framing (400, 501),
  // too large (413, 431), every connection busy (503), or Handle threw (500).
  virtual Response Error(status status, std::string_view code, std::string_view message) = 0;
};

}  // namespace readingsd::http
