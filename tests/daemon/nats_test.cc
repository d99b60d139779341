// NATS JetStream as the way in for several readingsd nodes (docs/cluster.md), against real
// nats-server processes started here: cluster::PartitionOf agrees with the servers' own
// partition() mapping on real traffic; readings published over NATS' MQTT listener (QoS 1,
// through readingsd-publish) and over NATS itself are stored once each, a bad one refused with
// the MQTT path's reason and counted; and a node killed with SIGKILL mid-stream has stored every
// message its consumers had acked, and after a restart stores the rest once; on a cluster of
// three servers with the stream replicated three ways, two nodes owning the same partitions
// each store every reading. With a node map, every node answers for every device, lists every
// device, and answers index queries (native and DynamoDB), BatchGetItem and remote reads merged
// across nodes exactly as one node holding every partition does, also with an owner killed; a
// partition with no live owner is a 503 that names it. A source destroyed while the client
// library's callback thread is busy gets no callback after it is gone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <fstream>
#include <future>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <snappy.h>

#include "api/prometheus/remote_read.pb.h"
#include "cluster/forward.h"
#include "cluster/partition.h"
#include "http/client.h"
#include "ingest/nats_ingest.h"
#include "storage/store.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/nats_harness.h"
#include "tests/support/nats_server.h"
#include "tests/support/ports.h"
#include "tests/support/publisher.h"
#include "tests/support/temp_dir.h"
#include "tools/reading_generator.h"

namespace readingsd::test {
namespace {

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

// The client library calls back on one thread of its own, in the order it posts, and closing a
// connection posts a "disconnected" there that natsConnection_Destroy does not wait for. A node
// that stopped while that thread was busy had it run on its freed NatsIngest (a sanitizer run
// caught it at a node's shutdown). Here the thread is held busy, by a probe connection's closed
// callback, while the source is destroyed: no callback of the source's may come after.
TEST(NatsIngestTest, NoCallbackOfTheSourceRunsAfterItIsDestroyed) {
  NatsServer server({.partitions = 4});
  TempDir dir;
  std::unique_ptr<storage::Store> store;
  ASSERT_TRUE(storage::Store::Open({.path = dir.File("db")}, &store).ok());

  struct Seen {
    std::mutex mu;
    std::condition_variable cv;
    bool connected = false, destroyed = false, released = false, probe_closed = false;
    int after_destroyed = 0;
  };
  auto seen = std::make_shared<Seen>();
  ingest::IngestHooks hooks;
  hooks.on_connection = [seen](bool connected) {
    std::lock_guard lock(seen->mu);
    if (seen->destroyed) ++seen->after_destroyed;
    seen->connected = seen->connected || connected;
    seen->cv.notify_all();
  };
  ingest::NatsOptions options;
  options.servers = {server.url()};
  options.partitions = 4;
  options.owned = {0};
  std::unique_ptr<ingest::NatsIngest> source;
  ASSERT_TRUE(ingest::NatsIngest::Start(options, store.get(), hooks, &source).ok());
  {
    std::unique_lock lock(seen->mu);
    ASSERT_TRUE(seen->cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen->connected; }));
  }

  // The probe's closed callback holds the library's callback thread until the source is gone,
  // or 2 s at most: a source that waits for its own callbacks (behind the probe's) waits that long.
  natsOptions* opts = nullptr;
  Check(natsOptions_Create(&opts), "options");
  Check(natsOptions_SetURL(opts, server.url().c_str()), "url");
  Check(natsOptions_SetClosedCB(
            opts,
            [](natsConnection*, void* closure) {
              auto* s = static_cast<Seen*>(closure);
              std::unique_lock lock(s->mu);
              s->cv.wait_for(lock, std::chrono::seconds(2), [&] { return s->released; });
              s->probe_closed = true;
              s->cv.notify_all();
            },
            seen.get()),
        "closed callback");
  natsConnection* probe = nullptr;
  Check(natsConnection_Connect(&probe, opts), "probe connect");
  natsOptions_Destroy(opts);
  natsConnection_Close(probe);

