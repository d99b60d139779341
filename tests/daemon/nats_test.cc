// NATS JetStream as the way in for several readingsd nodes (docs/cluster.md), against real
// nats-server processes started here: cluster::PartitionOf agrees with the servers' own
// partition() mapping on real traffic; readings published over NATS' MQTT listener (QoS 1,
// through readingsd-publish) and over NATS itself are stored once each, a bad one refused with
// the MQTT path's reason and counted; and a node killed with SIGKILL mid-stream has stored every
// message its consumers had acked, and after a restart stores the rest once; on a cluster of
// three servers with the stream replicated three ways, two nodes owning the same partitions
// each store every reading.
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <exception>
#include <optional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/partition.h"
#include "ingest/nats_ingest.h"
#include "storage/key.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/nats_server.h"
#include "tests/support/publisher.h"
#include "tools/reading_generator.h"

namespace readingsd::test {
namespace {

using Keys = std::set<std::pair<std::string, std::string>>;

void Check(natsStatus s, const std::string& what) {
  if (s != NATS_OK) throw std::runtime_error(what + ": " + natsStatus_GetText(s));
}

// The test's own NATS connection and JetStream context.
class NatsClient {
 public:
  explicit NatsClient(const std::string& url) {
    Check(natsConnection_ConnectTo(&nc_, url.c_str()), "connect to " + url);
    Check(natsConnection_JetStream(&js_, nc_, nullptr), "JetStream context");
  }
  ~NatsClient() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  natsConnection* nc() { return nc_; }
  jsCtx* js() { return js_; }

  // Every message of a generator run on "readings.<deviceId>", each published through
  // JetStream: when this returns, the stream has acked them all.
  void PublishAll(const tools::GeneratorOptions& generator) {
    tools::GeneratorOptions options = generator;
    options.topic_template = "readings.{deviceId}";
    tools::ReadingGenerator readings(options);
    tools::GeneratedMessage message;
    while (readings.Next(&message)) {
      Check(js_PublishAsync(js_, message.topic.c_str(), message.payload.data(), static_cast<int>(message.payload.size()),
                            nullptr),
            "publish");
    }
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    wait.MaxWait = 60000;
    Check(js_PublishAsyncComplete(js_, &wait), "stream acks");
    natsMsgList failed{nullptr, 0};
    if (js_PublishAsyncGetPendingList(&failed, js_) == NATS_OK) {
      const int count = failed.Count;
      natsMsgList_Destroy(&failed);
      if (count > 0) throw std::runtime_error(std::to_string(count) + " publishes were not acked");
    }
  }

  void Publish(const std::string& subject, const std::string& payload) {
    jsPubAck* ack = nullptr;
    Check(js_Publish(&ack, js_, subject.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr, nullptr),
          "publish to " + subject);
    jsPubAck_Destroy(ack);
  }

  // How many messages the READINGS stream holds.
  uint64_t StreamMessages() {
    jsStreamInfo* info = nullptr;
    Check(js_GetStreamInfo(&info, js_, "READINGS", nullptr, nullptr), "stream info");
    const uint64_t messages = info->State.Msgs;
    jsStreamInfo_Destroy(info);
    return messages;
  }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

Keys Union(Keys a, const Keys& b) {
  a.insert(b.begin(), b.end());
  return a;
}

class NatsTest : public ::testing::Test {
 protected:
  // A readingsd node on `server`'s stream owning every one of `partitions` partitions.
  void StartNode(const NatsServer& server, int partitions, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--nats.servers=" + server.url(), "--nats.partitions=" + std::to_string(partitions),
                               "--nats.durable_prefix=node1"});
    // The MQTT broker is never dialled while nats.servers is set.
    node_.emplace(DaemonOptions{.broker_port = 1, .extra_args = extra});
    node_->Start();
  }
  double Metric(const std::string& series) const {
    return MetricValue(Get(node_->http_port(), "/metrics").second, series);
  }

