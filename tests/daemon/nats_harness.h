// What the NATS tests share (nats_test.cc, cluster_test.cc): the test's own JetStream client,
// which publishes a generator run and sends again whatever was not acked; readingsd nodes with a
// node map, each with its own config file in README's "Running more than one node" shape; and
// the check that every node answers every device's queries and the device listing completely
// and alike.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "http/client.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/temp_dir.h"
#include "tools/reading_generator.h"

namespace readingsd::test {

// Throws std::runtime_error naming `what` unless `s` is NATS_OK.
void Check(natsStatus s, const std::string& what);

using Keys = std::set<std::pair<std::string, std::string>>;  // (deviceId, normalised readingTs)

// The keys of the readings a message of the stream carries (one JSON reading or an array).
Keys KeysIn(natsMsg* msg);

// The test's own NATS connection and JetStream context. Not thread-safe: one thread uses it
// (the client library's own thread only marks acks).
class NatsClient {
 public:
  // `urls`: one server, or several separated by commas (it reconnects to another when one dies).
  explicit NatsClient(const std::string& urls);
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  natsConnection* nc() { return nc_; }
  jsCtx* js() { return js_; }

  // Every message of a generator run on "readings.<deviceId>", each published through JetStream
  // at up to `rate` messages/s (0: as fast as acks allow) with a message id (its first reading's
  // key), and sent again while not acked, as an MQTT QoS 1 client does: the stream stores a
  // resent message it already holds once. Returns once every message is acked; throws when some
  // are not within `timeout`.
  void PublishAll(const tools::GeneratorOptions& generator, double rate = 0,
                  std::chrono::seconds timeout = std::chrono::seconds(60));
  // Messages of the current PublishAll acked so far (any thread).
  std::size_t Acked();

  void Publish(const std::string& subject, const std::string& payload);

  // How many messages the READINGS stream holds.
  uint64_t StreamMessages();
  // The keys of every reading the READINGS stream holds, read through a consumer of its own.
  Keys StreamKeys();
  // The server_name of the READINGS stream's Raft leader; "" on a single server, or when the
  // stream does not answer (no leader yet).
  std::string StreamLeader();
  // num_pending + num_ack_pending of consumer `name` on READINGS: what it has not acked yet.
  uint64_t ConsumerBehind(const std::string& name);

 private:
  static void OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* self);

  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::mutex mu_;
  std::vector<bool> acked_;  // by message index of the current PublishAll, under mu_
  std::size_t acked_count_ = 0;
};

// One node of a node map: its name, its partitions as cluster.nodes lists them (e.g. {"0-4",
// "11-15"}) and the loopback port of its HTTP API.
struct MapEntry {
  std::string name;
  std::vector<std::string> partitions;
  int port = 0;

  // The partitions it owns, of `partitions`.
  std::vector<uint32_t> Owned(int partitions) const;
};

// Writes `dir`/<name>.toml for every node of `map` (README's shape: [nats] on `servers`, a
// comma-separated list, with `partitions` partitions and the node's name as durable_prefix,
// plus `nats_lines`; [cluster] naming the node; the map). Rewriting them changes the map a
// node reads at its next start.
void WriteNodeConfigs(const TempDir& dir, const std::string& servers, int partitions, const std::vector<MapEntry>& map,
                      const std::string& nats_lines = "");
// A readingsd node (not started) of `entry`, reading `dir`/<name>.toml, on its port.
std::unique_ptr<Daemon> MapNode(const TempDir& dir, const MapEntry& entry);

// The readings of `want` whose device's partition is one of `owned`.
ReadingMap OnPartitions(const ReadingMap& want, const std::vector<uint32_t>& owned, int partitions);

// Every device's readings (rows, with their values; with `all_formats` also columns and CSV),
// latest, and (`all_formats`) aggregate and DynamoDB Query, and the device listing page by
// page, from the nodes on `ports`: the same answer from each, and complete: every reading of
// `want`, with its values, and every device with its count.
void ExpectEveryNodeAnswersCompletelyAndAlike(const std::vector<int>& ports, const ReadingMap& want,
                                              bool all_formats = true);

// A DynamoDB request (`operation` with JSON `body`) to the node on `port`. Throws when no answer
// comes.
http::Response DynamoDb(int port, const std::string& operation, const std::string& body);

}  // namespace readingsd::test
