// RocksDB options and status mapping shared by the store, its integrity checks and the
// operator's verify and repair. Internal to storage/.
#pragma once

#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/status.h>

#include <memory>
#include <string_view>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::storage::internal {

Status FromRocks(const rocksdb::Status& s, std::string_view context);

// The options every open of a store uses. `writable`: a read-write open, which gets readingsd's
// info LOG and resumes after a full disk; a read-only one writes nothing at all, not even a LOG.
// Never creates a store (create_if_missing is false) and never drops WAL records silently:
// a torn final record (a write cut off by a crash, never acknowledged) is all it tolerates.
rocksdb::Options MakeOptions(const StoreOptions& options, std::shared_ptr<rocksdb::Statistics> stats,
                             bool writable);

}  // namespace readingsd::storage::internal
