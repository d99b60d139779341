// End to end with a real Prometheus server (Debian package `prometheus`) whose only data source
// is readingsd, configured with the shipped config/prometheus-readingsd.yml: PromQL over the readings,
// through Prometheus' HTTP API and `promtool query range`, must agree with readingsd's own
// aggregate endpoint, and the device matchers must select the right devices.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/key.h"
#include "storage/store.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/prometheus_server.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {
namespace {

using nlohmann::json;

constexpr int64_t kDayStart = 1782172800;  // 2026-06-23T00:00:00Z
constexpr int kReadings = 8640;            // a day of readings 10 s apart
constexpr const char* kDayFrom = "2026-06-23T00:00:00Z";
constexpr const char* kDayTo = "2026-06-23T23:59:59Z";

std::string SortKeyOf(int64_t seconds) {
  std::string key;
  EXPECT_TRUE(storage::SortKeyAtWholeSeconds(seconds, &key));
  return key;
}

// a1b2: a day of readings 10 s apart, 5 s past each boundary of 10 s (so none is on the edge of
// a 5-minute window), temperature varying irregularly, door a boolean, status a string. a1b3,
// a2, b1b2: one temperature every hour.
void WriteReadings(const std::string& data_dir) {
  storage::StoreOptions options;
  options.path = data_dir;
  std::unique_ptr<storage::Store> store;
  ASSERT_TRUE(storage::Store::Open(options, &store).ok());
  std::vector<storage::Reading> readings;
  for (int k = 0; k < kReadings; ++k) {
    storage::Reading r{"a1b2", SortKeyOf(kDayStart + 5 + 10 * k), {}};
    r.attributes.push_back({"temperature", storage::Number(15 + (k * 37 % 1000) * 0.013)});
    r.attributes.push_back({"door", k % 7 == 0});
    r.attributes.push_back({"status", std::string("ok")});
    readings.push_back(std::move(r));
  }
  for (const char* device : {"a1b3", "a2", "b1b2"}) {
    for (int hour = 0; hour < 24; ++hour) {
      readings.push_back({device, SortKeyOf(kDayStart + 3600 * hour + 7), {{"temperature", storage::Number(hour)}}});
    }
  }
  Status s = store->Write(readings);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The shipped Prometheus config, pointed at readingsd's `port`.
std::string ShippedConfig(int port) {
  std::string config = ReadFile(READINGSD_SHIPPED_PROMETHEUS_YML);
  const std::string shipped = "127.0.0.1:8080";
  for (auto at = config.find(shipped); at != std::string::npos; at = config.find(shipped, at)) {
    config.replace(at, shipped.size(), "127.0.0.1:" + std::to_string(port));
  }
  EXPECT_NE(config.find("remote_read:"), std::string::npos);
  return config;
}

class PrometheusRemoteReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_ = std::make_unique<MosquittoBroker>();
    daemon_ = std::make_unique<Daemon>(DaemonOptions{.broker_port = broker_->port()});
    WriteReadings(daemon_->data_dir());
    daemon_->Start();
    prometheus_ = std::make_unique<PrometheusServer>(ShippedConfig(daemon_->http_port()));
  }

  // The devices of an instant query's series at the end of the day.
  std::set<std::string> Devices(const std::string& promql) {
    std::string error;
    auto data = prometheus_->Api("query", "query=" + UrlEncode(promql) + "&time=" + std::to_string(kDayStart + 86400),
                                 &error);
    std::set<std::string> devices;
    if (!data) {
      ADD_FAILURE() << promql << ": " << error << "\n" << prometheus_->log() << daemon_->log();
      return devices;
    }
    for (const json& series : (*data)["result"]) devices.insert(series["metric"].value("device", "?"));
    return devices;
  }

