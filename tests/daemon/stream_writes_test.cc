// Writes and deletes through the HTTP API of a node with [nats] go into the stream, not into
// that node's store (docs/cluster.md, issue #28), against a real nats-server: three nodes over 6
// partitions, each partition owned by two of them (n1 0-3, n2 2-5, n3 0-1 and 4-5). A JSON write
// and a line protocol write sent to a node that does not own the device's partition are stored
// once on both owners and on no other node, with the values a direct write stores (byte for
// byte, compared with a node without [nats]); a 207 stores only the good readings; a stream that
// does not ack is a 503. A delete sent to a non-owner removes the range on both owners, one of
// them killed -9 before it and started again after it, and readings written after the delete
// are kept on both.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/forward.h"
#include "cluster/partition.h"
#include "http/client.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/nats_harness.h"
#include "tests/support/nats_server.h"
#include "tests/support/ports.h"

namespace readingsd::test {
namespace {

// (status, body) of `verb` `target` with `body` to the node on `port`.
std::pair<int, std::string> Send(int port, http::verb verb, const std::string& target, const std::string& body = "") {
  http::Request request{verb, target, 11};
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body() = body;
  http::Response answer;
  const Status s = http::Send("127.0.0.1", std::to_string(port), std::move(request), std::chrono::seconds(5),
                              std::chrono::seconds(30), &answer);
  if (!s.ok()) throw std::runtime_error(s.ToString());
  return {static_cast<int>(answer.result_int()), answer.body()};
}

double Metric(int port, const std::string& series) { return MetricValue(Get(port, "/metrics").second, series); }

// Numbers a double cannot hold (a 38-digit fraction, integers past 64 bits, tiny and huge
// magnitudes), strings that need escaping, booleans: what a write must carry exactly.
std::string JsonReadings(const std::string& device, int first, int count) {
  std::string body = "[";
  for (int i = first; i < first + count; ++i) {
    char ts[48];  // room for any int the format could take, as -Wformat-truncation asks
    std::snprintf(ts, sizeof ts, "2026-06-23T10:%02d:%02d.123456789Z", i / 60, i % 60);
    body += std::string(i == first ? "" : ",") + R"({"deviceId":")" + device + R"(","readingTs":")" + ts +
            R"(","exact":0.12345678901234567890123456789012345678,"big":123456789012345678901234567890)" +
            R"(,"neg":-18446744073709551617,"tiny":1E-130,"huge":9.9999999999999999999999999999999999999E+125)" +
            R"(,"n":)" + std::to_string(i) + R"(,"text":"quote \" back \\ tab \t é ☃ \u0001","ok":true,"gone":null})";
  }
  return body + "]";
}

class StreamWritesTest : public ::testing::Test {
 protected:
  static constexpr int kPartitions = 6;

  void SetUp() override {
    server_.emplace(NatsServerOptions{.partitions = kPartitions});
    const std::vector<int> ports = FreeLoopbackPorts(3);
    map_ = {{"n1", {"0-3"}, ports[0]}, {"n2", {"2-5"}, ports[1]}, {"n3", {"0-1", "4-5"}, ports[2]}};
    WriteNodeConfigs(dir_, server_->url(), kPartitions, map_, "publish_timeout_ms = 2000\n");
    for (const MapEntry& entry : map_) {
      nodes_.push_back(MapNode(dir_, entry));
      nodes_.back()->Start();
    }
    // A node without [nats]: it stores what it is sent, as a single node does.
    reference_.emplace(DaemonOptions{.broker_port = 1});
    reference_->StartUnready();
  }

  // The first device id "sensor-N" of partition `p`.
  static std::string DeviceIn(uint32_t p) {
    for (int i = 0;; ++i) {
      const std::string device = "sensor-" + std::to_string(i);
      if (cluster::PartitionOf(device, kPartitions) == p) return device;
    }
  }
  int Port(std::size_t node) const { return nodes_[node]->http_port(); }

  // Polls node `node`'s store until `device` has `n` readings (or 20 s passed); returns them.
  ReadingMap WaitFor(std::size_t node, const std::string& device, std::size_t n) const {
    ReadingMap got;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
      got = nodes_[node]->StoredReadings({device});
      if (got.size() == n) break;
    }
    return got;
  }

  TempDir dir_;
  std::optional<NatsServer> server_;
  std::vector<MapEntry> map_;
  std::vector<std::unique_ptr<Daemon>> nodes_;
  std::optional<Daemon> reference_;
};