  source.reset();
  {
    std::unique_lock lock(seen->mu);
    seen->destroyed = true;
    seen->released = true;
    seen->cv.notify_all();
    // The probe's callback returns, and whatever was posted after it runs next.
    ASSERT_TRUE(seen->cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen->probe_closed; }));
  }
  // A barrier behind anything the source's closing posted: a second probe's closed callback.
  std::promise<void> drained;
  Check(natsOptions_Create(&opts), "options");
  Check(natsOptions_SetURL(opts, server.url().c_str()), "url");
  Check(natsOptions_SetClosedCB(
            opts, [](natsConnection*, void* closure) { static_cast<std::promise<void>*>(closure)->set_value(); },
            &drained),
        "closed callback");
  natsConnection* barrier = nullptr;
  Check(natsConnection_Connect(&barrier, opts), "barrier connect");
  natsOptions_Destroy(opts);
  natsConnection_Close(barrier);
  ASSERT_EQ(drained.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  natsConnection_Destroy(barrier);
  natsConnection_Destroy(probe);

  std::lock_guard lock(seen->mu);
  EXPECT_EQ(seen->after_destroyed, 0);
}

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
    if (seq <= floor[partition]) acked.merge(KeysIn(msg));
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

// Three nodes with a node map over 6 partitions on one server's stream, each partition owned by
// two of them (n1 0-3, n2 2-5, n3 0-1 and 4-5), and a reference node without a map owning all 6;
// every reading published over NATS and stored by its owners before the test begins. Each node
// declares two indexes: one sharded (its shards merged in sort order), one sorted by readingTs
// (where the devices' readings tie and the device id orders them).
class NodeMapTest : public ::testing::Test {
 protected:
  static constexpr int kPartitions = 6;
  static constexpr int kDevices = 24;
  static constexpr char kIndexes[] =
      "[[index]]\nname = \"hot_by_hour\"\npartition = \"readingHour\"\nsort = \"temperature\"\nshards = 3\n"
      "[[index]]\nname = \"by_day\"\npartition = \"readingDay\"\nsort = \"readingTs\"\n";

