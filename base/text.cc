#include "base/text.h"

#include <algorithm>
#include <cctype>

namespace readingsd {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(plus_is_space && in[i] == '+' ? ' ' : in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
    i += 2;
  }
  return true;
}

std::string PercentEncode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

Status ParseHostPort(std::string_view text, HostPort* out) {
  std::string_view host, port;
  if (text.starts_with('[')) {  // [v6]:port
    size_t close = text.find(']');
    if (close != std::string_view::npos && text.substr(close + 1).starts_with(':')) {
      host = text.substr(1, close - 1);
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) host = {};  // bare v6 is ambiguous
  }
  const bool digits = !port.empty() && port.size() <= 5 &&
                      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (host.empty() || !digits || std::stoi(std::string(port)) > 65535) {
    return Status::InvalidArgument("expected host:port, got \"" + std::string(text) + "\"");
  }
  out->host = std::string(host);
  out->port = static_cast<uint16_t>(std::stoi(std::string(port)));
  return Status::OK();
}

}  // namespace readingsd
