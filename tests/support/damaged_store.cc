#include "tests/support/damaged_store.h"

#include <date/date.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "storage/key.h"
#include "storage/store.h"

namespace readingsd::test {

namespace fs = std::filesystem;

namespace {

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

std::string DeviceName(int d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "dev%05d", d);
  return buf;
}

}  // namespace

BuiltStore BuildStore(const std::string& dir, int devices, int flushed_per_device, int wal_per_device) {
  BuiltStore built;
  for (int d = 0; d < devices; ++d) built.devices.push_back(DeviceName(d));
  std::unique_ptr<storage::Store> store;
  Check(storage::Store::Open({.path = dir}, &store), "open " + dir);
  // One batch per time step across all devices, as a broker's batches arrive.
  auto write = [&](int from, int to, StoredKeySet* keys) {
    for (int i = from; i < to; ++i) {
      std::vector<storage::Reading> batch;
      for (const auto& device : built.devices) {
        std::string sk;
        auto t = date::sys_days(date::year(2026) / 6 / 23) + std::chrono::minutes(i);
        Check(storage::NormalizeTimestamp(date::format("%FT%TZ", t), &sk), "timestamp");
        batch.push_back({device, sk, {{"temperature", 20.0 + i % 10}, {"humidity", 40.0 + i % 7}}});
        keys->emplace(device, sk);
      }
      Check(store->Write(batch), "write");
    }
  };
  write(0, flushed_per_device, &built.flushed);
  Check(store->CompactAll(), "compact");
  write(flushed_per_device, flushed_per_device + wal_per_device, &built.in_wal);
  store.reset();
  return built;
}

DirSnapshot Snapshot(const std::string& dir) {
  DirSnapshot snap;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string name = fs::relative(e.path(), dir).string();
    if (e.is_directory()) {
      snap[name] = "<dir>";
      continue;
    }
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    snap[name] = text.str();
  }
  return snap;
}

std::string SnapshotDiff(const DirSnapshot& before, const DirSnapshot& after) {
  std::string out;
  for (const auto& [name, content] : before) {
    auto it = after.find(name);
    if (it == after.end()) {
      out += " removed:" + name;
    } else if (it->second != content) {
      out += " changed:" + name;
    }
  }
  for (const auto& [name, _] : after) {
    if (!before.contains(name)) out += " added:" + name;
  }
  return out;
}

void CopyDir(const std::string& from, const std::string& to) { fs::copy(from, to, fs::copy_options::recursive); }

std::string NewestFile(const std::string& dir, const std::string& suffix) {
  std::string best;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if ((name.ends_with(suffix) || name.starts_with(suffix)) && name > best) best = name;
  }
  if (best.empty()) throw std::runtime_error("no " + suffix + " file in " + dir);
  return dir + "/" + best;
}

void CutFile(const std::string& path, uint64_t keep_bytes) { fs::resize_file(path, keep_bytes); }

void OverwriteFile(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot overwrite " + path);
}

void FlipBit(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  if (!f) throw std::runtime_error("cannot flip a bit in " + path);
}

uint64_t ZeroWalBlockTail(const std::string& path) {
  constexpr uint64_t kBlock = 32768, kHeader = 7;
  std::string wal = Snapshot(fs::path(path).parent_path()).at(fs::path(path).filename().string());
  auto byte = [&](uint64_t at) { return static_cast<unsigned char>(wal[at]); };
  for (uint64_t next = kBlock; next + kHeader <= wal.size(); next += kBlock) {
    if (byte(next + 6) != 1 && byte(next + 6) != 2) continue;
    for (uint64_t at = next - kBlock; at + kHeader <= next; at += kHeader + (byte(at + 4) | byte(at + 5) << 8)) {
      if (at >= next - kBlock / 2 && byte(at + 6) == 1) {
        OverwriteFile(path, at, std::string(next - at, '\0'));
        return next - at;
      }
    }
  }
  return 0;
}

uint64_t FileSize(const std::string& path) { return fs::file_size(path); }

}  // namespace readingsd::test