  void SetUp() override {
    server_.emplace(NatsServerOptions{.partitions = kPartitions});
    const std::string reference_config = dir_.File("all.toml");
    std::ofstream(reference_config) << "[nats]\nservers = [\"" << server_->url() << "\"]\npartitions = " << kPartitions
                                    << "\ndurable_prefix = \"all\"\n" << kIndexes;
    reference_.emplace(DaemonOptions{.broker_port = 1, .extra_args = {"--config=" + reference_config}});
    reference_->Start();
    const std::vector<int> ports = FreeLoopbackPorts(3);
    const std::vector<MapEntry> map = {
        {"n1", {"0-3"}, ports[0]}, {"n2", {"2-5"}, ports[1]}, {"n3", {"0-1", "4-5"}, ports[2]}};
    WriteNodeConfigs(dir_, server_->url(), kPartitions, map, kIndexes);
    for (const MapEntry& entry : map) {
      nodes_.push_back(MapNode(dir_, entry));
      nodes_.back()->Start();
    }
    NatsClient client(server_->url());
    client.PublishAll(generator_);
    want_ = PublishedReadings(generator_);
    for (const auto& reading : want_) devices_.insert(reading.first.first);
    ASSERT_EQ(devices_.size(), static_cast<std::size_t>(kDevices));
    std::set<uint32_t> partitions;
    for (const std::string& device : devices_) partitions.insert(cluster::PartitionOf(device, kPartitions));
    ASSERT_EQ(partitions.size(), static_cast<std::size_t>(kPartitions)) << "a partition without devices tests nothing";
    const std::vector<std::string> devices(devices_.begin(), devices_.end());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const std::size_t readings = OnPartitions(want_, map[i].Owned(kPartitions), kPartitions).size();
      ASSERT_EQ(nodes_[i]->WaitForStored(devices, readings, std::chrono::seconds(60)), readings) << nodes_[i]->log();
    }
    ASSERT_EQ(reference_->WaitForStored(devices, want_.size(), std::chrono::seconds(60)), want_.size())
        << reference_->log();
  }

  // The first device of partition `p`.
  std::string DeviceOf(uint32_t p) const {
    for (const std::string& device : devices_) {
      if (cluster::PartitionOf(device, kPartitions) == p) return device;
    }
    return "";
  }

  // The readings of `device` published.
  std::size_t ReadingsOf(const std::string& device) const {
    return static_cast<std::size_t>(std::count_if(want_.begin(), want_.end(), [&](const auto& r) { return r.first.first == device; }));
  }

  // Index queries (native rows and columns, and DynamoDB Query with IndexName), page by page with
  // a small limit, and remote reads, asked of each of `nodes`: each page the same as the
  // reference node's (a node holding every partition), so that a cursor from any node resumes
  // on any other; together every reading.
  void ExpectMergedAnswersAreTheReferences(const std::vector<std::size_t>& nodes) {
    const std::string window = "from=2026-06-23T00:00:00Z&to=2026-06-23T00:59:59Z";
    const std::vector<std::string> targets = {
        "/v1/indexes/hot_by_hour/readings?" + window + "&limit=7",
        "/v1/indexes/hot_by_hour/readings?" + window + "&limit=7&format=columns",
        "/v1/indexes/hot_by_hour/readings?" + window + "&limit=11&order=desc&attributes=humidity",
        "/v1/indexes/hot_by_hour/readings?" + window + "&limit=13&gt=30&filter=humidity%3E60",
        "/v1/indexes/hot_by_hour/readings?from=2026-06-23T00:00:10Z&to=2026-06-23T00:00:20Z&limit=50",
        "/v1/indexes/by_day/readings?value=2026-06-23&limit=9",
        "/v1/indexes/by_day/readings?value=2026-06-23&limit=9&order=desc&format=columns&filter=temperature%3C20",
        "/v1/indexes/by_day/readings?value=2026-06-23&limit=1000"};
    const std::size_t total = want_.size();
    for (const std::string& target : targets) {
      std::size_t scanned = 0;
      int pages = 0;
      for (std::string cursor;; ++pages) {
        const std::string path = target + (cursor.empty() ? "" : "&cursor=" + cursor);
        const auto [status, want] = Get(reference_->http_port(), path);
        ASSERT_EQ(status, 200) << path << ": " << want;
        for (std::size_t node : nodes) EXPECT_EQ(Get(nodes_[node]->http_port(), path).second, want) << path;
        const nlohmann::json page = nlohmann::json::parse(want);
        scanned += page["scannedCount"].get<std::size_t>();
        if (!page.contains("nextCursor")) break;
        cursor = page["nextCursor"].get<std::string>();
      }
      // Every reading is an entry of each index, read once (but past a condition on the sort value).
      if (target.find("gt=") == std::string::npos) {
        EXPECT_EQ(scanned, total) << target;
      }
      EXPECT_GT(pages, 0) << target;
    }
    // The bucket the readings are in, as DynamoDB names it, without the shard an item is in: all
    // shards merged.
    const nlohmann::json first = nlohmann::json::parse(Get(reference_->http_port(), targets.front()).second);
    std::string hour = first["items"][0]["readingHour"].get<std::string>();
    hour = hour.substr(0, hour.find('#'));
    const std::vector<std::string> queries = {
        R"({"TableName":"readings","IndexName":"hot_by_hour","KeyConditionExpression":"readingHour = :h",)"
        R"("ExpressionAttributeValues":{":h":{"S":")" + hour + R"("}},"Limit":7})",
        R"({"TableName":"readings","IndexName":"hot_by_hour","KeyConditionExpression":"readingHour = :h AND temperature >= :t",)"
        R"("FilterExpression":"humidity < :u","ScanIndexForward":false,"ReturnConsumedCapacity":"TOTAL",)"
        R"("ExpressionAttributeValues":{":h":{"S":")" + hour + R"("},":t":{"N":"25"},":u":{"N":"50"}},"Limit":10})",
        R"({"TableName":"readings","IndexName":"by_day","KeyConditionExpression":"readingDay = :d",)"
        R"("ExpressionAttributeValues":{":d":{"S":"2026-06-23"}},"Select":"COUNT","Limit":100})",
        R"({"TableName":"readings","IndexName":"hot_by_hour","KeyConditionExpression":"readingHour = :h",)"
        R"("ExpressionAttributeValues":{":h":{"S":")" + hour + R"("}}})"};
    for (const std::string& query : queries) {
      std::size_t scanned = 0;
      for (nlohmann::json body = nlohmann::json::parse(query);;) {
        const http::Response want = DynamoDb(reference_->http_port(), "Query", body.dump());
        ASSERT_EQ(want.result_int(), 200u) << want.body();
        const nlohmann::json page = nlohmann::json::parse(want.body());
        for (std::size_t node : nodes) {
          const http::Response got = DynamoDb(nodes_[node]->http_port(), "Query", body.dump());
          EXPECT_EQ(nlohmann::json::parse(got.body()), page) << body.dump();
        }
        scanned += page["ScannedCount"].get<std::size_t>();
        if (!page.contains("LastEvaluatedKey")) break;
        body["ExclusiveStartKey"] = page["LastEvaluatedKey"];
      }
      if (query.find("temperature") == std::string::npos) {
        EXPECT_EQ(scanned, total) << query;
      }
    }
    // Scan, page by page: with Limits, a filter, a projection, Select COUNT, no Limit (one page
    // to the byte cap) and segments; a LastEvaluatedKey from the reference resumes on every node.
    std::vector<std::string> scans = {
        R"({"TableName":"readings","Limit":50})",
        R"({"TableName":"readings","Limit":333,"FilterExpression":"humidity < :u","ReturnConsumedCapacity":"TOTAL",)"
        R"("ExpressionAttributeValues":{":u":{"N":"50"}}})",
        R"({"TableName":"readings","Limit":97,"ProjectionExpression":"deviceId, temperature",)"
        R"("FilterExpression":"temperature >= :t","ExpressionAttributeValues":{":t":{"N":"25"}}})",
        R"({"TableName":"readings","Select":"COUNT","Limit":500})",
        R"({"TableName":"readings"})"};
    for (int segment = 0; segment < 4; ++segment) {
      scans.push_back(R"({"TableName":"readings","Limit":100,"Segment":)" + std::to_string(segment) +
                      R"(,"TotalSegments":4})");
    }
    std::size_t segmented = 0;
    for (const std::string& scan : scans) {
      std::size_t scanned = 0;
      for (nlohmann::json body = nlohmann::json::parse(scan);;) {
        const http::Response want = DynamoDb(reference_->http_port(), "Scan", body.dump());
        ASSERT_EQ(want.result_int(), 200u) << want.body();
        const nlohmann::json page = nlohmann::json::parse(want.body());
        for (std::size_t node : nodes) {
          const http::Response got = DynamoDb(nodes_[node]->http_port(), "Scan", body.dump());
          ASSERT_EQ(got.result_int(), 200u) << got.body();
          EXPECT_EQ(nlohmann::json::parse(got.body()), page) << "node " << node << ": " << body.dump();
        }
        scanned += page["ScannedCount"].get<std::size_t>();
        if (!page.contains("LastEvaluatedKey")) break;
        body["ExclusiveStartKey"] = page["LastEvaluatedKey"];
      }
      if (scan.find("Segment") == std::string::npos) {
        EXPECT_EQ(scanned, total) << scan;
      } else {
        segmented += scanned;
      }
    }
    EXPECT_EQ(segmented, total);  // the segments together are the table once
    // BatchGetItem: a reading of every device (a key of each partition), one that is not stored,
    // in an order no node has them in.
    nlohmann::json keys = nlohmann::json::array();
    for (auto device = devices_.rbegin(); device != devices_.rend(); ++device) {
      const auto first = want_.lower_bound({*device, ""});
      const auto last = std::prev(want_.lower_bound({*device + '\x01', ""}));
      for (const std::string& ts : {first->first.second, last->first.second}) {
        keys.push_back({{"deviceId", {{"S", *device}}}, {"readingTs", {{"S", ts}}}});
      }
    }
    keys.push_back({{"deviceId", {{"S", "dev00001"}}}, {"readingTs", {{"S", "2020-01-01T00:00:00Z"}}}});
    for (const std::string projection : {"", R"(,"ProjectionExpression":"humidity")"}) {
      const std::string batch = R"({"RequestItems":{"readings":{"Keys":)" + keys.dump() + projection +
                                R"(}},"ReturnConsumedCapacity":"TOTAL"})";
      const http::Response want = DynamoDb(reference_->http_port(), "BatchGetItem", batch);
      ASSERT_EQ(want.result_int(), 200u) << want.body();
      const nlohmann::json answer = nlohmann::json::parse(want.body());
      EXPECT_EQ(answer["Responses"]["readings"].size(), 2u * kDevices);
      for (std::size_t node : nodes) {
        const http::Response got = DynamoDb(nodes_[node]->http_port(), "BatchGetItem", batch);
        EXPECT_EQ(nlohmann::json::parse(got.body()), answer) << "node " << node;
      }
    }
    // Remote read: two queries in one request, each answered with every device's series.
    prompb::ReadRequest read;
    for (const auto& [name, device] : std::vector<std::pair<std::string, std::string>>{
             {"temperature", "dev000.*"}, {"humidity", "dev0001[0-9]|dev0000[2-5]"}}) {
      prompb::Query* q = read.add_queries();
      q->set_start_timestamp_ms(tools::kDefaultStartMs);
      q->set_end_timestamp_ms(tools::kDefaultStartMs + 3600000);
      prompb::LabelMatcher* m = q->add_matchers();
      m->set_type(prompb::LabelMatcher::EQ);
      m->set_name("__name__");
      m->set_value(name);
      m = q->add_matchers();
      m->set_type(prompb::LabelMatcher::RE);
      m->set_name("device");
      m->set_value(device);
    }
    const auto remote_read = [&read](int port) {
      const std::string raw = read.SerializeAsString();
      http::Request request{http::verb::post, "/api/v1/read", 11};
      request.set(http::field::content_type, "application/x-protobuf");
      snappy::Compress(raw.data(), raw.size(), &request.body());
      http::Response answer;
      const Status s = http::Send("127.0.0.1", std::to_string(port), std::move(request), std::chrono::seconds(5),
                                  std::chrono::seconds(30), &answer);
      if (!s.ok()) throw std::runtime_error(s.ToString());
      std::string body;
      if (answer.result_int() != 200 || !snappy::Uncompress(answer.body().data(), answer.body().size(), &body)) {
        return "status " + std::to_string(answer.result_int()) + ": " + answer.body();
      }
      return body;
    };
    const std::string want = remote_read(reference_->http_port());
    prompb::ReadResponse response;
    ASSERT_TRUE(response.ParseFromString(want)) << want;
    ASSERT_EQ(response.results_size(), 2);
    EXPECT_EQ(response.results(0).timeseries_size(), kDevices);
    EXPECT_EQ(response.results(1).timeseries_size(), 14);
    for (std::size_t node : nodes) EXPECT_EQ(remote_read(nodes_[node]->http_port()), want) << "node " << node;
  }

  // ExpectEveryNodeAnswersCompletelyAndAlike of `nodes`, by index.
  void ExpectEveryNodeAnswersCompletelyAndAlike(const std::vector<std::size_t>& nodes) {
    std::vector<int> ports;
    for (std::size_t node : nodes) ports.push_back(nodes_[node]->http_port());
    test::ExpectEveryNodeAnswersCompletelyAndAlike(ports, want_);
  }

  // GET with the header of a request another node forwarded.
  static http::Response GetForwarded(int port, const std::string& target) {
    http::Request request{http::verb::get, target, 11};
    request.set(cluster::kForwardedHeader, "test");
    http::Response answer;
    const Status s = http::Send("127.0.0.1", std::to_string(port), std::move(request), std::chrono::seconds(5),
                                std::chrono::seconds(30), &answer);
    if (!s.ok()) throw std::runtime_error(s.ToString());
    return answer;
  }

  TempDir dir_;
  std::optional<NatsServer> server_;
  std::optional<Daemon> reference_;  // no map, every partition
  std::vector<std::unique_ptr<Daemon>> nodes_;
  tools::GeneratorOptions generator_{.count = 1200, .devices = kDevices, .batch = 3};
  ReadingMap want_;
  std::set<std::string> devices_;
};

