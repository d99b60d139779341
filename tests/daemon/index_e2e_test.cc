// Secondary indexes end to end (docs/indexes.md): the real daemon ingesting from a real broker,
// asked through GET /v1/indexes/{name}/readings and `readingsd query --index`, restarted with an
// index added (backfilled in the background, killed with SIGKILL half way) and removed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "storage/index.h"
#include "storage/number.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr std::int64_t kMinute = 60'000;
constexpr char kHotByHour[] =
    "[[index]]\nname = \"hot_by_hour\"\npartition = \"readingHour\"\nsort = \"temperature\"\nshards = 4\n";
constexpr char kWarmByDay[] = "[[index]]\nname = \"warm_by_day\"\npartition = \"readingDay\"\nsort = \"temperature\"\n";

// `count` readings over `devices`, a device's readings `step_ms` apart from 2026-06-23T00:00Z,
// `batch` to a message.
tools::GeneratorOptions Readings(std::uint64_t count, int devices, std::int64_t step_ms, int batch = 1) {
  tools::GeneratorOptions g;
  g.count = count;
  g.devices = devices;
  g.step_ms = step_ms;
  g.batch = batch;
  return g;
}

// One index item as compared: a reading's key and its sort value.
struct Entry {
  std::string device_id, reading_ts;
  double temperature = 0;
  auto operator<=>(const Entry&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Entry& e) {
  return out << e.device_id << " " << e.reading_ts << " " << e.temperature;
}

double Temperature(const std::map<std::string, storage::AttributeValue>& attributes) {
  return storage::NumberToDouble(std::get<storage::Number>(attributes.at("temperature")).text);
}

// What an index partitioned by readingHour and sorted by temperature answers for readings in
// [from, to] (normalised sort keys) above `gt`: hour by hour, each in temperature order (ties by
// the reading's key, which ends the entry's key).
std::vector<Entry> ExpectedByHour(const ReadingMap& readings, const std::string& from, const std::string& to,
                                  double gt) {
  std::vector<std::pair<std::string, Entry>> keyed;
  for (const auto& [key, attributes] : readings) {
    const double t = Temperature(attributes);
    if (key.second < from || key.second > to || t <= gt) continue;
    keyed.push_back({storage::TimeBucket(storage::IndexPartition::kReadingHour, key.second), {key.first, key.second, t}});
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.temperature, a.second.device_id, a.second.reading_ts) <
           std::tie(b.first, b.second.temperature, b.second.device_id, b.second.reading_ts);
  });
  std::vector<Entry> out;
  for (auto& [hour, entry] : keyed) out.push_back(std::move(entry));
  return out;
}

void Append(const json& page, std::vector<Entry>* entries) {
  for (const json& item : page["items"]) {
    entries->push_back({item["deviceId"], item["readingTs"], item["temperature"].get<double>()});
  }
}

// Every page of GET /v1/indexes/{index}/readings?{query}, following nextCursor; `pages` counts
// them. Stops with a failure at a non-200 answer.
std::vector<Entry> QueryIndex(int port, const std::string& index, const std::string& query, int* pages = nullptr) {
  std::vector<Entry> entries;
  std::string cursor;
  for (int page_count = 1; page_count < 10'000; ++page_count) {
    auto [status, body] =
        Get(port, "/v1/indexes/" + index + "/readings?" + query + (cursor.empty() ? "" : "&cursor=" + cursor));
    EXPECT_EQ(status, 200) << body;
    if (status != 200) break;
    const json page = json::parse(body);
    Append(page, &entries);
    if (pages) *pages = page_count;
    if (!page.contains("nextCursor")) break;
    cursor = page["nextCursor"];
  }
  return entries;
}

// The number in "(N %)" after `prefix` in `text`; -1 when `prefix` is absent.
int PercentAfter(const std::string& text, const std::string& prefix) {
  const std::size_t at = text.find(prefix);
  return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + prefix.size());
}

