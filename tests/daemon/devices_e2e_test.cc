// The device registry end to end: the real daemon ingesting from a real broker, killed with
// SIGKILL and restarted, then asked through GET /v1/devices and `readingsd devices`; and deletes
// through `readingsd delete`, with auth on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

#include "http/client.h"

#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"

namespace readingsd::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

tools::GeneratorOptions Readings(std::uint64_t count, int devices, std::int64_t start_ms = tools::kDefaultStartMs) {
  tools::GeneratorOptions g;
  g.count = count;
  g.devices = devices;
  g.start_ms = start_ms;
  return g;
}

json Devices(const Daemon& daemon) {
  auto [status, body] = Get(daemon.http_port(), "/v1/devices");
  EXPECT_EQ(status, 200) << body;
  return status == 200 ? json::parse(body) : json::object();
}

// Polls /v1/devices until every device lists `readings`; returns the last answer.
json WaitForDevices(const Daemon& daemon, std::size_t devices, int readings) {
  json body;
  for (int i = 0; i < 300; ++i) {
    body = Devices(daemon);
    bool done = body.contains("devices") && body["devices"].size() == devices;
    for (const json& d : body.value("devices", json::array())) done = done && d["readings"] == readings;
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return body;
}

// What the registry must say of each device: the published readings, counted once per key,
// the newest as latest.
void ExpectRegistryOf(const json& body, const ReadingMap& published, const std::vector<std::string>& devices) {
  ASSERT_EQ(body["devices"].size(), devices.size()) << body.dump();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& d = body["devices"][i];
    EXPECT_EQ(d["deviceId"], devices[i]);
    auto first = published.lower_bound({devices[i], ""});
    auto last = std::prev(published.lower_bound({devices[i] + '\x01', ""}));
    std::size_t count = static_cast<std::size_t>(std::distance(first, std::next(last)));
    EXPECT_EQ(d["readings"], count) << devices[i];
    EXPECT_EQ(d["firstReadingTs"], first->first.second) << devices[i];
    EXPECT_EQ(d["lastReadingTs"], last->first.second) << devices[i];
    EXPECT_EQ(d["latest"]["readingTs"], last->first.second) << devices[i];
    EXPECT_DOUBLE_EQ(d["latest"]["temperature"].get<double>(),
                     storage::NumberToDouble(std::get<storage::Number>(last->second.at("temperature")).text))
        << devices[i];
  }
}

