// Real stores for the damaged-store tests: built through storage::Store (flushed SST files and
// readings still only in the WAL), then damaged as a disk, a crash or an operator would, and
// compared byte for byte before and after readingsd looked at them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace readingsd::test {

using StoredKeySet = std::set<std::pair<std::string, std::string>>;

struct BuiltStore {
  std::vector<std::string> devices;
  StoredKeySet flushed;  // in SST files
  StoredKeySet in_wal;   // written after the last flush: only in the WAL
};

// A store in `dir` (which must not exist) with `devices` devices: `flushed_per_device`
// readings each compacted into SST files, then `wal_per_device` more in small batches, left
// in the WAL by a clean close. Throws on failure.
BuiltStore BuildStore(const std::string& dir, int devices, int flushed_per_device, int wal_per_device);

// Every file under `dir` (relative path -> contents; a directory maps to "<dir>").
using DirSnapshot = std::map<std::string, std::string>;
DirSnapshot Snapshot(const std::string& dir);
// The names of what differs between two snapshots, for a failure message.
std::string SnapshotDiff(const DirSnapshot& before, const DirSnapshot& after);

void CopyDir(const std::string& from, const std::string& to);
// The path of the file in `dir` with the highest name ending in `suffix` (".log", ".sst") or
// starting with it ("MANIFEST-"). Throws when there is none.
std::string NewestFile(const std::string& dir, const std::string& suffix);
void CutFile(const std::string& path, uint64_t keep_bytes);
void OverwriteFile(const std::string& path, uint64_t offset, const std::string& bytes);
void FlipBit(const std::string& path, uint64_t offset);
// Zeroes the WAL at `path` from the header of a whole record in the second half of a 32 KiB
// block to the block's end, where the next block starts with a whole record: RocksDB's log
// reader then skips the zeroed records without an error. Returns the bytes zeroed, 0 when no
// block qualifies. (The WAL's block format: 7-byte record headers, crc32 4, length 2 LE, type
// 1; type 1 a whole record, 2 the first fragment of one.)
uint64_t ZeroWalBlockTail(const std::string& path);
uint64_t FileSize(const std::string& path);

}  // namespace readingsd::test
