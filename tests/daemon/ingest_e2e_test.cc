// End to end: real mosquitto (the shipped config), the real readingsd binary, readingsd-publish,
// and the store read back. No reading may be lost or doubled, whatever is killed.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "query/query.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/publisher.h"
#include "tests/support/subscriber.h"

namespace readingsd::test {
namespace {

tools::GeneratorOptions Readings(std::uint64_t count, int devices) {
  tools::GeneratorOptions g;
  g.count = count;
  g.devices = devices;
  return g;
}

TEST(IngestE2E, TenThousandReadingsForFiftyDevicesAreQueryableInOrder) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto generator = Readings(10000, 50);
  PublishResult published = RunPublisher({.port = broker.port(), .generator = generator});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  ASSERT_EQ(published.acked, 10000u);

  auto devices = DeviceIds(50);
  EXPECT_EQ(daemon.WaitForStored(devices, 10000, std::chrono::seconds(60)), 10000u) << daemon.log();
  ASSERT_EQ(daemon.Terminate(), 0) << daemon.log();

  // Every device's readings through the query engine, in time order both ways.
  std::unique_ptr<storage::Store> store;
  ASSERT_TRUE(storage::Store::Open({.path = daemon.data_dir()}, &store).ok());
  auto expected = ExpectedKeys(generator);
  for (const auto& device : devices) {
    query::QueryRequest request;
    ASSERT_TRUE(query::MakeKeyCondition(device, query::SortKeyOp::kAll, "", "", &request.key).ok());
    query::QueryResult forward, backward;
    ASSERT_TRUE(query::Query(*store, request, &forward).ok());
    request.scan_forward = false;
    ASSERT_TRUE(query::Query(*store, request, &backward).ok());
    ASSERT_EQ(forward.items.size(), 200u) << device;
    for (std::size_t i = 0; i < forward.items.size(); ++i) {
      EXPECT_TRUE(expected.count({device, std::string(forward.items[i].sort_key)}));
      if (i > 0) {
        EXPECT_LT(forward.items[i - 1].sort_key, forward.items[i].sort_key);
      }
      EXPECT_EQ(forward.items[i].sort_key, backward.items[forward.items.size() - 1 - i].sort_key);
    }
  }
}

TEST(IngestE2E, KillNineFiveTimesMidStreamLosesAndDoublesNothing) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--mqtt.max_batch=50"}});
  daemon.Start();
  constexpr std::size_t kTotal = 20000;
  auto generator = Readings(kTotal, 40);
  auto devices = DeviceIds(40);
  // Paced so the stream outlives the kills and five restarts, even of a sanitizer build on a
  // loaded machine: about 27 s of publishing.
  AsyncPublisher publisher({.port = broker.port(), .generator = generator, .rate = 750, .timeout = std::chrono::seconds(120)});
  // Each kill waits until the store has grown past the next 2,000 readings, and by at least 500
  // since the last kill: so every kill lands while readings flow, each restarted daemon has
  // stored some before it is killed again, and none comes after the stream ended.
  std::size_t stored_at_last_kill = 0;
  for (std::size_t kill = 1; kill <= 5; ++kill) {
    const std::size_t target = std::max(kill * 2000, stored_at_last_kill + 500);
    const std::size_t stored = daemon.WaitForStored(devices, target, std::chrono::seconds(60));
    ASSERT_GE(stored, target) << "kill " << kill << ": ingest stalled\n" << daemon.log();
    ASSERT_LT(stored, kTotal) << "kill " << kill << " came after every reading was stored";
    ASSERT_TRUE(publisher.process().Running()) << "kill " << kill << " came after the publisher finished";
    daemon.Kill9();
    stored_at_last_kill = stored;
    daemon.Start();
  }
  PublishResult published = publisher.Wait();
  ASSERT_EQ(published.exit_code, 0) << published.output;
  ASSERT_EQ(published.acked, kTotal);

  daemon.WaitForStored(devices, kTotal, std::chrono::seconds(60));
  ASSERT_EQ(daemon.Terminate(), 0) << daemon.log();
  // Each (device, ts) once, with the values it was published with: redeliveries collapse, and
  // no write of one reading's values under another's key survives the kills.
  EXPECT_EQ(Difference(daemon.StoredReadings(devices), PublishedReadings(generator)), "")
      << "after 5 kill -9 mid-stream";
}

