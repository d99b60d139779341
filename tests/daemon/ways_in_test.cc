// The ways in beside MQTT, end to end with clients nobody here wrote: the `influx` CLI (Debian's
// influxdb-client) importing line protocol into POST /write, curl and Python's requests posting
// JSON and gzip bodies, and `readingsd import` into a stopped store, through a running daemon,
// and killed with SIGKILL half way. Afterwards every good reading is queryable, every bad line is
// counted by its reason, and nothing is stored twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"

namespace readingsd::test {
namespace {

using Keys = std::set<std::pair<std::string, std::string>>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The clients nobody here wrote, given longer than readingsd's own commands.
constexpr std::chrono::seconds kToolTimeout{120};

// "2026-06-23T08:MM:SS.000000000Z" for second `s` of the hour.
std::string Key(int s) {
  char key[40];
  std::snprintf(key, sizeof key, "2026-06-23T%02d:%02d:%02d.000000000Z", 8 + s / 3600, s / 60 % 60, s % 60);
  return key;
}
constexpr long kHourStart = 1782201600;  // 2026-06-23T08:00:00Z

class WaysInTest : public ::testing::Test {
 protected:
  void StartDaemon(std::vector<std::string> extra = {}) {
    extra.push_back("--ingest.max_future=");  // the readings are stamped on a fixed day
    daemon_.emplace(DaemonOptions{.broker_port = broker_.port(), .extra_args = extra});
    daemon_->Start();
  }
  std::string Url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(daemon_->http_port()) + target;
  }
  double Metric(const std::string& series) const { return MetricValue(Get(daemon_->http_port(), "/metrics").second, series); }
  double Rejected(const std::string& reason) const {
    return Metric("readingsd_readings_rejected_total{reason=\"" + reason + "\"}");
  }

  TempDir dir_{"readingsd-ways-in"};
  MosquittoBroker broker_;
  std::optional<Daemon> daemon_;
};

TEST_F(WaysInTest, InfluxCliImportsLineProtocolAndEveryBadLineIsCountedByReason) {
  StartDaemon();
  std::string file = "# DML\n# CONTEXT-DATABASE: telegraf\n";
  Keys want;
  for (int i = 0; i < 300; ++i) {
    const std::string device = "lp" + std::to_string(i % 5);
    file += "weather,device=" + device + ",site=north temperature=" + std::to_string(20 + i % 7) + ".5,count=" +
            std::to_string(i) + "i " + std::to_string(kHourStart + i) + "\n";
    want.emplace(device, Key(i));
    if (i % 50 == 7) file += "weather,device=" + device + " temperature=warm " + std::to_string(kHourStart + i) + "\n";
    if (i % 100 == 9) file += "weather,site=north temperature=1 " + std::to_string(kHourStart + i) + "\n";
  }
  file += "weather,device=old temperature=1 946684000\n";  // 1999: before ingest.min_timestamp
  WriteFile(dir_.File("weather.lp"), file);
  auto [status, output] = RunProgram({"influx", "-import", "-path", dir_.File("weather.lp"), "-host", "127.0.0.1",
                                      "-port", std::to_string(daemon_->http_port()), "-precision", "s"},
                                     kToolTimeout);
  // The CLI counts a batch with a refused line as failed, as against InfluxDB; the rest is stored.
  EXPECT_NE(output.find("partial write"), std::string::npos) << output;
  EXPECT_EQ(daemon_->StoredKeys({"lp0", "lp1", "lp2", "lp3", "lp4", "old"}), want);
  EXPECT_EQ(Rejected("malformed_line"), 6) << output;
  EXPECT_EQ(Rejected("missing_device_id"), 3);
  EXPECT_EQ(Rejected("timestamp_too_old"), 1);
  EXPECT_EQ(Metric("readingsd_readings_ingested_total"), 300);
  // Queryable over the native API, the numbers exact.
  auto [code, body] = Get(daemon_->http_port(), "/v1/devices/lp2/readings?limit=1");
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find(R"("readingTs":"2026-06-23T08:00:02.000000000Z","temperature":22.5,"count":2,"site":"north")"),
            std::string::npos)
      << body;
}

