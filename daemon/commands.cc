#include "daemon/commands.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string_view>

#include "base/csv.h"
#include "base/text.h"
#include "http/client.h"
#include "daemon/import.h"
#include "daemon/options.h"
#include "daemon/service.h"
#include "json/parse.h"
#include "storage/integrity.h"
#include "storage/store.h"

namespace readingsd::daemon {
namespace {

namespace po = boost::program_options;
// ordered: walked in document order to restore exact numbers (NumberTexts).
using json = nlohmann::ordered_json;

std::string CellText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The texts of the numbers a double would round (readings hold up to 38 digits), in order.
class NumberTexts : public JsonParseObserver {
 public:
  void NumberText(const std::string& text) override { texts_.push_back(text); }
  // Puts each rounded number of `value` back as its text, walking it in document order (which
  // an ordered_json keeps), so a table or CSV shows every digit the daemon sent.
  void Restore(json* value) {
    if (value->is_structured()) {
      for (auto& element : *value) Restore(&element);
    } else if (value->is_number_float() && next_ < texts_.size()) {
      *value = texts_[next_++];
    }
  }

 private:
  std::vector<std::string> texts_;
  std::size_t next_ = 0;
};

// The columns of `items`: `leading` first, then every other field seen but `skip`, in name order.
std::vector<std::string> Columns(const std::vector<json>& items, std::vector<std::string> leading,
                                 std::string_view skip) {
  const std::size_t fixed = leading.size();
  for (const auto& item : items) {
    for (const auto& [name, _] : item.items()) {
      if (name != skip && std::find(leading.begin(), leading.end(), name) == leading.end()) leading.push_back(name);
    }
  }
  std::sort(leading.begin() + static_cast<std::ptrdiff_t>(fixed), leading.end());
  return leading;
}

// Rows as an aligned table: the `leading` columns first (readingTs, a bucket's start, or a
// device's fields), then every other field seen but deviceId, in name order.
void PrintTable(const std::vector<json>& items, std::vector<std::string> leading) {
  const std::vector<std::string> columns = Columns(items, std::move(leading), "deviceId");
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

// Rows as CSV with a header line, `leading` columns first; a field a row lacks is empty.
// Readings keep deviceId, so the file is one `readingsd import` reads back.
void PrintCsv(const std::vector<json>& items, std::vector<std::string> leading) {
  const std::vector<std::string> columns = Columns(items, std::move(leading), "");
  auto line = [&](auto cell) {
    std::string text;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      AppendCsvField(cell(i), &text);
      text += i + 1 < columns.size() ? "," : "\r\n";
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
  };
  line([&](std::size_t i) { return columns[i]; });
  for (const auto& item : items) {
    line([&](std::size_t i) { return item.contains(columns[i]) ? CellText(item[columns[i]]) : std::string(); });
  }
}

// `readingsd query` asks for format=columns, the smaller answer, and prints the rows it holds.
// Values are never null, so a null is a reading without the attribute; a column that is not an
// array long enough (an answer not from readingsd) gives nothing.
void SetFromColumn(json& row, const std::string& name, const json& column, std::size_t i) {
  if (column.is_array() && i < column.size() && !column[i].is_null()) row[name] = column[i];
}

// A readings page's rows: {"deviceId":…,"readingTs":…, attribute: value…} for each readingTs.
// An index's page has a deviceId per row, a column like readingTs.
void ReadingRows(json& page, std::vector<json>* rows) {
  const json device_id = page["deviceId"];  // a copy: page[…] below may insert into page, moving its fields
  for (std::size_t i = 0; i < page["readingTs"].size(); ++i) {
    json row = json::object();
    if (device_id.is_array()) {
      SetFromColumn(row, "deviceId", device_id, i);
    } else {
      row["deviceId"] = device_id;
    }
    row["readingTs"] = page["readingTs"][i];
    for (const auto& [name, column] : page["columns"].items()) SetFromColumn(row, name, column, i);
    rows->push_back(std::move(row));
  }
}

// An aggregate's buckets as table rows: start, count, then attribute.fn for each function.
void BucketRows(json& page, std::vector<json>* rows) {
  for (std::size_t i = 0; i < page["start"].size(); ++i) {
    json row = json::object();
    SetFromColumn(row, "start", page["start"], i);
    SetFromColumn(row, "count", page["count"], i);
    for (const auto& [name, fns] : page["columns"].items()) {
      if (!fns.is_object()) continue;
      for (const auto& [fn, column] : fns.items()) SetFromColumn(row, name + "." + fn, column, i);
    }
    rows->push_back(std::move(row));
  }
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

// The running daemon's native API, as `readingsd query` and `readingsd devices` reach it.
struct DaemonApi {
  std::string host, port, token;
};

// The exit code when the config does not say how to reach the daemon.
std::optional<int> DaemonApiFrom(const config::Config& config, const char* command, DaemonApi* api) {
  HostPort listen;
  if (!ParseHostPort(config.http.listen, &listen).ok()) {
    std::fprintf(stderr, "readingsd %s: http.listen: expected host:port\n", command);
    return kExitConfig;
  }
  api->host = http::LoopbackFor(listen.host);
  api->port = std::to_string(listen.port);
  if (!config.http.auth_token_file.empty()) {
    std::vector<std::string> tokens;
    if (Status s = config::ReadTokenFile(config.http.auth_token_file, &tokens); !s.ok()) {
      std::fprintf(stderr, "readingsd %s: http.auth_token_file: %s\n", command, s.message().c_str());
      return kExitConfig;
    }
    api->token = tokens.front();
  }
  return std::nullopt;
}

// One page as JSON, each number with every digit the daemon sent (NumberTexts); printed as
// sent when `print_raw`. The exit code when there is none (daemon unreachable, or its error).
std::optional<int> GetPage(const DaemonApi& api, const char* command, const std::string& target, bool print_raw,
                           json* page) {
  http::HttpGetResult res;
  if (Status s = http::HttpGet(api.host, api.port, target, api.token, std::chrono::seconds(30), &res); !s.ok()) {
    std::fprintf(stderr, "readingsd %s: is the daemon running? %s\n", command, s.message().c_str());
    return kExitUnavailable;
  }
  NumberTexts numbers;
  if (res.status != 200 || ParseJson(res.body, page, &numbers) != JsonParseError::kNone) {
    std::fprintf(stderr, "readingsd %s: HTTP %d: %s\n", command, res.status, res.body.c_str());
    return res.status >= 400 && res.status < 500 ? kExitUsage : kExitUnavailable;
  }
  if (print_raw) std::printf("%s\n", res.body.c_str());
  numbers.Restore(page);
  return std::nullopt;
}

// The page at `target`, then with `all` each page the previous one's nextCursor names, each
// handed to `take`. `*cursor` is the last page's nextCursor ("" at the end). The exit code when
// a page fails.
std::optional<int> ForEachPage(const DaemonApi& api, const char* command, const std::string& target, bool all,
                               bool print_raw, const std::function<void(json& page)>& take, std::string* cursor) {
  cursor->clear();
  do {
    json page;
    const std::string page_target = target + (cursor->empty() ? "" : "cursor=" + PercentEncode(*cursor));
    if (std::optional<int> exit = GetPage(api, command, page_target, print_raw, &page)) return exit;
    take(page);
    *cursor = page.value("nextCursor", "");
  } while (all && !cursor->empty());
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
      "csv", "print CSV (RFC 4180, a header line) instead of a table")(
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

  if (vm.count("json") && vm.count("csv")) {
    std::fprintf(stderr, "readingsd query: --json and --csv are two formats; pick one\n");
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
  // --json prints the pages as the API answers by default; a fleet-wide question without an
  // index gets no page.
  const bool columns = !vm.count("json") && (by_index || vm.count("device"));
  if (columns) target += "format=columns&";

  DaemonApi api;
  if (std::optional<int> exit = DaemonApiFrom(config, "query", &api)) return *exit;

  std::vector<json> items;
  std::string cursor;
  uint64_t count = 0, scanned = 0;
  auto take = [&](json& page) {
    if (!columns) {
      for (auto& item : page["items"]) items.push_back(std::move(item));
    } else if (aggregate) {
      BucketRows(page, &items);
    } else {
      ReadingRows(page, &items);
    }
    // An aggregate's count is a column: only an index's page counts are printed.
    if (by_index) {
      // Counted when a page says; a server that answers otherwise is not readingsd's to trust.
      if (page["count"].is_number_unsigned()) count += page["count"].get<uint64_t>();
      if (page["scannedCount"].is_number_unsigned()) scanned += page["scannedCount"].get<uint64_t>();
    }
  };
  if (std::optional<int> exit =
          ForEachPage(api, "query", target, vm.count("all") > 0, vm.count("json") > 0, take, &cursor)) {
    return *exit;
  }
  if (vm.count("csv")) {
    PrintCsv(items, aggregate ? std::vector<std::string>{"start", "count"}
                              : std::vector<std::string>{"deviceId", "readingTs"});
    if (!cursor.empty()) std::fprintf(stderr, "readingsd query: more readings follow; --all follows nextCursor\n");
  } else if (!vm.count("json")) {
    PrintTable(items, by_index ? std::vector<std::string>{"deviceId", "readingTs"}
                               : std::vector<std::string>{aggregate ? "start" : "readingTs"});
    if (by_index) std::printf("count %llu, scannedCount %llu\n", static_cast<unsigned long long>(count),
                              static_cast<unsigned long long>(scanned));
    if (!cursor.empty()) std::printf("(more: --all follows nextCursor)\n");
  }
  return kExitOk;
}

int DevicesCommand(const config::Config& config, const std::vector<std::string>& args) {
  po::options_description desc("readingsd devices [--prefix P] [options]");
  desc.add_options()("help,h", "this text")("prefix", po::value<std::string>(), "only ids that begin with it")(
      "limit", po::value<int>(), "devices per page (default 100)")("all", "follow nextCursor to the end")(
      "json", "print the raw JSON pages");
  po::variables_map vm;
  if (std::optional<int> exit = ParseOptions("devices", desc, args, &vm)) return *exit;
  std::string target = "/v1/devices?";
  if (vm.count("prefix")) target += "prefix=" + PercentEncode(vm["prefix"].as<std::string>()) + "&";
  if (vm.count("limit")) target += "limit=" + std::to_string(vm["limit"].as<int>()) + "&";
  DaemonApi api;
  if (std::optional<int> exit = DaemonApiFrom(config, "devices", &api)) return *exit;

  // One row per device: its registry fields, then its latest reading's attributes.
  std::vector<json> rows;
  std::string cursor;
  auto take = [&](json& page) {
    for (const auto& device : page["devices"]) {
      json row = json::object();
      for (const char* field : {"deviceId", "readings", "firstReadingTs", "lastReadingTs"}) row[field] = device[field];
      for (const auto& [name, value] : device["latest"].items()) {
        if (name != "deviceId" && name != "readingTs") row["latest." + name] = value;
      }
      rows.push_back(std::move(row));
    }
  };
  if (std::optional<int> exit =
          ForEachPage(api, "devices", target, vm.count("all") > 0, vm.count("json") > 0, take, &cursor)) {
    return *exit;
  }
  if (!vm.count("json")) {
    PrintTable(rows, {"deviceId", "readings", "firstReadingTs", "lastReadingTs"});
    if (!cursor.empty()) std::printf("(more: --all follows nextCursor)\n");
  }
  return kExitOk;
}

int DeleteCommand(const config::Config& config, const std::vector<std::string>& args) {
  po::options_description desc("readingsd delete --device ID (RANGE | --all)");
  desc.add_options()("help,h", "this text")("device", po::value<std::string>()->required(), "device id")(
      "from", po::value<std::string>(),
      "inclusive lower bound: a timestamp with its zone, or 2026-06-23[T08[:30]] (UTC), its first instant")(
      "to", po::value<std::string>(), "inclusive upper bound")("after", po::value<std::string>(), "exclusive lower bound")(
      "before", po::value<std::string>(), "exclusive upper bound")(
      "begins-with", po::value<std::string>(), "sort key prefix, e.g. 2026-06-23")(
      "all", "every reading of the device (required when no bound is given)");
  po::variables_map vm;
  if (std::optional<int> exit = ParseOptions("delete", desc, args, &vm)) return *exit;
  const std::string device = vm["device"].as<std::string>();
  std::string target = "/v1/devices/" + PercentEncode(device) + "/readings?";
  for (const char* name : {"from", "to", "after", "before", "begins-with"}) {
    if (!vm.count(name)) continue;
    std::string param = name;
    std::replace(param.begin(), param.end(), '-', '_');
    target += param + "=" + PercentEncode(vm[name].as<std::string>()) + "&";
  }
  if (vm.count("all")) target += "all=true";
  DaemonApi api;
  if (std::optional<int> exit = DaemonApiFrom(config, "delete", &api)) return *exit;
  http::HttpGetResult res;
  // A large range is deleted a batch at a time before the answer: allow it the time.
  if (Status s = http::HttpDelete(api.host, api.port, target, api.token, std::chrono::hours(1), &res); !s.ok()) {
    std::fprintf(stderr, "readingsd delete: is the daemon running? %s\n", s.message().c_str());
    return kExitUnavailable;
  }
  json answer;
  if (res.status != 200 || ParseJson(res.body, &answer) != JsonParseError::kNone) {
    std::fprintf(stderr, "readingsd delete: HTTP %d: %s\n", res.status, res.body.c_str());
    return res.status >= 400 && res.status < 500 ? kExitUsage : kExitUnavailable;
  }
  const uint64_t deleted = answer.value("deleted", uint64_t{0});
  std::printf("deleted %llu reading%s of device %s\n", static_cast<unsigned long long>(deleted),
              deleted == 1 ? "" : "s", device.c_str());
  return kExitOk;
}

int ImportCommand(const config::Config& config, const std::vector<std::string>& args) {
  po::options_description desc("readingsd import [options] FILE... (- = standard input)");
  desc.add_options()("help,h", "this text")(
      "format", po::value<std::string>(),
      "csv, jsonl or lp (line protocol); default: from each name (.csv; .jsonl, .ndjson, .json; .lp, .line, .txt)")(
      "precision", po::value<std::string>()->default_value("ns"),
      "unit of integer timestamps (line protocol, CSV): ns, us, ms, s, m, h")(
      "batch", po::value<std::size_t>()->default_value(10000), "readings per write")(
      "progress-seconds", po::value<int>()->default_value(10),
      "seconds between progress lines when stderr is not a terminal")(
      "file", po::value<std::vector<std::string>>()->required(), "files to import");
  po::positional_options_description positional;
  positional.add("file", -1);
  po::variables_map vm;
  try {
    std::vector<std::string> argv = args;
    po::store(po::command_line_parser(argv).options(desc).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << desc;
      return kExitOk;
    }
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "readingsd import: %s\n%s", e.what(), (std::ostringstream() << desc).str().c_str());
    return kExitUsage;
  }
  ImportOptions options;
  options.files = vm["file"].as<std::vector<std::string>>();
  if (vm.count("format")) {
    const std::string format = vm["format"].as<std::string>();
    if (format == "csv") options.format = ImportFormat::kCsv;
    else if (format == "jsonl") options.format = ImportFormat::kJsonLines;
    else if (format == "lp") options.format = ImportFormat::kLineProtocol;
    else {
      std::fprintf(stderr, "readingsd import: --format must be csv, jsonl or lp\n");
      return kExitUsage;
    }
  }
  if (!ingest::ParsePrecision(vm["precision"].as<std::string>(), &options.precision)) {
    std::fprintf(stderr, "readingsd import: --precision must be ns, us, ms, s, m or h\n");
    return kExitUsage;
  }
  options.batch = std::max<std::size_t>(1, vm["batch"].as<std::size_t>());
  options.progress_every = std::chrono::seconds(std::max(1, vm["progress-seconds"].as<int>()));
  if (!config.http.auth_token_file.empty()) {
    std::vector<std::string> tokens;
    if (Status s = config::ReadTokenFile(config.http.auth_token_file, &tokens); !s.ok()) {
      std::fprintf(stderr, "readingsd import: http.auth_token_file: %s\n", s.message().c_str());
      return kExitConfig;
    }
    options.token = tokens.front();
  }
  return Import(config, options);
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
  // "/srv/backup/2026-06-23" on a machine without /srv/backup yet: people name a dated copy
  // inside a folder they have not made.
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::absolute(args[0]).parent_path();
  if (s.ok() && !std::filesystem::create_directories(parent, ec) && ec) {
    s = Status::IOError("cannot create " + parent.string() + ": " + ec.message());
  }
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
