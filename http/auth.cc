#include "http/auth.h"

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

// The credential a request presents: `Bearer <token>`, or the access key id of a SigV4
// `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/dynamodb/aws4_request, ...`, the only
// place an AWS client can carry it. Empty when there is none.
std::string_view PresentedCredential(std::string_view authorization) {
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos) return {};
  const std::string_view scheme = authorization.substr(0, space);
  std::string_view rest = authorization.substr(space + 1);
  while (rest.starts_with(' ')) rest.remove_prefix(1);
  if (EqualsIgnoreCase(scheme, "Bearer")) return rest;
  constexpr std::string_view kCredential = "Credential=";
  if (scheme != "AWS4-HMAC-SHA256" || !rest.starts_with(kCredential)) return {};
  rest.remove_prefix(kCredential.size());
  return rest.substr(0, rest.find_first_of("/, "));
}

}  // namespace

bool Authenticator::Allows(const Request& request) const {
  if (tokens_.empty()) return true;
  const std::string_view presented = PresentedCredential(ToStd(request[field::authorization]));
  bool match = false;
  for (const std::string& token : tokens_) match |= ConstantTimeEquals(presented, token);  // no early exit
  return match && !presented.empty();
}

}  // namespace readingsd::http
