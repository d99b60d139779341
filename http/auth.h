// Bearer-token access control: which requests present one of the configured tokens.
#pragma once

#include <string>
#include <vector>

#include "http/handler.h"

namespace readingsd::http {

// Thread-safe: immutable after construction.
class Authenticator {
 public:
  // No tokens: every request is allowed. Tokens are never empty (the caller checks).
  explicit Authenticator(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}

  // Whether `request` carries `Authorization: Bearer <token>` or, for AWS clients that cannot
  // send one, a SigV4 Authorization header whose access key id is a token. Takes the same time
  // whichever token matches, and however much of one.
  bool Allows(const Request& request) const;

 private:
  std::vector<std::string> tokens_;
};

}  // namespace readingsd::http
