#include "daemon/options.h"

#include <chrono>
#include <utility>

#include "cluster/node_map.h"
#include "cluster/partition.h"
#include "storage/key.h"

namespace readingsd::daemon {
namespace {

// ingest.min_timestamp as a sort key; "" = no lower bound. It was checked when it was read, so
// it normalises.
std::string MinSortKey(const config::IngestConfig& window) {
  std::string key;
  if (!window.min_timestamp.empty()) storage::NormalizeTimestamp(window.min_timestamp, &key);
  return key;
}

// What a message may hold, whichever broker it came through: [mqtt]'s limits and topic
// pattern, and the readingTs window.
ingest::PayloadOptions PayloadOptionsFrom(const config::MqttConfig& c, const config::IngestConfig& window) {
  ingest::PayloadOptions o;
  o.device_id_topic = c.device_id_topic;
  o.max_payload_bytes = c.max_payload_bytes;
  o.max_batch = c.max_batch;
  o.min_sort_key = MinSortKey(window);
  o.max_future = window.max_future_seconds;
  o.timestamp_fields = window.timestamp_fields;
  o.device_id_fields = window.device_id_fields;
  return o;
}

}  // namespace

ingest::MqttOptions IngestOptionsFrom(const config::MqttConfig& c, const config::IngestConfig& window) {
  ingest::MqttOptions o;
  o.host = c.host;
  o.port = c.port;
  o.client_id = c.client_id;
  o.username = c.username;
  o.topics = c.topics;
  o.mqtt_v5 = c.protocol == "mqttv5";
  o.keepalive_seconds = c.keepalive_seconds;
  o.ca_file = c.ca_file;
  o.cert_file = c.cert_file;
  o.key_file = c.key_file;
  o.tls_insecure = c.tls_insecure;
  o.dead_letter_topic = c.dead_letter_topic;
  o.reconnect_min = std::chrono::milliseconds(c.reconnect_min_ms);
  o.reconnect_max = std::chrono::milliseconds(c.reconnect_max_ms);
  o.max_batch = c.max_batch;
  o.payload = PayloadOptionsFrom(c, window);
  return o;
}
ingest::NatsOptions NatsOptionsFrom(const config::Config& c) {
  ingest::NatsOptions o;
  o.servers = c.nats.servers;
  o.stream = c.nats.stream;
  o.subject_prefix = c.nats.subject_prefix;
  o.partitions = static_cast<uint32_t>(c.nats.partitions);
  // Checked when the config was read, so it parses.
  cluster::ParsePartitionList(c.nats.owned_partitions, o.partitions, &o.owned);
  o.durable_prefix = c.nats.durable_prefix;
  o.name = "readingsd " + c.nats.durable_prefix;
  o.stream_replicas = c.nats.stream_replicas;
  o.stream_max_age = c.nats.stream_max_age_seconds;
  o.fetch_batch = c.nats.fetch_batch;
  o.ack_wait = std::chrono::seconds(c.nats.ack_wait_seconds);
  o.dead_letter_subject = c.nats.dead_letter_subject;
  o.publish_timeout = std::chrono::milliseconds(c.nats.publish_timeout_ms);
  o.payload = PayloadOptionsFrom(c.mqtt, c.ingest);
  return o;
}
std::optional<cluster::ForwardOptions> ForwardOptionsFrom(const config::Config& c) {
  if (c.cluster.nodes.empty()) return std::nullopt;
  cluster::ForwardOptions o;
  o.map.partitions = static_cast<uint32_t>(c.nats.partitions);
  // Checked when the config was read: every url parses, every entry is below the count, and
  // cluster.node is one of the nodes.
  for (const config::ClusterNodeConfig& n : c.cluster.nodes) {
    cluster::Node node;
    node.name = n.name;
    cluster::ParseNodeUrl(n.url, &node.host, &node.port);
    cluster::ParsePartitionList(n.partitions, o.map.partitions, &node.partitions);
    if (n.name == c.cluster.node) o.map.self = o.map.nodes.size();
    o.map.nodes.push_back(std::move(node));
  }
  o.connect_timeout = std::chrono::milliseconds(c.cluster.connect_timeout_ms);
  o.timeout = std::chrono::milliseconds(c.cluster.forward_timeout_ms);
  return o;
}
metrics::HotnessOptions HotnessOptionsFrom(const config::MetricsConfig& c) {
  metrics::HotnessOptions o;
  o.top_k = c.top_k;
  o.window = std::chrono::seconds(c.window_seconds);
  o.partition_wcu_limit = c.partition_wcu_limit;
  o.low_cardinality_top_share = c.low_cardinality_top_share;
  o.low_cardinality_min_partitions = c.low_cardinality_min_partitions;
  return o;
}
http::ServerOptions ServerOptionsFrom(const config::HttpConfig& c, const HostPort& listen) {
  http::ServerOptions o;
  o.address = listen.host;
  o.port = listen.port;
  o.threads = c.threads;
  o.busy_poll = std::chrono::microseconds(c.busy_poll_us);
  o.max_body_bytes = c.max_body_bytes;
  o.max_header_bytes = c.max_header_bytes;
  o.compress_min_bytes = c.compress_min_bytes;
  o.max_connections = c.max_connections;
  o.request_timeout = std::chrono::milliseconds(c.request_timeout_ms);
  o.header_timeout = std::chrono::milliseconds(c.header_timeout_ms);
  return o;
}

api::RouterOptions RouterOptionsFrom(const config::HttpConfig& c, const config::IngestConfig& window,
                                     std::vector<std::string> tokens) {
  api::RouterOptions o;
  o.table_name = c.table_name;
  o.region = c.dynamodb_region;
  o.bearer_tokens = std::move(tokens);
  o.limits.max_limit = c.max_limit;
  o.limits.max_page_bytes = c.max_page_bytes;
  o.limits.max_aggregate_buckets = c.max_aggregate_buckets;
  o.limits.max_aggregate_scan = c.max_aggregate_scan;
  o.read_helpers = c.read_helpers;
  o.write.min_sort_key = MinSortKey(window);
  o.write.max_future = window.max_future_seconds;
  o.write.max_body_bytes = c.max_decoded_body_bytes;
  o.write.max_readings = c.max_write_readings;
  o.write.line_device = window.line_protocol_device;
  o.write.timestamp_fields = window.timestamp_fields;
  o.write.device_id_fields = window.device_id_fields;
  return o;
}

storage::StoreOptions StoreOptionsFrom(const config::Config& config) {
  const config::StorageConfig& c = config.storage;
  storage::StoreOptions o;
  o.path = c.data_dir;
  o.sync = c.sync;
  o.retention = c.retention_seconds;
  o.block_cache_bytes = c.block_cache_mb << 20;
  o.rollup_seconds = c.rollup_seconds;
  for (const config::IndexConfig& index : config.indexes) o.indexes.push_back(config::IndexSpecOf(index));
  return o;
}

}  // namespace readingsd::daemon
