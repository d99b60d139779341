// readingsd: MQTT sensor readings into RocksDB, time-window queries over HTTP.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "config/config.h"
#include "daemon/commands.h"
#include "daemon/service.h"

#ifndef READINGSD_VERSION
#define READINGSD_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace readingsd;
  config::Config config;
  config::CommandLine cmd;
  if (Status s = config::ParseCommandLine(argc, argv, &config, &cmd); !s.ok()) {
    std::fprintf(stderr, "readingsd: %s\n(readingsd --help lists every option)\n", s.message().c_str());
    return daemon::kExitConfig;
  }
  switch (cmd.command) {
    case config::Command::kHelp: std::cout << config::HelpText(); return daemon::kExitOk;
    case config::Command::kVersion: std::cout << "readingsd " << READINGSD_VERSION << "\n"; return daemon::kExitOk;
    case config::Command::kPrintConfig: std::cout << config::ToToml(config); return daemon::kExitOk;
    case config::Command::kCheckConfig: return daemon::CheckConfigCommand(config);
    case config::Command::kQuery: return daemon::QueryCommand(config, cmd.args);
    case config::Command::kDevices: return daemon::DevicesCommand(config, cmd.args);
    case config::Command::kDelete: return daemon::DeleteCommand(config, cmd.args);
    case config::Command::kImport: return daemon::ImportCommand(config, cmd.args);
    case config::Command::kBackup: return daemon::BackupCommand(config, cmd.args);
    case config::Command::kVerify: return daemon::VerifyCommand(config);
    case config::Command::kRepair: return daemon::RepairCommand(config, cmd.args);
    case config::Command::kRun: return daemon::RunService(config, cmd.config_path);
    case config::Command::kServe:
      return daemon::RunService(config, cmd.config_path, daemon::ServiceMode::kServeReadOnly);
  }
  return daemon::kExitUsage;
}
