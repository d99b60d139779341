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
#include "ingest/source.h"
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

class MqttIngest : public Source {
 public:
  // Starts the ingest thread; it connects (and reconnects with backoff) by itself.
  static Status Start(const MqttOptions& options, storage::Store* store, IngestHooks hooks,
                      std::unique_ptr<MqttIngest>* out);
  // Stop: stops taking messages, writes what was read, flushes its acks and disconnects
  // cleanly (the broker keeps the session).
};

}  // namespace readingsd::ingest
