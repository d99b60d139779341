// Issue #25: two clients with one client id (a second readingsd started with the same config)
// take the broker session from each other forever. Each must say that this is the likely
// cause, against a real broker, with MQTT 3.1.1 (by the pattern) and 5 (the broker says so).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "ingest/mqtt_ingest.h"
#include "storage/store.h"
#include "tests/support/mosquitto_broker.h"
#include "tests/support/temp_dir.h"

namespace readingsd::ingest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ClientIdConflict : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<MqttIngest> StartIngest(const std::string& name, const std::string& client_id) {
    std::unique_ptr<storage::Store> store;
    EXPECT_TRUE(storage::Store::Open({.path = dir_.File(name)}, &store).ok());
    MqttOptions options;
    options.port = broker_.port();
    options.client_id = client_id;
    options.mqtt_v5 = GetParam();
    options.reconnect_min = milliseconds(50);
    options.reconnect_max = milliseconds(200);
    std::unique_ptr<MqttIngest> ingest;
    EXPECT_TRUE(MqttIngest::Start(options, store.get(), {}, &ingest).ok());
    stores_.push_back(std::move(store));
    return ingest;
  }

  // Waits up to `timeout` for either to report a conflict; returns what it said.
  static std::string Conflict(const MqttIngest& a, const MqttIngest* b, seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::string c = a.State().client_id_conflict; !c.empty()) return c;
      if (b) {
        if (std::string c = b->State().client_id_conflict; !c.empty()) return c;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return "";
  }

  test::TempDir dir_{"readingsd-client-id"};
  test::MosquittoBroker broker_;
  std::vector<std::unique_ptr<storage::Store>> stores_;  // outlive the ingests, which each test owns
};

TEST_P(ClientIdConflict, TwoClientsWithOneIdAreNamedAsTheLikelyCause) {
  auto first = StartIngest("a", "twin");
  auto second = StartIngest("b", "twin");
  std::string conflict = Conflict(*first, second.get(), seconds(30));
  EXPECT_NE(conflict.find("another client with client id 'twin'"), std::string::npos) << conflict;
  EXPECT_NE(conflict.find("mqtt.client_id"), std::string::npos) << conflict;
  first->Stop();
  second->Stop();
}

// The same broker restarted three times within a minute drops a short connection each time,
// but refuses the attempts made while it is down: that is not a twin.
TEST_P(ClientIdConflict, ABrokerRestartingIsNotTakenForATwin) {
  auto alone = StartIngest("c", "alone");
  for (int i = 0; i < 3; ++i) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!alone->State().subscribed && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(alone->State().subscribed);
    broker_.Stop();
    std::this_thread::sleep_for(milliseconds(400));  // at least one refused attempt
    broker_.Start();
  }
  EXPECT_EQ(Conflict(*alone, nullptr, seconds(3)), "");
  alone->Stop();
}

INSTANTIATE_TEST_SUITE_P(Mqtt, ClientIdConflict, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "V5" : "V311"; });

}  // namespace
}  // namespace readingsd::ingest
