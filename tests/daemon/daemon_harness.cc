#include "tests/daemon/daemon_harness.h"

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "http/client.h"
#include "storage/key.h"

namespace readingsd::test {

Daemon::Daemon(DaemonOptions options)
    : options_(std::move(options)),
      dir_("readingsd-daemon"),
      data_dir_(dir_.File("data")),
      log_path_(dir_.File("readingsd.log")) {}

void Daemon::Start() { Launch(/*ready=*/true); }

void Daemon::StartUnready() { Launch(/*ready=*/false); }

namespace {

// The port in the "http: listening on HOST:PORT" line of `log`; 0 when there is none yet.
int ListeningPort(const std::string& log) {
  constexpr std::string_view kLine = "http: listening on ";
  const std::size_t line = log.find(kLine);
  if (line == std::string::npos) return 0;
  const std::size_t end = log.find('\n', line);
  if (end == std::string::npos) return 0;  // not all written yet
  const std::size_t colon = log.rfind(':', end);
  return std::atoi(log.substr(colon + 1, end - colon - 1).c_str());
}

}  // namespace

void Daemon::Launch(bool ready) {
  std::vector<std::string> argv = {ReadingsdBinary(),
                                   "--storage.data_dir=" + data_dir_,
                                   "--mqtt.port=" + std::to_string(options_.broker_port),
                                   "--mqtt.client_id=readingsd-under-test",
                                   "--mqtt.reconnect_min_ms=100",
                                   "--mqtt.reconnect_max_ms=1000",
                                   "--http.listen=127.0.0.1:0"};
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  const std::size_t log_before = log().size();
  http_port_ = 0;
  process_.emplace(ProcessOptions{argv, options_.env, log_path_});
  // Ready once its store is open, HTTP answers and the broker acknowledged the subscriptions:
  // from then on the broker queues readings for it, even across a stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const bool running = process_->Running();
    if (http_port_ == 0) http_port_ = ListeningPort(log().substr(log_before));
    if (http_port_ != 0) {
      const int status = Get(http_port_, "/readyz").first;
      if (ready ? status == 200 : status != 0) return;
    }
    if (!running) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("readingsd did not start:\n" + log());
}

std::optional<int> Daemon::Stop(int signal, std::chrono::milliseconds timeout) {
  process_->Kill(signal);
  return process_->Wait(timeout);
}

std::optional<int> Daemon::Terminate(std::chrono::milliseconds timeout) { return Stop(SIGTERM, timeout); }

void Daemon::Kill9() {
  process_->Kill(SIGKILL);
  process_->Wait(std::chrono::seconds(5));
}

std::string Daemon::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// Calls visit(device, iterator) for every reading of `devices` in `data_dir`, opened read-only.
template <typename Visit>
void ForEachStored(const std::string& data_dir, const std::vector<std::string>& devices, Visit visit) {
  std::unique_ptr<storage::Store> store;
  storage::StoreOptions options;
  options.path = data_dir;
  options.read_only = true;
  if (!storage::Store::Open(options, &store).ok()) return;
  for (const auto& device : devices) {
    auto it = store->NewIterator(device, "", "");
    for (it->SeekToFirst(); it->Valid(); it->Next()) visit(device, *it);
  }
}

std::string Describe(const ReadingMap::value_type& reading) {
  std::string text = reading.first.first + " " + reading.first.second + " {";
  for (const auto& [name, value] : reading.second) {
    text += " " + name + "=";
    if (const auto* n = std::get_if<storage::Number>(&value)) {
      text += n->text;
    } else if (const std::string* s = std::get_if<std::string>(&value)) {
      text += '"' + *s + '"';
    } else {
      text += std::get<bool>(value) ? "true" : "false";
    }
  }
  return text + " }";
}

}  // namespace

std::set<std::pair<std::string, std::string>> StoredKeys(const std::string& data_dir,
                                                        const std::vector<std::string>& devices) {
  std::set<std::pair<std::string, std::string>> keys;
  ForEachStored(data_dir, devices, [&](const std::string& device, const storage::PartitionIterator& it) {
    keys.emplace(device, std::string(it.sort_key()));
  });
  return keys;
}

