#include "tests/daemon/nats_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "cluster/partition.h"
#include "storage/key.h"
#include "storage/number.h"

namespace readingsd::test {

void Check(natsStatus s, const std::string& what) {
  if (s != NATS_OK) throw std::runtime_error(what + ": " + natsStatus_GetText(s));
}

Keys KeysIn(natsMsg* msg) {
  Keys keys;
  const auto payload = nlohmann::json::parse(std::string(natsMsg_GetData(msg), natsMsg_GetDataLength(msg)));
  for (const auto& reading : payload.is_array() ? payload : nlohmann::json::array({payload})) {
    std::string sort_key;
    if (!storage::NormalizeTimestamp(reading["readingTs"].get<std::string>(), &sort_key).ok()) {
      throw std::runtime_error(std::string("bad readingTs in ") + natsMsg_GetSubject(msg));
    }
    keys.emplace(reading["deviceId"].get<std::string>(), sort_key);
  }
  return keys;
}

NatsClient::NatsClient(const std::string& urls) {
  Check(natsConnection_ConnectTo(&nc_, urls.c_str()), "connect to " + urls);
  jsOptions options;
  jsOptions_Init(&options);
  options.PublishAsync.AckHandler = &NatsClient::OnAck;
  options.PublishAsync.AckHandlerClosure = this;
  Check(natsConnection_JetStream(&js_, nc_, &options), "JetStream context");
}

NatsClient::~NatsClient() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

namespace {

constexpr const char* kMessageIndexHeader = "Test-Message-Index";

}  // namespace

void NatsClient::OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr*, void* self) {
  auto* client = static_cast<NatsClient*>(self);
  const char* index = nullptr;
  // An error leaves the message unacked: the next round sends it again.
  if (ack != nullptr && natsMsgHeader_Get(msg, kMessageIndexHeader, &index) == NATS_OK) {
    std::lock_guard lock(client->mu_);
    const std::size_t i = std::stoul(index);
    if (i < client->acked_.size() && !client->acked_[i]) {
      client->acked_[i] = true;
      ++client->acked_count_;
    }
  }
  natsMsg_Destroy(msg);
}

std::size_t NatsClient::Acked() {
  std::lock_guard lock(mu_);
  return acked_count_;
}

void NatsClient::PublishAll(const tools::GeneratorOptions& generator, double rate, std::chrono::seconds timeout) {
  tools::GeneratorOptions options = generator;
  options.topic_template = "readings.{deviceId}";
  std::vector<tools::GeneratedMessage> messages;
  {
    tools::ReadingGenerator readings(options);
    for (tools::GeneratedMessage message; readings.Next(&message);) messages.push_back(message);
  }
  {
    std::lock_guard lock(mu_);
    acked_.assign(messages.size(), false);
    acked_count_ = 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto started = std::chrono::steady_clock::now();
  std::size_t sent = 0;
  for (int round = 0;; ++round) {
    std::vector<std::size_t> unacked;
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < messages.size(); ++i) {
        if (!acked_[i]) unacked.push_back(i);
      }
    }
    if (unacked.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(std::to_string(unacked.size()) + " of " + std::to_string(messages.size()) +
                               " publishes were not acked after " + std::to_string(round) + " rounds");
    }
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.MaxWait = 5000;  // an ack not back by then is an error, and the message is sent again
    for (std::size_t i : unacked) {
      if (rate > 0) {
        std::this_thread::sleep_until(started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                    std::chrono::duration<double>(static_cast<double>(sent) / rate)));
      }
      const tools::GeneratedMessage& m = messages[i];
      const tools::GeneratedReading& first = m.readings.front();
      natsMsg* msg = nullptr;
      Check(natsMsg_Create(&msg, m.topic.c_str(), nullptr, m.payload.data(), static_cast<int>(m.payload.size())),
            "message");
      // The stream drops a message whose id it stored within its duplicate window (2 min).
      Check(natsMsgHeader_Set(msg, "Nats-Msg-Id", (first.device_id + "/" + first.reading_ts).c_str()), "header");
      Check(natsMsgHeader_Set(msg, kMessageIndexHeader, std::to_string(i).c_str()), "header");
      // Refused while the connection is closed or too much is pending: sent again next round.
      if (js_PublishMsgAsync(js_, &msg, &publish) == NATS_OK) ++sent;
      natsMsg_Destroy(msg);  // a no-op when the library took it
    }
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    wait.MaxWait = 30000;
    js_PublishAsyncComplete(js_, &wait);
    natsMsgList pending{nullptr, 0};
    if (js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) natsMsgList_Destroy(&pending);
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // e.g. while a leader is elected
  }
}

void NatsClient::Publish(const std::string& subject, const std::string& payload) {
  jsPubAck* ack = nullptr;
  Check(js_Publish(&ack, js_, subject.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr, nullptr),
        "publish to " + subject);
  jsPubAck_Destroy(ack);
}

