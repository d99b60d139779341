// Response compression (RFC 9110 §12.5.3, §8.4): the server applies it to every response, so
// no handler knows of it. gzip and deflate (zlib format, as HTTP's "deflate" is) by zlib.
//
// A handler builds its body whole, bounded by its own caps (a page by max_page_bytes), so the
// body is compressed whole too: one deflate pass over it, output taken in fixed chunks, so
// memory holds the body and its compressed copy and nothing sized by deflateBound. Beast then
// writes the compressed body with its Content-Length. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/handler.h"

namespace readingsd::http {

enum class Coding { kIdentity, kGzip, kDeflate };

// The coding to answer a request with, given its Accept-Encoding: of gzip (or x-gzip) and
// deflate, the one with the highest q-value above 0, gzip on a tie; a coding the header does not
// name takes the q of `*`. kIdentity when neither is acceptable or there is no header. A client
// that refuses identity too (identity;q=0) still gets identity: better an answer it may read
// than a 406 it surely cannot.
Coding PreferredCoding(std::string_view accept_encoding);

// `in` compressed as `coding` (not kIdentity) into *out; false only when zlib fails (memory).
bool Compress(std::string_view in, Coding coding, std::string* out);

// Compresses `response`'s body for a request that sent `accept_encoding`, when the body holds
// at least `min_bytes` (0 = never) and has no Content-Encoding yet (Prometheus' snappy). Such
// a response gets Vary: Accept-Encoding whether compressed or not, since its bytes depend on it.
void CompressResponse(std::string_view accept_encoding, std::size_t min_bytes, Response* response);

}  // namespace readingsd::http
