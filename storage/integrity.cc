#include "storage/integrity.h"

#include <stdlib.h>
#include <unistd.h>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/sst_file_reader.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/key.h"
#include "storage/rocks_options.h"
#include "storage/store_dir.h"

namespace readingsd::storage {
namespace {

namespace fs = std::filesystem;
using internal::FromRocks;

// The directory's own name without a trailing slash, so copies land beside it, not inside.
std::string Normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Holds RocksDB's LOCK while a repair reads the directory: no daemon may write meanwhile.
class DirLock {
 public:
  ~DirLock() { Release(); }
  Status Take(const std::string& dir) {
    std::string file = dir + "/LOCK";
    if (!fs::exists(file)) return Status::OK();  // no RocksDB ever ran here, none runs now
    if (auto s = rocksdb::Env::Default()->LockFile(file, &lock_); !s.ok()) {
      lock_ = nullptr;
      return Status::Busy("data dir " + dir + " is in use by another process (stop readingsd first): " + s.ToString());
    }
    return Status::OK();
  }
  void Release() {
    if (lock_ != nullptr) rocksdb::Env::Default()->UnlockFile(lock_);
    lock_ = nullptr;
  }

 private:
  rocksdb::FileLock* lock_ = nullptr;
};

// The checks of Store::Open, with the probe left open for a closer look.
Status CheckStore(const StoreOptions& options, internal::DirState* dir, internal::Probe* probe,
                  std::vector<std::string>* problems) {
  if (Status s = internal::InspectDir(options.path, dir); !s.ok()) return s;
  if (dir->entries.empty()) return Status::NotFound("data dir " + options.path + " holds no store");
  if (!dir->marker && !dir->has_current) return Status::InvalidArgument(internal::ForeignDir(options.path, dir->entries));
  internal::OpenProbe(options, nullptr, probe);
  Status io_error;
  *problems = internal::Check(options.path, *dir, *probe, &io_error);
  if (!io_error.ok()) return io_error;
  // A damaged store may have lost the file holding the format key: that is one of its problems.
  if (probe->db && problems->empty() && probe->format != internal::kFormatValue) {
    return Status::InvalidArgument("data dir " + options.path + " is not a readingsd store of key format " +
                                   std::string(internal::kFormatValue));
  }
  return Status::OK();
}

Status CopyDir(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) return Status::IOError("cannot copy " + from + " to " + to + ": " + ec.message());
  ::sync();  // the copy is the way back: on disk before the original changes
  return Status::OK();
}

// RepairDB on `dir`, then what it holds; a new mark (and marker, `id`) when `mark` is set.
Status RepairIn(const StoreOptions& options, const std::string& dir, const std::string& id, bool mark,
                RepairReport* report) {
  StoreOptions at = options;
  at.path = dir;
  if (auto s = rocksdb::RepairDB(dir, internal::MakeOptions(at, nullptr, /*writable=*/false)); !s.ok()) {
    return FromRocks(s, "repair of " + dir);
  }
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::OpenForReadOnly(internal::MakeOptions(at, nullptr, false), dir, &raw); !s.ok()) {
    return FromRocks(s, "repaired store " + dir);
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  report->readings = 0;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  std::string_view device, sort_key;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (DecodeKey(std::string_view(it->key().data(), it->key().size()), &device, &sort_key)) ++report->readings;
  }
  if (!it->status().ok()) return FromRocks(it->status(), "repaired store " + dir);
  it.reset();
  report->sequence = db->GetLatestSequenceNumber();
  report->unreadable.clear();
  std::error_code ec;
  for (fs::directory_iterator lost(dir + "/lost", ec), end; !ec && lost != end; lost.increment(ec)) {
    if (lost->path().extension() == ".sst") report->unreadable.push_back("lost/" + lost->path().filename().string());
  }
  std::sort(report->unreadable.begin(), report->unreadable.end());
  if (!mark) return Status::OK();
  if (Status s = internal::TakeMark(db.get(), dir, id, /*sync_wal=*/false); !s.ok()) return s;
  return internal::WriteMarker(dir, {std::string(internal::kFormatValue), id});
}

}  // namespace

Status VerifyStore(const StoreOptions& options, const std::function<void(const VerifyProgress&)>& progress,
                   VerifyReport* report) {
  *report = VerifyReport();
  StoreOptions ro = options;
  ro.read_only = true;
  internal::DirState dir;
  internal::Probe probe;
  if (Status s = CheckStore(ro, &dir, &probe, &report->problems); !s.ok()) return s;

  std::vector<internal::LiveFile> files = probe.files;
  if (!probe.db) {
    std::error_code ec;
    for (const auto& name : dir.entries) {
      if (name.ends_with(".sst")) files.push_back({name, fs::file_size(ro.path + "/" + name, ec)});
    }
  }
  probe.db.reset();
  VerifyProgress done;
  done.files_total = files.size();
  for (const auto& f : files) done.bytes_total += f.bytes;
  for (const auto& f : files) {
    rocksdb::SstFileReader reader(internal::MakeOptions(ro, nullptr, /*writable=*/false));
    auto s = reader.Open(ro.path + "/" + f.name);
    if (s.ok()) s = reader.VerifyChecksum();
    if (!s.ok()) report->problems.push_back(f.name + ": " + s.ToString());
    ++done.files_done;
    done.bytes_done += f.bytes;
    if (progress) progress(done);
  }
  report->files = done.files_total;
  report->bytes = done.bytes_total;
  return Status::OK();
}

Status RepairStore(const StoreOptions& options, const RepairOptions& repair, RepairReport* report) {
  *report = RepairReport();
  StoreOptions ro = options;
  ro.path = Normal(options.path);
  ro.read_only = true;
  DirLock lock;
  if (Status s = lock.Take(ro.path); !s.ok()) return s;
  internal::DirState dir;
  internal::Probe probe;
  if (Status s = CheckStore(ro, &dir, &probe, &report->problems); !s.ok()) return s;
  probe.db.reset();
  if (dir.mark) {
    report->mark_readings = dir.mark->readings;
    report->mark_sequence = dir.mark->sequence;
  }
  if (report->problems.empty()) return Status::OK();

  // What a repair keeps, found on a throwaway copy beside the data dir.
  std::string preview = ro.path + ".repair-preview.XXXXXX";
  if (::mkdtemp(preview.data()) == nullptr) return Status::IOError("cannot create " + preview + ": " + std::strerror(errno));
  Status s = CopyDir(ro.path, preview);
  if (s.ok()) s = RepairIn(ro, preview, "", /*mark=*/false, report);
  std::error_code ec;
  fs::remove_all(preview, ec);
  if (!s.ok() || !repair.apply) return s;

  report->copy = repair.copy_to.empty() ? ro.path + ".before-repair-" + internal::UtcNow("%Y%m%dT%H%M%SZ") : repair.copy_to;
  if (fs::exists(report->copy)) return Status::InvalidArgument(report->copy + " already exists");
  if (s = CopyDir(ro.path, report->copy); !s.ok()) return s;
  lock.Release();  // RepairDB takes it itself
  if (s = RepairIn(ro, ro.path, dir.marker ? dir.marker->id : internal::NewStoreId(), /*mark=*/true, report); !s.ok()) {
    return s;
  }
  report->repaired = true;
  return Status::OK();
}

}  // namespace readingsd::storage
