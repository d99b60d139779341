#include "http/compress.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>

#include "base/text.h"

namespace readingsd::http {
namespace {

// Zlib's fastest level: the body is compressed on the I/O thread that answers the request.
constexpr int kLevel = Z_BEST_SPEED;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The q of one element's parameters ("q=0.5"); 1 without one, -1 when it does not parse (the
// element is then ignored).
double QValue(std::string_view params) {
  double q = 1;
  while (!params.empty()) {
    const auto semicolon = params.find(';');
    const std::string_view param = Trim(params.substr(0, semicolon));
    params = semicolon == std::string_view::npos ? std::string_view() : params.substr(semicolon + 1);
    if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
    const std::string_view value = param.substr(2);
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
    if (ec != std::errc() || end != value.data() + value.size() || q < 0 || q > 1) return -1;
  }
  return q;
}

}  // namespace

Coding PreferredCoding(std::string_view accept_encoding) {
  double gzip = -1, deflate = -1, any = 0;  // -1: not named
  while (!accept_encoding.empty()) {
    const auto comma = accept_encoding.find(',');
    const std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const auto semicolon = element.find(';');
    const std::string_view coding = Trim(element.substr(0, semicolon));
    const double q = QValue(semicolon == std::string_view::npos ? std::string_view() : element.substr(semicolon + 1));
    if (q < 0) continue;
    if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
      gzip = std::max(gzip, q);
    } else if (EqualsIgnoreCase(coding, "deflate")) {
      deflate = std::max(deflate, q);
    } else if (coding == "*") {
      any = q;
    }
  }
  if (gzip < 0) gzip = any;
  if (deflate < 0) deflate = any;
  if (gzip <= 0 && deflate <= 0) return Coding::kIdentity;
  return gzip >= deflate ? Coding::kGzip : Coding::kDeflate;
}

Deflater::Deflater(Coding coding) : z_(std::make_unique<z_stream>()) {
  const int window_bits = coding == Coding::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
  ok_ = deflateInit2(z_.get(), kLevel, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

Deflater::~Deflater() {
  if (ok_) deflateEnd(z_.get());
}

bool Deflater::Append(std::string_view in, bool last, std::string* out) {
  if (!ok_) return false;
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_->avail_in = static_cast<uInt>(in.size());
  const int flush = last ? Z_FINISH : Z_SYNC_FLUSH;
  char chunk[16 << 10];
  int rc;
  do {
    z_->next_out = reinterpret_cast<Bytef*>(chunk);
    z_->avail_out = sizeof chunk;
    rc = deflate(z_.get(), flush);
    out->append(chunk, sizeof chunk - z_->avail_out);
    // A flush is whole once deflate leaves room unused; Z_FINISH goes on to Z_STREAM_END.
  } while (rc == Z_OK && (last || z_->avail_out == 0));
  return last ? rc == Z_STREAM_END : rc == Z_OK || rc == Z_BUF_ERROR;
}

bool Compress(std::string_view in, Coding coding, std::string* out) {
  out->clear();
  return Deflater(coding).Append(in, /*last=*/true, out);
}

Coding ResponseCoding(std::string_view accept_encoding, std::size_t min_bytes, Response* response) {
  if (min_bytes == 0 || (!response->stream && response->body().size() < min_bytes) ||
      response->count(field::content_encoding)) {
    return Coding::kIdentity;
  }
  const std::string_view vary = ToStd((*response)[field::vary]);
  response->set(field::vary, vary.empty() ? "Accept-Encoding" : std::string(vary) + ", Accept-Encoding");
  const Coding coding = PreferredCoding(accept_encoding);
  if (coding != Coding::kIdentity) response->set(field::content_encoding, coding == Coding::kGzip ? "gzip" : "deflate");
  return coding;
}

void CompressResponse(std::string_view accept_encoding, std::size_t min_bytes, Response* response) {
  const Coding coding = ResponseCoding(accept_encoding, min_bytes, response);
  std::string compressed;
  if (coding == Coding::kIdentity) return;
  if (!Compress(response->body(), coding, &compressed)) {
    response->erase(field::content_encoding);
    return;
  }
  response->body() = std::move(compressed);
}

}  // namespace readingsd::http