TEST(IngestE2E, BrokerRestartMidStreamLosesNothing) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto generator = Readings(10000, 20);
  auto devices = DeviceIds(20);
  AsyncPublisher publisher({.port = broker.port(), .generator = generator, .rate = 2000, .timeout = std::chrono::seconds(120)});
  // The restart comes once readings flow through, and before the stream ends.
  ASSERT_GE(daemon.WaitForStored(devices, 2000, std::chrono::seconds(60)), 2000u) << daemon.log();
  ASSERT_TRUE(publisher.process().Running()) << "the stream ended before the broker restart";
  broker.Stop();  // persistence on: the sessions and queued messages are saved
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // down for a while
  broker.Start();
  PublishResult published = publisher.Wait();
  ASSERT_EQ(published.exit_code, 0) << published.output;
  EXPECT_EQ(daemon.WaitForStored(devices, 10000, std::chrono::seconds(60)), 10000u) << daemon.log();
  EXPECT_EQ(Difference(daemon.StoredReadings(devices), PublishedReadings(generator)), "");
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(IngestE2E, ReadingsPublishedWhileTheDaemonIsDownArriveAfterRestart) {
  MosquittoBroker broker;  // the shipped config: no 1000-message cap on the offline queue
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();  // creates the persistent session and its subscription
  ASSERT_EQ(daemon.Terminate(), 0);
  auto generator = Readings(20000, 25);
  PublishResult published = RunPublisher({.port = broker.port(), .generator = generator});
  ASSERT_EQ(published.exit_code, 0) << published.output;
  daemon.Start();
  auto devices = DeviceIds(25);
  EXPECT_EQ(daemon.WaitForStored(devices, 20000, std::chrono::seconds(60)), 20000u) << daemon.log();
  EXPECT_EQ(Difference(daemon.StoredReadings(devices), PublishedReadings(generator)), "");
  EXPECT_EQ(daemon.Terminate(), 0);
}

// Publishes each (topic, payload) at QoS 1 and waits for every PUBACK.
void PublishAll(int port, const std::vector<std::pair<std::string, std::string>>& messages) {
  mosquitto_lib_init();
  mosquitto* m = mosquitto_new("bad-payload-publisher", true, nullptr);
  ASSERT_EQ(mosquitto_connect(m, "127.0.0.1", port, 30), MOSQ_ERR_SUCCESS);
  static int acked;
  acked = 0;
  mosquitto_publish_callback_set(m, [](mosquitto*, void*, int) { ++acked; });
  for (const auto& [topic, payload] : messages) {
    ASSERT_EQ(mosquitto_publish(m, nullptr, topic.c_str(), static_cast<int>(payload.size()), payload.data(), 1, false),
              MOSQ_ERR_SUCCESS);
  }
  for (int i = 0; i < 500 && acked < static_cast<int>(messages.size()); ++i) mosquitto_loop(m, 20, 1);
  EXPECT_EQ(acked, static_cast<int>(messages.size()));
  mosquitto_disconnect(m);
  mosquitto_destroy(m);
}

