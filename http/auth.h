// Bearer-token access control: which requests present one of the configured tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/handler.h"

namespace readingsd::http {

// Thread-safe: immutable after construction.
class Authenticator {
 public:
  // No tokens: every request is allowed. Tokens are never empty (the caller checks).
  explicit Authenticator(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}

  // Whether `request` carries `Authorization: Bearer <token>`; for InfluxDB's clients
  // `Token <token>` or `Basic` with a token as the password; for AWS clients that cannot send
  // one, a SigV4 Authorization header whose access key id is a token. Takes the same time
  // whichever token matches, and however much of one.
  bool Allows(const Request& request) const;
  // Whether `presented` is a token (a credential the request carries elsewhere than in
  // Authorization); "" never is, unless there are no tokens.
  bool AllowsCredential(std::string_view presented) const;

 private:
  std::vector<std::string> tokens_;
};

}  // namespace readingsd::http
