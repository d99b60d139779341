// `readingsd import FILE…`: readings from files into the store, through the same parsing and
// checks as every other way in. Into a stopped store directly; when a running daemon holds the
// store, through its HTTP API (POST /v1/readings). Writes are idempotent (a reading's key is its
// device and timestamp), so an interrupted import is simply run again.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "config/config.h"
#include "ingest/line_readings.h"

namespace readingsd::daemon {

enum class ImportFormat { kByExtension, kCsv, kJsonLines, kLineProtocol };

struct ImportOptions {
  std::vector<std::string> files;  // "-" = standard input (needs a format)
  ImportFormat format = ImportFormat::kByExtension;
  ingest::Precision precision = ingest::Precision::kNanoseconds;  // integer timestamps
  std::size_t batch = 10000;  // readings per write
  // A progress line this often when stderr is not a terminal (on one, a bar redrawn 5 times a second).
  std::chrono::seconds progress_every{10};
  std::string token;  // for the daemon's HTTP API
};

// Exit status: 0 when every reading was stored, kExitDataErr when some were refused (each
// counted by reason in the summary; the rest stored), kExitTempFail / kExitIoErr /
// kExitUnavailable when the store or the daemon failed (run it again).
int Import(const config::Config& config, const ImportOptions& options);

}  // namespace readingsd::daemon
