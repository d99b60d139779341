// NatsIngest: readings from a NATS JetStream stream, for several readingsd nodes sharing a fleet
// (docs/cluster.md). The NATS servers file each device under one of `partitions` partitions
// with a subject mapping ("<prefix>.*" -> "<prefix>.{{partition(P,1)}}.{{wildcard(1)}}"), so
// the stream holds subjects "<prefix>.<partition>.<deviceId>". This node owns some partitions:
// one durable pull consumer each, named "<durable_prefix>-p<partition>", and one thread each,
// which fetches a batch, parses every message as MQTT's are (ParsePayloadFor, ReadingChecks),
// writes the readings in one WriteBatch (PendingWrites), and only then acks the messages. A crash
// before the ack means JetStream redelivers, and the same key is stored once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/payload.h"
#include "ingest/source.h"
#include "storage/store.h"

namespace readingsd::ingest {

struct NatsOptions {
  std::vector<std::string> servers = {"nats://127.0.0.1:4222"};
  std::string name = "readingsd";  // the connection's name in the servers' monitoring
  std::string stream = "READINGS";
  // Devices publish on "<subject_prefix>.<deviceId>" (MQTT: "<subject_prefix>/<deviceId>").
  std::string subject_prefix = "readings";
  uint32_t partitions = 16;  // P of the servers' partition(P,1) mapping: both must agree
  std::vector<uint32_t> owned;  // the partitions this node takes, each < partitions
  // Must differ between nodes: two nodes with one consumer name would split its messages.
  std::string durable_prefix = "readingsd";
  // The stream is created with these when it does not exist (an existing one is left as it is).
  int stream_replicas = 1;
  std::chrono::seconds stream_max_age{0};  // 0 = keep messages forever
  std::size_t fetch_batch = 1000;          // messages per fetch, written in one WriteBatch
  // JetStream delivers a fetched message again when its ack has not come within this. Set on
  // the consumers when they are bound, existing ones included.
  std::chrono::seconds ack_wait{30};
  std::string dead_letter_subject;  // "" = none; else each rejection, as MQTT's dead letters
  std::chrono::milliseconds fetch_wait{500};  // a fetch returns after this when no message came
  std::chrono::milliseconds retry_min{500};   // first wait after a failed setup or write
  std::chrono::milliseconds retry_max{30000};
  // NatsPublisher: the most a write or a delete waits for JetStream's acks (nats.publish_timeout_ms).
  std::chrono::milliseconds publish_timeout{10000};
  // device_id_topic is unused: the subject names the device.
  PayloadOptions payload;
};

class NatsIngest : public Source {
 public:
  // Connects in the background (and reconnects by itself) and starts one thread per owned
  // partition, which creates the stream if missing and binds its consumer as soon as it can.
  // InvalidArgument for options that cannot work (no servers, no partitions, bad names).
  static Status Start(const NatsOptions& options, storage::Store* store, IngestHooks hooks,
                      std::unique_ptr<NatsIngest>* out);
};

// InvalidArgument for servers, a stream, a durable_prefix or a subject_prefix no node could use.
Status CheckNames(const NatsOptions& options);

// The durable consumer name of `partition`: "<durable_prefix>-p<partition>".
std::string ConsumerName(const NatsOptions& options, uint32_t partition);

}  // namespace readingsd::ingest
