// Configuration: one TOML file (see config/readingsd.example.toml), every key of which is also a
// command-line flag --section.key=VALUE. Defaults are embedded, so no file is needed to start.
// Functions return a Status whose message names the key and where it came from
// ("readingsd.toml:7: mqtt.port: must be 1..65535, got 70000"); nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/index.h"

namespace readingsd::config {

struct StorageConfig {
  std::string data_dir = "./data";
  // fsync the WAL on every group commit: survives power loss, not only a process crash.
  bool sync = false;
  // "" or "0" = keep forever, else <N>s|m|h|d ("30d"). Parsing fills retention_seconds.
  std::string retention;
  std::chrono::seconds retention_seconds{0};
  uint64_t block_cache_mb = 64;
  // Rollups: each device's readings summarised per granule of this many seconds at write time,
  // so aggregates whose step is a multiple of it read one record per granule. 0 = off; else a
  // divisor of 86400.
  int64_t rollup_seconds = 300;

  bool operator==(const StorageConfig&) const = default;
};

struct MqttConfig {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string client_id = "readingsd";
  std::string username;
  // The password is read from this file (ReadSecretFile) so it never shows up in argv or ps.
  std::string password_file;
  std::vector<std::string> topics = {"sensors/+/readings"};
  // {deviceId} marks the topic level holding the device id; "" = only from the payload.
  std::string device_id_topic = "sensors/{deviceId}/readings";
  std::string protocol = "mqttv311";  // or "mqttv5"
  int keepalive_seconds = 30;
  // TLS is on when ca_file is set; cert_file + key_file add a client certificate.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool tls_insecure = false;
  std::string dead_letter_topic;  // "" = log and drop undecodable messages
  uint64_t max_payload_bytes = 262144;
  int reconnect_min_ms = 500;
  int reconnect_max_ms = 30000;
  uint64_t max_batch = 1000;  // readings per group commit
  // /readyz is 503 for this long after the broker's count of dropped messages rose; 0 = never.
  int broker_drops_unready_seconds = 300;

  bool operator==(const MqttConfig&) const = default;
};

// A second way in, for several readingsd nodes sharing a fleet (docs/cluster.md): readings from
// a NATS JetStream stream instead of the MQTT broker. Off while servers is empty.
struct NatsConfig {
  std::vector<std::string> servers;  // e.g. ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"]
  std::string stream = "READINGS";
  // Devices publish on "<subject_prefix>.<deviceId>" (MQTT "<subject_prefix>/<deviceId>"); the
  // servers' mapping files them under "<subject_prefix>.<partition>.<deviceId>".
  std::string subject_prefix = "readings";
  int partitions = 16;  // P of the servers' partition(P,1) mapping
  // Entries "N" or "N-M"; [] = every partition.
  // With a node map ([cluster]), this node's partitions there; set here too, they must agree.
  std::vector<std::string> owned_partitions;
  std::string durable_prefix = "readingsd";  // unique per node
  int stream_replicas = 1;      // when readingsd creates the stream
  std::string stream_max_age;   // "" or "0" = keep forever, else <N>s|m|h|d
  std::chrono::seconds stream_max_age_seconds{0};
  uint64_t fetch_batch = 1000;  // messages per fetch, written in one WriteBatch
  // How long JetStream waits for the ack of a fetched message before it delivers it again (a
  // lost ack; a node restarted after a crash makes its consumers again from their ack floor).
  int ack_wait_seconds = 30;
  std::string dead_letter_subject;  // "" = rejections are logged and counted only
  // The most a write or a delete through the HTTP API waits for JetStream's acks before its 503.
  int publish_timeout_ms = 10000;

  bool operator==(const NatsConfig&) const = default;
};

// One node of the node map: a [[cluster.nodes]] table (config file only).
struct ClusterNodeConfig {
  std::string name;
  std::string url;                      // http://host:port of its HTTP API
  std::vector<std::string> partitions;  // "N" or "N-M" entries below nats.partitions

  bool operator==(const ClusterNodeConfig&) const = default;
};

// Several nodes answering for each other (docs/cluster.md): a request for a partition this node
// does not own is forwarded to a live owner. Off while nodes is empty.
struct ClusterConfig {
  std::string node;  // this node's name in nodes
  std::vector<ClusterNodeConfig> nodes;
  int connect_timeout_ms = 500;     // an owner that takes longer to accept is down: the next is tried
  int forward_timeout_ms = 10000;   // the most a forwarded request waits for its whole answer

  bool operator==(const ClusterConfig&) const = default;
};

// The plausible readingTs window. A device whose clock was never set stamps its readings 1970
// or 0000, one whose clock runs ahead stamps them in the future; either would sit in the store
// where no time-window query finds it.
struct IngestConfig {
  // Readings stamped earlier are refused (timestamp_too_old); ISO-8601 as readingTs, "" = no
  // lower bound.
  std::string min_timestamp = "2000-01-01T00:00:00Z";
  // Readings stamped more than this ahead of the host's clock are refused (timestamp_in_future):
  // <N>s|m|h|d, "" = no upper bound. Parsing fills max_future_seconds (0 = no upper bound).
  std::string max_future = "1d";
  std::chrono::seconds max_future_seconds{86400};
  // The device id of a line protocol point: {measurement}, {tag:NAME} and literal text.
  std::string line_protocol_device = "{tag:device}";
  // The fields of a JSON reading (MQTT, the write API, import) that may hold its timestamp and
  // its device id; a reading holds at most one of each list. No name is in both.
  std::vector<std::string> timestamp_fields = {"readingTs"};
  std::vector<std::string> device_id_fields = {"deviceId"};

