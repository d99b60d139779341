// The few text helpers more than one module needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace readingsd {

// ASCII case-insensitive equality (HTTP auth schemes, expression keywords).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Percent-decoding; in a query string '+' is a space, as every URL encoder writes one
// (curl --data-urlencode, URLSearchParams), while in a path it is itself. False when a '%' is not
// followed by two hex digits.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out);
// Percent-encoding of every byte but letters, digits and "-_.~:" (RFC 3986's unreserved, and ':'
// that a timestamp holds): a query parameter, a path segment, a header value without spaces.
std::string PercentEncode(std::string_view in);

struct HostPort {
  std::string host;  // without the brackets of "[v6]"
  uint16_t port = 0;
};

// "host:port" or "[v6]:port" with a port of 0..65535. A bare v6 address ("::1:8080") is
// ambiguous and refused. InvalidArgument when malformed.
Status ParseHostPort(std::string_view text, HostPort* out);

}  // namespace readingsd
