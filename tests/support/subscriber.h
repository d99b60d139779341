// A libmosquitto subscriber that records every message it receives, standing in for readingsd
// where a test needs to see exactly what the broker delivers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

struct mosquitto;
struct mosquitto_message;

namespace readingsd::test {

struct SubscriberOptions {
  int port = 0;
  std::string client_id = "test-subscriber";
  std::string topic = "sensors/+/readings";
  int qos = 1;
  // false: a persistent session, so the broker queues messages while this client is away and
  // delivers them when a subscriber with the same client id connects again.
  bool clean_session = false;
};

struct ReceivedMessage {
  std::string topic;
  std::string payload;
};

class Subscriber {
 public:
  // Connects, subscribes and waits for the SUBACK; throws std::runtime_error after 5 s. After
  // a lost connection (a broker restart) it reconnects and subscribes again by itself.
  explicit Subscriber(SubscriberOptions options);
  // Disconnects cleanly; with clean_session=false the session stays on the broker.
  ~Subscriber();

  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  std::size_t count() const;
  std::vector<ReceivedMessage> messages() const;
  // Waits until at least `n` messages arrived; false at timeout.
  bool WaitForCount(std::size_t n, std::chrono::milliseconds timeout);
  // Waits until no message arrived for `quiet`; false if messages still flow at timeout.
  bool WaitForQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds timeout);

 private:
  // Disconnects, stops the network thread and frees the client.
  void Close();
  static void OnConnect(mosquitto* mosq, void* self, int rc);
  static void OnSubscribe(mosquitto* mosq, void* self, int mid, int qos_count, const int* granted_qos);
  static void OnMessage(mosquitto* mosq, void* self, const mosquitto_message* message);

  SubscriberOptions options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<ReceivedMessage> messages_;
  std::chrono::steady_clock::time_point last_message_;
  bool subscribed_ = false;
  std::string error_;
  mosquitto* mosq_ = nullptr;
};

}  // namespace readingsd::test
