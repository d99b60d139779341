#include "storage/store_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "storage/rocks_options.h"

namespace readingsd::storage::internal {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxSmallFile = 1 << 20;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status ReadSmallFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(Errno("cannot read " + path));
  text->assign(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) return Status::IOError(Errno("cannot read " + path));
  if (text->size() > kMaxSmallFile) return Status::Corruption(path + " is larger than any file readingsd writes");
  return Status::OK();
}

// "key value" lines; '#' starts a comment line.
std::vector<std::pair<std::string, std::string>> Lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find(' ');
    out.emplace_back(line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1));
  }
  return out;
}

bool ParseNumber(std::string_view s, uint64_t* n) {
  if (s.empty() || s.size() > 20) return false;
  *n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    *n = *n * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// "NAME BYTES"
bool ParseFile(const std::string& value, LiveFile* file) {
  auto space = value.find(' ');
  if (space == std::string::npos || space == 0) return false;
  file->name = value.substr(0, space);
  return ParseNumber(std::string_view(value).substr(space + 1), &file->bytes);
}

Status ParseMarker(const std::string& path, const std::string& text, Marker* marker) {
  for (const auto& [key, value] : Lines(text)) {
    if (key == "format") {
      marker->format = value;
    } else if (key == "id") {
      marker->id = value;
    } else {
      return Status::Corruption(path + ": unknown line \"" + key + "\"");
    }
  }
  if (marker->format.empty() || marker->id.empty()) return Status::Corruption(path + ": no format or id");
  return Status::OK();
}

Status ParseHighWater(const std::string& path, const std::string& text, HighWater* mark) {
  bool has_sequence = false, has_manifest = false;
  for (const auto& [key, value] : Lines(text)) {
    LiveFile file;
    bool ok = true;
    if (key == "id") {
      mark->id = value;
    } else if (key == "written") {
      mark->written = value;
    } else if (key == "sequence") {
      ok = has_sequence = ParseNumber(value, &mark->sequence);
    } else if (key == "manifest") {
      ok = has_manifest = ParseFile(value, &file);
      mark->manifest = file.name;
      mark->manifest_bytes = file.bytes;
    } else if (key == "readings") {
      ok = ParseNumber(value, &mark->readings);
    } else if (key == "sst") {
      ok = ParseFile(value, &file);
      mark->files.push_back(file);
    } else {
      ok = false;
    }
    if (!ok) return Status::Corruption(path + ": malformed line \"" + key + " " + value + "\"");
  }
  if (!has_sequence || !has_manifest) return Status::Corruption(path + ": no sequence or manifest line");
  return Status::OK();
}

std::string SerializeHighWater(const HighWater& m) {
  std::string out =
      "# readingsd high-water mark: what this store durably held at its last check point.\n"
      "# A store that holds less is refused at start (see docs/storage-integrity.md).\n";
  out += "id " + m.id + "\nwritten " + m.written + "\nsequence " + std::to_string(m.sequence) + "\nmanifest " +
         m.manifest + " " + std::to_string(m.manifest_bytes) + "\nreadings " + std::to_string(m.readings) + "\n";
  for (const auto& f : m.files) out += "sst " + f.name + " " + std::to_string(f.bytes) + "\n";
  return out;
}

uint64_t ManifestNumber(const std::string& name) {
  uint64_t n = 0;
  if (!name.starts_with("MANIFEST-") || !ParseNumber(std::string_view(name).substr(9), &n)) return 0;
  return n;
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(Errno("cannot open " + dir));
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::OK() : Status::IOError(Errno("cannot sync " + dir));
}

Status WriteFileAtomically(const std::string& dir, std::string_view name, const std::string& text) {
  std::string path = dir + "/" + std::string(name);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(Errno("cannot write " + tmp));
  std::size_t done = 0;
  bool ok = true;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  std::string error = ok ? "" : Errno("cannot write " + tmp);
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    error = Errno("cannot rename " + tmp);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::IOError(error);
  }
  return SyncDir(dir);
}