  std::optional<Daemon> node_;
};

TEST_F(NatsTest, PartitionOfAgreesWithTheServersPartitionMapping) {
  constexpr int kPartitions = 7;
  NatsServer server({.partitions = kPartitions});
  NatsClient client(server.url());
  natsSubscription* sub = nullptr;
  Check(natsConnection_SubscribeSync(&sub, client.nc(), "readings.*.*"), "subscribe");
  Check(natsConnection_Flush(client.nc()), "flush");

  std::vector<std::string> devices;
  for (int i = 0; i < 3000; ++i) devices.push_back(tools::DeviceId(i));
  // Every byte a device id may hold, and the longest id.
  devices.insert(devices.end(), {"a", "Z", "0", "a:b_c-9", "sensor:kitchen_2", std::string(128, 'x'), "-", "_:"});
  for (const std::string& device : devices) {
    Check(natsConnection_PublishString(client.nc(), ("readings." + device).c_str(), "x"), "publish");
  }
  Check(natsConnection_Flush(client.nc()), "flush");

  std::map<uint32_t, int> per_partition;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    natsMsg* msg = nullptr;
    ASSERT_EQ(natsSubscription_NextMsg(&msg, sub, 10000), NATS_OK) << "after " << i << " messages";
    const std::string subject = natsMsg_GetSubject(msg);
    natsMsg_Destroy(msg);
    const auto first = subject.find('.'), second = subject.find('.', first + 1);
    const uint32_t mapped = static_cast<uint32_t>(std::stoul(subject.substr(first + 1, second - first - 1)));
    const std::string device = subject.substr(second + 1);
    EXPECT_EQ(cluster::PartitionOf(device, kPartitions), mapped) << subject;
    ++per_partition[mapped];
  }
  EXPECT_EQ(per_partition.size(), static_cast<std::size_t>(kPartitions));
  natsSubscription_Destroy(sub);
}

TEST_F(NatsTest, StoresReadingsFromTheMqttListenerAndFromNatsOnce) {
  constexpr int kPartitions = 4;
  NatsServer server({.partitions = kPartitions, .mqtt = true});
  StartNode(server, kPartitions, {"--nats.fetch_batch=100", "--nats.dead_letter_subject=rejected"});
  NatsClient client(server.url());
  natsSubscription* dead_letters = nullptr;
  Check(natsConnection_SubscribeSync(&dead_letters, client.nc(), "rejected"), "subscribe to the dead letters");
  EXPECT_EQ(Metric("readingsd_nats_connected"), 1);

  tools::GeneratorOptions over_mqtt{.count = 2000, .devices = 20, .topic_template = "readings/{deviceId}"};
  PublishResult mqtt = RunPublisher({.port = server.mqtt_port(), .generator = over_mqtt, .client_id = "devices"});
  ASSERT_EQ(mqtt.exit_code, 0) << mqtt.output << server.log();
  ASSERT_EQ(mqtt.acked, over_mqtt.count);
  // On one server the stream has stored each message before the device's PUBACK left
  // (docs/cluster.md: mqttProcessPub stores it inline, then the PUBACK is queued).
  EXPECT_EQ(client.StreamMessages(), over_mqtt.count);

  tools::GeneratorOptions over_nats{.count = 1000, .devices = 20, .batch = 5, .start_ms = tools::kDefaultStartMs + 86'400'000};
  client.PublishAll(over_nats);

  // The same bad reading both ways: refused for the same reason, counted twice.
  const std::string bad = R"({"readingTs":"yesterday","temperature":1})";
  client.Publish("readings.dev00001", bad);
  auto [status, output] = RunProgram({"mosquitto_pub", "-p", std::to_string(server.mqtt_port()), "-q", "1", "-t",
                                      "readings/dev00002", "-m", bad});
  ASSERT_EQ(status, 0) << output;

  const Keys want = Union(ExpectedKeys(over_mqtt), ExpectedKeys(over_nats));
  const std::vector<std::string> devices = DeviceIds(20);
  EXPECT_EQ(node_->WaitForStored(devices, want.size(), std::chrono::seconds(60)), want.size()) << node_->log();
  EXPECT_EQ(node_->StoredKeys(devices), want);
  for (int i = 0; i < 100 && Metric("readingsd_readings_rejected_total{reason=\"invalid_timestamp\"}") < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Metric("readingsd_readings_rejected_total{reason=\"invalid_timestamp\"}"), 2) << node_->log();
  // Each reading written once: nothing was delivered twice.
  EXPECT_EQ(Metric("readingsd_readings_ingested_total"), static_cast<double>(want.size()));

  // Both bad readings reached the node as NATS messages: each is on the dead-letter subject,
  // alone, in the MQTT path's envelope, with its subject as the topic.
  std::set<std::string> devices_refused;
  for (int i = 0; i < 2; ++i) {
    natsMsg* msg = nullptr;
    ASSERT_EQ(natsSubscription_NextMsg(&msg, dead_letters, 10000), NATS_OK) << "dead letter " << i << node_->log();
    const auto envelope = nlohmann::json::parse(std::string(natsMsg_GetData(msg), natsMsg_GetDataLength(msg)));
    natsMsg_Destroy(msg);
    EXPECT_EQ(envelope["reason"], "invalid_timestamp") << envelope;
    EXPECT_EQ(envelope["index"], 0) << envelope;
    EXPECT_EQ(envelope["reading"], nlohmann::json::parse(bad)) << envelope;
    const std::string device = envelope["device"];
    EXPECT_EQ(envelope["topic"], "readings." + std::to_string(cluster::PartitionOf(device, kPartitions)) + "." + device);
    devices_refused.insert(device);
  }
  EXPECT_EQ(devices_refused, (std::set<std::string>{"dev00001", "dev00002"}));
  natsSubscription_Destroy(dead_letters);
}

