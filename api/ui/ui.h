// api/ui: the built-in web page under /ui/ (index.html, app.js, style.css and Debian's dygraphs),
// embedded into the binary at build time so that the installed service needs no extra files.
// The files hold no data, so they are served without credentials; the page itself asks for a
// bearer token when the API answers 401.
#pragma once

#include <optional>
#include <string_view>

#include "http/handler.h"

namespace readingsd::api::ui {

// The file at `path` (e.g. "/ui/", "/ui/app.js") with its Content-Type, a Content-Security-Policy
// that allows scripts and styles from this origin only (no inline script) and nosniff; nullopt
// when `path` is not one of the page's files. Thread-safe (reads constant data only).
std::optional<http::Response> Serve(std::string_view path, unsigned http_version, bool keep_alive);

}  // namespace readingsd::api::ui
