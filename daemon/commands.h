// The operator commands besides `run`: query, devices and delete (through the running daemon's HTTP API), backup
// (a RocksDB checkpoint, safe beside a running daemon), verify, repair and check-config.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace readingsd::daemon {

int QueryCommand(const config::Config& config, const std::vector<std::string>& args);
// Every device with its latest reading, as a table (GET /v1/devices of the running daemon).
int DevicesCommand(const config::Config& config, const std::vector<std::string>& args);
// Deletes a device's readings in a range, or all of them (DELETE /v1/devices/{id}/readings of the
// running daemon).
int DeleteCommand(const config::Config& config, const std::vector<std::string>& args);
// daemon/import.h: files into the store, or through the running daemon.
int ImportCommand(const config::Config& config, const std::vector<std::string>& args);
int BackupCommand(const config::Config& config, const std::vector<std::string>& args);
// Checks the store and every block; exit 0 when sound, 65 when damaged. Safe beside the daemon.
int VerifyCommand(const config::Config& config);
// Reports what a repair would drop (exit 65, nothing changed); with --yes keeps a copy and repairs.
int RepairCommand(const config::Config& config, const std::vector<std::string>& args);
int CheckConfigCommand(const config::Config& config);

}  // namespace readingsd::daemon