TEST_F(NodeMapTest, EveryNodeAnswersForEveryDeviceCompletelyAndAlikeAlsoWithANodeKilled) {
  ExpectEveryNodeAnswersCompletelyAndAlike({0, 1, 2});
  // A device n1 does not own is answered by an owner, which says so.
  const std::string device = DeviceOf(4);
  http::Request request{http::verb::get, "/v1/devices/" + device + "/latest", 11};
  http::Response answer;
  ASSERT_TRUE(http::Send("127.0.0.1", std::to_string(nodes_[0]->http_port()), request, std::chrono::seconds(5),
                         std::chrono::seconds(30), &answer)
                  .ok());
  EXPECT_EQ(answer.result_int(), 200u);
  EXPECT_THAT(http::ToStd(answer[cluster::kAnsweredByHeader]), ::testing::AnyOf("n2", "n3"));

  nodes_[1]->Kill9();  // n2: partitions 2-3 are left to n1, 4-5 to n3
  ExpectEveryNodeAnswersCompletelyAndAlike({0, 2});
}

TEST_F(NodeMapTest, ForwardedReadsOfADeviceAreSharedByItsOwnersAndFallBackWhenOneIsKilled) {
  const std::string target = "/v1/devices/" + DeviceOf(4) + "/readings?limit=10000";  // n2's and n3's
  const auto [status, reference_body] = Get(reference_->http_port(), target);
  ASSERT_EQ(status, 200) << reference_body;
  const std::string want = reference_body;  // a lambda cannot capture a structured binding (C++20)
  // Sent to n1, `times` times: how many each owner answered, every answer the reference's.
  const auto answered_by = [&](int times) {
    std::map<std::string, int> by;
    for (int i = 0; i < times; ++i) {
      http::Response answer;
      const Status s = http::Send("127.0.0.1", std::to_string(nodes_[0]->http_port()), {http::verb::get, target, 11},
                                  std::chrono::seconds(5), std::chrono::seconds(30), &answer);
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(answer.result_int(), 200u) << answer.body();
      EXPECT_EQ(answer.body(), want);
      ++by[std::string(http::ToStd(answer[cluster::kAnsweredByHeader]))];
    }
    return by;
  };
  // In turn: each owner takes every other request.
  EXPECT_EQ(answered_by(20), (std::map<std::string, int>{{"n2", 10}, {"n3", 10}}));
  nodes_[2]->Kill9();  // n3: n2 answers every one, also those whose turn n3 had
  EXPECT_EQ(answered_by(10), (std::map<std::string, int>{{"n2", 10}}));
}