TEST_F(WaysInTest, CurlAndPythonRequestsPostJsonLineProtocolAndGzip) {
  StartDaemon();
  // curl: a JSON array with one bad reading answers 207 naming it.
  WriteFile(dir_.File("batch.json"), R"([{"deviceId":"cj","readingTs":"2026-06-23T08:00:00Z","v":1},
    {"deviceId":"cj","readingTs":"2026-06-23T08:00:01+02:00","v":2},
    {"deviceId":"cj","readingTs":"June 23","v":3}])");
  auto [status, out] = RunProgram({"curl", "-sS", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                                   "--data-binary", "@" + dir_.File("batch.json"), Url("/v1/readings")},
                                  kToolTimeout);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find(R"("written":2,"rejected":[{"index":2,"reason":"invalid_timestamp")"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\n207")) << out;
  // curl: a gzip body to the device's path.
  WriteFile(dir_.File("one.json"), R"({"readingTs":"2026-06-23T08:00:05Z","v":5})");
  ASSERT_EQ(RunProgram({"gzip", "-k", dir_.File("one.json")}, kToolTimeout).first, 0);
  std::tie(status, out) = RunProgram({"curl", "-sS", "-w", "%{http_code}", "-H", "Content-Encoding: gzip",
                                      "--data-binary", "@" + dir_.File("one.json.gz"), Url("/v1/devices/cg/readings")},
                                     kToolTimeout);
  EXPECT_EQ(out, "204");
  // Python requests: gzip line protocol to the 2.x endpoint, mixed good and bad lines.
  const std::string script = R"(
import gzip, sys, requests
body = b"m,device=py v=1 1782201600000\nm,device=py v=nope 1782201601000\nm,device=py s=\"x\" 1782201602000\n"
r = requests.post(sys.argv[1], params={"org": "o", "bucket": "b", "precision": "ms"},
                  data=gzip.compress(body), headers={"Content-Encoding": "gzip"})
print(r.status_code, r.json()["code"], r.json()["message"])
r = requests.post(sys.argv[2], json=[{"deviceId": "py", "readingTs": "2026-06-23T08:00:09Z", "ok": True}])
print(r.status_code)
)";
  WriteFile(dir_.File("post.py"), script);
  std::tie(status, out) =
      RunProgram({"python3", dir_.File("post.py"), Url("/api/v2/write"), Url("/v1/readings")}, kToolTimeout);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("400 invalid partial write: line 2: malformed_line"), std::string::npos) << out;
  EXPECT_NE(out.find("\n204"), std::string::npos) << out;

  EXPECT_EQ(daemon_->StoredKeys({"cj", "cg", "py"}),
            (Keys{{"cj", Key(0)}, {"cj", "2026-06-23T06:00:01.000000000Z"}, {"cg", Key(5)}, {"py", Key(0)},
                  {"py", Key(2)}, {"py", Key(9)}}));
  EXPECT_EQ(Rejected("invalid_timestamp"), 1);
  EXPECT_EQ(Rejected("malformed_line"), 1);
  EXPECT_EQ(Metric("readingsd_readings_ingested_total"), 6);
}

// A CSV, a JSON lines and a line protocol file with every kind of bad line; `good` gets what
// they should store.
void WriteMixedFiles(const TempDir& dir, Keys* good) {
  WriteFile(dir.File("a.csv"),
            "deviceId,readingTs,temperature,note,ok\n"
            "c1,2026-06-23T08:00:00Z,21.5,\"with, comma and \"\"quotes\"\"\",true\n"
            "c1,2026-06-23T08:00:01Z,22,,false\n"
            "c1,yesterday,1,x,true\n"
            "c1,2026-06-23T08:00:02Z,1\n"
            "bad id,2026-06-23T08:00:03Z,1,x,true\n"
            "c2,2026-06-23T08:00:04Z,\"7\",\"multi\nline\",true\n");
  WriteFile(dir.File("b.jsonl"), "{\"deviceId\":\"j1\",\"readingTs\":\"2026-06-23T08:00:00Z\",\"v\":1}\n\n"
                                 "[{\"deviceId\":\"j1\",\"readingTs\":\"2026-06-23T08:00:01Z\"},{\"deviceId\":\"j1\"}]\n"
                                 "{not json\n");
  WriteFile(dir.File("c.lp"), "# comment\nm,device=l1 v=1 1782201600000000000\nm,device=l1 v=oops 1\n");
  *good = {{"c1", Key(0)}, {"c1", Key(1)}, {"c2", Key(4)}, {"j1", Key(0)}, {"j1", Key(1)}, {"l1", Key(0)}};
}
const std::vector<std::string> kMixedDevices = {"c1", "c2", "j1", "l1"};

