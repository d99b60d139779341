// MqttIngest: subscribes at QoS 1 with a persistent session and writes readings to the store,
// acknowledging each message only once its readings are in the RocksDB WAL.
//
// Why this needs care: libmosquitto 2.0 queues the PUBACK for a QoS 1 PUBLISH *before* it calls
// on_message (lib/handle_publish.c), and in its default mode writes it to the socket at once
// (lib/packet_mosq.c, packet__queue: in_callback == false && threaded == mosq_ts_none). A crash
// between that PUBACK and our write would lose the reading. So the client is put in externally
// threaded mode (mosquitto_threaded_set), where packet__queue never writes, and our own loop
// decides when bytes leave: read what the socket has (up to max_batch readings), write them in
// one WriteBatch, and only then call mosquitto_loop_write, which flushes the queued PUBACKs.
// If the write fails, nothing is flushed: the batch is retried, and if the process dies first
// the broker redelivers (same key → stored once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/log_level.h"
#include "base/status.h"
#include "ingest/payload.h"
#include "storage/store.h"

namespace readingsd::ingest {

struct MqttOptions {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string client_id = "readingsd";  // fixed, so the broker keeps our session across restarts
  std::string username;
  std::string password;
  std::vector<std::string> topics = {"sensors/+/readings"};
  bool mqtt_v5 = false;
  int keepalive_seconds = 30;
  std::string ca_file, cert_file, key_file;  // TLS when ca_file is set
  bool tls_insecure = false;                  // skip the broker host name check
  // Where each rejection is republished, in a JSON envelope with its reason and message: a refused
  // reading alone with its index in the batch, a payload refused whole as its first 1 KiB and
  // its size. "" = rejections are only counted and logged.
  std::string dead_letter_topic;
  std::chrono::milliseconds reconnect_min{500};
  std::chrono::milliseconds reconnect_max{30000};
  std::size_t max_batch = 1000;  // readings per group commit
  PayloadOptions payload;
  // Tests only; no config key sets it. false leaves libmosquitto in its default mode, which
  // sends each PUBACK as the PUBLISH is read, before the write: ack_after_write_test runs its
  // scenarios that way too, to show that it would catch exactly that.
  bool ack_after_write = true;
};

// Everything the ingest path reports; each hook may be empty. Called from the ingest thread.
struct IngestHooks {
  std::function<void(LogLevel, std::string_view)> log;
  std::function<void(std::span<const storage::Reading>, std::chrono::duration<double> write_time)> on_batch_written;
  std::function<void(std::string_view topic, const Rejection&)> on_rejected;
  std::function<void(bool connected)> on_connection;
  // Every count of dropped messages the broker reports (see IngestState::broker_dropped).
  std::function<void(uint64_t total)> on_broker_dropped;
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

class MqttIngest {
 public:
  // Starts the ingest thread; it connects (and reconnects with backoff) by itself.
  static Status Start(const MqttOptions& options, storage::Store* store, IngestHooks hooks,
                      std::unique_ptr<MqttIngest>* out);
  virtual ~MqttIngest() = default;

  // Stops taking messages, writes what was read, flushes its acks and disconnects cleanly
  // (the broker keeps the session). Bounded by `timeout`. Idempotent.
  virtual void Stop(std::chrono::milliseconds timeout = std::chrono::seconds(5)) = 0;
  virtual IngestState State() const = 0;
  // Time of the ingest loop's last turn, for the watchdog: a stuck loop stops the pings.
  virtual std::chrono::steady_clock::time_point LastLoop() const = 0;
};

}  // namespace readingsd::ingest