uint64_t NatsClient::StreamMessages() {
  jsStreamInfo* info = nullptr;
  Check(js_GetStreamInfo(&info, js_, "READINGS", nullptr, nullptr), "stream info");
  const uint64_t messages = info->State.Msgs;
  jsStreamInfo_Destroy(info);
  return messages;
}

Keys NatsClient::StreamKeys() {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = "READINGS";
  options.Config.AckPolicy = js_AckNone;
  options.Config.DeliverPolicy = js_DeliverAll;
  natsSubscription* sub = nullptr;
  Check(js_PullSubscribe(&sub, js_, "readings.*.*", "test-audit", nullptr, &options, nullptr), "audit consumer");
  Keys keys;
  for (;;) {
    natsMsgList list{nullptr, 0};
    const natsStatus s = natsSubscription_Fetch(&list, sub, 1000, 2000, nullptr);
    if (s == NATS_TIMEOUT) break;  // the stream is read to its end
    Check(s, "fetch from the audit consumer");
    for (int m = 0; m < list.Count; ++m) keys.merge(KeysIn(list.Msgs[m]));
    natsMsgList_Destroy(&list);
  }
  natsSubscription_Unsubscribe(sub);  // deletes the consumer
  natsSubscription_Destroy(sub);
  return keys;
}

std::string NatsClient::StreamLeader() {
  jsStreamInfo* info = nullptr;
  if (js_GetStreamInfo(&info, js_, "READINGS", nullptr, nullptr) != NATS_OK) return "";
  std::string leader = info->Cluster != nullptr && info->Cluster->Leader != nullptr ? info->Cluster->Leader : "";
  jsStreamInfo_Destroy(info);
  return leader;
}

uint64_t NatsClient::ConsumerBehind(const std::string& name) {
  jsConsumerInfo* info = nullptr;
  Check(js_GetConsumerInfo(&info, js_, "READINGS", name.c_str(), nullptr, nullptr), "consumer info of " + name);
  const uint64_t behind = info->NumPending + static_cast<uint64_t>(info->NumAckPending);
  jsConsumerInfo_Destroy(info);
  return behind;
}

std::vector<uint32_t> MapEntry::Owned(int partitions) const {
  std::vector<uint32_t> owned;
  if (!cluster::ParsePartitionList(this->partitions, static_cast<uint32_t>(partitions), &owned).ok()) {
    throw std::runtime_error("bad partitions of " + name);
  }
  return owned;
}

void WriteNodeConfigs(const TempDir& dir, const std::string& servers, int partitions, const std::vector<MapEntry>& map,
                      const std::string& nats_lines) {
  std::string urls;
  for (std::size_t start = 0; start <= servers.size();) {
    const std::size_t end = std::min(servers.find(',', start), servers.size());
    urls += (urls.empty() ? "\"" : ", \"") + servers.substr(start, end - start) + "\"";
    start = end + 1;
  }
  std::string nodes;
  for (const MapEntry& entry : map) {
    std::string list;
    for (const std::string& range : entry.partitions) list += (list.empty() ? "\"" : ", \"") + range + "\"";
    nodes += "\n[[cluster.nodes]]\nname = \"" + entry.name + "\"\nurl = \"http://127.0.0.1:" +
             std::to_string(entry.port) + "\"\npartitions = [" + list + "]\n";
  }
  for (const MapEntry& entry : map) {
    const std::string path = dir.File(entry.name + ".toml");
    std::ofstream out(path, std::ios::trunc);
    out << "[nats]\nservers = [" << urls << "]\npartitions = " << partitions << "\ndurable_prefix = \"" << entry.name
        << "\"\n"
        << nats_lines << "\n[cluster]\nnode = \"" << entry.name << "\"\n"
        << nodes;
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
  }
}

std::unique_ptr<Daemon> MapNode(const TempDir& dir, const MapEntry& entry) {
  // The MQTT broker is never dialled while nats.servers is set.
  return std::make_unique<Daemon>(DaemonOptions{
      .broker_port = 1,
      .extra_args = {"--config=" + dir.File(entry.name + ".toml"),
                     "--http.listen=127.0.0.1:" + std::to_string(entry.port)}});
}

ReadingMap OnPartitions(const ReadingMap& want, const std::vector<uint32_t>& owned, int partitions) {
  ReadingMap on;
  for (const auto& reading : want) {
    const uint32_t p = cluster::PartitionOf(reading.first.first, static_cast<uint32_t>(partitions));
    if (std::find(owned.begin(), owned.end(), p) != owned.end()) on.insert(reading);
  }
  return on;
}