TEST_F(WaysInTest, ImportIntoAStoppedStoreCountsEachReasonAndRerunsChangeNothing) {
  Keys good;
  WriteMixedFiles(dir_, &good);
  const std::string data_dir = dir_.File("db");
  const std::vector<std::string> import = {"--storage.data_dir=" + data_dir, "import", dir_.File("a.csv"),
                                           dir_.File("b.jsonl"), dir_.File("c.lp")};
  auto [status, out] = RunReadingsd(import);
  EXPECT_EQ(status, 65) << out;  // some refused, the rest stored
  EXPECT_NE(out.find("imported 6 readings from 3 files"), std::string::npos) << out;
  EXPECT_NE(out.find("refused 6: invalid_device_id 1, invalid_timestamp 1, malformed_json 1, malformed_line 2, "
                     "missing_timestamp 1"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("a.csv:4: invalid_timestamp"), std::string::npos) << out;
  EXPECT_NE(out.find("c.lp:3: malformed_line"), std::string::npos) << out;
  const ReadingMap first = StoredReadings(data_dir, kMixedDevices);
  Keys keys;
  for (const auto& [key, attributes] : first) keys.insert(key);
  EXPECT_EQ(keys, good);
  EXPECT_EQ(std::get<std::string>(first.at({"c1", Key(0)}).at("note")), "with, comma and \"quotes\"");
  EXPECT_EQ(std::get<std::string>(first.at({"c2", Key(4)}).at("temperature")), "7");  // quoted: a string
  EXPECT_EQ(std::get<storage::Number>(first.at({"c1", Key(0)}).at("temperature")).text, "21.5");

  std::tie(status, out) = RunReadingsd(import);
  EXPECT_EQ(status, 65) << out;
  EXPECT_EQ(Difference(StoredReadings(data_dir, kMixedDevices), first), "");
}

// A file with no line end for 16 MiB (binary junk, an unclosed quote) is refused by name and
// line instead of being read whole into memory; the readings before it stay stored.
TEST_F(WaysInTest, ADamagedImportFileIsRefusedAtItsLineAndTheReadingsBeforeItStay) {
  const std::string good = "deviceId,readingTs,temperature\nd1,2026-06-23T08:00:00Z,1\nd1,2026-06-23T08:00:01Z,2\n";
  WriteFile(dir_.File("junk.csv"), good + std::string(17 << 20, 'x'));
  WriteFile(dir_.File("quote.csv"), good + "d2,2026-06-23T08:00:00Z,\"open\n" + std::string(17 << 20, 'y') + "\n");
  const std::string data_dir = dir_.File("db");
  for (const std::string file : {"junk.csv", "quote.csv"}) {
    auto [status, out] = RunReadingsd({"--storage.data_dir=" + data_dir, "import", dir_.File(file)});
    EXPECT_EQ(status, 65) << out;
    EXPECT_NE(out.find(file + ":4: no line end within 16 MiB"), std::string::npos) << out;
    EXPECT_NE(out.find("fix the file and run it again"), std::string::npos) << out;
  }
  EXPECT_EQ(StoredReadings(data_dir, {"d1", "d2"}).size(), 2u);
}

TEST_F(WaysInTest, ImportThroughARunningDaemonStoresTheSame) {
  Keys good;
  WriteMixedFiles(dir_, &good);
  StartDaemon();
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + daemon_->data_dir(),
                                     "--http.listen=127.0.0.1:" + std::to_string(daemon_->http_port()), "import",
                                     dir_.File("a.csv"), dir_.File("b.jsonl"), dir_.File("c.lp")});
  EXPECT_EQ(status, 65) << out;
  EXPECT_NE(out.find("through its HTTP API"), std::string::npos) << out;
  EXPECT_NE(out.find("imported 6 readings"), std::string::npos) << out;
  EXPECT_EQ(daemon_->StoredKeys(kMixedDevices), good);
  EXPECT_EQ(Metric("readingsd_readings_ingested_total"), 6);  // the daemon's hooks saw the writes
}

