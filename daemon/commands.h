// The operator commands besides `run`: query (through the running daemon's HTTP API), backup
// (a RocksDB checkpoint, safe beside a running daemon) and check-config.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace readingsd::daemon {

int QueryCommand(const config::Config& config, const std::vector<std::string>& args);
int BackupCommand(const config::Config& config, const std::vector<std::string>& args);
int CheckConfigCommand(const config::Config& config);

}  // namespace readingsd::daemon
