#include "api/write/body.h"

#include <zlib.h>

#include "base/text.h"

namespace readingsd::api::write {

BodyError DecodedBody(const http::Request& request, std::size_t max_bytes, std::string* storage,
                      std::string_view* body, std::string* message) {
  const std::string_view encoding = http::ToStd(request[http::field::content_encoding]);
  const std::string& raw = request.body();
  if (encoding.empty() || EqualsIgnoreCase(encoding, "identity")) {
    if (raw.size() > max_bytes) {
      *message = "body of " + std::to_string(raw.size()) + " bytes exceeds " + std::to_string(max_bytes);
      return BodyError::kTooLarge;
    }
    *body = raw;
    return BodyError::kNone;
  }
  if (!EqualsIgnoreCase(encoding, "gzip") && !EqualsIgnoreCase(encoding, "x-gzip")) {
    *message = "Content-Encoding " + std::string(encoding.substr(0, 40)) + " is not supported; send gzip or none";
    return BodyError::kUnsupportedEncoding;
  }
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    *message = "cannot start inflating";
    return BodyError::kMalformed;
  }
  storage->clear();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  BodyError error = BodyError::kNone;
  char chunk[64 << 10];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    const int rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t produced = sizeof chunk - z.avail_out;
    if (storage->size() + produced > max_bytes) {
      *message = "body exceeds " + std::to_string(max_bytes) + " bytes once decompressed";
      error = BodyError::kTooLarge;
      break;
    }
    storage->append(chunk, produced);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) {  // Z_BUF_ERROR: no progress, the input ended inside a member
      *message = std::string("gzip body does not inflate: ") + (z.msg ? z.msg : "truncated");
      error = BodyError::kMalformed;
      break;
    }
  }
  inflateEnd(&z);
  if (error == BodyError::kNone) *body = *storage;
  return error;
}

bool QueryParam(std::string_view target, std::string_view name, std::string* value) {
  const auto question = target.find('?');
  if (question == std::string_view::npos) return false;
  for (std::string_view query = target.substr(question + 1); !query.empty();) {
    const auto amp = query.find('&');
    const std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = piece.find('=');
    if (piece.substr(0, eq) != name) continue;
    return PercentDecode(eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1), true, value);
  }
  return false;
}

}  // namespace readingsd::api::write