// The entries filed in `index` (readingHour-partitioned, `shards` shards) for the hours of
// 2026-06-23, read through a read-only open of the store beside the daemon: what a query cannot
// show, e.g. stale or duplicate entries.
std::size_t EntriesOnDisk(const std::string& data_dir, const storage::IndexSpec& index) {
  std::unique_ptr<storage::Store> store;
  storage::StoreOptions options;
  options.path = data_dir;
  options.read_only = true;
  options.indexes = {index};
  if (!storage::Store::Open(options, &store).ok()) return 0;
  std::size_t n = 0;
  for (int hour = 0; hour < 24; ++hour) {
    for (int shard = 0; shard < index.shards; ++shard) {
      const std::string hour_value = "2026-06-23T" + std::string(hour < 10 ? "0" : "") + std::to_string(hour);
      const std::string partition = index.shards > 1 ? hour_value + "#" + std::to_string(shard) : hour_value;
      auto it = store->NewIndexIterator(index.name, partition, "", "");
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    }
  }
  return n;
}

storage::IndexSpec HotByHourSpec() {
  storage::IndexSpec spec;
  spec.name = "hot_by_hour";
  spec.partition = storage::IndexPartition::kReadingHour;
  spec.sort = storage::IndexSort::kNumber;
  spec.sort_attribute = "temperature";
  spec.shards = 4;
  return spec;
}

class IndexE2ETest : public ::testing::Test {
 protected:
  // The daemon reads its indexes from a config file, rewritten before each restart.
  void StartDaemon(const std::string& indexes) {
    WriteConfig(indexes);
    if (!daemon_) daemon_.emplace(DaemonOptions{.broker_port = broker_.port(), .extra_args = {"--config", config_}});
    daemon_->Start();
  }
  void WriteConfig(const std::string& indexes) { std::ofstream(config_) << indexes; }
  int port() const { return daemon_->http_port(); }
  std::string Metrics() const { return Get(port(), "/metrics").second; }
  // Publishes through the broker and waits until the daemon has written all of it.
  void Publish(const tools::GeneratorOptions& g) {
    const double before = std::max(0.0, MetricValue(Metrics(), "readingsd_readings_ingested_total"));
    ASSERT_EQ(RunPublisher({.port = broker_.port(), .generator = g, .max_inflight = 100}).exit_code, 0);
    const double want = before + static_cast<double>(g.count);
    for (int i = 0; i < 1200 && MetricValue(Metrics(), "readingsd_readings_ingested_total") < want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(MetricValue(Metrics(), "readingsd_readings_ingested_total"), want) << daemon_->log();
  }
  // `readingsd query ARGS` against the running daemon.
  std::pair<int, std::string> Cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"--http.listen=127.0.0.1:" + std::to_string(port()), "query"});
    return RunReadingsd(args);
  }

  TempDir dir_{"readingsd-index-e2e"};
  std::string config_ = dir_.File("readingsd.toml");
  MosquittoBroker broker_;
  std::optional<Daemon> daemon_;
};

// 6 devices, a reading every 3 minutes for 5 hours each: 01:30 .. 03:30 spans three buckets.
constexpr char kWindow[] = "from=2026-06-23T01:30:00Z&to=2026-06-23T03:30:00Z";
const std::string kFrom = "2026-06-23T01:30:00.000000000Z", kTo = "2026-06-23T03:30:00.000000000Z";

