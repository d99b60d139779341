// NatsPublisher: what reaches a node of a NATS cluster some other way than the stream (the write
// API, `readingsd import` through it, DELETE of a device's readings) goes into the stream, like
// every other reading (docs/cluster.md): each message on "<subject_prefix>.<deviceId>", so the
// servers' partition() mapping files it where the device's own publishes go, and the owners'
// consumers (NatsIngest) store it, each once. OK only once JetStream acked every message, that
// is once it is durable in the (replicated) stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ingest/nats_ingest.h"

namespace readingsd::ingest {

// One message of the stream: a payload in the MQTT payload format (one reading or an array of
// them) of device `device_id`, whose subject it goes on.
struct StreamMessage {
  std::string device_id;
  std::string payload;
};

// A message with this header deletes readings of the device its subject names, in the stream's
// order: the readings before it in the stream are deleted on every owner, those after it kept.
// MQTT 3.1.1 (the only version NATS' MQTT listener speaks) has no headers, so only a NATS client
// allowed to publish on the device's subject can send one. The value is DeleteHeaderValue's.
inline constexpr char kDeleteHeader[] = "Readingsd-Delete";
// "<lower> <upper>", the bounds of [lower, upper) as storage::Store::DeleteReadings takes them
// ("" unbounded), each percent-encoded (base/text.h PercentEncode).
std::string DeleteHeaderValue(std::string_view lower, std::string_view upper);
// InvalidArgument when `value` is not DeleteHeaderValue's form.
Status ParseDeleteHeader(std::string_view value, std::string* lower, std::string* upper);

// InvalidArgument for a device id no subject can carry (one with a '.', which readingsd allows
// elsewhere): its readings cannot go through the stream.
Status StreamDeviceId(std::string_view device_id);

class NatsPublisher {
 public:
  // Connects in the background (and reconnects by itself), on options.servers, as
  // "<options.name> publisher". InvalidArgument for options that cannot work.
  static Status Start(const NatsOptions& options, std::unique_ptr<NatsPublisher>* out);
  virtual ~NatsPublisher() = default;

  // Publishes every message and waits up to options.publish_timeout for JetStream's acks. OK only
  // when every one was acked by options.stream; else Unavailable saying how many were (those are
  // stored by the owners all the same: sending them again stores each reading once). Thread-safe.
  virtual Status Publish(std::span<const StreamMessage> messages) = 0;
  // A delete of `device_id`'s readings in [lower, upper) (kDeleteHeader); *sequence gets its
  // sequence in the stream once acked. Unavailable when it is not acked in time. Thread-safe.
  virtual Status PublishDelete(std::string_view device_id, std::string_view lower, std::string_view upper,
                               uint64_t* sequence) = 0;
};

}  // namespace readingsd::ingest