  // The native aggregate's 5-minute averages of a1b2's temperature, by bucket start (seconds).
  std::map<int64_t, double> NativeAverages() {
    auto [status, body] = Get(daemon_->http_port(), std::string("/v1/devices/a1b2/aggregate?from=") + kDayFrom +
                                                       "&to=" + kDayTo + "&step=5m&fn=avg&attributes=temperature");
    EXPECT_EQ(status, 200) << body;
    std::map<int64_t, double> averages;
    const json answer = json::parse(body);
    for (const json& bucket : answer["buckets"]) {
      std::string key;
      EXPECT_TRUE(storage::NormalizeTimestamp(bucket["start"].get<std::string>(), &key).ok());
      averages[storage::SortKeyWholeSeconds(key)] = bucket["temperature"]["avg"].get<double>();
    }
    return averages;
  }

  std::unique_ptr<MosquittoBroker> broker_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<PrometheusServer> prometheus_;
};

constexpr const char* kAvgOverTime = R"(avg_over_time(temperature{device="a1b2"}[5m]))";

// Prometheus' evaluation at the end of a 5-minute bucket averages the window [end - 5m, end],
// which holds exactly the bucket's readings: so the range query at step 5m is the native
// aggregate, shifted by one step. Both average in doubles, in different orders, hence the 1e-9.
void ExpectMatchesNative(const std::map<int64_t, double>& native, const json& values, const std::string& what) {
  ASSERT_EQ(values.size(), native.size()) << what;
  ASSERT_EQ(native.size(), 288u);
  std::size_t i = 0;
  for (const auto& [start, avg] : native) {
    const json& point = values[i++];
    EXPECT_EQ(point[0].get<double>(), static_cast<double>(start + 300)) << what;
    EXPECT_NEAR(std::stod(point[1].get<std::string>()), avg, 1e-9 * std::abs(avg)) << what << " at " << start;
  }
}

TEST_F(PrometheusRemoteReadTest, AvgOverTimeEqualsTheNativeAggregate) {
  const std::map<int64_t, double> native = NativeAverages();
  std::string error;
  auto data = prometheus_->Api("query_range", "query=" + UrlEncode(kAvgOverTime) + "&start=" +
                                                  std::to_string(kDayStart + 300) + "&end=" +
                                                  std::to_string(kDayStart + 86400) + "&step=300",
                               &error);
  ASSERT_TRUE(data.has_value()) << error << "\n" << prometheus_->log() << daemon_->log();
  ASSERT_EQ((*data)["result"].size(), 1u) << data->dump();
  const json& series = (*data)["result"][0];
  EXPECT_EQ(series["metric"], json::parse(R"({"device":"a1b2"})"));
  ExpectMatchesNative(native, series["values"], "HTTP API");

  // The same through promtool, as an operator would check it by hand.
  TempDir dir("readingsd-promtool");
  Process promtool({{"promtool", "query", "range", "-o", "json", "--start=" + std::to_string(kDayStart + 300),
                     "--end=" + std::to_string(kDayStart + 86400), "--step=5m",
                     "http://127.0.0.1:" + std::to_string(prometheus_->port()), kAvgOverTime},
                    {},
                    dir.File("out")});
  ASSERT_EQ(promtool.Wait(std::chrono::seconds(60)), 0);
  const std::string out = ReadFile(dir.File("out"));
  const json matrix = json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(matrix.is_array() && matrix.size() == 1) << out;
  ExpectMatchesNative(native, matrix[0]["values"], "promtool");
}

TEST_F(PrometheusRemoteReadTest, MatchersSelectTheRightDevices) {
  const std::set<std::string> all = {"a1b2", "a1b3", "a2", "b1b2"};
  EXPECT_EQ(Devices("last_over_time(temperature[1d])"), all);
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device="a1b2"}[1d]))"), (std::set<std::string>{"a1b2"}));
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device!="a1b2"}[1d]))"),
            (std::set<std::string>{"a1b3", "a2", "b1b2"}));
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device=~"a1.*"}[1d]))"), (std::set<std::string>{"a1b2", "a1b3"}));
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device=~"a1|a2"}[1d]))"), (std::set<std::string>{"a2"}));
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device!~"a1.*"}[1d]))"), (std::set<std::string>{"a2", "b1b2"}));
  EXPECT_EQ(Devices(R"(last_over_time(temperature{device=~".*b2"}[1d]))"), (std::set<std::string>{"a1b2", "b1b2"}));
  EXPECT_EQ(Devices(R"(last_over_time({__name__=~"door|status"}[1d]))"), (std::set<std::string>{"a1b2"}));
  EXPECT_EQ(Devices(R"(last_over_time({__name__!~"temp.*", device=~"a.*"}[1d]))"), (std::set<std::string>{"a1b2"}));
  // A boolean is 0 or 1: door is true at every seventh reading, 1235 of the day's 8640.
  EXPECT_EQ(prometheus_->Api("query", "query=" + UrlEncode(R"(sum_over_time(door{device="a1b2"}[1d]))") +
                                          "&time=" + std::to_string(kDayStart + 86400))
                .value_or(json())["result"][0]["value"][1],
            "1235");
}

