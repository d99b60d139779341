// Response compression (RFC 9110 §12.5.3, §8.4): the server applies it to every response, so
// no handler knows of it. gzip and deflate (zlib format, as HTTP's "deflate" is) by zlib.
//
// A whole body (bounded by its handler's caps, a page by max_page_bytes) is compressed in one
// pass, output taken in fixed chunks, so memory holds the body and its compressed copy and
// nothing sized by deflateBound; Beast writes it with its Content-Length. A streamed body
// (BodyStream) goes through one Deflater part by part, each part flushed, so the client can
// inflate every chunk as it arrives and nothing holds the whole body. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "http/handler.h"

struct z_stream_s;  // zlib's, kept out of this header

namespace readingsd::http {

enum class Coding { kIdentity, kGzip, kDeflate };

// The coding to answer a request with, given its Accept-Encoding: of gzip (or x-gzip) and
// deflate, the one with the highest q-value above 0, gzip on a tie; a coding the header does not
// name takes the q of `*`. kIdentity when neither is acceptable or there is no header. A client
// that refuses identity too (identity;q=0) still gets identity: better an answer it may read
// than a 406 it surely cannot.
Coding PreferredCoding(std::string_view accept_encoding);

// One compressed stream fed in parts. Not thread-safe: one per body.
class Deflater {
 public:
  explicit Deflater(Coding coding);  // not kIdentity
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // Appends `in` compressed to *out, flushed so that all of it can be inflated from what was
  // appended so far; `last` ends the stream (its trailer). False only when zlib fails (memory).
  bool Append(std::string_view in, bool last, std::string* out);

 private:
  std::unique_ptr<z_stream_s> z_;
  bool ok_;
};

// `in` compressed as `coding` (not kIdentity) into *out; false only when zlib fails (memory).
bool Compress(std::string_view in, Coding coding, std::string* out);

// The coding `response` gets for a request that sent `accept_encoding`: kIdentity for a
// response with a Content-Encoding already (Prometheus' snappy), when `min_bytes` is 0 (never),
// or for a whole body under `min_bytes`; a stream is taken to be large. A response it may
// compress gets Vary: Accept-Encoding whether compressed or not (its bytes depend on it), and
// Content-Encoding when compressed.
Coding ResponseCoding(std::string_view accept_encoding, std::size_t min_bytes, Response* response);

// Compresses a whole body by ResponseCoding; the body stays as it is when zlib fails.
void CompressResponse(std::string_view accept_encoding, std::size_t min_bytes, Response* response);

}  // namespace readingsd::http