  bool operator==(const IngestConfig&) const = default;
};

struct HttpConfig {
  std::string listen = "127.0.0.1:8080";  // host:port, [v6]:port; port 0 = any free port
  int threads = 2;
  int read_helpers = 1;
  int busy_poll_us = 20;
  std::string table_name = "readings";  // the table the DynamoDB-compatible API serves
  std::string dynamodb_region = "us-east-1";  // the region in the table's ARN
  std::string auth_token_file;          // "" = no authentication
  uint64_t max_body_bytes = 1048576;
  // The write endpoints: most bytes a body may hold once decompressed, most readings per request.
  uint64_t max_decoded_body_bytes = 16777216;
  uint64_t max_write_readings = 10000;
  uint64_t max_header_bytes = 8192;
  uint64_t compress_min_bytes = 1024;  // 0 = never compress a response
  uint64_t max_limit = 10000;
  uint64_t max_page_bytes = 1048576;
  uint64_t max_aggregate_buckets = 10000;
  uint64_t max_aggregate_scan = 1000000;
  int max_connections = 256;
  int request_timeout_ms = 10000;
  int header_timeout_ms = 3000;

  bool operator==(const HttpConfig&) const = default;
};

struct MetricsConfig {
  int top_k = 20;
  int window_seconds = 60;
  double partition_wcu_limit = 1000;
  // Low key cardinality is flagged when the top-K partitions take more than this share of the
  // writes, or when fewer distinct partitions than low_cardinality_min_partitions carry writes.
  double low_cardinality_top_share = 0.5;
  int low_cardinality_min_partitions = 10;

  bool operator==(const MetricsConfig&) const = default;
};

struct LogConfig {
  std::string level = "info";  // error, warn, info or debug

  bool operator==(const LogConfig&) const = default;
};

// One [[index]] table: a declared secondary index (storage/index.h).
//   name = "hot_by_hour"
//   partition = "readingHour"   readingHour, readingDay or a string attribute's name
//   sort = "temperature"        a number or string attribute's name, or readingTs
//   sort_type = "number"        "number" (default) or "string": the sort attribute's type
//   shards = 8                  optional (default 1): partition values "v#0" .. "v#7"
struct IndexConfig {
  std::string name;
  std::string partition;
  std::string sort;
  std::string sort_type = "number";
  int shards = 1;

  bool operator==(const IndexConfig&) const = default;
};

// The storage declaration of a valid IndexConfig (ParseToml checked it).
storage::IndexSpec IndexSpecOf(const IndexConfig& index);

struct Config {
  StorageConfig storage;
  MqttConfig mqtt;
  NatsConfig nats;
  ClusterConfig cluster;
  IngestConfig ingest;
  HttpConfig http;
  MetricsConfig metrics;
  LogConfig log;
  std::vector<IndexConfig> indexes;  // [[index]] tables, in file order

  bool operator==(const Config&) const = default;
};

// Applies the keys in `text` over *out: absent keys keep their value, so pass a default Config
// to get the embedded defaults. Unknown keys and sections, wrong types and invalid values are
// errors, all reported (one per line, in file order) as "<source_name>:<line>: section.key: ...",
// in an InvalidArgument status. On failure *out is unchanged.
Status ParseToml(std::string_view text, std::string_view source_name, Config* out);

// Valid TOML of every key, section by section; ParseToml reads it back to an equal Config.
std::string ToToml(const Config& config);

enum class Command {
  kRun, kServe, kQuery, kDevices, kDelete, kImport, kBackup, kVerify, kRepair, kCheckConfig, kHelp, kVersion, kPrintConfig
};

struct CommandLine {
  Command command = Command::kRun;
  std::string config_path;        // "" = no --config given
  std::vector<std::string> args;  // what follows the command: backup's DIR, query's, devices', delete's and repair's options
};

// readingsd [OPTIONS] [COMMAND [ARGS...]]
//   OPTIONS: -c/--config FILE, --print-config, -h/--help, --version, --section.key[=]VALUE.
//   COMMAND: run (the default), serve, query, devices, delete, import FILE..., backup DIR, verify,
//   repair [--yes], check-config.
// Everything after COMMAND belongs to it and lands in args untouched, except flags whose name
// starts with a config section (--mqtt.*, --http.*, ...): those are config flags wherever they
// are, up to a "--", after which everything is args. A bare boolean flag means true.
// The file is read first, flags then apply in order (last wins), then the result is validated.
// --help and --version return at once without reading the file. Starts from *config (a default
// Config = embedded defaults). A bad option, flag or setting is InvalidArgument, an unreadable
// config file IOError; on failure *config and *cmd are unchanged.
Status ParseCommandLine(int argc, const char* const* argv, Config* config, CommandLine* cmd);

// Usage, commands, options and every key as a flag with its type, default and meaning.
std::string HelpText();

// Reads a password file, dropping one trailing newline. An unreadable file is IOError, an empty
// (or oversized) one InvalidArgument; on failure *secret is unchanged.
Status ReadSecretFile(const std::string& path, std::string* secret);

// Reads http.auth_token_file: one token per line, in file order. Lines starting with '#' and
// blank lines are skipped, a CRLF line end counts as LF, and spaces and tabs around a token are
// trimmed (HTTP trims them from a header value, so they could never be presented). An unreadable
// file is IOError; a file without a token, and a token with a space or control character inside
// (the message names the line), are InvalidArgument; on failure *tokens is unchanged. The
// daemon, `readingsd query` and check-config all read the file here.
Status ReadTokenFile(const std::string& path, std::vector<std::string>* tokens);

}  // namespace readingsd::config
