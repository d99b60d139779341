// Request smuggling defences: framings whose body length another HTTP hop could read differently.
#pragma once

#include <optional>
#include <string_view>

#include "http/handler.h"

namespace readingsd::http {

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
std::optional<FramingError> AmbiguousFraming(const Request& request);

// Whether header bytes hold an obsolete line folding (a line that starts with a space or a tab,
// continuing the previous field). Beast joins the lines, as RFC 9112 §5.2 allows; a hop that
// does not may read another value, so the request is refused instead. `bytes` are what one
// Beast put() consumed: whole fields, as Beast takes a field only once it has seen that the next
// line does not continue it, so a folding never straddles two calls.
bool HasObsFold(std::string_view bytes);

}  // namespace readingsd::http