TEST(IngestE2E, BadPayloadsAreCountedByReasonAndGoodOnesAllStored) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--mqtt.max_payload_bytes=2000"}});
  daemon.Start();
  std::vector<std::pair<std::string, std::string>> messages;
  int good = 0;
  auto ok = [&](int i) {
    ++good;
    return std::pair<std::string, std::string>{"sensors/good1/readings",
                                               R"({"readingTs":"2026-06-23T08:00:)" + std::string(i < 10 ? "0" : "") +
                                                   std::to_string(i) + R"(Z","temperature":)" + std::to_string(i) + "}"};
  };
  for (int i = 0; i < 60; ++i) {
    messages.push_back(ok(i));
    switch (i % 10) {
      case 0: messages.push_back({"sensors/x/readings", "{not json"}); break;
      case 1: messages.push_back({"sensors/x/readings", R"({"temperature":1})"}); break;
      case 2: messages.push_back({"sensors/x/readings", R"({"readingTs":"yesterday"})"}); break;
      case 3: messages.push_back({"sensors/bad id/readings", R"({"readingTs":"2026-06-23T08:00:00Z"})"}); break;
      case 4: messages.push_back({"sensors/x/readings", std::string(3000, '[')}); break;
      case 5: messages.push_back({"sensors/x/readings", R"({"deviceId":"y","readingTs":"2026-06-23T08:00:00Z"})"}); break;
      case 6: messages.push_back({"sensors/x/readings", R"({"readingTs":"2026-06-23T08:00:00Z","m":{"a":1}})"}); break;
      case 7: messages.push_back({"sensors/x/readings", "[]"}); break;
      case 8: messages.push_back({"sensors/x/readings", "42"}); break;
      default: break;
    }
  }
  PublishAll(broker.port(), messages);
  EXPECT_EQ(daemon.WaitForStored({"good1"}, good, std::chrono::seconds(30)), static_cast<std::size_t>(good));
  auto [status, metrics] = Get(daemon.http_port(), "/metrics");
  ASSERT_EQ(status, 200);
  for (const char* reason : {"malformed_json", "missing_timestamp", "invalid_timestamp", "invalid_device_id",
                             "oversize", "device_id_mismatch", "invalid_attribute", "empty_batch", "not_an_object"}) {
    EXPECT_EQ(MetricValue(metrics, std::string("readingsd_readings_rejected_total{reason=\"") + reason + "\"}"), 6)
        << reason;
  }
  EXPECT_EQ(MetricValue(metrics, "readingsd_readings_ingested_total"), good);
  // Each line names the topic and, when it is a valid id, the device; five per reason are logged,
  // and the sixth is counted once the rate limit's 10 s are over.
  const std::string log = daemon.log();
  EXPECT_NE(log.find("<4>ingest: rejected (missing_timestamp) on sensors/x/readings, device x: no readingTs\n"),
            std::string::npos) << log;
  EXPECT_NE(log.find("<4>ingest: rejected (device_id_mismatch) on sensors/x/readings, device y: "), std::string::npos)
      << log;
  EXPECT_NE(log.find("<4>ingest: rejected (invalid_device_id) on sensors/bad id/readings: "), std::string::npos) << log;
  std::size_t oversize_lines = 0;
  for (std::size_t at = 0; (at = log.find("<4>ingest: rejected (oversize) on ", at)) != std::string::npos; ++at) {
    ++oversize_lines;
  }
  EXPECT_EQ(oversize_lines, 5u) << log;
  const std::string counted = "<4>ingest: rejected (oversize): 1 more in the last 10 s, not logged one by one\n";
  for (int i = 0; i < 150 && daemon.log().find(counted) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(daemon.log().find(counted), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
  EXPECT_EQ(daemon.StoredKeys({"good1", "x", "y"}).size(), static_cast<std::size_t>(good));
}

// Issue #20: a payload nested 60,000 levels deep (240 KB, under the 256 KB default cap) is refused as
// malformed JSON without building the tree, and the daemon stores what comes next.
TEST(IngestE2E, APayloadNestedTooDeepIsMalformedJsonAndTheDaemonGoesOn) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  std::string deep = R"({"readingTs":"2026-06-23T08:00:00Z","m":)";
  for (int i = 0; i < 30000; ++i) deep += R"({"L":[)";
  deep += "1";
  for (int i = 0; i < 30000; ++i) deep += "]}";
  deep += "}";
  PublishAll(broker.port(), {{"sensors/deep1/readings", deep},
                             {"sensors/deep1/readings", R"({"readingTs":"2026-06-23T08:00:01Z","t":1})"}});
  EXPECT_EQ(daemon.WaitForStored({"deep1"}, 1, std::chrono::seconds(30)), 1u) << daemon.log();
  auto [status, metrics] = Get(daemon.http_port(), "/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(MetricValue(metrics, R"(readingsd_readings_rejected_total{reason="malformed_json"})"), 1);
  EXPECT_TRUE(daemon.Running());
  EXPECT_EQ(daemon.Terminate(), 0);
}

// One batch: a device whose clock was never set, one running far ahead, a reading holding a
// key twice, and two good readings. Only the good ones are stored; each other one is counted.
TEST(IngestE2E, ImplausibleTimestampsAndDuplicateKeysFallAloneInTheirBatch) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  PublishAll(broker.port(), {{"sensors/clock1/readings", R"([{"readingTs":"1970-01-01T00:00:00Z","t":1},
                                                             {"readingTs":"2026-06-23T08:00:00Z","t":2},
                                                             {"readingTs":"2026-06-23T08:00:01Z","t":3,"t":4},
                                                             {"readingTs":"2999-01-01T00:00:00Z","t":5},
                                                             {"readingTs":"2026-06-23T08:00:02Z","t":6}])"}});
  ASSERT_EQ(daemon.WaitForStored({"clock1"}, 2, std::chrono::seconds(30)), 2u) << daemon.log();
  auto [status, metrics] = Get(daemon.http_port(), "/metrics");
  ASSERT_EQ(status, 200);
  for (const char* reason : {"timestamp_too_old", "duplicate_key", "timestamp_in_future"}) {
    EXPECT_EQ(MetricValue(metrics, std::string("readingsd_readings_rejected_total{reason=\"") + reason + "\"}"), 1)
        << reason;
  }
  EXPECT_EQ(MetricValue(metrics, "readingsd_readings_ingested_total"), 2);
  EXPECT_NE(daemon.log().find("rejected (timestamp_too_old) on sensors/clock1/readings, device clock1: readingTs "
                              "1970-01-01T00:00:00Z is before"),
            std::string::npos)
      << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
  std::set<std::pair<std::string, std::string>> want = {{"clock1", "2026-06-23T08:00:00.000000000Z"},
                                                        {"clock1", "2026-06-23T08:00:02.000000000Z"}};
  EXPECT_TRUE(daemon.StoredKeys({"clock1"}) == want);
}

// Numbers as DynamoDB keeps them (issue #22): every digit of a 64-bit counter or a 19-digit
// fraction survives MQTT, the store and the native API, and comes back in plain decimal; one
// beyond DynamoDB's 38 digits is refused with its reason, alone in its batch.
TEST(IngestE2E, NumbersKeepEveryDigitFromMqttToTheApi) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  PublishAll(broker.port(),
             {{"sensors/exact1/readings", R"([{"readingTs":"2026-06-23T08:00:00Z","energy":123456789012345678,
                                              "f":0.1234567890123456789,"big":1000000000000000000000,
                                              "small":0.00000015,"e":1.5E-7,"u":18446744073709551615,
                                              "neg":-9223372036854775808,"whole":22.0},
                                             {"readingTs":"2026-06-23T08:00:01Z","energy":123456789012345679},
                                             {"readingTs":"2026-06-23T08:00:02Z","x":1234567890123456789012345678901234567890}])"}});
  ASSERT_EQ(daemon.WaitForStored({"exact1"}, 2, std::chrono::seconds(30)), 2u) << daemon.log();
  auto [status, body] = Get(daemon.http_port(), "/v1/devices/exact1/readings");
  ASSERT_EQ(status, 200) << body;
  for (const char* field : {R"("energy":123456789012345678,)", R"("f":0.1234567890123456789,)",
                            R"("big":1000000000000000000000,)", R"("small":0.00000015,)", R"("e":0.00000015,)",
                            R"("u":18446744073709551615,)", R"("neg":-9223372036854775808,)", R"("whole":22})",
                            R"("energy":123456789012345679})"}) {
    EXPECT_NE(body.find(field), std::string::npos) << field << " in " << body;
  }
  // Compared exactly: the two counters differ only in their 18th digit.
  auto [filter_status, filtered] =
      Get(daemon.http_port(), "/v1/devices/exact1/readings?filter=energy%3E123456789012345678");
  ASSERT_EQ(filter_status, 200) << filtered;
  EXPECT_NE(filtered.find(R"("count":1)"), std::string::npos) << filtered;
  EXPECT_NE(filtered.find("123456789012345679"), std::string::npos) << filtered;
  auto [metrics_status, metrics] = Get(daemon.http_port(), "/metrics");
  ASSERT_EQ(metrics_status, 200);
  EXPECT_EQ(MetricValue(metrics, R"(readingsd_readings_rejected_total{reason="invalid_attribute"})"), 1);
  EXPECT_NE(daemon.log().find("Attempting to store more than 38 significant digits in a Number"), std::string::npos)
      << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(IngestE2E, MqttV5SessionSurvivesTheDaemonBeingDown) {
  // v5 ends a session at disconnect unless the client asks for an expiry: readingsd asks for one.
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--mqtt.protocol=mqttv5"}});
  daemon.Start();
  ASSERT_EQ(daemon.Terminate(), 0);
  auto generator = Readings(3000, 10);
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = generator}).exit_code, 0);
  daemon.Start();
  auto devices = DeviceIds(10);
  EXPECT_EQ(daemon.WaitForStored(devices, 3000, std::chrono::seconds(30)), 3000u) << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(IngestE2E, RejectedMessagesGoToTheDeadLetterTopicWithTheirReason) {
  MosquittoBroker broker;
  Subscriber dead_letters({.port = broker.port(), .client_id = "dlq-reader", .topic = "readingsd/rejected"});
  Daemon daemon({.broker_port = broker.port(),
                 .extra_args = {"--mqtt.dead_letter_topic=readingsd/rejected", "--mqtt.max_payload_bytes=4096"}});
  daemon.Start();
  // One reading refused alone; a batch whose readings 1 and 3 are refused among stored ones; a
  // payload over the cap (as the issue's 2 MB against 256 KB); one that is not JSON.
  const std::string oversize = R"([{"readingTs":"2026-06-23T08:00:00Z","pad":")" + std::string(10000, 'x') + R"("}])";
  PublishAll(broker.port(),
             {{"sensors/d1/readings", R"({"readingTs":"tomorrow"})"},
              {"sensors/d2/readings", R"([{"readingTs":"2026-06-23T08:00:00Z","t":1},{"readingTs":"yesterday","t":2},
                                         {"readingTs":"2026-06-23T08:00:02Z","t":3},{"t":4}])"},
              {"sensors/d3/readings", oversize},
              {"sensors/d4/readings", "{not json"}});
  ASSERT_TRUE(dead_letters.WaitForCount(5, std::chrono::seconds(10))) << daemon.log();
  EXPECT_EQ(daemon.WaitForStored({"d2"}, 2, std::chrono::seconds(10)), 2u);
  std::vector<nlohmann::json> envelopes;
  for (const auto& m : dead_letters.messages()) envelopes.push_back(nlohmann::json::parse(m.payload));
  ASSERT_EQ(envelopes.size(), 5u);

  EXPECT_EQ(envelopes[0]["message"].get<std::string>().rfind("invalid timestamp \"tomorrow\": expected", 0), 0u);
  envelopes[0].erase("message");
  EXPECT_EQ(envelopes[0], nlohmann::json::parse(R"({"reason":"invalid_timestamp","topic":"sensors/d1/readings",
      "device":"d1","index":0,"reading":{"readingTs":"tomorrow"}})"))
      << envelopes[0].dump();
  // Only the refused readings of the batch, each with its index: nothing of t=1 or t=3.
  EXPECT_EQ(envelopes[1]["index"], 1);
  EXPECT_EQ(envelopes[1]["reason"], "invalid_timestamp");
  EXPECT_EQ(envelopes[1]["reading"], nlohmann::json::parse(R"({"readingTs":"yesterday","t":2})"));
  EXPECT_EQ(envelopes[2]["index"], 3);
  EXPECT_EQ(envelopes[2]["reason"], "missing_timestamp");
  EXPECT_EQ(envelopes[2]["reading"], nlohmann::json::parse(R"({"t":4})"));
  EXPECT_EQ(envelopes[2]["device"], "d2");
  // Refused whole: a bounded head and the size, never the whole payload again.
  EXPECT_EQ(envelopes[3]["reason"], "oversize");
  EXPECT_EQ(envelopes[3]["payloadBytes"], oversize.size());
  EXPECT_EQ(envelopes[3]["truncated"], true);
  EXPECT_EQ(envelopes[3]["payload"], oversize.substr(0, 1024));
  EXPECT_FALSE(envelopes[3].contains("reading"));
  EXPECT_LT(dead_letters.messages()[3].payload.size(), 1500u);
  EXPECT_EQ(envelopes[4]["reason"], "malformed_json");
  EXPECT_EQ(envelopes[4]["payload"], "{not json");
  EXPECT_EQ(envelopes[4]["truncated"], false);
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(IngestE2E, ABrokerThatForgotTheSessionIsReportedInReadyz) {
  MosquittoBroker broker({.persistence = false});
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  for (int i = 0; i < 50 && Get(daemon.http_port(), "/readyz").first != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(Get(daemon.http_port(), "/readyz").first, 200);
  broker.Kill();  // no persistence: the restarted broker has no session for us
  broker.Start();
  std::string body;
  for (int i = 0; i < 100; ++i) {
    auto [status, text] = Get(daemon.http_port(), "/readyz");
    body = text;
    if (status == 200 && body.find("lost our persistent session") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(body.find("lost our persistent session"), std::string::npos) << body;
  EXPECT_NE(daemon.log().find("<4>mqtt: the broker had no session"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.Terminate(), 0);
}

// Issue #25 (README, Troubleshooting): two daemons started with one mqtt.client_id take the
// broker session from each other forever. The log must name another client with that id as the
// likely cause, and /readyz must answer 503 saying so on every look while it goes on, not only in
// the moments between a reconnect and the next takeover (it said "broker not connected" then).
TEST(IngestE2E, TwoDaemonsWithOneClientIdNameTheTwinInTheLogAndInReadyz) {
  MosquittoBroker broker;
  Daemon first({.broker_port = broker.port(), .extra_args = {"--mqtt.client_id=twin"}});
  first.Start();
  Daemon second({.broker_port = broker.port(), .extra_args = {"--mqtt.client_id=twin"}});
  second.StartUnready();
  const std::string cause =
      "another client with client id 'twin' (e.g. a second readingsd with the same config) is the likely cause";
  Daemon* named = nullptr;
  for (int i = 0; i < 300 && !named; ++i) {
    for (Daemon* daemon : {&first, &second}) {
      if (!named && daemon->log().find("<3>mqtt: the connection was lost") != std::string::npos &&
          daemon->log().find(cause) != std::string::npos) {
        named = daemon;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(named, nullptr) << "first:\n" << first.log() << "second:\n" << second.log();
  for (int i = 0; i < 20; ++i) {
    auto [status, body] = Get(named->http_port(), "/readyz");
    EXPECT_EQ(status, 503) << body;
    EXPECT_NE(body.find(cause), std::string::npos) << body;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(first.Terminate(), 0);
  EXPECT_EQ(second.Terminate(), 0);
}

TEST(IngestE2E, ABrokerThatDroppedReadingsIsReportedInReadyz) {
  // Stock mosquitto's queue limit, and $SYS published every second so the test need not wait.
  MosquittoBroker broker({.extra_config = "max_queued_messages 1000\nsys_interval 1\n"});
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  ASSERT_EQ(daemon.Terminate(), 0);
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = Readings(3000, 3)}).exit_code, 0);
  // Once the broker has published its count (every second), that count is what the daemon sees
  // first: drops from before it started, a warning only. A stale count rising after the start
  // would be drops seen happening, which make /readyz 503 (the next test).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  daemon.Start();
  std::string body;
  for (int i = 0; i < 50 && body.find("dropped") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    body = Get(daemon.http_port(), "/readyz").second;
  }
  EXPECT_NE(body.find("the broker dropped 2000 messages"), std::string::npos) << body;
  EXPECT_NE(daemon.log().find("<4>mqtt: the broker reports 2000 messages dropped"), std::string::npos) << daemon.log();
  EXPECT_EQ(MetricValue(Get(daemon.http_port(), "/metrics").second, "readingsd_broker_dropped_messages_total"), 2000);
  EXPECT_EQ(daemon.WaitForStored(DeviceIds(3), 1000, std::chrono::seconds(20)), 1000u);
  EXPECT_EQ(daemon.Terminate(), 0);
}

// Issue #25: a broker that drops readings while readingsd runs (its queue for readingsd full, as
// with stock settings under a burst) turns /readyz 503 and shows in the metric; once it has not
// dropped any for mqtt.broker_drops_unready_seconds, /readyz is 200 again, with a warning.
TEST(IngestE2E, ABrokerDroppingReadingsNowIsUnreadyAndExported) {
  MosquittoBroker broker({.extra_config = "max_queued_messages 10\nmax_inflight_messages 10\nsys_interval 1\n"});
  Daemon daemon({.broker_port = broker.port(), .extra_args = {"--mqtt.broker_drops_unready_seconds=3"}});
  daemon.Start();
  auto dropped = [&] { return MetricValue(Get(daemon.http_port(), "/metrics").second, "readingsd_broker_dropped_messages_total"); };
  for (int i = 0; i < 100 && dropped() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(dropped(), 0) << "the broker's first count (retained) did not arrive";
  // Stopped, readingsd takes nothing: the broker fills its window and queue, then drops.
  ASSERT_EQ(kill(daemon.pid(), SIGSTOP), 0);
  PublishResult published = RunPublisher({.port = broker.port(), .generator = Readings(200, 2)});
  ASSERT_EQ(kill(daemon.pid(), SIGCONT), 0);
  ASSERT_EQ(published.exit_code, 0) << published.output;  // every reading acknowledged to the "device"
  std::pair<int, std::string> ready;
  for (int i = 0; i < 100 && ready.first != 503; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ready = Get(daemon.http_port(), "/readyz");
  }
  EXPECT_EQ(ready.first, 503) << ready.second;
  EXPECT_NE(ready.second.find("the broker is dropping messages for full queues"), std::string::npos) << ready.second;
  EXPECT_GT(dropped(), 100);
  EXPECT_NE(daemon.log().find("more messages for full client queues"), std::string::npos) << daemon.log();
  EXPECT_LT(daemon.WaitForStored(DeviceIds(2), 200, std::chrono::seconds(2)), 200u);
  for (int i = 0; i < 150 && ready.first != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ready = Get(daemon.http_port(), "/readyz");
  }
  EXPECT_EQ(ready.first, 200) << ready.second;
  EXPECT_NE(ready.second.find("warning: the broker dropped"), std::string::npos) << ready.second;
  EXPECT_EQ(daemon.Terminate(), 0);
}

// readingsd_mqtt_reconnects_total counts connections re-established, not attempts (issue #25):
// a broker down for several retries is one reconnect.
TEST(IngestE2E, ReconnectsCountConnectionsReestablishedNotAttempts) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  auto metric = [&](const char* series) { return MetricValue(Get(daemon.http_port(), "/metrics").second, series); };
  EXPECT_EQ(metric("readingsd_mqtt_reconnects_total"), 0);
  broker.Stop();
  auto attempts = [&] {
    const std::string log = daemon.log();
    std::size_t n = 0;
    for (std::size_t at = 0; (at = log.find("mqtt: cannot connect to", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  for (int i = 0; i < 150 && attempts() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(attempts(), 3u) << daemon.log();
  EXPECT_EQ(metric("readingsd_mqtt_connected"), 0);
  broker.Start();
  for (int i = 0; i < 150 && Get(daemon.http_port(), "/readyz").first != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(metric("readingsd_mqtt_connected"), 1);
  EXPECT_EQ(metric("readingsd_mqtt_reconnects_total"), 1);
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(IngestE2E, QueryCommandPrintsWhatTheDaemonStored) {
  MosquittoBroker broker;
  Daemon daemon({.broker_port = broker.port()});
  daemon.Start();
  ASSERT_EQ(RunPublisher({.port = broker.port(), .generator = Readings(30, 3)}).exit_code, 0);
  ASSERT_EQ(daemon.WaitForStored(DeviceIds(3), 30, std::chrono::seconds(30)), 30u);
  std::string listen = "--http.listen=127.0.0.1:" + std::to_string(daemon.http_port());
  auto [status, table] = RunReadingsd({listen, "query", "--device", "dev00001", "--latest", "3"});
  ASSERT_EQ(status, 0) << table;
  EXPECT_NE(table.find("readingTs"), std::string::npos) << table;
  EXPECT_NE(table.find("2026-06-23T00:00:09.000000000Z"), std::string::npos) << table;  // the newest
  EXPECT_EQ(table.find("2026-06-23T00:00:06.000000000Z"), std::string::npos) << table;  // 4th newest
  // --latest pages like any query: 10 readings newest first in pages of 4, each with one attribute.
  auto [latest_status, latest] = RunReadingsd(
      {listen, "query", "--device", "dev00002", "--latest", "4", "--all", "--attributes", "temperature", "--json"});
  ASSERT_EQ(latest_status, 0) << latest;
  EXPECT_EQ(std::count(latest.begin(), latest.end(), '\n'), 3) << latest;
  EXPECT_NE(latest.find("\"temperature\""), std::string::npos) << latest;
  EXPECT_EQ(latest.find("\"humidity\""), std::string::npos) << latest;
  EXPECT_LT(latest.find("2026-06-23T00:00:09"), latest.find("2026-06-23T00:00:08")) << latest;
  auto [both, both_message] = RunReadingsd({listen, "query", "--device", "dev00002", "--latest", "4", "--limit", "2"});
  EXPECT_EQ(both, 64) << both_message;
  EXPECT_NE(both_message.find("--latest"), std::string::npos) << both_message;
  auto [all_status, pages] = RunReadingsd({listen, "query", "--device", "dev00002", "--from", "2026-06-23T02:00:00+02:00",
                                           "--limit", "4", "--all", "--json"});
  ASSERT_EQ(all_status, 0) << pages;
  EXPECT_EQ(std::count(pages.begin(), pages.end(), '\n'), 3) << pages;  // 10 items in pages of 4
  // Each page is one line of JSON (docs/native-api.md): the items, and a cursor but on the last.
  std::istringstream lines(pages);
  std::vector<std::size_t> page_items;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json page = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(page.is_object()) << line;
    page_items.push_back(page["items"].size());
    EXPECT_EQ(page.contains("nextCursor"), page_items.size() < 3) << line;
  }
  EXPECT_EQ(page_items, (std::vector<std::size_t>{4, 4, 2})) << pages;
  // Dates are bounds too, meaning their first instant (README's example, issue #25).
  auto [date_status, midnight] =
      RunReadingsd({listen, "query", "--device", "dev00002", "--latest", "100", "--to", "2026-06-23"});
  ASSERT_EQ(date_status, 0) << midnight;
  EXPECT_NE(midnight.find("2026-06-23T00:00:00.000000000Z"), std::string::npos) << midnight;
  EXPECT_EQ(midnight.find("2026-06-23T00:00:01"), std::string::npos) << midnight;
  auto [readme_status, readme] = RunReadingsd({listen, "query", "--device", "dev00002", "--latest", "100", "--before",
                                               "2026-06-24", "--attributes", "temperature"});
  ASSERT_EQ(readme_status, 0) << readme;
  EXPECT_NE(readme.find("2026-06-23T00:00:09.000000000Z"), std::string::npos) << readme;
  auto [bad, message] = RunReadingsd({listen, "query", "--device", "dev00002", "--from", "yesterday"});
  EXPECT_EQ(bad, 64) << message;
  EXPECT_NE(message.find("from"), std::string::npos) << message;

  // --aggregate: dev00003's ten readings, one a second from 00:00:00, in two 5 s buckets.
  const std::vector<std::string> aggregate = {listen,   "query", "--device", "dev00003", "--aggregate", "--from",
                                              "2026-06-23T00:00:00Z", "--to", "2026-06-23T00:00:59Z", "--step", "5s",
                                              "--fn", "count,min", "--attributes", "temperature"};
  auto [aggregate_status, buckets] = RunReadingsd(aggregate);
  ASSERT_EQ(aggregate_status, 0) << buckets;
  EXPECT_EQ(std::count(buckets.begin(), buckets.end(), '\n'), 3) << buckets;  // a header and two buckets
  EXPECT_EQ(buckets.rfind("start                 count  temperature.count  temperature.min\n", 0), 0u) << buckets;
  EXPECT_NE(buckets.find("\n2026-06-23T00:00:05Z  5      5                  "), std::string::npos) << buckets;
  std::vector<std::string> as_json = aggregate;
  as_json.push_back("--json");
  auto [json_status, raw] = RunReadingsd(as_json);
  ASSERT_EQ(json_status, 0) << raw;
  EXPECT_NE(raw.find(R"("scannedCount":10)"), std::string::npos) << raw;
  std::vector<std::string> with_latest = aggregate;
  with_latest.insert(with_latest.end(), {"--latest", "3"});
  auto [misuse, misuse_message] = RunReadingsd(with_latest);
  EXPECT_EQ(misuse, 64) << misuse_message;
  EXPECT_NE(misuse_message.find("--latest does not apply to --aggregate"), std::string::npos) << misuse_message;
  auto [no_step, no_step_message] = RunReadingsd({listen, "query", "--device", "dev00003", "--step", "5s"});
  EXPECT_EQ(no_step, 64) << no_step_message;
  EXPECT_EQ(daemon.Terminate(), 0);
}

// Answers the first connection on a loopback port of its own with `body` as a 200 JSON
// response, as a server that is not readingsd could.
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string body) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 1) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::system_error(errno, std::generic_category(), "canned server on 127.0.0.1:0");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body] {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;  // shut down before anyone connected
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv(client, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<std::size_t>(n));
      }
      for (std::size_t sent = 0; sent < response.size();) {
        const ssize_t n = send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      close(client);
    });
  }
  ~CannedHttpServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept() if nobody came
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// `readingsd query` reads what answers at http.listen: a page nested 100,000 levels deep is
// refused like any unreadable answer, where printing it overflowed the stack.
TEST(IngestE2E, QueryCommandRefusesAnAnswerNestedTooDeep) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CannedHttpServer server(R"({"deviceId":"d1","readingTs":["2026-06-23T08:00:00.000000000Z"],"columns":{"m":[)" +
                          deep + R"(]},"count":1,"scannedCount":1})");
  auto [status, output] =
      RunReadingsd({"--http.listen=127.0.0.1:" + std::to_string(server.port()), "query", "--device", "d1"});
  EXPECT_EQ(status, 69) << output.substr(0, 200);  // kExitUnavailable, as for any answer that is not JSON
  EXPECT_NE(output.find("readingsd query: HTTP 200"), std::string::npos) << output.substr(0, 200);
}

}  // namespace
// Issue #25: --csv is RFC 4180 with deviceId, so `readingsd import` reads it back, and a table
// or CSV shows every digit of a number (38 significant digits: more than a double holds).
// Issue #29: it asks for format=columns and prints the rows as it printed them from rows.
TEST(IngestE2E, QueryCsvQuotesWhatNeedsItAndKeepsEveryDigit) {
  CannedHttpServer server(
      R"({"deviceId":"d1","readingTs":["2026-06-23T08:00:00.000000000Z","2026-06-23T08:00:01.000000000Z"],)"
      R"("columns":{"note":["a,\"b\"",null],"big":[12345678901234567890123456789012345678,null],"t":[21.5,null],)"
      R"("ok":[null,true],"small":[null,0.1000000000000000000000000000000000001]},)"
      R"("count":2,"scannedCount":2})");
  auto [status, csv] =
      RunReadingsd({"--http.listen=127.0.0.1:" + std::to_string(server.port()), "query", "--device", "d1", "--csv"});
  ASSERT_EQ(status, 0) << csv;
  EXPECT_EQ(csv,
            "deviceId,readingTs,big,note,ok,small,t\r\n"
            "d1,2026-06-23T08:00:00.000000000Z,12345678901234567890123456789012345678,\"a,\"\"b\"\"\",,,21.5\r\n"
            "d1,2026-06-23T08:00:01.000000000Z,,,true,0.1000000000000000000000000000000000001,\r\n");
  CannedHttpServer again(R"({"items":[],"count":0,"scannedCount":0})");
  auto [both, message] = RunReadingsd(
      {"--http.listen=127.0.0.1:" + std::to_string(again.port()), "query", "--device", "d1", "--csv", "--json"});
  EXPECT_EQ(both, 64) << message;
}

}  // namespace readingsd::test
