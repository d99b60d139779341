// The reading generator, readingsd-publish against a real broker, and the shipped broker config.
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "tests/support/mosquitto_broker.h"
#include "tests/support/ports.h"
#include "tests/support/publisher.h"
#include "tests/support/subscriber.h"
#include "tools/reading_generator.h"

namespace readingsd {
namespace {

using namespace std::chrono_literals;
using test::MosquittoBroker;
using test::PublisherOptions;
using test::Subscriber;
using tools::GeneratorOptions;

using Key = std::pair<std::string, std::string>;  // (deviceId, readingTs)

std::set<Key> ExpectedKeys(const GeneratorOptions& options) {
  std::set<Key> keys;
  for (const auto& reading : tools::ExpectedReadings(options)) keys.emplace(reading.device_id, reading.reading_ts);
  return keys;
}

// The distinct keys in what a subscriber received; a payload is one reading or an array of them.
std::set<Key> ReceivedKeys(const std::vector<test::ReceivedMessage>& messages) {
  std::set<Key> keys;
  for (const auto& message : messages) {
    const auto payload = nlohmann::json::parse(message.payload);
    for (const auto& reading : payload.is_array() ? payload : nlohmann::json::array({payload})) {
      keys.emplace(reading.at("deviceId").get<std::string>(), reading.at("readingTs").get<std::string>());
    }
  }
  return keys;
}

PublisherOptions Publish(int port, std::uint64_t count, int devices) {
  PublisherOptions options;
  options.port = port;
  options.generator.count = count;
  options.generator.devices = devices;
  options.generator.payload_pad = 20;  // ~120 B payloads, like real devices
  return options;
}

// --- generator -------------------------------------------------------------------------------

TEST(ReadingGeneratorTest, ReadingIGoesToDeviceIModDAtStartPlusIDivDSteps) {
  GeneratorOptions options;
  options.count = 7;
  options.devices = 3;
  options.step_ms = 500;
  const auto readings = tools::ExpectedReadings(options);
  ASSERT_EQ(readings.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(readings[i].device_id, tools::DeviceId(i % 3));
    EXPECT_EQ(readings[i].reading_ts, tools::FormatTimestamp(tools::kDefaultStartMs + (i / 3) * 500));
  }
  EXPECT_EQ(readings[0].device_id, "dev00001");
  EXPECT_EQ(readings[0].reading_ts, "2026-06-23T00:00:00Z");
  EXPECT_EQ(readings[4].reading_ts, "2026-06-23T00:00:00.500Z");
}

TEST(ReadingGeneratorTest, MessageIsTheDocumentedJson) {
  GeneratorOptions options;
  options.count = 1;
  options.payload_pad = 5;
  tools::ReadingGenerator generator(options);
  tools::GeneratedMessage message;
  ASSERT_TRUE(generator.Next(&message));
  EXPECT_EQ(message.topic, "sensors/dev00001/readings");
  EXPECT_EQ(message.payload,
            R"({"deviceId":"dev00001","readingTs":"2026-06-23T00:00:00Z","temperature":15.0,"humidity":30.0,)"
            R"("pad":"xxxxx"})");
  EXPECT_FALSE(generator.Next(&message));
}

TEST(ReadingGeneratorTest, BatchIsAnArrayOfOneDevicesConsecutiveReadings) {
  GeneratorOptions options;
  options.count = 10;
  options.devices = 2;
  options.batch = 4;
  tools::ReadingGenerator generator(options);
  tools::GeneratedMessage message;
  std::vector<std::size_t> sizes;
  std::set<Key> keys;
  while (generator.Next(&message)) {
    const auto payload = nlohmann::json::parse(message.payload);
    ASSERT_TRUE(payload.is_array());
    sizes.push_back(payload.size());
    for (const auto& reading : payload) {
      EXPECT_EQ("sensors/" + reading.at("deviceId").get<std::string>() + "/readings", message.topic);
      keys.emplace(reading.at("deviceId"), reading.at("readingTs"));
    }
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4, 2}));
  EXPECT_EQ(keys, ExpectedKeys(options));
  EXPECT_EQ(keys.size(), 10u);
}