// fsync on a read-only descriptor still writes the file's dirty pages out: the size it returns
// is durable, whatever RocksDB appends after.
Status SyncedManifest(const std::string& dir, std::string* name, uint64_t* bytes) {
  for (int attempt = 0;; ++attempt) {
    std::string current;
    if (Status s = ReadSmallFile(dir + "/CURRENT", &current); !s.ok()) return s;
    *name = current.substr(0, current.find('\n'));
    int fd = ::open((dir + "/" + *name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && attempt < 3) continue;  // replaced by a newer one meanwhile
    if (fd < 0) return Status::IOError(Errno("cannot open " + dir + "/" + *name));
    struct stat st;
    bool ok = ::fsync(fd) == 0 && ::fstat(fd, &st) == 0;
    std::string error = ok ? "" : Errno("cannot sync " + dir + "/" + *name);
    ::close(fd);
    if (!ok) return Status::IOError(error);
    *bytes = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

}  // namespace

std::string UtcNow(const char* format) {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

Status InspectDir(const std::string& path, DirState* state) {
  *state = DirState();
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::OK();
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    state->entries.push_back(it->path().filename().string());
  }
  if (ec) return Status::IOError("cannot list data dir " + path + ": " + ec.message());
  std::sort(state->entries.begin(), state->entries.end());
  auto has = [&](std::string_view name) {
    return std::binary_search(state->entries.begin(), state->entries.end(), std::string(name));
  };
  std::string text;
  if (has(kMarkerFile)) {
    std::string file = path + "/" + std::string(kMarkerFile);
    if (Status s = ReadSmallFile(file, &text); !s.ok()) return s;
    if (Status s = ParseMarker(file, text, &state->marker.emplace()); !s.ok()) return s;
  }
  if (has(kHighWaterFile)) {
    std::string file = path + "/" + std::string(kHighWaterFile);
    if (Status s = ReadSmallFile(file, &text); !s.ok()) return s;
    if (Status s = ParseHighWater(file, text, &state->mark.emplace()); !s.ok()) return s;
  }
  if (has("CURRENT")) {
    state->has_current = true;
    if (Status s = ReadSmallFile(path + "/CURRENT", &text); !s.ok()) return s;
    state->manifest = text.substr(0, text.find('\n'));
    struct stat st;
    if (!state->manifest.empty() && state->manifest.find('/') == std::string::npos &&
        ::stat((path + "/" + state->manifest).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      state->manifest_bytes = static_cast<uint64_t>(st.st_size);
    }
  }
  return Status::OK();
}

rocksdb::WalFilter::WalProcessingOption WalGapFilter::LogRecordFound(unsigned long long, const std::string& log_file_name,
                                                                     const rocksdb::WriteBatch& batch,
                                                                     rocksdb::WriteBatch*, bool*) {
  // A batch's record starts with its first sequence number, fixed64 little-endian (the WAL's
  // on-disk format, which RocksDB keeps readable across versions); each entry takes one.
  const std::string& rep = batch.Data();
  if (rep.size() < 8) return WalProcessingOption::kContinueProcessing;
  uint64_t sequence = 0;
  for (int i = 7; i >= 0; --i) sequence = (sequence << 8) | static_cast<unsigned char>(rep[i]);
  if (next_ != 0 && sequence != next_) {
    gap_ = "WAL " + fs::path(log_file_name).filename().string() + " jumps from sequence " + std::to_string(next_) +
           " to " + std::to_string(sequence) + " (a damaged block RocksDB would skip without a word)";
    return WalProcessingOption::kCorruptedRecord;
  }
  next_ = sequence + batch.Count();
  return WalProcessingOption::kContinueProcessing;
}

void OpenProbe(const StoreOptions& options, std::shared_ptr<rocksdb::Statistics> stats, Probe* probe) {
  probe->wal_filter = std::make_shared<WalGapFilter>();
  rocksdb::Options o = MakeOptions(options, std::move(stats), /*writable=*/false);
  o.wal_filter = probe->wal_filter.get();
  rocksdb::DB* raw = nullptr;
  probe->status = rocksdb::DB::OpenForReadOnly(o, options.path, &raw);
  if (!probe->status.ok()) return;
  std::unique_ptr<rocksdb::DB> db(raw);
  auto s = db->Get(rocksdb::ReadOptions(), std::string(kFormatKey), &probe->format);
  if (!s.ok() && !s.IsNotFound()) {
    probe->status = s;
    return;
  }
  probe->sequence = db->GetLatestSequenceNumber();
  db->GetIntProperty(rocksdb::DB::Properties::kEstimateNumKeys, &probe->readings);
  std::vector<rocksdb::LiveFileMetaData> live;
  db->GetLiveFilesMetaData(&live);
  for (const auto& f : live) probe->files.push_back({f.relative_filename, f.size});
  probe->db = std::move(db);
}

std::vector<std::string> Check(const std::string& path, const DirState& dir, const Probe& probe, Status* io_error) {
  std::vector<std::string> problems;
  const auto& mark = dir.mark;
  if (!dir.has_current) {
    problems.push_back("CURRENT is missing (it names the MANIFEST, RocksDB's list of the store's files)");
  } else if (!dir.manifest_bytes) {
    problems.push_back("CURRENT names \"" + dir.manifest + "\", which does not exist");
  } else if (mark && ManifestNumber(dir.manifest) < ManifestNumber(mark->manifest)) {
    problems.push_back("CURRENT names " + dir.manifest + ", older than " + mark->manifest + " of the high-water mark");
  } else if (mark && dir.manifest == mark->manifest && *dir.manifest_bytes < mark->manifest_bytes) {
    problems.push_back(dir.manifest + " is " + std::to_string(*dir.manifest_bytes) + " bytes, the high-water mark saw " +
                       std::to_string(mark->manifest_bytes) +
                       ": it was cut short and lost the record of the files written since");
  }
  if (dir.marker && !mark) problems.push_back("HIGHWATER is missing: there is nothing to check the store against");
  if (dir.marker && mark && mark->id != dir.marker->id) {
    problems.push_back("HIGHWATER belongs to store " + mark->id + ", READINGSD to store " + dir.marker->id);
  }
  if (!probe.wal_filter->gap().empty()) {
    problems.push_back(probe.wal_filter->gap());
  } else if (!probe.status.ok()) {
    // A missing CURRENT or MANIFEST is said above already; a file the store needs that is
    // gone is damage; anything else on the file system (permissions) is not.
    bool said = !problems.empty() && probe.status.IsPathNotFound();
    if (probe.status.IsIOError() && !probe.status.IsPathNotFound()) {
      *io_error = FromRocks(probe.status, "cannot read data dir " + path);
    } else if (!said) {
      problems.push_back("RocksDB cannot read it: " + probe.status.ToString());
    }
  } else if (mark && probe.sequence < mark->sequence) {
    problems.push_back("it holds writes up to sequence " + std::to_string(probe.sequence) +
                       ", the high-water mark saw " + std::to_string(mark->sequence) + ": the last " +
                       std::to_string(mark->sequence - probe.sequence) + " writes are gone");
  }
  return problems;
}

Status Refusal(const std::string& path, const DirState& dir, const Probe& probe,
               const std::vector<std::string>& problems) {
  std::string msg = "data dir " + path + " is damaged or went backwards, so it was not opened and nothing in it was changed: " +
                    Join(problems, "; ");
  if (dir.mark) {
    if (probe.db) {
      msg += "; it holds about " + std::to_string(probe.readings) + " readings now";
      std::vector<std::string> gone;
      for (const auto& f : dir.mark->files) {
        bool live = std::any_of(probe.files.begin(), probe.files.end(), [&](const LiveFile& l) { return l.name == f.name; });
        if (!live) gone.push_back(f.name);
      }
      if (!gone.empty()) msg += ", without " + Join(gone, ", ") + " of the mark";
    }
    msg += "; the high-water mark of " + dir.mark->written + " saw about " + std::to_string(dir.mark->readings) +
           " readings up to sequence " + std::to_string(dir.mark->sequence);
  }
  return Status::Corruption(msg +
                            ". `readingsd verify` checks every block; `readingsd repair` reports what a repair would "
                            "drop and, with --yes, keeps a copy and repairs");
}

std::string ForeignDir(const std::string& path, const std::vector<std::string>& entries) {
  std::vector<std::string> shown(entries.begin(), entries.begin() + std::min<std::size_t>(entries.size(), 5));
  if (entries.size() > shown.size()) shown.push_back("...");
  return "data dir " + path + " is not empty and has no " + std::string(kMarkerFile) +
         " marker, so it is not a readingsd store (a typo in storage.data_dir?); it holds " +
         std::to_string(entries.size()) + " entries: " + Join(shown, ", ") + ". Nothing in it was changed";
}

Status WriteMarker(const std::string& dir, const Marker& marker) {
  return WriteFileAtomically(dir, kMarkerFile,
                             "# This directory is a readingsd store. readingsd opens no other directory as one.\n"
                             "format " + marker.format + "\nid " + marker.id + "\n");
}

std::string NewStoreId() {
  std::random_device rd;
  std::string id;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += hex[rd() & 15];
  return id;
}

std::string NewUuid() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; ++i) {
    unsigned digit = rd() & 15;
    if (i == 12) digit = 4;                 // version 4: random
    if (i == 16) digit = 8 | (digit & 3);  // variant 10xx
    if (i == 8 || i == 12 || i == 16 || i == 20) id += '-';
    id += hex[digit];
  }
  return id;
}

Status TakeMark(rocksdb::DB* db, const std::string& dir, const std::string& id, bool sync_wal) {
  HighWater m;
  m.id = id;
  m.written = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  m.sequence = db->GetLatestSequenceNumber();
  if (sync_wal) {
    if (auto s = db->SyncWAL(); !s.ok()) return FromRocks(s, "high-water mark: sync WAL");
  }
  if (Status s = SyncedManifest(dir, &m.manifest, &m.manifest_bytes); !s.ok()) return s;
  db->GetIntProperty(rocksdb::DB::Properties::kEstimateNumKeys, &m.readings);
  std::vector<rocksdb::LiveFileMetaData> live;
  db->GetLiveFilesMetaData(&live);
  for (const auto& f : live) m.files.push_back({f.relative_filename, f.size});
  return WriteFileAtomically(dir, kHighWaterFile, SerializeHighWater(m));
}

}  // namespace readingsd::storage::internal
