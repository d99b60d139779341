// Request bodies as the write endpoints read them: decompressed when gzip, and bounded either
// way. Internal to api/write/.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/handler.h"

namespace readingsd::api::write {

enum class BodyError {
  kNone,
  kMalformed,            // gzip that does not inflate: 400
  kUnsupportedEncoding,  // neither identity nor gzip: 415
  kTooLarge,             // more than max_bytes, decompressed: 413
};

// The request's body after its Content-Encoding: `identity` (or none) as it is, `gzip` inflated
// (several members in a row, as gzip writes them, are one body). Inflating stops as soon as the
// body would exceed `max_bytes`, so a gzip bomb costs at most that much memory. *body views the
// request or *storage; *message says what went wrong.
BodyError DecodedBody(const http::Request& request, std::size_t max_bytes, std::string* storage,
                      std::string_view* body, std::string* message);

// A query parameter of `target`, percent-decoded; false when absent or malformed.
bool QueryParam(std::string_view target, std::string_view name, std::string* value);

}  // namespace readingsd::api::write