namespace {

// How the attributes of a rows answer's `item` differ from `want` ("" when they do not).
std::string ValuesDiffer(const nlohmann::json& item, const std::map<std::string, storage::AttributeValue>& want) {
  std::string differ;
  for (const auto& [name, value] : want) {
    if (!item.contains(name)) {
      differ += " no " + name;
    } else if (const auto* n = std::get_if<storage::Number>(&value)) {
      std::string got;
      if (!item[name].is_number() || !storage::ParseNumber(item[name].dump(), &got).ok() || got != n->text) {
        differ += " " + name + "=" + item[name].dump() + " (published " + n->text + ")";
      }
    } else if (const auto* s = std::get_if<std::string>(&value); s != nullptr && item[name] != *s) {
      differ += " " + name + "=" + item[name].dump();
    }
  }
  return differ;
}

}  // namespace

void ExpectEveryNodeAnswersCompletelyAndAlike(const std::vector<int>& ports, const ReadingMap& want,
                                              bool all_formats) {
  std::map<std::string, std::size_t> readings;  // by device
  for (const auto& reading : want) ++readings[reading.first.first];
  std::vector<std::string> targets = {"/readings?limit=10000", "/latest?n=3"};
  if (all_formats) {
    targets.insert(targets.end(), {"/readings?limit=10000&format=columns", "/readings?limit=10000&format=csv",
                                   "/aggregate?from=2026-06-23T00:00:00Z&to=2026-06-23T01:00:00Z&step=1m&attributes="
                                   "temperature"});
  }
  for (const auto& [device, count] : readings) {
    for (const std::string& target : targets) {
      const std::string path = "/v1/devices/" + device + target;
      const auto [status, first] = Get(ports.front(), path);
      ASSERT_EQ(status, 200) << path << ": " << first;
      for (int port : ports) EXPECT_EQ(Get(port, path).second, first) << path << " on port " << port;
      if (target != targets.front()) continue;
      const nlohmann::json page = nlohmann::json::parse(first);
      EXPECT_FALSE(page.contains("nextCursor")) << path;
      std::size_t checked = 0, wrong = 0;
      std::string first_wrong;
      for (const auto& item : page["items"]) {
        std::string sort_key;
        ASSERT_TRUE(storage::NormalizeTimestamp(item["readingTs"].get<std::string>(), &sort_key).ok()) << item;
        auto it = want.find({device, sort_key});
        const std::string differ = it == want.end() ? " never published" : ValuesDiffer(item, it->second);
        if (!differ.empty() && wrong++ == 0) first_wrong = item.dump() + ":" + differ;
        ++checked;
      }
      EXPECT_EQ(checked, count) << device << " answered " << checked << " readings of " << count;
      EXPECT_EQ(wrong, 0u) << device << ": " << wrong << " readings wrong, the first " << first_wrong;
    }
    if (!all_formats) continue;
    const std::string query = R"({"TableName":"readings","KeyConditionExpression":"deviceId = :d",)"
                              R"("ExpressionAttributeValues":{":d":{"S":")" + device + R"("}}})";
    for (int port : ports) {
      http::Response answer = DynamoDb(port, "Query", query);
      ASSERT_EQ(answer.result_int(), 200u) << answer.body();
      EXPECT_EQ(nlohmann::json::parse(answer.body())["Count"], count) << device;
    }
  }
  std::vector<std::string> listed;
  for (std::string cursor;;) {
    const std::string path = "/v1/devices?limit=5" + (cursor.empty() ? "" : "&cursor=" + cursor);
    const auto [status, page] = Get(ports.front(), path);
    ASSERT_EQ(status, 200) << page;
    for (int port : ports) EXPECT_EQ(Get(port, path).second, page) << path << " on port " << port;
    const nlohmann::json json = nlohmann::json::parse(page);
    EXPECT_LE(json["devices"].size(), 5u);
    for (const auto& d : json["devices"]) {
      listed.push_back(d["deviceId"].get<std::string>());
      EXPECT_EQ(d["readings"], readings[listed.back()]) << listed.back();
    }
    if (!json.contains("nextCursor")) break;
    cursor = json["nextCursor"].get<std::string>();
  }
  std::vector<std::string> devices;
  for (const auto& [device, count] : readings) devices.push_back(device);
  EXPECT_EQ(listed, devices);  // every device once, in id order
}

http::Response DynamoDb(int port, const std::string& operation, const std::string& body) {
  http::Request request{http::verb::post, "/", 11};
  request.set("X-Amz-Target", "DynamoDB_20120810." + operation);
  request.set(http::field::content_type, "application/x-amz-json-1.0");
  request.body() = body;
  http::Response answer;
  const Status s = http::Send("127.0.0.1", std::to_string(port), std::move(request), std::chrono::seconds(5),
                              std::chrono::seconds(30), &answer);
  if (!s.ok()) throw std::runtime_error(s.ToString());
  return answer;
}

}  // namespace readingsd::test
