#include "daemon/options.h"

#include <gtest/gtest.h>

namespace readingsd::daemon {
namespace {

// Each setting has two defaults: the user's (config/config.h, --help, the example TOML) and the
// library's (its options struct, which tests and fuzzers use). They must not drift apart.
TEST(OptionsTest, ConfigDefaultsAreTheLibraryDefaults) {
  EXPECT_EQ(StoreOptionsFrom(config::Config{}), storage::StoreOptions{});
  EXPECT_EQ(HotnessOptionsFrom(config::MetricsConfig{}), metrics::HotnessOptions{});
  HostPort listen;
  ASSERT_TRUE(ParseHostPort(config::HttpConfig{}.listen, &listen).ok());
  EXPECT_EQ(ServerOptionsFrom(config::HttpConfig{}, listen), http::ServerOptions{});
  EXPECT_EQ(RouterOptionsFrom(config::HttpConfig{}, config::IngestConfig{}, {}), api::RouterOptions{});
  EXPECT_EQ(ForwardOptionsFrom(config::Config{}), std::nullopt);  // no node map, no forwarding
  config::Config one;
  one.cluster = {.node = "a", .nodes = {{"a", "http://h:1", {}}}};
  const std::optional<cluster::ForwardOptions> forward = ForwardOptionsFrom(one);
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward->connect_timeout, cluster::ForwardOptions{}.connect_timeout);
  EXPECT_EQ(forward->timeout, cluster::ForwardOptions{}.timeout);
}

TEST(OptionsTest, TheNodeMapReachesTheForwarder) {
  config::Config c;
  c.nats.partitions = 4;
  c.cluster.node = "b";
  c.cluster.nodes = {{"a", "http://10.0.0.1:8080", {"0-3"}}, {"b", "http://[::1]:9", {"1", "3"}}};
  c.cluster.connect_timeout_ms = 7;
  c.cluster.forward_timeout_ms = 8;
  const std::optional<cluster::ForwardOptions> o = ForwardOptionsFrom(c);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->map.partitions, 4u);
  EXPECT_EQ(o->map.self, 1u);
  EXPECT_EQ(o->map.nodes[0], (cluster::Node{"a", "10.0.0.1", "8080", {0, 1, 2, 3}}));
  EXPECT_EQ(o->map.nodes[1], (cluster::Node{"b", "::1", "9", {1, 3}}));
  EXPECT_EQ(o->connect_timeout, std::chrono::milliseconds(7));
  EXPECT_EQ(o->timeout, std::chrono::milliseconds(8));
}