// A file of many batches (`--batch 64`), bad lines spread across them: each batch's write runs
// while the next is parsed, and every reading and refusal is counted once, in either sink.
TEST_F(WaysInTest, AnImportOfManyBatchesStoresAndCountsEachLineOnce) {
  constexpr int kDevices = 20, kPerDevice = 500;
  std::string file = "deviceId,readingTs,temperature\n";
  Keys good;
  std::size_t bad = 0;
  for (int s = 0; s < kPerDevice; ++s) {
    for (int d = 0; d < kDevices; ++d) {
      const std::string device = "m" + std::to_string(d);
      if ((s * kDevices + d) % 97 == 5) {
        file += device + ",later," + std::to_string(s) + "\n";
        ++bad;
        continue;
      }
      file += device + "," + Key(s) + "," + std::to_string(s) + ".5\n";
      good.emplace(device, Key(s));
    }
  }
  WriteFile(dir_.File("many.csv"), file);
  std::vector<std::string> devices;
  for (int d = 0; d < kDevices; ++d) devices.push_back("m" + std::to_string(d));
  const std::string summary = "imported " + std::to_string(good.size()) + " readings from 1 file";
  const std::string refused = "refused " + std::to_string(bad) + ": invalid_timestamp " + std::to_string(bad) + "\n";

  const std::string data_dir = dir_.File("db");
  auto [status, out] = RunReadingsd({"--storage.data_dir=" + data_dir, "import", "--batch", "64", dir_.File("many.csv")});
  EXPECT_EQ(status, 65) << out;
  EXPECT_NE(out.find(summary), std::string::npos) << out;
  EXPECT_NE(out.find(refused), std::string::npos) << out;
  EXPECT_EQ(StoredKeys(data_dir, devices), good);

  StartDaemon();
  std::tie(status, out) = RunReadingsd({"--storage.data_dir=" + daemon_->data_dir(),
                                        "--http.listen=127.0.0.1:" + std::to_string(daemon_->http_port()), "import",
                                        "--batch", "64", dir_.File("many.csv")});
  EXPECT_EQ(status, 65) << out;
  EXPECT_NE(out.find(summary), std::string::npos) << out;
  EXPECT_NE(out.find(refused), std::string::npos) << out;
  EXPECT_EQ(daemon_->StoredKeys(devices), good);
  EXPECT_EQ(Metric("readingsd_readings_ingested_total"), static_cast<double>(good.size()));
}

TEST_F(WaysInTest, KillNineDuringALargeImportThenRerunStoresEveryReadingOnce) {
  constexpr int kDevices = 20, kPerDevice = 20000;
  std::string first_half, second_half;
  for (int s = 0; s < kPerDevice; ++s) {
    std::string& part = s < kPerDevice / 2 ? first_half : second_half;
    for (int d = 0; d < kDevices; ++d) {
      part += "k" + std::to_string(d) + "," + std::to_string(kHourStart + s) + "," + std::to_string(s % 97) + ".25,ok\n";
    }
  }
  const std::string header = "device,time,temperature,status\n";
  std::ofstream(dir_.File("big.csv")) << header << first_half << second_half;
  std::vector<std::string> devices;
  for (int d = 0; d < kDevices; ++d) devices.push_back("k" + std::to_string(d));
  const std::string data_dir = dir_.File("db");
  auto argv_for = [&](const std::string& file) {
    return std::vector<std::string>{ReadingsdBinary(), "--storage.data_dir=" + data_dir, "import", "--precision", "s",
                                    "--batch", "2000", "--progress-seconds", "1", file};
  };
  {
    // The first run reads a pipe fed a slice at a time, never past the first half, so it is
    // surely mid-import when it is killed, however fast the machine.
    ::signal(SIGPIPE, SIG_IGN);
    const std::string fifo = dir_.File("half.csv");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    Process importer(ProcessOptions{argv_for(fifo), {}, dir_.File("first.out")});
    std::ofstream pipe(fifo, std::ios::binary);
    pipe << header;
    constexpr std::size_t kSlice = 64 * 1024;
    for (std::size_t at = 0; at < first_half.size() && importer.Running() &&
                             ReadFile(dir_.File("first.out")).find("readings, 0 refused") == std::string::npos;
         at += kSlice) {
      pipe << first_half.substr(at, kSlice) << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(importer.Running()) << ReadFile(dir_.File("first.out"));
    importer.Kill(SIGKILL);
    EXPECT_EQ(importer.Wait(std::chrono::seconds(10)), 128 + SIGKILL);
  }
  const std::size_t after_kill = StoredKeys(data_dir, devices).size();
  EXPECT_GT(after_kill, 0u);
  EXPECT_LT(after_kill, static_cast<std::size_t>(kDevices * kPerDevice));
  const std::vector<std::string> argv = argv_for(dir_.File("big.csv"));
  auto [status, out] = RunReadingsd({argv.begin() + 1, argv.end()});
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("imported " + std::to_string(kDevices * kPerDevice) + " readings"), std::string::npos) << out;
  const Keys keys = StoredKeys(data_dir, devices);
  ASSERT_EQ(keys.size(), static_cast<std::size_t>(kDevices * kPerDevice));  // each once: keys are unique
  EXPECT_EQ(*keys.begin(), (std::pair<std::string, std::string>{"k0", Key(0)}));
  EXPECT_EQ(*keys.rbegin(), (std::pair<std::string, std::string>{"k9", Key(kPerDevice - 1)}));
}

}  // namespace
}  // namespace readingsd::test
