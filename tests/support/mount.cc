#include "tests/support/mount.h"

#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace readingsd::test {
namespace {

constexpr const char* kSource = "readingsd-test";

// Before main(), while the process still has one thread (a mount namespace belongs to a thread,
// and RocksDB's threads must see what the test sees), the process moves into a private mount
// namespace. Its mounts, and its children's, then never show outside it and vanish with it
// however it ends, even killed or aborted before a TearDown. Unprivileged, this fails quietly
// and so do the mounts (tests skip).
[[maybe_unused]] const bool kPrivateMountNamespace = [] {
  return unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}();
constexpr const char* kNotPermitted = "not permitted: ";

std::string Why(const std::string& what) {
  int e = errno;
  return std::string(e == EPERM || e == EACCES ? kNotPermitted : "") + what + ": " + std::strerror(e);
}

bool MakeDir(const std::string& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) *error = "mkdir " + dir + ": " + ec.message();
  return !ec;
}

}  // namespace

std::unique_ptr<Mount> Mount::Tmpfs(const std::string& dir, const std::string& size, bool read_only,
                                    std::string* error) {
  if (!MakeDir(dir, error)) return nullptr;
  std::string data = "size=" + size + ",mode=0700";
  if (mount(kSource, dir.c_str(), "tmpfs", read_only ? MS_RDONLY : 0, data.c_str()) != 0) {
    *error = Why("mount -t tmpfs -o " + std::string(read_only ? "ro," : "") + data + " " + dir);
    return nullptr;
  }
  return std::unique_ptr<Mount>(new Mount(dir));
}

std::unique_ptr<Mount> Mount::ReadOnlyBind(const std::string& source, const std::string& dir, std::string* error) {
  if (!MakeDir(dir, error)) return nullptr;
  if (mount(source.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    *error = Why("mount --bind " + source + " " + dir);
    return nullptr;
  }
  std::unique_ptr<Mount> m(new Mount(dir));
  // A bind mount takes the read-only flag only on a remount.
  if (mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
    *error = Why("mount -o remount,bind,ro " + dir);
    return nullptr;  // ~Mount unmounts the writable bind
  }
  return m;
}

bool Mount::Permitted(const std::string& error) { return !error.starts_with(kNotPermitted); }

Mount::~Mount() { Unmount(); }

bool Mount::Resize(const std::string& size, std::string* error) {
  std::string data = "size=" + size;
  if (mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT, data.c_str()) != 0) {
    *error = Why("mount -o remount," + data + " " + dir_);
    return false;
  }
  return true;
}

void Mount::Unmount() {
  if (!mounted_) return;
  mounted_ = false;
  if (umount2(dir_.c_str(), 0) != 0) umount2(dir_.c_str(), MNT_DETACH);
}

}  // namespace readingsd::test