TEST(ReadingGeneratorTest, SeededDevicesAreReproducibleAndKeysStayUnique) {
  GeneratorOptions options;
  options.count = 1000;
  options.devices = 7;
  options.seed = 42;
  const auto first = tools::ExpectedReadings(options);
  const auto again = tools::ExpectedReadings(options);
  std::map<std::string, int> per_device;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].device_id, again[i].device_id);
    ++per_device[first[i].device_id];
  }
  EXPECT_EQ(ExpectedKeys(options).size(), 1000u);
  EXPECT_EQ(per_device.size(), 7u);
  options.seed.reset();
  const auto round_robin = tools::ExpectedReadings(options);
  int moved = 0;
  for (std::size_t i = 0; i < first.size(); ++i) moved += first[i].device_id != round_robin[i].device_id;
  EXPECT_GT(moved, 500);  // ~6/7 of them for a well-spread hash
}

TEST(ReadingGeneratorTest, TimestampsParseStrictlyAndRoundTrip) {
  std::int64_t ms = 0;
  ASSERT_TRUE(tools::ParseTimestamp("2026-06-23T00:00:00Z", &ms));
  EXPECT_EQ(ms, tools::kDefaultStartMs);
  ASSERT_TRUE(tools::ParseTimestamp("2024-02-29T23:59:59.25Z", &ms));
  EXPECT_EQ(tools::FormatTimestamp(ms), "2024-02-29T23:59:59.250Z");
  for (const char* bad : {"2026-02-30T00:00:00Z", "2026-06-23T24:00:00Z", "2026-06-23T00:00:00",
                          "2026-06-23 00:00:00Z", "2026-06-23T00:00:00.1234Z", "2026-06-23T00:00:00+01:00"}) {
    EXPECT_FALSE(tools::ParseTimestamp(bad, &ms)) << bad;
  }
}

// --- readingsd-publish against a real broker -------------------------------------------------

TEST(PublisherTest, EveryReadingIsAckedAndDeliveredAsGenerated) {
  MosquittoBroker broker;
  Subscriber subscriber({.port = broker.port(), .client_id = "sub1"});
  const PublisherOptions options = Publish(broker.port(), 5000, 50);

  const auto result = test::RunPublisher(options);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.published, 5000u);
  EXPECT_EQ(result.acked, 5000u);

  ASSERT_TRUE(subscriber.WaitForCount(5000, 10s)) << subscriber.count();
  EXPECT_EQ(ReceivedKeys(subscriber.messages()), ExpectedKeys(options.generator));
}

TEST(PublisherTest, ExitsWithTwoWhenTheBrokerIsUnreachable) {
  int port = 0;
  const int refusing = test::RefusingLoopbackPort(&port);
  PublisherOptions options = Publish(port, 10, 1);
  options.timeout = 1s;
  const auto result = test::RunPublisher(options);
  close(refusing);
  EXPECT_EQ(result.exit_code, 2) << result.output;
}

TEST(PublisherTest, ExitsWithOneWhenAcksDoNotArriveInTime) {
  MosquittoBroker broker;
  Subscriber subscriber({.port = broker.port(), .client_id = "sub1"});
  PublisherOptions options = Publish(broker.port(), 20000, 50);
  options.rate = 10000;
  options.timeout = 2s;
  test::AsyncPublisher publisher(options);
  ASSERT_TRUE(subscriber.WaitForCount(1000, 10s));
  broker.Stop();  // and it never comes back

  const auto result = publisher.Wait();
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_GE(result.acked, 1000u);
  EXPECT_LT(result.acked, result.published);
}

