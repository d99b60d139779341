// A uniquely named directory that is removed, with everything in it, when the object goes away.
#pragma once

#include <string>
#include <string_view>

namespace readingsd::test {

class TempDir {
 public:
  // Creates $TMPDIR/<prefix>.XXXXXX (or under /tmp); throws std::system_error on failure.
  explicit TempDir(std::string_view prefix = "readingsd-test");
  ~TempDir();

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name; the file itself is not created.
  std::string File(std::string_view name) const;

 private:
  std::string path_;
};

}  // namespace readingsd::test