// For each partition's consumer, its ack floor (every message of the stream up to that sequence
// on the partition's subjects is acked); then the key of every such message.
Keys AckedKeys(NatsClient* client, int partitions) {
  Keys acked;
  std::map<uint32_t, uint64_t> floor;
  for (int p = 0; p < partitions; ++p) {
    ingest::NatsOptions options;
    options.durable_prefix = "node1";
    jsConsumerInfo* info = nullptr;
    Check(js_GetConsumerInfo(&info, client->js(), "READINGS", ingest::ConsumerName(options, p).c_str(), nullptr,
                             nullptr),
          "consumer info");
    floor[static_cast<uint32_t>(p)] = info->AckFloor.Stream;
    jsConsumerInfo_Destroy(info);
  }
  jsStreamInfo* stream = nullptr;
  Check(js_GetStreamInfo(&stream, client->js(), "READINGS", nullptr, nullptr), "stream info");
  const uint64_t last = stream->State.LastSeq;
  jsStreamInfo_Destroy(stream);
  for (uint64_t seq = 1; seq <= last; ++seq) {
    natsMsg* msg = nullptr;
    Check(js_GetMsg(&msg, client->js(), "READINGS", seq, nullptr, nullptr), "message " + std::to_string(seq));
    const std::string subject = natsMsg_GetSubject(msg);
    const uint32_t partition = static_cast<uint32_t>(std::stoul(subject.substr(subject.find('.') + 1)));
    if (seq <= floor[partition]) {
      auto payload = nlohmann::json::parse(std::string(natsMsg_GetData(msg), natsMsg_GetDataLength(msg)));
      for (const auto& reading : payload.is_array() ? payload : nlohmann::json::array({payload})) {
        std::string sort_key;
        if (!storage::NormalizeTimestamp(reading["readingTs"].get<std::string>(), &sort_key).ok()) {
          throw std::runtime_error("bad readingTs in " + subject);
        }
        acked.emplace(reading["deviceId"].get<std::string>(), sort_key);
      }
    }
    natsMsg_Destroy(msg);
  }
  return acked;
}