// A node q whose map has three black holes (they accept a connection and never answer) listed
// first, each the sole owner in q's map of a partition beside one of the live nodes: q 0-2, h1 3,
// h2 4, h3 5, then n1 3, n2 4, n3 5 (each owns more; a share of what it owns it answers). Asked one
// after another, as the greedy order picks them, the holes would cost three forward timeouts;
// asked at once, one, before the live owners are asked (at once again).
TEST_F(NodeMapTest, AMergedRequestWaitsForOneTimeoutWhenSeveralOwnersDoNotAnswer) {
  constexpr auto kTimeout = std::chrono::milliseconds(2000);
  std::vector<int> holes;
  std::vector<MapEntry> map = {{"q", {"0-2"}, FreeLoopbackPorts(1)[0]}};
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    holes.push_back(ListenOnLoopback(16, &port));
    map.push_back({"h" + std::to_string(i + 1), {std::to_string(3 + i)}, port});
  }
  for (int i = 0; i < 3; ++i) {
    map.push_back({"n" + std::to_string(i + 1), {std::to_string(3 + i)}, nodes_[i]->http_port()});
  }
  TempDir q_dir;
  WriteNodeConfigs(q_dir, server_->url(), kPartitions, map, kIndexes);
  std::unique_ptr<Daemon> q = MapNode(q_dir, map[0]);
  q->options().extra_args.push_back("--cluster.forward_timeout_ms=" + std::to_string(kTimeout.count()));
  q->Start();
  const std::size_t own = OnPartitions(want_, {0, 1, 2}, kPartitions).size();
  ASSERT_EQ(q->WaitForStored(std::vector<std::string>(devices_.begin(), devices_.end()), own, std::chrono::seconds(60)),
            own)
      << q->log();

  const auto timed = [](const auto& ask) {
    const auto start = std::chrono::steady_clock::now();
    auto answer = ask();
    return std::make_pair(std::move(answer), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - start));
  };
  std::vector<std::pair<std::string, std::chrono::milliseconds>> elapsed;
  for (const std::string target : {"/v1/devices?limit=1000", "/v1/indexes/by_day/readings?value=2026-06-23&limit=50"}) {
    const auto [want_status, want] = Get(reference_->http_port(), target);
    ASSERT_EQ(want_status, 200) << want;
    const auto [got, took] = timed([&] { return Get(q->http_port(), target); });
    EXPECT_EQ(got.first, 200) << got.second;
    EXPECT_EQ(got.second, want) << target;
    elapsed.emplace_back(target, took);
  }
  const std::string scan = R"({"TableName":"readings","Limit":100})";
  const http::Response want = DynamoDb(reference_->http_port(), "Scan", scan);
  ASSERT_EQ(want.result_int(), 200u) << want.body();
  const auto [got, took] = timed([&] { return DynamoDb(q->http_port(), "Scan", scan); });
  EXPECT_EQ(got.result_int(), 200u) << got.body();
  EXPECT_EQ(nlohmann::json::parse(got.body()), nlohmann::json::parse(want.body()));
  elapsed.emplace_back("Scan", took);
  for (const auto& [what, ms] : elapsed) {
    std::printf("%s: %lld ms (forward timeout %lld ms)\n", what.c_str(), static_cast<long long>(ms.count()),
                static_cast<long long>(kTimeout.count()));
    EXPECT_GE(ms, kTimeout) << what << ": the holes were asked";
    EXPECT_LT(ms, 2 * kTimeout) << what << ": one after another it takes 3 timeouts";
  }
  for (int fd : holes) close(fd);
}