// /api/v1/series lists the devices, as Grafana's label_values(temperature, device) asks for
// them. (Over remote read, Prometheus answers /api/v1/labels and /label/<name>/values with
// nothing and the warning "not implemented": the dashboard lists devices with a query instead.)
TEST_F(PrometheusRemoteReadTest, SeriesEndpointListsTheDevices) {
  const std::string range = "&start=" + std::to_string(kDayStart) + "&end=" + std::to_string(kDayStart + 86400);
  std::string error;
  auto data = prometheus_->Api("series", "match[]=temperature" + range, &error);
  ASSERT_TRUE(data.has_value()) << error;
  std::set<std::string> devices;
  for (const json& series : *data) devices.insert(series.value("device", "?"));
  EXPECT_EQ(devices, (std::set<std::string>{"a1b2", "a1b3", "a2", "b1b2"}));
}

// Every query of the shipped Grafana dashboard, with its variables set as Grafana sets them, runs
// in Prometheus: the device list and the device's panels over the readings, the hot-partition
// panels over the scraped /metrics (reads show once the queries above have read partitions).
TEST_F(PrometheusRemoteReadTest, ShippedDashboardQueriesAnswer) {
  const json dashboard = json::parse(ReadFile(READINGSD_SHIPPED_DASHBOARD));
  const auto substitute = [](std::string expr) {
    for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
             {"${metric}", "temperature"}, {"$metric", "temperature"}, {"$device", "a1b2"}, {"$__range", "1d"}}) {
      for (auto at = expr.find(variable); at != std::string::npos; at = expr.find(variable, at)) {
        expr.replace(at, variable.size(), value);
      }
    }
    return expr;
  };
  const std::string day_end = "&time=" + std::to_string(kDayStart + 86400);
  std::string error;
  for (const json& variable : dashboard["templating"]["list"]) {
    if (variable["type"] != "query") continue;
    std::string expr = substitute(variable["query"]["query"].get<std::string>());
    ASSERT_TRUE(expr.starts_with("query_result(") && expr.ends_with(")")) << expr;
    expr = expr.substr(13, expr.size() - 14);
    EXPECT_EQ(Devices(expr), (std::set<std::string>{"a1b2", "a1b3", "a2", "b1b2"})) << expr;
  }
  std::size_t targets = 0;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      ++targets;
      const std::string expr = substitute(target["expr"].get<std::string>());
      ASSERT_EQ(expr.find('$'), std::string::npos) << expr;
      if (expr.find("readingsd_partition_reads") != std::string::npos) {
        EXPECT_TRUE(WaitUntil([&] { return !prometheus_->Query(expr).value_or(json::array()).empty(); },
                              std::chrono::seconds(30)))
            << expr;
      } else if (expr.find("readingsd_") != std::string::npos) {
        EXPECT_TRUE(prometheus_->Query(expr).has_value()) << expr;
      } else {
        auto data = prometheus_->Api("query", "query=" + UrlEncode(expr) + day_end, &error);
        ASSERT_TRUE(data.has_value()) << expr << ": " << error;
        EXPECT_FALSE((*data)["result"].empty()) << expr;
      }
    }
  }
  EXPECT_EQ(targets, 8u);
}

}  // namespace
}  // namespace readingsd::test
