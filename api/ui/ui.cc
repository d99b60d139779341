#include "api/ui/ui.h"

#include <string>

#include "api/ui/embedded.h"

namespace readingsd::api::ui {

std::optional<http::Response> Serve(std::string_view path, unsigned http_version, bool keep_alive) {
  static constexpr std::string_view kPrefix = "/ui/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view name = path.substr(kPrefix.size());
  if (name.empty()) name = "index.html";
  for (const EmbeddedFile& file : kEmbeddedFiles) {
    if (file.name != name) continue;
    http::Response res{http::status::ok, http_version};
    res.set(http::field::content_type, std::string(file.content_type));
    res.set("Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    res.set("X-Content-Type-Options", "nosniff");
    res.set(http::field::cache_control, "no-cache");
    res.body() = std::string(file.data);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
  }
  return std::nullopt;
}

}  // namespace readingsd::api::ui