TEST(PublisherTest, BrokerRestartMidStreamLosesNothing) {
  MosquittoBroker broker;
  Subscriber subscriber({.port = broker.port(), .client_id = "sub1"});
  PublisherOptions options = Publish(broker.port(), 20000, 50);
  options.rate = 10000;  // ~2 s of publishing, so the restart lands mid-stream
  test::AsyncPublisher publisher(options);

  ASSERT_TRUE(subscriber.WaitForCount(3000, 10s));
  broker.Stop();  // SIGTERM: queued messages are saved
  broker.Start();

  const auto result = publisher.Wait();
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.acked, 20000u);
  EXPECT_NE(result.output.find("connection lost"), std::string::npos) << result.output;
  // At least once: what was in flight during the restart may arrive twice.
  ASSERT_TRUE(subscriber.WaitForCount(20000, 20s)) << subscriber.count();
  ASSERT_TRUE(subscriber.WaitForQuiet(300ms, 10s));
  EXPECT_EQ(ReceivedKeys(subscriber.messages()), ExpectedKeys(options.generator));
}

// --- the shipped broker config ---------------------------------------------------------------

// readingsd is down (its persistent session exists, it is not connected) while devices publish;
// returns it reconnected, receiving the backlog.
std::unique_ptr<Subscriber> ReconnectAfterOutage(MosquittoBroker& broker, const PublisherOptions& options) {
  { Subscriber first_run({.port = broker.port(), .client_id = "readingsd"}); }

  const auto result = test::RunPublisher(options);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // Every reading was acknowledged to its device, whatever the broker does with it next.
  EXPECT_EQ(result.acked, options.generator.count);

  return std::make_unique<Subscriber>(test::SubscriberOptions{.port = broker.port(), .client_id = "readingsd"});
}

TEST(ShippedBrokerConfigTest, QueuesEveryReadingForAnOfflinePersistentSubscriber) {
  MosquittoBroker broker;
  const PublisherOptions options = Publish(broker.port(), 20000, 50);
  const auto readingsd = ReconnectAfterOutage(broker, options);
  ASSERT_TRUE(readingsd->WaitForCount(20000, 20s)) << readingsd->count();
  EXPECT_EQ(ReceivedKeys(readingsd->messages()), ExpectedKeys(options.generator));
}

TEST(ShippedBrokerConfigTest, BacklogSurvivesABrokerRestart) {
  MosquittoBroker broker;
  { Subscriber first_run({.port = broker.port(), .client_id = "readingsd"}); }
  const PublisherOptions options = Publish(broker.port(), 5000, 50);
  ASSERT_EQ(test::RunPublisher(options).exit_code, 0);

  broker.Stop();
  broker.Start();
  Subscriber readingsd({.port = broker.port(), .client_id = "readingsd"});
  ASSERT_TRUE(readingsd.WaitForCount(5000, 10s)) << readingsd.count();
  EXPECT_EQ(ReceivedKeys(readingsd.messages()), ExpectedKeys(options.generator));
}

// Why the shipped config matters: with mosquitto's default queue limit the broker acknowledges
// all 20,000 readings to the devices, then delivers only the oldest 1000 of them.
TEST(ShippedBrokerConfigTest, DefaultQueueLimitDropsReadingsWhileSubscriberIsAway) {
  MosquittoBroker broker({.persistence = true, .extra_config = "max_queued_messages 1000\n"});
  const PublisherOptions options = Publish(broker.port(), 20000, 50);
  const auto readingsd = ReconnectAfterOutage(broker, options);
  ASSERT_TRUE(readingsd->WaitForCount(1000, 10s)) << readingsd->count();
  ASSERT_TRUE(readingsd->WaitForQuiet(500ms, 10s));

  GeneratorOptions oldest = options.generator;
  oldest.count = 1000;
  EXPECT_EQ(ReceivedKeys(readingsd->messages()), ExpectedKeys(oldest));
  EXPECT_NE(broker.log().find("Outgoing messages are being dropped for client readingsd"), std::string::npos)
      << broker.log();
}

}  // namespace
}  // namespace readingsd