TEST_F(StreamWritesTest, WritesSentToANonOwnerAreStoredOnceOnEachOwnerExactlyAsADirectWrite) {
  const std::string d = DeviceIn(2);  // n1 and n2 own it, n3 does not
  const std::string e = DeviceIn(4);  // n2 and n3 own it, n1 does not
  const std::string json = JsonReadings(d, 0, 30);
  ASSERT_EQ(Send(reference_->http_port(), http::verb::post, "/v1/readings", json).first, 204);
  const auto [status, body] = Send(Port(2), http::verb::post, "/v1/devices/" + d + "/readings", json);
  ASSERT_EQ(status, 204) << body << nodes_[2]->log();

  const std::string lines = "m,device=" + e + ",site=a\\ b temp=21.5,count=42i,big=-9223372036854775808i,"
                            "label=\"x \\\"y\\\" ☃\",on=true 1782208800123456789\n"
                            "m,device=" + e + " temp=1e-5,exact=0.1000000000000000055511151231257827 1782208801000000000\n";
  ASSERT_EQ(Send(reference_->http_port(), http::verb::post, "/write?db=x&precision=ns", lines).first, 204);
  const auto [influx_status, influx_body] = Send(Port(0), http::verb::post, "/write?db=x&precision=ns", lines);
  ASSERT_EQ(influx_status, 204) << influx_body << nodes_[0]->log();

  const ReadingMap want_d = reference_->StoredReadings({d}), want_e = reference_->StoredReadings({e});
  ASSERT_EQ(want_d.size(), 30u);
  ASSERT_EQ(want_e.size(), 2u);
  for (std::size_t owner : {0u, 1u}) EXPECT_EQ(Difference(WaitFor(owner, d, 30), want_d), "") << "n" << owner + 1;
  for (std::size_t owner : {1u, 2u}) EXPECT_EQ(Difference(WaitFor(owner, e, 2), want_e), "") << "n" << owner + 1;
  // The owners answer as the direct write's node does: byte for byte for JSON. A point's
  // attributes come in the line's order from a direct write, and by name through the stream
  // (a JSON reading's are kept by name, docs/cluster.md): the same values, in another order.
  for (const auto& [device, owners] : std::vector<std::pair<std::string, std::vector<std::size_t>>>{
           {d, {0, 1}}, {e, {1, 2}}}) {
    const std::string path = "/v1/devices/" + device + "/readings?limit=1000";
    const auto [want_status, want] = Get(reference_->http_port(), path);
    ASSERT_EQ(want_status, 200);
    for (std::size_t owner : owners) {
      const std::string got = Get(Port(owner), path).second;
      if (device == d) {
        EXPECT_EQ(got, want) << path << " on n" << owner + 1;
      }
      EXPECT_EQ(nlohmann::json::parse(got), nlohmann::json::parse(want)) << path << " on n" << owner + 1;
    }
  }
  // Once each, and nowhere else: every node's count of readings written is its devices' share.
  EXPECT_TRUE(nodes_[2]->StoredReadings({d}).empty());
  EXPECT_TRUE(nodes_[0]->StoredReadings({e}).empty());
  EXPECT_EQ(Metric(Port(0), "readingsd_readings_ingested_total"), 30);
  EXPECT_EQ(Metric(Port(1), "readingsd_readings_ingested_total"), 32);
  EXPECT_EQ(Metric(Port(2), "readingsd_readings_ingested_total"), 2);

  // A 207: only the good readings reach the owners; the bad ones are answered and counted by
  // the node that was sent them.
  const std::string mixed = R"([{"deviceId":")" + d + R"(","readingTs":"2026-06-24T00:00:00Z","v":1},)" +
                            R"({"deviceId":")" + d + R"(","readingTs":"yesterday","v":2},)" +
                            R"({"deviceId":")" + d + R"(","readingTs":"2026-06-24T00:00:01Z","v":{"nested":1}},)" +
                            R"({"deviceId":")" + d + R"(","readingTs":"2026-06-24T00:00:02Z","v":3}])";
  const auto [partial_status, partial] = Send(Port(2), http::verb::post, "/v1/readings", mixed);
  EXPECT_EQ(partial_status, 207) << partial;
  const nlohmann::json answer = nlohmann::json::parse(partial);
  EXPECT_EQ(answer["written"], 2);
  EXPECT_EQ(answer["rejected"].size(), 2u);
  for (std::size_t owner : {0u, 1u}) {
    const ReadingMap got = WaitFor(owner, d, 32);
    EXPECT_EQ(got.size(), 32u) << "n" << owner + 1;
    EXPECT_TRUE(got.count({d, "2026-06-24T00:00:00.000000000Z"}) && got.count({d, "2026-06-24T00:00:02.000000000Z"}));
  }
  EXPECT_EQ(Metric(Port(2), "readingsd_readings_rejected_total{reason=\"invalid_timestamp\"}"), 1);
  EXPECT_EQ(Metric(Port(2), "readingsd_readings_rejected_total{reason=\"invalid_attribute\"}"), 1);

  // What the stream costs a large write: 10,000 readings (the most one request may carry) of one
  // device through n3, against the same into a node without [nats]; then until both owners have
  // them. Printed, not checked: the machine is shared.
  const std::string f = DeviceIn(3);
  std::string many = "[";
  for (int i = 0; i < 10000; ++i) {
    many += std::string(i ? "," : "") + R"({"deviceId":")" + f + R"(","readingTs":)" +
            std::to_string(1782208800000LL + i) + R"(,"temperature":)" + std::to_string(20 + i % 7) + ".25}";
  }
  many += "]";
  const auto timed = [&](int port) {
    const auto begin = std::chrono::steady_clock::now();
    const int code = Send(port, http::verb::post, "/v1/readings", many).first;
    EXPECT_EQ(code, 204);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  };
  const double direct_ms = timed(reference_->http_port());
  const auto begin = std::chrono::steady_clock::now();
  const double stream_ms = timed(Port(2));
  for (std::size_t owner : {0u, 1u}) EXPECT_EQ(WaitFor(owner, f, 10000).size(), 10000u);
  const double stored_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "10,000 readings in one request: " << direct_ms << " ms into a node's own store, " << stream_ms
            << " ms until the stream acked them all, " << stored_ms << " ms until both owners stored them\n";

  // A stream that cannot ack: 503, and the reading is not claimed.
  server_->Kill9();
  const auto start = std::chrono::steady_clock::now();
  const auto [down_status, down] =
      Send(Port(2), http::verb::post, "/v1/devices/" + d + "/readings", R"({"readingTs":"2026-06-25T00:00:00Z"})");
  EXPECT_EQ(down_status, 503) << down;
  EXPECT_THAT(down, ::testing::HasSubstr("StreamUnavailable"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  const auto [influx_down, influx_down_body] =
      Send(Port(2), http::verb::post, "/api/v2/write?bucket=b", "m,device=" + e + " v=1 1782208802000000000");
  EXPECT_EQ(influx_down, 503) << influx_down_body;
}

TEST_F(StreamWritesTest, ADeleteSentToANonOwnerReachesEveryOwnerAlsoOneDownWhenItWasSent) {
  const std::string d = DeviceIn(3);  // n1 and n2 own it, n3 does not
  ASSERT_EQ(Send(Port(2), http::verb::post, "/v1/readings", JsonReadings(d, 0, 40)).first, 204);
  for (std::size_t owner : {0u, 1u}) ASSERT_EQ(WaitFor(owner, d, 40).size(), 40u) << nodes_[owner]->log();

  nodes_[1]->Kill9();  // n2 is down when the delete is sent
  // 10:00:10 to 10:00:29 (the readings are at .123456789 past each second); `to` is inclusive,
  // so the range's upper bound ends in a '\0' (query::Successor), which the header carries too.
  const auto [status, body] = Send(
      Port(2), http::verb::delete_, "/v1/devices/" + d + "/readings?from=2026-06-23T10:00:10Z&to=2026-06-23T10:00:29.123456789Z");
  ASSERT_EQ(status, 202) << body << nodes_[2]->log();
  const nlohmann::json accepted = nlohmann::json::parse(body);
  EXPECT_EQ(accepted["deviceId"], d);
  EXPECT_GT(accepted["streamSequence"].get<uint64_t>(), 0u);
  // Written after the delete, inside its range and past it: kept everywhere.
  ASSERT_EQ(Send(Port(2), http::verb::post, "/v1/readings", JsonReadings(d, 15, 2)).first, 204);
  ASSERT_EQ(Send(Port(0), http::verb::post, "/v1/readings", JsonReadings(d, 40, 3)).first, 204);

  ASSERT_EQ(Send(reference_->http_port(), http::verb::post, "/v1/readings", JsonReadings(d, 0, 10)).first, 204);
  ASSERT_EQ(Send(reference_->http_port(), http::verb::post, "/v1/readings", JsonReadings(d, 15, 2)).first, 204);
  ASSERT_EQ(Send(reference_->http_port(), http::verb::post, "/v1/readings", JsonReadings(d, 30, 13)).first, 204);
  const ReadingMap want = reference_->StoredReadings({d});
  ASSERT_EQ(want.size(), 25u);

  EXPECT_EQ(Difference(WaitFor(0, d, 25), want), "") << nodes_[0]->log();
  nodes_[1]->Start();
  EXPECT_EQ(Difference(WaitFor(1, d, 25), want), "") << nodes_[1]->log();
  // Nothing came back on either with later fetches, and both answer as the direct writes' node.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string path = "/v1/devices/" + d + "/readings?limit=1000";
  const std::string reference = Get(reference_->http_port(), path).second;
  for (std::size_t owner : {0u, 1u}) EXPECT_EQ(Get(Port(owner), path).second, reference) << "n" << owner + 1;
  EXPECT_TRUE(nodes_[2]->StoredReadings({d}).empty());
  EXPECT_EQ(Metric(Port(0), "readingsd_readings_deleted_total"), 20);
}

}  // namespace
}  // namespace readingsd::test
