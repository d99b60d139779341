#include "daemon/commands.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/text.h"
#include "daemon/http_client.h"
#include "daemon/options.h"
#include "daemon/service.h"
#include "json/parse.h"
#include "storage/integrity.h"
#include "storage/store.h"

namespace readingsd::daemon {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

std::string PercentEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string CellText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Rows as an aligned table: `key` first (readingTs, or a bucket's start), then every other
// field seen but deviceId, in name order; `with_device`: deviceId before `key` (an index's
// readings come from many devices).
void PrintTable(const std::vector<json>& items, const std::string& key, bool with_device = false) {
  std::vector<std::string> columns = {key};
  if (with_device) columns.insert(columns.begin(), "deviceId");
  for (const auto& item : items) {
    for (const auto& [name, _] : item.items()) {
      if (name != key && name != "deviceId" && std::find(columns.begin(), columns.end(), name) == columns.end()) {
        columns.push_back(name);
      }
    }
  }
  std::sort(columns.begin() + (with_device ? 2 : 1), columns.end());
  std::vector<std::size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  for (const auto& item : items) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (item.contains(columns[i])) width[i] = std::max(width[i], CellText(item[columns[i]]).size());
    }
  }
  auto row = [&](auto cell) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::string text = cell(i);
      std::printf("%-*s%s", static_cast<int>(width[i]), text.c_str(), i + 1 < columns.size() ? "  " : "\n");
    }
  };
  row([&](std::size_t i) { return columns[i]; });
  for (const auto& item : items) {
    row([&](std::size_t i) { return item.contains(columns[i]) ? CellText(item[columns[i]]) : std::string(); });
  }
}

// A bucket of an aggregate as a table row: start, count, then attribute.fn for each function.
json BucketRow(const json& bucket) {
  json row = json::object();
  for (const auto& [name, value] : bucket.items()) {
    if (!value.is_object()) {
      row[name] = value;
      continue;
    }
    for (const auto& [fn, result] : value.items()) row[name + "." + fn] = result;
  }
  return row;
}