TEST_F(NatsTest, EveryAckedMessageIsStoredAcrossAKillNine) {
  constexpr int kPartitions = 4;
  NatsServer server({.partitions = kPartitions});
  StartNode(server, kPartitions, {"--nats.fetch_batch=20"});
  tools::GeneratorOptions generator{.count = 20000, .devices = 50};
  NatsClient client(server.url());
  // Published while the node takes them in, so the kill lands mid-stream.
  std::exception_ptr publish_error;
  std::thread publisher([&] {
    try {
      client.PublishAll(generator);
    } catch (...) {
      publish_error = std::current_exception();
    }
  });
  const Keys want = ExpectedKeys(generator);
  const std::vector<std::string> devices = DeviceIds(50);

  node_->WaitForStored(devices, 1000, std::chrono::seconds(60));
  node_->Kill9();
  publisher.join();
  if (publish_error) std::rethrow_exception(publish_error);
  const Keys stored = node_->StoredKeys(devices);
  ASSERT_LT(stored.size(), want.size()) << "the node stored everything before the kill; nothing was tested";
  const Keys acked = AckedKeys(&client, kPartitions);
  EXPECT_FALSE(acked.empty());
  for (const auto& key : acked) {
    ASSERT_TRUE(stored.count(key)) << "acked but not stored: " << key.first << " " << key.second;
  }

  // What the killed node had fetched and not acked comes again after the consumer's AckWait,
  // and what the server had already sent to its dead fetch requests once more after that. The
  // consumers were made with the default 30 s; the restart sets 2 s on them.
  node_->options().extra_args.push_back("--nats.ack_wait_seconds=2");
  node_->Start();
  EXPECT_EQ(node_->WaitForStored(devices, want.size(), std::chrono::seconds(120)), want.size()) << node_->log();
  EXPECT_EQ(node_->StoredKeys(devices), want);
  for (int p = 0; p < kPartitions; ++p) {
    ingest::NatsOptions options;
    options.durable_prefix = "node1";
    jsConsumerInfo* info = nullptr;
    Check(js_GetConsumerInfo(&info, client.js(), "READINGS", ingest::ConsumerName(options, p).c_str(), nullptr, nullptr),
          "consumer info");
    EXPECT_EQ(info->Config->AckWait, 2'000'000'000) << "partition " << p;
    jsConsumerInfo_Destroy(info);
  }
}


TEST(NatsClusterTest, TwoNodesOwningThePartitionsOfAThreeServerClusterEachStoreEveryReading) {
  constexpr int kPartitions = 4;
  std::vector<std::unique_ptr<NatsServer>> servers;
  std::string urls;
  for (auto& member : ClusterMembers(3)) {
    servers.push_back(std::make_unique<NatsServer>(NatsServerOptions{.partitions = kPartitions, .member = member}));
    urls += (urls.empty() ? "" : ",") + servers.back()->url();
  }
  std::vector<std::unique_ptr<Daemon>> nodes;
  for (const char* name : {"node1", "node2"}) {
    // The MQTT broker is never dialled while nats.servers is set.
    nodes.push_back(std::make_unique<Daemon>(DaemonOptions{
        .broker_port = 1,
        .extra_args = {"--nats.servers=" + urls, "--nats.partitions=" + std::to_string(kPartitions),
                       "--nats.durable_prefix=" + std::string(name), "--nats.stream_replicas=3"}}));
    nodes.back()->Start();
  }

  tools::GeneratorOptions generator{.count = 3000, .devices = 30, .batch = 3};
  NatsClient client(servers[1]->url());  // not necessarily where the stream's leader is
  client.PublishAll(generator);
  const Keys want = ExpectedKeys(generator);
  const std::vector<std::string> devices = DeviceIds(30);
  for (const auto& node : nodes) {
    EXPECT_EQ(node->WaitForStored(devices, want.size(), std::chrono::seconds(60)), want.size()) << node->log();
    EXPECT_EQ(node->StoredKeys(devices), want);
  }
  jsStreamInfo* info = nullptr;
  Check(js_GetStreamInfo(&info, client.js(), "READINGS", nullptr, nullptr), "stream info");
  EXPECT_EQ(info->Config->Replicas, 3);
  jsStreamInfo_Destroy(info);
}

}  // namespace
}  // namespace readingsd::test
