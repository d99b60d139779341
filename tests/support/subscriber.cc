#include "tests/support/subscriber.h"

#include <mosquitto.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace readingsd::test {

Subscriber::Subscriber(SubscriberOptions options) : options_(std::move(options)) {
  mosquitto_lib_init();
  mosq_ = mosquitto_new(options_.client_id.c_str(), options_.clean_session, this);
  if (mosq_ == nullptr) {
    mosquitto_lib_cleanup();
    throw std::runtime_error("mosquitto_new failed");
  }
  mosquitto_connect_callback_set(mosq_, OnConnect);
  mosquitto_subscribe_callback_set(mosq_, OnSubscribe);
  mosquitto_message_callback_set(mosq_, OnMessage);
  // Reconnect within a second of a broker restart; tests wait for deliveries, not for backoff.
  mosquitto_reconnect_delay_set(mosq_, 1, 1, false);
  int rc = mosquitto_connect(mosq_, "127.0.0.1", options_.port, /*keepalive=*/30);
  if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_loop_start(mosq_);
  std::string error = rc == MOSQ_ERR_SUCCESS ? "" : mosquitto_strerror(rc);
  if (error.empty()) {
    std::unique_lock lock(mu_);
    if (!changed_.wait_for(lock, std::chrono::seconds(5), [&] { return subscribed_ || !error_.empty(); })) {
      error = "no SUBACK within 5 s";
    } else {
      error = error_;
    }
  }
  if (!error.empty()) {
    Close();
    throw std::runtime_error("subscriber " + options_.client_id + ": " + error);
  }
}

Subscriber::~Subscriber() { Close(); }

void Subscriber::Close() {
  mosquitto_disconnect(mosq_);
  mosquitto_loop_stop(mosq_, /*force=*/false);
  mosquitto_destroy(mosq_);
  mosquitto_lib_cleanup();
}

void Subscriber::OnConnect(mosquitto* mosq, void* self, int rc) {
  auto* subscriber = static_cast<Subscriber*>(self);
  if (rc != 0) {
    std::lock_guard lock(subscriber->mu_);
    subscriber->error_ = std::string("connection refused: ") + mosquitto_connack_string(rc);
    subscriber->changed_.notify_all();
    return;
  }
  // Also on every reconnect: harmless for a resumed session, needed for a clean one.
  mosquitto_subscribe(mosq, nullptr, subscriber->options_.topic.c_str(), subscriber->options_.qos);
}

void Subscriber::OnSubscribe(mosquitto*, void* self, int, int, const int*) {
  auto* subscriber = static_cast<Subscriber*>(self);
  std::lock_guard lock(subscriber->mu_);
  subscriber->subscribed_ = true;
  subscriber->changed_.notify_all();
}

void Subscriber::OnMessage(mosquitto*, void* self, const mosquitto_message* message) {
  auto* subscriber = static_cast<Subscriber*>(self);
  std::lock_guard lock(subscriber->mu_);
  subscriber->messages_.push_back(ReceivedMessage{
      message->topic, std::string(static_cast<const char*>(message->payload), static_cast<std::size_t>(message->payloadlen))});
  subscriber->last_message_ = std::chrono::steady_clock::now();
  subscriber->changed_.notify_all();
}

std::size_t Subscriber::count() const {
  std::lock_guard lock(mu_);
  return messages_.size();
}

std::vector<ReceivedMessage> Subscriber::messages() const {
  std::lock_guard lock(mu_);
  return messages_;
}

bool Subscriber::WaitForCount(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return messages_.size() >= n; });
}

bool Subscriber::WaitForQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  std::unique_lock lock(mu_);
  for (;;) {
    // Quiet is counted from the call at the earliest, not from some message long ago.
    const auto quiet_until = std::max(last_message_, start) + quiet;
    const auto now = std::chrono::steady_clock::now();
    if (now >= quiet_until) return true;
    if (now >= deadline) return false;
    changed_.wait_until(lock, std::min(quiet_until, deadline));
  }
}

}  // namespace readingsd::test
