// WriteReadings: readings that came in some other way than MQTT (HTTP, import) into the store,
// reported through the same IngestHooks as MQTT's, so the metrics count every way in alike.
#pragma once

#include <span>

#include "base/status.h"
#include "ingest/source.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::ingest {

// One Store::Write of every reading (they passed ParsePayload or its kin, so the store takes all
// or none); when it returns OK they are in the WAL, synced when storage.sync, and
// hooks.on_batch_written has been told. Thread-safe when the hooks are.
Status WriteReadings(storage::Store* store, const IngestHooks& hooks, std::span<const storage::Reading> readings);

}  // namespace readingsd::ingest