TEST(OptionsTest, EveryHttpSettingReachesItsStruct) {
  config::HttpConfig c;
  c.threads = 3;
  c.read_helpers = 0;
  c.busy_poll_us = 7;
  c.table_name = "t";
  c.dynamodb_region = "eu-west-1";
  c.max_body_bytes = 11;
  c.max_header_bytes = 12;
  c.compress_min_bytes = 20;
  c.max_limit = 13;
  c.max_page_bytes = 14;
  c.max_aggregate_buckets = 15;
  c.max_aggregate_scan = 16;
  c.max_connections = 15;
  c.request_timeout_ms = 16;
  c.header_timeout_ms = 17;
  c.max_decoded_body_bytes = 18;
  c.max_write_readings = 19;
  const http::ServerOptions server = ServerOptionsFrom(c, HostPort{"::1", 9});
  EXPECT_EQ(server.address, "::1");
  EXPECT_EQ(server.port, 9);
  EXPECT_EQ(server.threads, 3);
  EXPECT_EQ(server.busy_poll, std::chrono::microseconds(7));
  EXPECT_EQ(server.max_body_bytes, 11u);
  EXPECT_EQ(server.max_header_bytes, 12u);
  EXPECT_EQ(server.compress_min_bytes, 20u);
  EXPECT_EQ(server.max_connections, 15);
  EXPECT_EQ(server.request_timeout, std::chrono::milliseconds(16));
  EXPECT_EQ(server.header_timeout, std::chrono::milliseconds(17));
  config::IngestConfig window;
  window.min_timestamp = "";
  window.max_future_seconds = std::chrono::seconds(0);
  window.line_protocol_device = "{tag:host}";
  window.timestamp_fields = {"ts", "time"};
  window.device_id_fields = {"device"};
  const api::RouterOptions router = RouterOptionsFrom(c, window, {"tok"});
  EXPECT_EQ(router.table_name, "t");
  EXPECT_EQ(router.region, "eu-west-1");
  EXPECT_EQ(router.bearer_tokens, std::vector<std::string>{"tok"});
  EXPECT_EQ(router.limits.max_limit, 13u);
  EXPECT_EQ(router.limits.max_page_bytes, 14u);
  EXPECT_EQ(router.limits.max_aggregate_buckets, 15u);
  EXPECT_EQ(router.limits.max_aggregate_scan, 16u);
  EXPECT_EQ(router.read_helpers, 0);
  EXPECT_EQ(router.write.max_body_bytes, 18u);
  EXPECT_EQ(router.write.max_readings, 19u);
  EXPECT_EQ(router.write.min_sort_key, "");
  EXPECT_EQ(router.write.max_future, std::chrono::seconds(0));
  EXPECT_EQ(router.write.line_device, "{tag:host}");
  EXPECT_EQ(router.write.timestamp_fields, (std::vector<std::string>{"ts", "time"}));
  EXPECT_EQ(router.write.device_id_fields, std::vector<std::string>{"device"});
  // MQTT and import take them from the ingest options.
  const ingest::PayloadOptions payload = IngestOptionsFrom(config::MqttConfig{}, window).payload;
  EXPECT_EQ(payload.timestamp_fields, (std::vector<std::string>{"ts", "time"}));
  EXPECT_EQ(payload.device_id_fields, std::vector<std::string>{"device"});
  EXPECT_EQ(IngestOptionsFrom(config::MqttConfig{}, config::IngestConfig{}).payload.timestamp_fields,
            ingest::PayloadOptions{}.timestamp_fields);
}

}  // namespace
}  // namespace readingsd::daemon

namespace readingsd::daemon {
namespace {

TEST(OptionsTest, NatsSettingsReachTheSourceWithTheLibraryDefaults) {
  const ingest::NatsOptions library;
  ingest::NatsOptions o = NatsOptionsFrom(config::Config{});
  EXPECT_EQ(o.stream, library.stream);
  EXPECT_EQ(o.subject_prefix, library.subject_prefix);
  EXPECT_EQ(o.partitions, library.partitions);
  EXPECT_EQ(o.durable_prefix, library.durable_prefix);
  EXPECT_EQ(o.stream_replicas, library.stream_replicas);
  EXPECT_EQ(o.stream_max_age, library.stream_max_age);
  EXPECT_EQ(o.fetch_batch, library.fetch_batch);
  EXPECT_EQ(o.owned.size(), 16u);  // [] = every partition

  config::Config c;
  c.nats.servers = {"nats://a:4222", "nats://b:4222"};
  c.nats.stream = "FLEET";
  c.nats.subject_prefix = "acme.readings";
  c.nats.partitions = 64;
  c.nats.owned_partitions = {"32", "0-1"};
  c.nats.durable_prefix = "node2";
  c.nats.stream_replicas = 3;
  c.nats.stream_max_age_seconds = std::chrono::seconds(60);
  c.nats.fetch_batch = 7;
  c.mqtt.max_payload_bytes = 99;
  o = NatsOptionsFrom(c);
  EXPECT_EQ(o.servers, c.nats.servers);
  EXPECT_EQ(o.stream, "FLEET");
  EXPECT_EQ(o.subject_prefix, "acme.readings");
  EXPECT_EQ(o.partitions, 64u);
  EXPECT_EQ(o.owned, (std::vector<uint32_t>{0, 1, 32}));
  EXPECT_EQ(o.durable_prefix, "node2");
  EXPECT_EQ(o.stream_replicas, 3);
  EXPECT_EQ(o.stream_max_age, std::chrono::seconds(60));
  EXPECT_EQ(o.fetch_batch, 7u);
  EXPECT_EQ(o.payload.max_payload_bytes, 99u);
}

}  // namespace
}  // namespace readingsd::daemon