ReadingMap StoredReadings(const std::string& data_dir, const std::vector<std::string>& devices) {
  ReadingMap readings;
  ForEachStored(data_dir, devices, [&](const std::string& device, const storage::PartitionIterator& it) {
    std::vector<storage::Attribute> attributes;
    auto& stored = readings[{device, std::string(it.sort_key())}];
    if (!storage::DecodeAttributes(it.encoded_attributes(), &attributes).ok()) {
      stored["(undecodable)"] = std::string(it.encoded_attributes());
    }
    for (auto& a : attributes) stored[a.name] = std::move(a.value);
  });
  return readings;
}

ReadingMap PublishedReadings(const tools::GeneratorOptions& options) {
  ReadingMap readings;
  for (const auto& r : tools::ExpectedReadings(options)) {
    std::string sk;
    if (!storage::NormalizeTimestamp(r.reading_ts, &sk).ok()) throw std::runtime_error("bad generator ts");
    auto& attributes = readings[{r.device_id, sk}];
    attributes["temperature"] = r.temperature;
    attributes["humidity"] = r.humidity;
    if (options.payload_pad > 0) attributes["pad"] = std::string(options.payload_pad, 'x');
  }
  return readings;
}

std::string Difference(const ReadingMap& got, const ReadingMap& want) {
  std::size_t missing = 0, foreign = 0, changed = 0;
  std::string first_missing, first_foreign, first_changed;
  for (const auto& reading : want) {
    auto it = got.find(reading.first);
    if (it == got.end()) {
      if (missing++ == 0) first_missing = Describe(reading);
    } else if (it->second != reading.second) {
      if (changed++ == 0) first_changed = Describe(*it) + ", published as " + Describe(reading);
    }
  }
  for (const auto& reading : got) {
    if (!want.count(reading.first) && foreign++ == 0) first_foreign = Describe(reading);
  }
  std::string text;
  if (missing > 0) text += std::to_string(missing) + " missing (first: " + first_missing + ") ";
  if (foreign > 0) text += std::to_string(foreign) + " never published (first: " + first_foreign + ") ";
  if (changed > 0) text += std::to_string(changed) + " with other values (first: " + first_changed + ")";
  return text;
}

std::size_t Daemon::WaitForStored(const std::vector<std::string>& devices, std::size_t n,
                                  std::chrono::seconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t count = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    count = StoredKeys(devices).size();
    if (count >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return count;
}

std::set<std::pair<std::string, std::string>> ExpectedKeys(const tools::GeneratorOptions& options) {
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& r : tools::ExpectedReadings(options)) {
    std::string sk;
    if (!storage::NormalizeTimestamp(r.reading_ts, &sk).ok()) throw std::runtime_error("bad generator ts");
    keys.emplace(r.device_id, sk);
  }
  return keys;
}

std::vector<std::string> DeviceIds(int devices) {
  std::vector<std::string> ids;
  for (int d = 0; d < devices; ++d) ids.push_back(tools::DeviceId(d));
  return ids;
}

std::string ReadingsdBinary() { return READINGSD_BINARY_PATH; }

std::pair<int, std::string> RunReadingsd(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ReadingsdBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

std::pair<int, std::string> RunProgram(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  TempDir dir("readingsd-run");
  Process process(ProcessOptions{argv, {}, dir.File("out")});
  auto status = process.Wait(timeout);
  std::ifstream in(dir.File("out"));
  std::stringstream text;
  text << in.rdbuf();
  return {status.value_or(-1), text.str()};
}

std::pair<int, std::string> Get(int port, const std::string& target) {
  http::HttpGetResult result;
  if (!http::HttpGet("127.0.0.1", std::to_string(port), target, "", std::chrono::seconds(5), &result).ok()) {
    return {0, ""};
  }
  return {result.status, result.body};
}

double MetricValue(const std::string& metrics, const std::string& series) {
  auto at = metrics.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + series.size() + 2));
}

}  // namespace readingsd::test