TEST_F(NodeMapTest, IndexQueriesAndRemoteReadsMergedAcrossNodesAreThoseOfANodeHoldingEveryPartition) {
  ExpectMergedAnswersAreTheReferences({0, 1, 2});
  nodes_[1]->Kill9();  // n2: partitions 2-3 are left to n1, 4-5 to n3
  ExpectMergedAnswersAreTheReferences({0, 2});
}

TEST_F(NodeMapTest, APartitionWithoutALiveOwnerIsA503NamingIt) {
  nodes_[1]->Kill9();
  nodes_[2]->Kill9();  // partitions 4 and 5 have no live owner left
  const int n1 = nodes_[0]->http_port();
  const auto [status, body] = Get(n1, "/v1/devices/" + DeviceOf(4) + "/readings");
  EXPECT_EQ(status, 503);
  EXPECT_THAT(body, ::testing::HasSubstr("NoLiveOwner"));
  EXPECT_THAT(nlohmann::json::parse(body)["error"]["message"].get<std::string>(),
              ::testing::StartsWith("partition 4 (of device \"" + DeviceOf(4) + "\") has no live owner: n2: GET "));
  const std::string query = R"({"TableName":"readings","KeyConditionExpression":"deviceId = :d",)"
                            R"("ExpressionAttributeValues":{":d":{"S":")" + DeviceOf(5) + R"("}}})";
  http::Response dynamodb = DynamoDb(n1, "Query", query);
  EXPECT_EQ(dynamodb.result_int(), 503u);
  EXPECT_THAT(dynamodb.body(), ::testing::HasSubstr("partition 5"));
  // Nor is anything merged across nodes answered in part.
  for (const std::string target : {"/v1/devices", "/v1/indexes/by_day/readings?value=2026-06-23"}) {
    const auto [merged_status, merged] = Get(n1, target);
    EXPECT_EQ(merged_status, 503) << target;
    EXPECT_THAT(merged, ::testing::HasSubstr("the request needs partition 4 (one owner of each partition answers for "
                                             "it), which has no live owner: n2: "))
        << target;
  }
  for (const auto& [operation, body] : std::vector<std::pair<std::string, std::string>>{
           {"Query", R"({"TableName":"readings","IndexName":"by_day","KeyConditionExpression":"readingDay = :d",)"
                     R"("ExpressionAttributeValues":{":d":{"S":"2026-06-23"}}})"},
           {"Scan", R"({"TableName":"readings","Limit":10})"},
           {"Scan", R"({"TableName":"readings","Segment":1,"TotalSegments":2})"}}) {
    http::Response merged = DynamoDb(n1, operation, body);
    EXPECT_EQ(merged.result_int(), 503u) << body;
    EXPECT_THAT(merged.body(), ::testing::HasSubstr("NoLiveOwner")) << body;
  }
  // What n1 owns it still answers whole.
  for (uint32_t p : {0u, 3u}) {
    const auto [own_status, own] = Get(n1, "/v1/devices/" + DeviceOf(p) + "/readings?limit=10000");
    EXPECT_EQ(own_status, 200) << own;
    EXPECT_EQ(nlohmann::json::parse(own)["items"].size(), ReadingsOf(DeviceOf(p)));
  }
  // A request another node forwarded is never forwarded again: one for a partition n1 does not
  // own says the maps disagree.
  http::Response forwarded = GetForwarded(n1, "/v1/devices/" + DeviceOf(4) + "/latest");
  EXPECT_EQ(forwarded.result_int(), 503u);
  EXPECT_THAT(forwarded.body(), ::testing::HasSubstr("NotAnOwner"));
  // Nor does it answer a share of partitions it does not own (or of another partition count) with
  // nothing.
  for (const std::string share : {"partitions=3-4&partition_count=6", "partitions=0&partition_count=4"}) {
    http::Response shared = GetForwarded(n1, "/v1/indexes/by_day/readings?value=2026-06-23&" + share);
    EXPECT_EQ(shared.result_int(), 503u) << share;
    EXPECT_THAT(shared.body(), ::testing::HasSubstr("the nodes' maps ([cluster]) disagree")) << share;
  }
}

}  // namespace
}  // namespace readingsd::test
