#include "ingest/write.h"

#include <chrono>

namespace readingsd::ingest {

Status WriteReadings(storage::Store* store, const IngestHooks& hooks, std::span<const storage::Reading> readings) {
  if (readings.empty()) return Status::OK();
  const auto start = std::chrono::steady_clock::now();
  if (Status s = store->Write(readings); !s.ok()) return s;
  if (hooks.on_batch_written) hooks.on_batch_written(readings, std::chrono::steady_clock::now() - start);
  return Status::OK();
}

}  // namespace readingsd::ingest