TEST_F(IndexE2ETest, ReadingsFromTheBrokerAnswerTheApiAndTheCliExactlyAcrossHoursAndPages) {
  StartDaemon(kHotByHour);
  const auto g = Readings(600, 6, 3 * kMinute);
  Publish(g);
  const std::vector<Entry> want = ExpectedByHour(PublishedReadings(g), kFrom, kTo, 30);
  ASSERT_GT(want.size(), 50u);

  // One request over the window, then pages of 7 under one cursor.
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", std::string(kWindow) + "&gt=30"), want);
  int pages = 0;
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", std::string(kWindow) + "&gt=30&limit=7", &pages), want);
  EXPECT_GE(pages, static_cast<int>(want.size() / 7));

  // The CLI, following the cursor itself: the raw pages, then the table's count.
  auto [status, out] = Cli({"--index", "hot_by_hour", "--from", "2026-06-23T01:30Z", "--to", "2026-06-23T03:30Z",
                            "--gt", "30", "--limit", "7", "--all", "--json"});
  ASSERT_EQ(status, 0) << out;
  std::vector<Entry> got;
  std::istringstream lines(out);
  int cli_pages = 0;
  for (std::string line; std::getline(lines, line); ++cli_pages) {
    const json page = json::parse(line);
    EXPECT_LE(page["items"].size(), 7u);
    Append(page, &got);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(cli_pages, pages);
  std::tie(status, out) = Cli({"--index", "hot_by_hour", "--from", "2026-06-23T01:30Z", "--to", "2026-06-23T03:30Z",
                               "--gt", "30", "--all"});
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("\ncount " + std::to_string(want.size()) + ", scannedCount "), std::string::npos) << out;
  EXPECT_NE(out.find(want.front().device_id + "  " + want.front().reading_ts), std::string::npos) << out;
  // The table and CSV are printed from format=columns pages (#23): every reading, in order.
  std::tie(status, out) = Cli({"--index", "hot_by_hour", "--from", "2026-06-23T01:30Z", "--to", "2026-06-23T03:30Z",
                               "--gt", "30", "--limit", "7", "--all", "--csv"});
  ASSERT_EQ(status, 0) << out;
  std::vector<std::string> csv_lines;
  for (std::size_t at = 0, end; (end = out.find("\r\n", at)) != std::string::npos; at = end + 2) {
    csv_lines.push_back(out.substr(at, end - at));
  }
  ASSERT_EQ(csv_lines.size(), want.size() + 1) << out;
  EXPECT_TRUE(csv_lines[0].starts_with("deviceId,readingTs,")) << csv_lines[0];
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(csv_lines[i + 1].starts_with(want[i].device_id + "," + want[i].reading_ts + ",")) << csv_lines[i + 1];
  }
  EXPECT_EQ(daemon_->Terminate(), 0);
}

TEST_F(IndexE2ETest, AnOverwriteOverMqttMovesTheReadingsEntry) {
  StartDaemon(kHotByHour);
  const auto g = Readings(600, 6, 3 * kMinute);
  Publish(g);
  // dev00001's second reading (00:03) is reading 6 of `g`, 37.2; reading 1 of a one-device run,
  // 18.7, overwrites it (its first reading, 15.0, is reading 0 of both: unchanged).
  const auto overwrite = Readings(2, 1, 3 * kMinute);
  ReadingMap readings = PublishedReadings(g);
  const std::pair<std::string, std::string> key{"dev00001", "2026-06-23T00:03:00.000000000Z"};
  ASSERT_EQ(Temperature(readings.at(key)), 37.2);
  Publish(overwrite);
  for (auto& [k, attributes] : PublishedReadings(overwrite)) readings[k] = attributes;
  ASSERT_EQ(Temperature(readings.at(key)), 18.7);
  ASSERT_EQ(Difference(daemon_->StoredReadings(DeviceIds(6)), readings), "");

  const std::string hour = "from=2026-06-23T00:00Z&to=2026-06-23T00:59:59Z";
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", hour + "&eq=37.2"),
            (std::vector<Entry>{}));  // 37.2 was dev00001 00:03's alone in that hour
  // 18.7 is also dev00002's 00:00 (reading 1 of `g`); ties go by device.
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", hour + "&eq=18.7"),
            (std::vector<Entry>{{"dev00001", "2026-06-23T00:03:00.000000000Z", 18.7},
                                {"dev00002", "2026-06-23T00:00:00.000000000Z", 18.7}}));
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", "from=2026-06-23T00:00Z&to=2026-06-23T23:59Z"),
            ExpectedByHour(readings, "", "~", -1e9));
  EXPECT_EQ(daemon_->Terminate(), 0);
  EXPECT_EQ(EntriesOnDisk(daemon_->data_dir(), HotByHourSpec()), readings.size());  // nothing stale left
}

