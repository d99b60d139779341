#include "http/auth.h"

#include <boost/beast/core/detail/base64.hpp>

#include "base/text.h"

namespace readingsd::http {
namespace {

// Time depends on the presented credential's length only, never on how much of a token it
// matches, so a client cannot guess a token byte by byte. `secret` is never empty.
bool ConstantTimeEquals(std::string_view presented, std::string_view secret) {
  unsigned diff = presented.size() != secret.size();
  for (std::size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

// The password of `Basic base64(user:password)`; "" when it does not decode.
std::string BasicPassword(std::string_view encoded) {
  namespace base64 = boost::beast::detail::base64;
  std::string decoded(base64::decoded_size(encoded.size()), '\0');
  const auto [written, read] = base64::decode(decoded.data(), encoded.data(), encoded.size());
  if (read != encoded.size()) return "";
  decoded.resize(written);
  const auto colon = decoded.find(':');
  return colon == std::string::npos ? "" : decoded.substr(colon + 1);
}

// The credential a request presents: `Bearer <token>`; `Token <token>` or the password of
// `Basic` (InfluxDB's clients); or the access key id of a SigV4
// `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/dynamodb/aws4_request, ...`, the only
// place an AWS client can carry it. Empty when there is none.
std::string PresentedCredential(std::string_view authorization) {
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos) return {};
  const std::string_view scheme = authorization.substr(0, space);
  std::string_view rest = authorization.substr(space + 1);
  while (rest.starts_with(' ')) rest.remove_prefix(1);
  if (EqualsIgnoreCase(scheme, "Bearer") || EqualsIgnoreCase(scheme, "Token")) return std::string(rest);
  if (EqualsIgnoreCase(scheme, "Basic")) return BasicPassword(rest);
  constexpr std::string_view kCredential = "Credential=";
  if (scheme != "AWS4-HMAC-SHA256" || !rest.starts_with(kCredential)) return {};
  rest.remove_prefix(kCredential.size());
  return std::string(rest.substr(0, rest.find_first_of("/, ")));
}

}  // namespace

bool Authenticator::Allows(const Request& request) const {
  return AllowsCredential(PresentedCredential(ToStd(request[field::authorization])));
}

bool Authenticator::AllowsCredential(std::string_view presented) const {
  if (tokens_.empty()) return true;
  bool match = false;
  for (const std::string& token : tokens_) match |= ConstantTimeEquals(presented, token);  // no early exit
  return match && !presented.empty();
}

}  // namespace readingsd::http
