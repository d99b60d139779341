// A real nats-server for tests: JetStream in a temp dir, on free loopback ports, with the subject
// mapping readingsd's docs/cluster.md gives, and optionally an MQTT listener; it can be killed
// and started again on the same ports and store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {

struct NatsServerOptions {
  // Maps "<prefix>.*" to "<prefix>.{{partition(partitions,1)}}.{{wildcard(1)}}"; 0 = no mapping.
  int partitions = 0;
  std::string prefix = "readings";
  bool mqtt = false;  // an MQTT listener on mqtt_port() (it stores QoS 1 in JetStream)
  // A member of a cluster: its client, cluster and MQTT ports, fixed by the test (every member
  // must know the others' cluster ports before any starts; see ClusterMembers), and its name.
  struct Member {
    std::string name;
    int port = 0;
    int cluster_port = 0;
    int mqtt_port = 0;  // used with `mqtt`
    std::vector<int> routes;  // the other members' cluster ports
  };
  std::optional<Member> member;
};

// Client, cluster and MQTT ports for `n` cluster members named n1, n2, ...: FreeLoopbackPorts,
// three per member.
std::vector<NatsServerOptions::Member> ClusterMembers(int n);

class NatsServer {
 public:
  // Picks ports, writes the config and starts, with fresh ports while one turns out taken;
  // throws std::runtime_error on any other failure. A cluster member starts on its own ports,
  // once (it returns before the cluster has elected its JetStream leader).
  explicit NatsServer(NatsServerOptions options = {});
  ~NatsServer();  // SIGKILL

  // SIGKILL, as a crash: what it stored stays in its store dir.
  void Kill9();
  // Starts it again after Kill9, on the same ports and store; throws like the constructor (and
  // when a port was taken meanwhile).
  void Restart();

  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  int port() const { return port_; }
  int mqtt_port() const { return mqtt_port_; }
  // server_name in its config: what JetStream's cluster info names as a leader.
  std::string name() const { return options_.member ? options_.member->name : "test"; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  std::string log() const;

 private:
  bool Launch();

  NatsServerOptions options_;
  TempDir dir_;
  int port_ = 0;
  int mqtt_port_ = 0;
  std::string config_path_;
  std::string log_path_;
  std::optional<Process> process_;
};

}  // namespace readingsd::test
