// The page's files as the build embedded them (CMakeLists.txt generates embedded.cc).
#pragma once

#include <span>
#include <string_view>

namespace readingsd::api::ui {

struct EmbeddedFile {
  std::string_view name;          // under /ui/
  std::string_view content_type;
  std::string_view data;
};

extern const std::span<const EmbeddedFile> kEmbeddedFiles;

}  // namespace readingsd::api::ui