TEST(DevicesE2E, TheRegistryIsExactAfterKill9AndRedelivery) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  const std::vector<std::string> devices = DeviceIds(3);
  const auto first = Readings(300, 3);
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = first}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(devices, 300, seconds(30)), 300u);
  daemon.Kill9();  // the registry's records are in the WAL only, as the readings are

  daemon.Start();
  ReadingMap published = PublishedReadings(first);
  ExpectRegistryOf(Devices(daemon), published, devices);

  // The same readings again (a redelivery overwrites), then one newer reading per device.
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = first}).exit_code, 0);
  const auto later = Readings(3, 3, tools::kDefaultStartMs + 3600 * 1000);
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = later}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(devices, 303, seconds(30)), 303u);
  for (auto& [key, value] : PublishedReadings(later)) published[key] = value;
  ExpectRegistryOf(WaitForDevices(daemon, 3, 101), published, devices);
  daemon.Kill9();

  daemon.Start();
  ExpectRegistryOf(Devices(daemon), published, devices);
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(DevicesE2E, DevicesCommandPrintsTheRegistryAsATable) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = Readings(30, 3)}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), 30, seconds(30)), 30u);
  const std::string listen = "--http.listen=127.0.0.1:" + std::to_string(daemon.http_port());

  auto [status, table] = RunReadingsd({listen, "devices"});
  ASSERT_EQ(status, 0) << table;
  EXPECT_EQ(table.rfind("deviceId  readings  firstReadingTs                  lastReadingTs                   "
                        "latest.humidity  latest.temperature\n",
                        0),
            0u)
      << table;
  EXPECT_NE(table.find("\ndev00002  10        2026-06-23T00:00:00.000000000Z  2026-06-23T00:00:09.000000000Z  "),
            std::string::npos)
      << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4) << table;

  // Pages: one device each, all of them with --all; the raw pages with --json.
  auto [one_status, one] = RunReadingsd({listen, "devices", "--limit", "1"});
  ASSERT_EQ(one_status, 0) << one;
  EXPECT_NE(one.find("(more: --all follows nextCursor)"), std::string::npos) << one;
  auto [all_status, all] = RunReadingsd({listen, "devices", "--limit", "1", "--all", "--json"});
  ASSERT_EQ(all_status, 0) << all;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3) << all;
  auto [prefix_status, prefixed] = RunReadingsd({listen, "devices", "--prefix", "dev00003"});
  ASSERT_EQ(prefix_status, 0) << prefixed;
  EXPECT_EQ(std::count(prefixed.begin(), prefixed.end(), '\n'), 2) << prefixed;
  auto [bad, message] = RunReadingsd({listen, "devices", "--limit", "0"});
  EXPECT_EQ(bad, 64) << message;
  EXPECT_NE(message.find("limit"), std::string::npos) << message;
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(DevicesE2E, DeleteCommandDeletesThroughTheDaemonWithItsToken) {
  TempDir dir("readingsd-delete-e2e");
  std::ofstream(dir.File("tokens")) << "s3cret\n";
  const std::string tokens = "--http.auth_token_file=" + dir.File("tokens");
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {tokens}});
  daemon.StartUnready();  // /readyz itself needs the token
  const std::string port = std::to_string(daemon.http_port());
  auto get = [&](const std::string& target) {
    http::HttpGetResult res;
    EXPECT_TRUE(http::HttpGet("127.0.0.1", port, target, "s3cret", seconds(5), &res).ok());
    return res;
  };
  for (int i = 0; i < 300 && get("/readyz").status != 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(get("/readyz").status, 200) << daemon.log();
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = Readings(30, 3)}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), 30, seconds(30)), 30u);
  const std::string listen = "--http.listen=127.0.0.1:" + port;

  // Without the token nothing is deleted; without a range the command refuses.
  http::HttpGetResult anonymous;
  ASSERT_TRUE(http::HttpDelete("127.0.0.1", port, "/v1/devices/dev00001/readings?all=true", "", seconds(5), &anonymous).ok());
  EXPECT_EQ(anonymous.status, 401);
  auto [no_range, refusal] = RunReadingsd({listen, tokens, "delete", "--device", "dev00001"});
  EXPECT_EQ(no_range, 64) << refusal;
  EXPECT_NE(refusal.find("or all=true to delete every reading of device dev00001"), std::string::npos) << refusal;

  // dev0000N (N = 1..3) has a reading a second from 2026-06-23T00:00:00Z.
  auto [ranged, said] = RunReadingsd({listen, tokens, "delete", "--device", "dev00001", "--from",
                                      "2026-06-23T00:00:02Z", "--before", "2026-06-23T00:00:05Z"});
  ASSERT_EQ(ranged, 0) << said;
  EXPECT_EQ(said, "deleted 3 readings of device dev00001\n");
  auto [all, said_all] = RunReadingsd({listen, tokens, "delete", "--device", "dev00002", "--all"});
  ASSERT_EQ(all, 0) << said_all;
  EXPECT_EQ(said_all, "deleted 10 readings of device dev00002\n");

  const json devices = json::parse(get("/v1/devices").body);
  ASSERT_EQ(devices["devices"].size(), 2u) << devices.dump();
  EXPECT_EQ(devices["devices"][0]["deviceId"], "dev00001");
  EXPECT_EQ(devices["devices"][0]["readings"], 7);
  EXPECT_EQ(devices["devices"][1]["deviceId"], "dev00003");
  EXPECT_EQ(json::parse(get("/v1/devices/dev00001/readings").body)["count"], 7);
  EXPECT_EQ(MetricValue(get("/metrics").body, "readingsd_readings_deleted_total"), 13);
  EXPECT_NE(daemon.log().find("delete: device dev00001, readings from 2026-06-23T00:00:02.000000000Z to "
                              "2026-06-23T00:00:04.999999999Z: 3 deleted"),
            std::string::npos)
      << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
  EXPECT_EQ(daemon.StoredKeys(DeviceIds(3)).size(), 17u);
}

}  // namespace
}  // namespace readingsd::test