// A command's options into *vm; the exit code when the command is done already (--help, or a
// usage error, which is printed with the usage).
std::optional<int> ParseOptions(const char* command, const po::options_description& desc,
                                const std::vector<std::string>& args, po::variables_map* vm) {
  try {
    std::vector<std::string> argv = args;
    po::store(po::command_line_parser(argv).options(desc).run(), *vm);
    if (vm->count("help")) {
      std::cout << desc;
      return kExitOk;
    }
    po::notify(*vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "readingsd %s: %s\n%s", command, e.what(), (std::ostringstream() << desc).str().c_str());
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace

int QueryCommand(const config::Config& config, const std::vector<std::string>& args) {
  po::options_description desc("readingsd query --device ID | --index NAME [conditions] [options]");
  desc.add_options()("help,h", "this text")("device", po::value<std::string>(), "device id")(
      "index", po::value<std::string>(),
      "a declared secondary index: a question across every device, over a window of many buckets")(
      "value", po::value<std::string>(), "with --index: the partition value (of an attribute-partitioned index)")(
      "gt", po::value<std::string>(), "with --index: sort value above")("ge", po::value<std::string>(), "... at least")(
      "lt", po::value<std::string>(), "... below")("le", po::value<std::string>(), "... at most (ge with le: between)")(
      "eq", po::value<std::string>(), "... equal to")(
      "from", po::value<std::string>(),
      "inclusive lower bound: a timestamp with its zone, or 2026-06-23[T08[:30]] (UTC), its first instant")(
      "to", po::value<std::string>(), "inclusive upper bound")("after", po::value<std::string>(), "exclusive lower bound")(
      "before", po::value<std::string>(), "exclusive upper bound")(
      "begins-with", po::value<std::string>(), "sort key prefix, e.g. 2026-06-23")(
      "latest", po::value<int>(), "the N newest readings")("limit", po::value<int>(), "items per page")(
      "order", po::value<std::string>(), "asc | desc")("filter", po::value<std::string>(), "e.g. temperature>30")(
      "attributes", po::value<std::string>(), "only these attributes, e.g. temperature,humidity")(
      "all", "follow nextCursor to the end")("json", "print the raw JSON pages")(
      "aggregate", "buckets of --step between the bounds instead of readings (needs --attributes)")(
      "step", po::value<std::string>(), "with --aggregate: bucket width, e.g. 30s, 5m, 1h, 1d")(
      "fn", po::value<std::string>(), "with --aggregate: avg,min,max,count,sum,first,last (default avg,min,max,count)");
  po::variables_map vm;
  if (std::optional<int> exit = ParseOptions("query", desc, args, &vm)) return *exit;

  // An aggregate is one answer over a window, not a page of readings: what pages or picks
  // readings means nothing to it, and the server would refuse it as an unknown parameter.
  const bool aggregate = vm.count("aggregate") > 0;
  if (aggregate) {
    for (const char* name : {"latest", "limit", "order", "filter", "begins-with", "all"}) {
      if (vm.count(name)) {
        std::fprintf(stderr, "readingsd query: --%s does not apply to --aggregate\n", name);
        return kExitUsage;
      }
    }
  } else if (vm.count("step") || vm.count("fn")) {
    std::fprintf(stderr, "readingsd query: --step and --fn apply only to --aggregate\n");
    return kExitUsage;
  }

  // --latest N asks for the newest-first page of N (what /latest answers), so conditions and
  // --all's cursor work with it as with any page; /latest itself takes neither.
  if (vm.count("latest") && (vm.count("limit") || vm.count("order"))) {
    std::fprintf(stderr, "readingsd query: --latest sets the order and the page size; drop --limit and --order\n");
    return kExitUsage;
  }
  if (vm.count("device") && vm.count("index")) {
    std::fprintf(stderr, "readingsd query: --device or --index, not both\n");
    return kExitUsage;
  }
  const bool by_index = vm.count("index") > 0;
  for (const char* name : {"value", "gt", "ge", "lt", "le", "eq"}) {
    if (vm.count(name) && !by_index) {
      std::fprintf(stderr, "readingsd query: --%s applies only to --index\n", name);
      return kExitUsage;
    }
  }
  if (by_index && (aggregate || vm.count("latest") || vm.count("begins-with"))) {
    std::fprintf(stderr, "readingsd query: --index takes no --aggregate, --latest or --begins-with\n");
    return kExitUsage;
  }
  // Neither: a question across every device, which the daemon refuses naming the index to declare.
  std::string target = by_index ? "/v1/indexes/" + PercentEncode(vm["index"].as<std::string>()) + "/readings?"
                       : vm.count("device")
                           ? "/v1/devices/" + PercentEncode(vm["device"].as<std::string>()) +
                                 (aggregate ? "/aggregate?" : "/readings?")
                           : std::string("/v1/readings?");
  for (const char* name : {"from", "to", "after", "before", "begins-with", "order", "filter", "attributes", "step", "fn",
                           "value", "gt", "ge", "lt", "le", "eq"}) {
    if (!vm.count(name)) continue;
    std::string param = name;
    std::replace(param.begin(), param.end(), '-', '_');
    target += param + "=" + PercentEncode(vm[name].as<std::string>()) + "&";
  }
  if (vm.count("latest")) target += "order=desc&limit=" + std::to_string(vm["latest"].as<int>()) + "&";
  if (vm.count("limit")) target += "limit=" + std::to_string(vm["limit"].as<int>()) + "&";

  HostPort listen;
  if (!ParseHostPort(config.http.listen, &listen).ok()) {
    std::fprintf(stderr, "readingsd query: http.listen: expected host:port\n");
    return kExitConfig;
  }
  const std::string host = LoopbackFor(listen.host), port = std::to_string(listen.port);
  std::string token;
  if (!config.http.auth_token_file.empty()) {
    std::vector<std::string> tokens;
    if (Status s = config::ReadTokenFile(config.http.auth_token_file, &tokens); !s.ok()) {
      std::fprintf(stderr, "readingsd query: http.auth_token_file: %s\n", s.message().c_str());
      return kExitConfig;
    }
    token = tokens.front();
  }

  std::vector<json> items;
  std::string cursor;
  uint64_t count = 0, scanned = 0;
  do {
    std::string page_target = target + (cursor.empty() ? "" : "cursor=" + PercentEncode(cursor));
    HttpGetResult res;
    if (Status s = HttpGet(host, port, page_target, token, std::chrono::seconds(30), &res); !s.ok()) {
      std::fprintf(stderr, "readingsd query: is the daemon running? %s\n", s.message().c_str());
      return kExitUnavailable;
    }
    json page;
    if (res.status != 200 || ParseJson(res.body, &page) != JsonParseError::kNone) {
      std::fprintf(stderr, "readingsd query: HTTP %d: %s\n", res.status, res.body.c_str());
      return res.status >= 400 && res.status < 500 ? kExitUsage : kExitUnavailable;
    }
    if (vm.count("json")) std::printf("%s\n", page.dump().c_str());
    if (aggregate) {
      for (const auto& bucket : page["buckets"]) items.push_back(BucketRow(bucket));
    } else {
      for (auto& item : page["items"]) items.push_back(std::move(item));
    }
    cursor = page.value("nextCursor", "");
    count += page.value("count", uint64_t{0});
    scanned += page.value("scannedCount", uint64_t{0});
  } while (vm.count("all") && !cursor.empty());
  if (!vm.count("json")) {
    PrintTable(items, aggregate ? "start" : "readingTs", by_index);
    if (by_index) std::printf("count %llu, scannedCount %llu\n", static_cast<unsigned long long>(count),
                              static_cast<unsigned long long>(scanned));
    if (!cursor.empty()) std::printf("(more: --all follows nextCursor)\n");
  }
  return kExitOk;
}

int BackupCommand(const config::Config& config, const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::fprintf(stderr, "usage: readingsd [--config FILE] backup DIR   (DIR must not exist yet)\n");
    return kExitUsage;
  }
  if (std::filesystem::exists(args[0])) {
    std::fprintf(stderr, "readingsd backup: %s already exists\n", args[0].c_str());
    return kExitUsage;
  }
  storage::StoreOptions options;
  options.path = config.storage.data_dir;
  options.read_only = true;  // works while the daemon runs: no lock, a consistent snapshot
  std::unique_ptr<storage::Store> store;
  Status s = storage::Store::Open(options, &store);
  if (s.ok()) s = store->Checkpoint(args[0]);
  if (!s.ok()) {
    std::fprintf(stderr, "readingsd backup: %s\n", s.ToString().c_str());
    return kExitIoErr;
  }
  std::printf("backup of %s written to %s; open it with --storage.data_dir=%s\n", options.path.c_str(),
              args[0].c_str(), args[0].c_str());
  return kExitOk;
}

int VerifyCommand(const config::Config& config) {
  const storage::StoreOptions options = StoreOptionsFrom(config);
  auto last = std::chrono::steady_clock::time_point();
  auto progress = [&last](const storage::VerifyProgress& p) {
    auto now = std::chrono::steady_clock::now();
    if (p.files_done != p.files_total && now - last < std::chrono::seconds(1)) return;
    last = now;
    std::fprintf(stderr, "verify: %zu/%zu files, %.1f/%.1f MiB\n", p.files_done, p.files_total,
                 static_cast<double>(p.bytes_done) / (1 << 20), static_cast<double>(p.bytes_total) / (1 << 20));
  };
  storage::VerifyReport report;
  if (Status s = storage::VerifyStore(options, progress, &report); !s.ok()) {
    std::fprintf(stderr, "readingsd verify: %s\n", s.ToString().c_str());
    return ExitCodeFor(s);
  }
  if (report.problems.empty()) {
    std::printf("data dir %s is sound: its MANIFEST, WAL and high-water mark agree, and every block of its %zu SST "
                "files (%.1f MiB) matches its checksum\n",
                options.path.c_str(), report.files, static_cast<double>(report.bytes) / (1 << 20));
    return kExitOk;
  }
  std::printf("data dir %s is damaged:\n", options.path.c_str());
  for (const auto& p : report.problems) std::printf("  %s\n", p.c_str());
  return kExitDataErr;
}

int RepairCommand(const config::Config& config, const std::vector<std::string>& args) {
  po::options_description desc("readingsd repair [--yes] [--copy-to DIR]");
  desc.add_options()("help,h", "this text")("yes", "repair (without it: only report, changing nothing)")(
      "copy-to", po::value<std::string>(), "where to keep the copy made first (default: DATA_DIR.before-repair-TIME)");
  po::variables_map vm;
  if (std::optional<int> exit = ParseOptions("repair", desc, args, &vm)) return *exit;
  storage::StoreOptions options;
  options.path = config.storage.data_dir;
  storage::RepairOptions repair;
  repair.apply = vm.count("yes") > 0;
  if (vm.count("copy-to")) repair.copy_to = vm["copy-to"].as<std::string>();
  storage::RepairReport report;
  if (Status s = storage::RepairStore(options, repair, &report); !s.ok()) {
    std::fprintf(stderr, "readingsd repair: %s\n", s.ToString().c_str());
    return ExitCodeFor(s);
  }
  if (report.problems.empty()) {
    std::printf("data dir %s passed its checks: nothing to repair (`readingsd verify` also checks every block)\n",
                options.path.c_str());
    return kExitOk;
  }
  std::printf("data dir %s:\n", options.path.c_str());
  for (const auto& p : report.problems) std::printf("  %s\n", p.c_str());
  std::printf("a repair %s %llu readings up to sequence %llu", report.repaired ? "kept" : "keeps",
              static_cast<unsigned long long>(report.readings), static_cast<unsigned long long>(report.sequence));
  if (report.mark_sequence) {
    std::printf("; the high-water mark saw about %llu readings up to sequence %llu",
                static_cast<unsigned long long>(*report.mark_readings),
                static_cast<unsigned long long>(*report.mark_sequence));
    if (report.sequence < *report.mark_sequence) {
      std::printf(" (the last %llu writes cannot be recovered)",
                  static_cast<unsigned long long>(*report.mark_sequence - report.sequence));
    }
  }
  std::printf("\n");
  for (const auto& f : report.unreadable) std::printf("  set aside, unreadable: %s\n", f.c_str());
  if (!report.repaired) {
    std::printf("nothing was changed; `readingsd repair --yes` repairs it after copying the data dir to %s\n",
                repair.copy_to.empty() ? (options.path + ".before-repair-TIME").c_str() : repair.copy_to.c_str());
    return kExitDataErr;
  }
  std::printf("repaired; the data dir as it was is kept at %s\n", report.copy.c_str());
  return kExitOk;
}

int CheckConfigCommand(const config::Config& config) {
  std::string secret;
  std::vector<std::string> tokens;
  bool ok = true;
  if (!config.mqtt.password_file.empty()) {
    if (Status s = config::ReadSecretFile(config.mqtt.password_file, &secret); !s.ok()) {
      std::fprintf(stderr, "mqtt.password_file: %s\n", s.message().c_str());
      ok = false;
    }
  }
  if (!config.http.auth_token_file.empty()) {
    if (Status s = config::ReadTokenFile(config.http.auth_token_file, &tokens); !s.ok()) {
      std::fprintf(stderr, "http.auth_token_file: %s\n", s.message().c_str());
      ok = false;
    }
  }
  for (const auto& [key, path] : {std::pair{"mqtt.ca_file", config.mqtt.ca_file},
                                  std::pair{"mqtt.cert_file", config.mqtt.cert_file},
                                  std::pair{"mqtt.key_file", config.mqtt.key_file}}) {
    if (!path.empty() && !std::filesystem::is_regular_file(path)) {
      std::fprintf(stderr, "%s: %s is not a readable file\n", key, path.c_str());
      ok = false;
    }
  }
  if (ok) std::printf("configuration ok\n");
  return ok ? kExitOk : kExitConfig;
}

}  // namespace readingsd::daemon
