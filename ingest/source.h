// Source: a way readings stream in (MQTT, NATS JetStream), what it reports, and how the daemon
// stops it and watches it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/log_level.h"
#include "ingest/payload.h"
#include "storage/reading.h"

namespace readingsd::ingest {

// Everything the ingest path reports; each hook may be empty. Called from the ingest threads.
struct IngestHooks {
  std::function<void(LogLevel, std::string_view)> log;
  std::function<void(std::span<const storage::Reading>, std::chrono::duration<double> write_time)> on_batch_written;
  std::function<void(std::string_view topic, const Rejection&)> on_rejected;
  std::function<void(bool connected)> on_connection;
  // Every count of dropped messages the broker reports (see IngestState::broker_dropped).
  std::function<void(uint64_t total)> on_broker_dropped;
  // Readings removed by a delete that came through the stream (NatsIngest), after each batch.
  std::function<void(uint64_t removed)> on_readings_deleted;
};

struct IngestState {
  bool connected = false;
  bool subscribed = false;       // the broker acknowledged every topic subscription
  bool session_present = false;  // the broker kept our session (false on a first connect)
  bool session_lost = false;     // reconnected and the broker had forgotten us: readings may be gone
  bool store_failing = false;    // the last write failed; acks are held back
  // mosquitto's $SYS/broker/publish/messages/dropped (all clients, since the broker started);
  // 0 when the broker does not publish it. Non-zero means queues overflowed somewhere.
  uint64_t broker_dropped = 0;
  // When that count last rose while this process watched it ({} = not since it started). The
  // first count it sees only sets the start: it cannot tell when those drops were.
  std::chrono::steady_clock::time_point broker_dropped_rose{};
  uint64_t readings_written = 0;
  uint64_t messages_rejected = 0;
  std::string last_error;
  // Set when the broker keeps taking the connection away soon after it was made, as it does
  // when a second client connects with the same client id: the likely cause, said in words
  // (with MQTT 5 the broker says so itself). When it last happened; {} = never.
  std::string client_id_conflict;
  std::chrono::steady_clock::time_point client_id_conflict_at{};
};

// One running source, with its own thread(s). Thread-safe.
class Source {
 public:
  virtual ~Source() = default;
  // Stops taking messages, writes what was read and acks it, then disconnects. Bounded by
  // `timeout`. Idempotent.
  virtual void Stop(std::chrono::milliseconds timeout = std::chrono::seconds(5)) = 0;
  virtual IngestState State() const = 0;
  // Time of the ingest loop's last turn, for the watchdog: a stuck loop stops the pings.
  virtual std::chrono::steady_clock::time_point LastLoop() const = 0;
};

}  // namespace readingsd::ingest
