#include "http/framing.h"

#include <boost/beast/http/rfc7230.hpp>

namespace readingsd::http {

namespace beast = boost::beast;

std::optional<FramingError> AmbiguousFraming(const Request& request) {
  const auto codings = request.equal_range(http::field::transfer_encoding);
  if (codings.first != codings.second) {
    if (request.version() < 11)
      return FramingError{status::bad_request, "Transfer-Encoding in HTTP/1.0"};
    if (request.count(http::field::content_length) > 0) {
      return FramingError{status::bad_request, "both Transfer-Encoding and Content-Length"};
    }
    int count = 0, chunked = 0;
    bool last_is_chunked = false;
    for (auto field = codings.first; field != codings.second; ++field) {  // one list over all fields
      const beast::http::opt_token_list list{field->value()};
      if (!beast::http::validate_list(list))
        return FramingError{status::bad_request, "malformed Transfer-Encoding"};
      for (const auto& coding : list) {
        ++count;
        last_is_chunked = beast::iequals(coding, "chunked");
        chunked += last_is_chunked;
      }
    }
    if (!last_is_chunked)
      return FramingError{status::bad_request, "the last transfer coding is not chunked"};
    if (chunked > 1) return FramingError{status::bad_request, "chunked more than once"};
    if (count > 1)
      return FramingError{status::not_implemented, "no transfer coding but chunked is supported"};
  }
  if (request.count(http::field::content_length) > 1 ||
      ToStd(request[http::field::content_length]).find(',') != std::string_view::npos) {
    return FramingError{status::bad_request, "more than one Content-Length"};
  }
  return std::nullopt;
}

bool HasObsFold(std::string_view bytes) {
  for (auto eol = bytes.find("\r\n"); eol != std::string_view::npos; eol = bytes.find("\r\n", eol + 2)) {
    if (eol + 2 < bytes.size() && (bytes[eol + 2] == ' ' || bytes[eol + 2] == '\t')) return true;
  }
  return false;
}

}  // namespace readingsd::http
