// The operator's tools for a store on disk: `readingsd verify` (is every block sound?) and
// `readingsd repair` (what would a repair drop; with consent, keep a copy and repair).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::storage {

struct VerifyProgress {
  std::size_t files_done = 0;
  std::size_t files_total = 0;
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
};

struct VerifyReport {
  std::vector<std::string> problems;  // empty: the store is sound
  std::size_t files = 0;              // SST files checked
  uint64_t bytes = 0;
};

// Runs the checks of Store::Open (read-only, so it is safe beside a running daemon; the WAL's
// records are checked as they are read), then checks every block of every live SST file
// against its checksum, calling `progress` after each file. A store RocksDB cannot open gets
// every SST file in its directory checked. Not OK only when it could not check at all.
Status VerifyStore(const StoreOptions& options, const std::function<void(const VerifyProgress&)>& progress,
                   VerifyReport* report);

struct RepairOptions {
  bool apply = false;   // false: only report what a repair would do, changing nothing
  std::string copy_to;  // the copy kept before repairing; "" = <data dir>.before-repair-<UTC time>
};

struct RepairReport {
  std::vector<std::string> problems;  // what the checks of Store::Open found; empty: nothing to do
  // What the repaired store holds (found by repairing a copy first).
  uint64_t readings = 0;
  uint64_t sequence = 0;
  std::optional<uint64_t> mark_readings, mark_sequence;  // what the high-water mark saw
  std::vector<std::string> unreadable;                   // SST files the repair had to set aside
  std::string copy;                                      // where the copy went (apply only)
  bool repaired = false;
};

// Repairs a store that Store::Open refuses, with RocksDB's RepairDB: it rebuilds the MANIFEST
// from every SST file in the directory (so files a cut MANIFEST forgot come back), turns every
// readable WAL record into an SST file and sets aside what it cannot read. Always repairs a
// temporary copy first to report what would be kept; with `apply`, copies the data dir to
// `copy_to`, repairs it in place and writes a new high-water mark. Busy while a daemon has it open.
Status RepairStore(const StoreOptions& options, const RepairOptions& repair, RepairReport* report);

}  // namespace readingsd::storage
