// Mounts a test owns (root only): a small tmpfs to fill up, or a read-only directory. Unmounted
// on destruction, lazily (MNT_DETACH) if something still uses it, so no mount outlives a test.
// A test binary that uses this runs in a private mount namespace (entered before main, see
// mount.cc): its mounts are seen by it and its children only, and vanish when it exits, even
// by a crash. They are named "readingsd-test" in its /proc/self/mounts.
#pragma once

#include <memory>
#include <string>

namespace readingsd::test {

class Mount {
 public:
  // A tmpfs of `size` (mount(8) syntax: "8m") on `dir`, which is created if missing. nullptr
  // with `*error` set on failure; see Permitted().
  static std::unique_ptr<Mount> Tmpfs(const std::string& dir, const std::string& size, bool read_only,
                                      std::string* error);
  // `source` again at `dir` (created if missing), read-only.
  static std::unique_ptr<Mount> ReadOnlyBind(const std::string& source, const std::string& dir, std::string* error);
  // False when `error` came from a lack of privilege (not root, or a container without
  // CAP_SYS_ADMIN): a test then skips. Any other failure is a failure.
  static bool Permitted(const std::string& error);

  ~Mount();
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;

  const std::string& dir() const { return dir_; }
  // Remounts the tmpfs with a new size, keeping its files: "the disk got bigger".
  bool Resize(const std::string& size, std::string* error);
  // Idempotent; falls back to a lazy unmount when the mount is busy.
  void Unmount();

 private:
  explicit Mount(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  bool mounted_ = true;
};

}  // namespace readingsd::test
