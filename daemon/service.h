// The `run` and `serve` commands: open the store, serve HTTP, ingest MQTT (`run` only), talk to
// systemd, and shut down cleanly on SIGTERM/SIGINT.
#pragma once

#include <string>

#include "base/status.h"
#include "config/config.h"
#include "storage/store.h"

namespace readingsd::daemon {

// Exit codes (sysexits.h), chosen so systemd can tell a retryable failure from a fatal one:
// the unit's RestartPreventExitStatus lists the ones a restart cannot fix.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;    // bad command line
inline constexpr int kExitDataErr = 65;  // corrupt or foreign data dir: do not restart in a loop
inline constexpr int kExitUnavailable = 69;  // a port could not be bound
inline constexpr int kExitIoErr = 74;    // data dir unreadable / unwritable
inline constexpr int kExitTempFail = 75;  // data dir locked by another process
inline constexpr int kExitConfig = 78;   // invalid configuration

// The exit code for a store that cannot be opened (or checked): 75 locked, 65 damaged or
// foreign, 74 any other I/O error.
int ExitCodeFor(const Status& s);

enum class ServiceMode {
  kIngestAndServe,  // `run`: MQTT ingest and the HTTP API
  kServeReadOnly,   // `serve`: the HTTP API over a store opened read-only (a backup, a copy), no ingest
};

// `config_path` ("" = none) is re-read on SIGHUP.
int RunService(const config::Config& config, const std::string& config_path,
               ServiceMode mode = ServiceMode::kIngestAndServe);

}  // namespace readingsd::daemon