// A store of kBackfill readings, many a message: 40 devices, one every 4 s, 00:00 .. about 04:10.
constexpr std::uint64_t kBackfill = 150'000;
const tools::GeneratorOptions kBackfillReadings = Readings(kBackfill, 40, 4'000, 250);
constexpr char kBuilding[] = "index hot_by_hour is being built (";

// Polls until hot_by_hour is built. Meanwhile /readyz stays 200 and names the share built, a
// query on the index answers 503 "still being built (N %)" with N between /readyz's before and
// after, and readingsd_index_built_ratio only grows. Returns whether the building was seen.
bool WatchBackfill(int port) {
  bool seen = false;
  double ratio = 0;
  for (int i = 0; i < 3000; ++i) {
    auto [ready_status, ready] = Get(port, "/readyz");
    EXPECT_EQ(ready_status, 200) << ready;
    const int before = PercentAfter(ready, kBuilding);
    auto [status, body] = Get(port, "/v1/indexes/hot_by_hour/readings?from=2026-06-23T01:00Z&to=2026-06-23T01:59Z");
    const int after = PercentAfter(Get(port, "/readyz").second, kBuilding);
    if (status == 503) {
      seen = true;
      EXPECT_NE(before, -1) << "answered 503 after /readyz said it was built: " << body;
      const int share = PercentAfter(body, "index hot_by_hour is still being built (");
      EXPECT_GE(share, before) << body;
      if (after != -1) {
        EXPECT_LE(share, after) << body;
      }
      EXPECT_NE(body.find(R"("code":"IndexNotReady")"), std::string::npos) << body;
    } else {
      EXPECT_EQ(status, 200) << body;
      EXPECT_EQ(after, -1) << "answered before /readyz said it was built";
    }
    const double now = MetricValue(Get(port, "/metrics").second, R"(readingsd_index_built_ratio{index="hot_by_hour"})");
    EXPECT_GE(now, ratio);
    EXPECT_LE(now, 1);
    ratio = now;
    if (after == -1 && ratio == 1) return seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "hot_by_hour was not built within a minute";
  return seen;
}

// The backfill's log lines: "index hot_by_hour: backfill N %" at most once a tenth (the daemon
// looks once a second, so a fast backfill has few or none), then one "built" however fast.
void ExpectBackfillLog(const std::string& log) {
  const std::string line = "index hot_by_hour: backfill ", built = "index hot_by_hour: built, queries on it are answered";
  std::vector<int> shares;
  for (std::size_t at = 0; (at = log.find(line, at)) != std::string::npos; at += line.size()) {
    shares.push_back(std::atoi(log.c_str() + at + line.size()));
    const std::string_view rest = " % (queries on it wait until it is built)\n";
    EXPECT_EQ(log.substr(log.find(" %", at), rest.size()), rest);
  }
  for (std::size_t i = 1; i < shares.size(); ++i) EXPECT_GT(shares[i] / 10, shares[i - 1] / 10) << log;
  EXPECT_NE(log.find(built), std::string::npos) << log;
  EXPECT_EQ(log.find(built), log.rfind(built)) << log;
}

TEST_F(IndexE2ETest, AnIndexAddedToAPopulatedStoreIsBackfilledInTheBackground) {
  StartDaemon("");
  Publish(kBackfillReadings);
  ASSERT_EQ(daemon_->Terminate(), 0);
  const std::size_t log_before = daemon_->log().size();

  StartDaemon(kHotByHour);  // ready at once: the backfill runs behind
  EXPECT_TRUE(WatchBackfill(port())) << "the backfill ended before the test could look: raise kBackfill";
  // The log line is written at the daemon's next tick.
  for (int i = 0; i < 100 && daemon_->log().find("index hot_by_hour: built", log_before) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ExpectBackfillLog(daemon_->log().substr(log_before));

  const ReadingMap published = PublishedReadings(kBackfillReadings);
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", std::string(kWindow) + "&gt=38"), ExpectedByHour(published, kFrom, kTo, 38));
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", "from=2026-06-23&to=2026-06-23T23:59:59Z").size(), kBackfill);
  EXPECT_EQ(daemon_->Terminate(), 0);
  EXPECT_EQ(EntriesOnDisk(daemon_->data_dir(), HotByHourSpec()), kBackfill);
}

TEST_F(IndexE2ETest, ABackfillKilledHalfWayGoesOnAfterTheRestartAndEndsExact) {
  StartDaemon("");
  Publish(kBackfillReadings);
  ASSERT_EQ(daemon_->Terminate(), 0);

  StartDaemon(kHotByHour);
  int share = -1;
  for (int i = 0; i < 3000 && share < 1; ++i) {
    share = PercentAfter(Get(port(), "/readyz").second, kBuilding);
    if (share == -1) break;  // built already
    if (share < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(share, 1) << "the backfill ended before the test could kill it: raise kBackfill";
  daemon_->Kill9();

  // Restarted, it goes on while new readings (a later hour) arrive and are indexed by their writes.
  StartDaemon(kHotByHour);
  tools::GeneratorOptions later = Readings(2000, 40, 1'000, 50);
  later.start_ms = tools::kDefaultStartMs + 10 * 3600 * 1000;
  Publish(later);
  WatchBackfill(port());

  ReadingMap want = PublishedReadings(kBackfillReadings);
  for (auto& [key, attributes] : PublishedReadings(later)) want[key] = attributes;
  EXPECT_EQ(QueryIndex(port(), "hot_by_hour", "from=2026-06-23&to=2026-06-23T23:59:59Z"),
            ExpectedByHour(want, "", "~", -1e9));
  EXPECT_EQ(daemon_->Terminate(), 0);
  EXPECT_EQ(EntriesOnDisk(daemon_->data_dir(), HotByHourSpec()), want.size());
}

TEST_F(IndexE2ETest, AnIndexRemovedFromTheConfigIsDroppedAndItsReadingsStay) {
  StartDaemon(std::string(kHotByHour) + kWarmByDay);
  const auto g = Readings(600, 6, 3 * kMinute);
  Publish(g);
  ASSERT_EQ(QueryIndex(port(), "hot_by_hour", "from=2026-06-23&to=2026-06-23T23:59:59Z").size(), 600u);
  ASSERT_EQ(daemon_->Terminate(), 0);
  ASSERT_EQ(EntriesOnDisk(daemon_->data_dir(), HotByHourSpec()), 600u);
  const std::size_t log_before = daemon_->log().size();

  StartDaemon(kWarmByDay);
  EXPECT_NE(daemon_->log().find("index hot_by_hour: entries dropped (no longer declared, or declared with other "
                                "keys); readings untouched\n",
                                log_before),
            std::string::npos)
      << daemon_->log();
  EXPECT_EQ(daemon_->log().find("index warm_by_day: entries dropped", log_before), std::string::npos);
  auto [status, body] = Get(port(), "/v1/indexes/hot_by_hour/readings?from=2026-06-23&to=2026-06-23T23:59:59Z");
  EXPECT_EQ(status, 404);
  EXPECT_NE(body.find(R"(no index \"hot_by_hour\" is declared ([[index]] in the config))"), std::string::npos) << body;
  auto [cli_status, said] = Cli({"--index", "hot_by_hour", "--from", "2026-06-23", "--to", "2026-06-23T23:59:59Z"});
  EXPECT_EQ(cli_status, 64) << said;
  EXPECT_NE(said.find("readingsd query: HTTP 404: "), std::string::npos) << said;
  EXPECT_EQ(MetricValue(Metrics(), R"(readingsd_index_built_ratio{index="hot_by_hour"})"), -1);
  EXPECT_EQ(MetricValue(Metrics(), R"(readingsd_index_built_ratio{index="warm_by_day"})"), 1);
  // The other index and every reading are as they were.
  EXPECT_EQ(QueryIndex(port(), "warm_by_day", "from=2026-06-23&to=2026-06-23T23:59:59Z").size(), 600u);
  EXPECT_EQ(Difference(daemon_->StoredReadings(DeviceIds(6)), PublishedReadings(g)), "");
  EXPECT_EQ(daemon_->Terminate(), 0);
  EXPECT_EQ(EntriesOnDisk(daemon_->data_dir(), HotByHourSpec()), 0u);
}

TEST_F(IndexE2ETest, ReadingsdServeRefusesAnIndexTheStoreHasNotBuilt) {
  StartDaemon("");
  const auto g = Readings(600, 6, 3 * kMinute);
  Publish(g);
  ASSERT_EQ(daemon_->Terminate(), 0);

  // The store read-only, with an index it never built: refused, not answered with no readings.
  WriteConfig(kHotByHour);
  Daemon serve({.broker_port = broker_.port(),
                .extra_args = {"--config", config_, "--storage.data_dir=" + daemon_->data_dir(), "serve"}});
  serve.Start();
  auto [status, body] = Get(serve.http_port(), "/v1/indexes/hot_by_hour/readings?from=2026-06-23&to=2026-06-23T23:59Z");
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("index hot_by_hour is still being built (0 %)"), std::string::npos) << body;
  EXPECT_NE(serve.log().find("index hot_by_hour: not built in this store, and a read-only daemon does not build it"),
            std::string::npos)
      << serve.log();
  EXPECT_EQ(serve.log().find("backfill 0 %"), std::string::npos) << serve.log();
  // And through the DynamoDB API: DescribeTable says CREATING, Query refuses as DynamoDB does.
  auto dynamodb = [&](const std::string& op, const std::string& request) {
    return RunProgram({"curl", "-sS", "-H", "X-Amz-Target: DynamoDB_20120810." + op, "-H",
                       "Content-Type: application/x-amz-json-1.0", "--data-binary", request,
                       "http://127.0.0.1:" + std::to_string(serve.http_port()) + "/"});
  };
  auto [described, table] = dynamodb("DescribeTable", R"({"TableName":"readings"})");
  ASSERT_EQ(described, 0) << table;
  const json gsi = json::parse(table)["Table"]["GlobalSecondaryIndexes"];
  ASSERT_EQ(gsi.size(), 1u) << table;
  EXPECT_EQ(gsi[0]["IndexName"], "hot_by_hour");
  EXPECT_EQ(gsi[0]["IndexStatus"], "CREATING");
  auto [queried, refusal] = dynamodb("Query", R"({"TableName":"readings","IndexName":"hot_by_hour",)"
                                              R"("KeyConditionExpression":"readingHour = :h",)"
                                              R"("ExpressionAttributeValues":{":h":{"S":"2026-06-23T01"}}})");
  ASSERT_EQ(queried, 0) << refusal;
  EXPECT_NE(refusal.find("ValidationException"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("index hot_by_hour is still being built (0 %)"), std::string::npos) << refusal;
  EXPECT_EQ(serve.Terminate(), 0);

  // Built by the daemon, it answers read-only too.
  StartDaemon(kHotByHour);
  WatchBackfill(port());
  ASSERT_EQ(daemon_->Terminate(), 0);
  serve.Start();
  EXPECT_EQ(QueryIndex(serve.http_port(), "hot_by_hour", "from=2026-06-23&to=2026-06-23T23:59:59Z"),
            ExpectedByHour(PublishedReadings(g), "", "~", -1e9));
  EXPECT_EQ(serve.Terminate(), 0);
}

}  // namespace
}  // namespace readingsd::test
