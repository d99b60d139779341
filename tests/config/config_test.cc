#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace readingsd::config {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// One directory per run, removed at exit: fixed names under a shared /tmp would collide with
// another user's run.
const test::TempDir& Scratch() {
  static const test::TempDir dir("readingsd-config-test");
  return dir;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = Scratch().File(name);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) ADD_FAILURE() << "cannot write " << path;
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Parsed {
  Status status;
  Config config;
  CommandLine cmd;
};

// ParseCommandLine over the embedded defaults; `args` excludes the program name.
Parsed Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"readingsd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  Parsed p;
  p.status = ParseCommandLine(static_cast<int>(argv.size()), argv.data(), &p.config, &p.cmd);
  return p;
}

std::string TomlError(const std::string& text) {
  Config config;
  Status s = ParseToml(text, "readingsd.toml", &config);
  EXPECT_TRUE(s.IsInvalidArgument()) << text;
  return s.message();
}

Config ParseOk(const std::string& text) {
  Config config;
  Status s = ParseToml(text, "readingsd.toml", &config);
  EXPECT_TRUE(s.ok()) << s.message();
  return config;
}

// "section.key" -> "key = value" for every assignment line of a flat TOML text.
std::map<std::string, std::string> KeyLines(const std::string& toml) {
  std::map<std::string, std::string> lines;
  std::istringstream in(toml);
  std::string section, line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      // The lines of [[index]] and [[cluster.nodes]] tables are no keys of the schema.
      section = line.starts_with("[[") ? "" : line.substr(1, line.find(']') - 1);
    } else if (!section.empty()) {
      lines[section + "." + line.substr(0, line.find(' '))] = line;
    }
  }
  return lines;
}

TEST(DefaultsTest, AreTheDocumentedOnes) {
  Config c;
  EXPECT_EQ(c.storage.data_dir, "./data");
  EXPECT_FALSE(c.storage.sync);
  EXPECT_EQ(c.storage.retention, "");
  EXPECT_EQ(c.storage.retention_seconds.count(), 0);
  EXPECT_EQ(c.mqtt.host, "127.0.0.1");
  EXPECT_EQ(c.mqtt.port, 1883);
  EXPECT_THAT(c.mqtt.topics, ElementsAre("sensors/+/readings"));
  EXPECT_EQ(c.mqtt.protocol, "mqttv311");
  EXPECT_EQ(c.ingest.min_timestamp, "2000-01-01T00:00:00Z");
  EXPECT_EQ(c.ingest.max_future, "1d");
  EXPECT_EQ(c.ingest.max_future_seconds.count(), 86400);
  EXPECT_EQ(c.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.http.threads, 2);
  EXPECT_EQ(c.metrics.top_k, 20);
  EXPECT_EQ(c.log.level, "info");
}

TEST(DefaultsTest, NoArgumentsRunWithTheDefaults) {
  Parsed p = Parse({});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.command, Command::kRun);
  EXPECT_EQ(p.cmd.config_path, "");
  EXPECT_TRUE(p.cmd.args.empty());
  EXPECT_EQ(p.config, Config{});
}

TEST(DefaultsTest, EmptyFileKeepsThem) { EXPECT_EQ(ParseOk(""), Config{}); }

TEST(ParseTomlTest, AbsentKeysKeepTheirValue) {
  Config config;
  config.http.threads = 7;
  Status s = ParseToml("[mqtt]\nport = 1884\n", "t.toml", &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config.mqtt.port, 1884);
  EXPECT_EQ(config.http.threads, 7);
}

TEST(ParseTomlTest, AcceptsDottedKeysInlineTablesAndIntegersForNumbers) {
  Config c = ParseOk(
      "mqtt.port = 1884\n"
      "http = { threads = 3 }\n"
      "[metrics]\npartition_wcu_limit = 500\n");
  EXPECT_EQ(c.mqtt.port, 1884);
  EXPECT_EQ(c.http.threads, 3);
  EXPECT_EQ(c.metrics.partition_wcu_limit, 500.0);
}

TEST(ParseTomlTest, FailureLeavesTheConfigUnchanged) {
  Config config;
  config.http.threads = 7;
  EXPECT_FALSE(ParseToml("[http]\nthreads = 3\n[mqtt]\nport = 0\n", "t.toml", &config).ok());
  EXPECT_EQ(config.http.threads, 7);
}

// A Config that differs from the defaults in every key, with strings that need escaping.
Config EveryKeyChanged() {
  Config c;
  c.storage.data_dir = "/var/lib/readingsd \"main\"";
  c.storage.sync = true;
  c.storage.retention = "30d";
  c.storage.retention_seconds = std::chrono::seconds(2592000);
  c.storage.block_cache_mb = 512;
  c.storage.rollup_seconds = 60;
  c.mqtt.host = "broker.example.com";
  c.mqtt.port = 8883;
  c.mqtt.client_id = "readingsd-2";
  c.mqtt.username = "we\\ird\tname\n\x01\xc3\xa9";
  c.mqtt.password_file = "/etc/readingsd/mqtt.pass";
  c.mqtt.topics = {"a/+/b", "c/#", "plain"};
  c.mqtt.device_id_topic = "site/+/{deviceId}/data";
  c.mqtt.protocol = "mqttv5";
  c.mqtt.keepalive_seconds = 0;
  c.mqtt.ca_file = "/etc/ssl/ca.pem";
  c.mqtt.cert_file = "/etc/ssl/client.pem";
  c.mqtt.key_file = "/etc/ssl/client.key";
  c.mqtt.tls_insecure = true;
  c.mqtt.dead_letter_topic = "readingsd/dead";
  c.mqtt.max_payload_bytes = 1024;
  c.mqtt.reconnect_min_ms = 100;
  c.mqtt.reconnect_max_ms = 100;
  c.mqtt.max_batch = 1;
  c.mqtt.broker_drops_unready_seconds = 0;
  c.nats.servers = {"nats://10.0.0.1:4222", "nats://10.0.0.2:4222"};
  c.nats.stream = "FLEET";
  c.nats.subject_prefix = "acme.readings";
  c.nats.partitions = 64;
  c.nats.owned_partitions = {"0-15", "32"};
  c.nats.durable_prefix = "node2";
  c.nats.stream_replicas = 3;
  c.nats.stream_max_age = "30d";
  c.nats.stream_max_age_seconds = std::chrono::hours(24 * 30);
  c.nats.fetch_batch = 10;
  c.nats.ack_wait_seconds = 5;
  c.nats.dead_letter_subject = "acme.rejected";
  c.nats.publish_timeout_ms = 250;
  c.cluster.node = "node2";
  c.cluster.nodes = {{"node1", "http://10.0.0.1:8080", {"0-63"}}, {"node2", "http://10.0.0.2:8080", {"0-15", "32"}}};
  c.cluster.connect_timeout_ms = 1;
  c.cluster.forward_timeout_ms = 2;
  c.ingest.min_timestamp = "1970-01-01T01:00:00+01:00";
  c.ingest.max_future = "";
  c.ingest.max_future_seconds = std::chrono::seconds(0);
  c.ingest.line_protocol_device = "{measurement}.{tag:site}";
  c.ingest.timestamp_fields = {"ts", "time \"utc\""};
  c.ingest.device_id_fields = {"device"};
  c.http.listen = "[::1]:0";
  c.http.threads = 16;
  c.http.read_helpers = 0;
  c.http.busy_poll_us = 0;
  c.http.table_name = "my-table.v2";
  c.http.dynamodb_region = "eu-central-1";
  c.http.auth_token_file = "/etc/readingsd/token";
  c.http.max_body_bytes = 1;
  c.http.max_header_bytes = 2;
  c.http.compress_min_bytes = 0;
  c.http.max_decoded_body_bytes = 8;
  c.http.max_write_readings = 9;
  c.http.max_limit = 3;
  c.http.max_page_bytes = 4;
  c.http.max_aggregate_buckets = 5;
  c.http.max_aggregate_scan = 6;
  c.http.max_connections = 5;
  c.http.request_timeout_ms = 6;
  c.http.header_timeout_ms = 7;
  c.metrics.top_k = 1;
  c.metrics.window_seconds = 3600;
  c.metrics.partition_wcu_limit = 0.1;
  c.metrics.low_cardinality_top_share = 1;
  c.metrics.low_cardinality_min_partitions = 0;
  c.log.level = "debug";
  return c;
}

TEST(RoundTripTest, EveryKeySurvivesToTomlAndBack) {
  Config changed = EveryKeyChanged();
  std::string toml = ToToml(changed);
  // Guards the test itself: a key added to the schema must be changed above too.
  std::map<std::string, std::string> lines = KeyLines(toml), defaults = KeyLines(ToToml(Config{}));
  ASSERT_EQ(lines.size(), defaults.size());
  for (const auto& [key, line] : lines) EXPECT_NE(line, defaults[key]) << key << " is not changed";

  Config back;
  Status s = ParseToml(toml, "print-config", &back);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << toml;
  EXPECT_EQ(back, changed) << toml;
}

TEST(RoundTripTest, DefaultsSurviveToo) { EXPECT_EQ(ParseOk(ToToml(Config{})), Config{}); }

struct ErrorCase {
  std::string toml;
  std::string want;  // a substring of the error
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) { return os << c.toml; }

class TomlErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(TomlErrorTest, NamesFileLineAndKey) {
  EXPECT_THAT(TomlError(GetParam().toml), HasSubstr(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Values, TomlErrorTest,
    ::testing::Values(
        ErrorCase{"[mqtt]\nhost = \"b\"\nport = 70000\n",
                  "readingsd.toml:3: mqtt.port: must be 1..65535, got 70000"},
        ErrorCase{"[http]\nthreads = 0\n", "readingsd.toml:2: http.threads: must be >= 1, got 0"},
        ErrorCase{"[http]\nread_helpers = 65\n", "readingsd.toml:2: http.read_helpers: must be 0..64, got 65"},
        ErrorCase{"[http]\nbusy_poll_us = -1\n", "readingsd.toml:2: http.busy_poll_us: must be 0..10000, got -1"},
        ErrorCase{"[http]\nthreads = 5000000000\n",
                  "readingsd.toml:2: http.threads: must be <= 2147483647, got 5000000000"},
        ErrorCase{"[mqtt]\nmax_batch = -1\n", "readingsd.toml:2: mqtt.max_batch: must be >= 1"},
        ErrorCase{"[storage]\nblock_cache_mb = -1\n",
                  "readingsd.toml:2: storage.block_cache_mb: must be 0..1048576, got -1"},
        ErrorCase{"[storage]\nrollup_seconds = 7\n",
                  "readingsd.toml:2: storage.rollup_seconds: must be 0 (off) or divide a day (86400), e.g. 60, got 7"},
        ErrorCase{"[mqtt]\nprotocol = \"mqttv4\"\n",
                  "readingsd.toml:2: mqtt.protocol: must be one of mqttv311, mqttv5, got "
                  "\"mqttv4\""},
        ErrorCase{"[mqtt]\nkeepalive_seconds = 3\n",
                  "readingsd.toml:2: mqtt.keepalive_seconds: must be 0 (off) or 5..65535"},
        ErrorCase{"[http]\nlisten = \"localhost\"\n",
                  "readingsd.toml:2: http.listen: must be host:port"},
        ErrorCase{"[storage]\nretention = \"10x\"\n",
                  "readingsd.toml:2: storage.retention: must be a duration"},
        ErrorCase{"[ingest]\nmin_timestamp = \"1970-01-01\"\n",
                  "readingsd.toml:2: ingest.min_timestamp: must be an ISO-8601 time like "
                  "\"2000-01-01T00:00:00Z\" (\"\" = no lower bound): invalid timestamp \"1970-01-01\""},
        ErrorCase{"[ingest]\nmin_timestamp = \"2000-01-01T00:00:00\"\n",
                  "readingsd.toml:2: ingest.min_timestamp: must be an ISO-8601 time"},
        ErrorCase{"[ingest]\n\nmax_future = \"0\"\n",
                  "readingsd.toml:3: ingest.max_future: must be a duration above zero like \"1d\", "
                  "\"12h\", \"90m\" or \"45s\" (\"\" = no upper bound), got \"0\""},
        ErrorCase{"[ingest]\nmax_future = \"0s\"\n", "readingsd.toml:2: ingest.max_future: must be a duration"},
        ErrorCase{"[ingest]\nmax_future = \"tomorrow\"\n",
                  "readingsd.toml:2: ingest.max_future: must be a duration"},
        ErrorCase{"[ingest]\nmax_future = 86400\n",
                  "readingsd.toml:2: ingest.max_future: must be a string, got an integer"},
        ErrorCase{"[metrics]\ntop_k = 0\n", "readingsd.toml:2: metrics.top_k: must be >= 1"},
        ErrorCase{
            "[metrics]\nlow_cardinality_top_share = 0\n",
            "readingsd.toml:2: metrics.low_cardinality_top_share: must be in (0, 1], got 0.0"},
        ErrorCase{"[metrics]\nlow_cardinality_top_share = 1.5\n",
                  "metrics.low_cardinality_top_share: must be in (0, 1], got 1.5"},
        ErrorCase{"[metrics]\npartition_wcu_limit = 0\n",
                  "readingsd.toml:2: metrics.partition_wcu_limit: must be > 0"},
        ErrorCase{"[metrics]\npartition_wcu_limit = inf\n",
                  "metrics.partition_wcu_limit: must be a finite number, got inf"},
        ErrorCase{"[log]\nlevel = \"verbose\"\n",
                  "readingsd.toml:2: log.level: must be one of error, warn, info, debug, got "
                  "\"verbose\""},
        ErrorCase{"[mqtt]\nport = \"1883\"\n",
                  "readingsd.toml:2: mqtt.port: must be an integer, got a string"},
        ErrorCase{"[mqtt]\nport = 1883.0\n", "mqtt.port: must be an integer, got a float"},
        ErrorCase{"[storage]\nsync = 1\n",
                  "readingsd.toml:2: storage.sync: must be true or false, got an integer"},
        ErrorCase{"[mqtt]\ntopics = \"a/b\"\n",
                  "mqtt.topics: must be an array of strings, got a string"},
        ErrorCase{"[mqtt]\ntopics = [\"a\", 1]\n",
                  "mqtt.topics: must be an array of strings, got an integer in it"},
        ErrorCase{"[mqtt]\ntopics = []\n", "mqtt.topics: must list at least one topic filter"},
        ErrorCase{"[ingest]\ntimestamp_fields = []\n",
                  "readingsd.toml:2: ingest.timestamp_fields: must list at least one field name"},
        ErrorCase{"[ingest]\ndevice_id_fields = [\"id\", \"\"]\n",
                  "readingsd.toml:2: ingest.device_id_fields: a field name must be 1 to 255 bytes, got \"\""},
        ErrorCase{"[ingest]\ntimestamp_fields = [\"ts\", \"ts\"]\n",
                  "readingsd.toml:2: ingest.timestamp_fields: \"ts\" is listed twice"},
        ErrorCase{"[ingest]\ntimestamp_fields = [\"ts\", \"id\"]\ndevice_id_fields = [\"id\"]\n",
                  "readingsd.toml:3: ingest.timestamp_fields and ingest.device_id_fields both list \"id\""},
        ErrorCase{"[mqtt]\ntopics = [\"a/#/b\"]\n",
                  "mqtt.topics: \"a/#/b\": '#' is allowed only as the whole last level"},
        ErrorCase{"[mqtt]\ntopics = [\"a/b+\"]\n", "'+' is allowed only as a whole level"},
        ErrorCase{"[mqtt]\ndevice_id_topic = \"sensors/+/readings\"\n",
                  "readingsd.toml:2: mqtt.device_id_topic: must hold {deviceId} once"},
        ErrorCase{"[mqtt]\ndead_letter_topic = \"dead/#\"\n",
                  "mqtt.dead_letter_topic: must be a topic name without wildcards"},
        ErrorCase{"[http]\ntable_name = \"x\"\n",
                  "readingsd.toml:2: http.table_name: must be 3..255"},
        ErrorCase{"[http]\ndynamodb_region = \"EU Central\"\n",
                  "readingsd.toml:2: http.dynamodb_region: must be a region name"},
        ErrorCase{"[storage]\ndata_dir = \"\"\n", "storage.data_dir: must not be empty"},
        ErrorCase{"[mqtt]\nhost = \"x\"\nprot = 1\n",
                  "readingsd.toml:3: mqtt.prot: unknown key (did you mean mqtt.port?)"},
        ErrorCase{"\n[mqt]\nport = 1\n",
                  "readingsd.toml:2: mqt: unknown section (did you mean mqtt?)"},
        ErrorCase{"[nonsense]\n", "readingsd.toml:1: nonsense: unknown section"},
        ErrorCase{"port = 1\n", "readingsd.toml:1: port: unknown key"},
        ErrorCase{"mqtt = 1\n", "readingsd.toml:1: mqtt: must be a table, got an integer"},
        ErrorCase{"[mqtt.tls]\nca = 1\n", "readingsd.toml:1: mqtt.tls: unknown key"},
        ErrorCase{"[mqtt]\nport = 1883\nreconnect_min_ms = 60000\n",
                  "readingsd.toml:3: mqtt.reconnect_min_ms (60000) must not exceed "
                  "mqtt.reconnect_max_ms (30000)"},
        ErrorCase{"[mqtt]\nca_file = \"ca\"\ncert_file = \"c\"\n",
                  "readingsd.toml:3: mqtt.cert_file and mqtt.key_file must be set together"},
        ErrorCase{"[mqtt]\ntls_insecure = true\n",
                  "readingsd.toml:2: mqtt.cert_file and mqtt.tls_insecure need mqtt.ca_file"},
        ErrorCase{"[mqtt]\npassword_file = \"p\"\n",
                  "readingsd.toml:2: mqtt.password_file needs mqtt.username"}));

TEST(ParseTomlTest, SyntaxErrorGivesLineAndColumn) {
  EXPECT_THAT(TomlError("[mqtt]\nport = = 1\n"), ContainsRegex("^readingsd\\.toml:2:[0-9]+: "));
  EXPECT_THAT(TomlError("[mqtt]\nhost = \"unterminated\n"), StartsWith("readingsd.toml:2:"));
}

TEST(ParseTomlTest, ReportsEveryProblemInFileOrder) {
  EXPECT_EQ(TomlError("[mqtt]\nprotocol = \"x\"\nport = 0\n[http]\nthreads = 0\n"),
            "readingsd.toml:2: mqtt.protocol: must be one of mqttv311, mqttv5, got \"x\"\n"
            "readingsd.toml:3: mqtt.port: must be 1..65535, got 0\n"
            "readingsd.toml:5: http.threads: must be >= 1, got 0");
}

TEST(IndexTest, DeclarationsAreReadInFileOrderAndSurviveToTomlAndBack) {
  Config c = ParseOk(
      "[[index]]\nname = \"hot_by_hour\"\npartition = \"readingHour\"\nsort = \"temperature\"\nshards = 8\n"
      "[[index]]\nname = \"by_status\"\npartition = \"status\"\nsort = \"readingTs\"\n"
      "[[index]]\nname = \"by_day_name\"\npartition = \"readingDay\"\nsort = \"site\"\nsort_type = \"string\"\n");
  ASSERT_EQ(c.indexes.size(), 3u);
  EXPECT_EQ(c.indexes[0], (IndexConfig{"hot_by_hour", "readingHour", "temperature", "number", 8}));
  EXPECT_EQ(c.indexes[1], (IndexConfig{"by_status", "status", "readingTs", "number", 1}));
  EXPECT_EQ(ParseOk(ToToml(c)), c);

  storage::IndexSpec hot = IndexSpecOf(c.indexes[0]);
  EXPECT_EQ(hot.partition, storage::IndexPartition::kReadingHour);
  EXPECT_EQ(hot.sort, storage::IndexSort::kNumber);
  EXPECT_EQ(hot.sort_attribute, "temperature");
  EXPECT_EQ(hot.shards, 8);
  storage::IndexSpec status = IndexSpecOf(c.indexes[1]);
  EXPECT_EQ(status.partition, storage::IndexPartition::kAttribute);
  EXPECT_EQ(status.partition_attribute, "status");
  EXPECT_EQ(status.sort, storage::IndexSort::kReadingTs);
  EXPECT_EQ(IndexSpecOf(c.indexes[2]).sort, storage::IndexSort::kString);
}

TEST(IndexTest, BadDeclarationsNameTheFileAndLine) {
  const std::string ok = "[[index]]\nname = \"hot_by_hour\"\npartition = \"readingHour\"\nsort = \"temperature\"\n";
  EXPECT_EQ(TomlError(ok + "[[index]]\nname = \"hot_by_hour\"\npartition = \"readingDay\"\nsort = \"t\"\n"),
            "readingsd.toml:5: index: \"hot_by_hour\": duplicate index name \"hot_by_hour\"");
  EXPECT_EQ(TomlError("\n" + ok + "shards = 0\n"),
            "readingsd.toml:6: index: shards must be an integer 1..256, got 0");
  EXPECT_EQ(TomlError(ok + "sort_type = \"decimal\"\n"),
            "readingsd.toml:1: index: \"hot_by_hour\": unknown attribute kind: sort_type must be \"number\" or "
            "\"string\", got \"decimal\"");
  EXPECT_EQ(TomlError(ok + "shard = 2\n"),
            "readingsd.toml:5: index: unknown key \"shard\" (an index has name, partition, sort, sort_type, shards)");
  EXPECT_THAT(TomlError("[[index]]\nname = \"x\"\npartition = \"readingHour\"\nsort = \"t\"\n"),
              StartsWith("readingsd.toml:1: index: \"x\": index name must be 3..255 characters"));
  EXPECT_THAT(TomlError("[[index]]\nname = \"abc\"\npartition = \"readingTs\"\nsort = \"t\"\n"),
              StartsWith("readingsd.toml:1: index: \"abc\": index partition must be readingHour, readingDay"));
  EXPECT_THAT(TomlError("[[index]]\nname = \"abc\"\npartition = \"readingHour\"\n"),
              HasSubstr("needs name, partition and sort"));
  EXPECT_THAT(TomlError("index = 3\n"), StartsWith("readingsd.toml:1: index: must be [[index]] tables"));
}

// A node map of three nodes over 6 partitions, each partition owned twice; `nats` goes into [nats].
std::string NodeMap(const std::string& nats = "", const std::string& node = "n2") {
  return "[nats]\npartitions = 6\n" + nats + "[cluster]\nnode = \"" + node + "\"\n" +
    "[[cluster.nodes]]\nname = \"n1\"\nurl = \"http://10.0.0.1:8080\"\npartitions = [\"0-3\"]\n"
    "[[cluster.nodes]]\nname = \"n2\"\nurl = \"http://10.0.0.2:8080\"\npartitions = [\"2-5\"]\n"
    "[[cluster.nodes]]\nname = \"n3\"\nurl = \"http://[::1]:8081\"\npartitions = [\"0-1\", \"4-5\"]\n";
}

TEST(ClusterTest, TheNodeMapIsReadInFileOrderGivesThisNodesPartitionsAndSurvivesToTomlAndBack) {
  Config c = ParseOk(NodeMap());
  ASSERT_EQ(c.cluster.nodes.size(), 3u);
  EXPECT_EQ(c.cluster.node, "n2");
  EXPECT_EQ(c.cluster.nodes[0], (ClusterNodeConfig{"n1", "http://10.0.0.1:8080", {"0-3"}}));
  EXPECT_EQ(c.cluster.nodes[2], (ClusterNodeConfig{"n3", "http://[::1]:8081", {"0-1", "4-5"}}));
  // One source of this node's partitions: nats.owned_partitions is its entry's.
  EXPECT_EQ(c.nats.owned_partitions, std::vector<std::string>{"2-5"});
  EXPECT_EQ(ParseOk(ToToml(c)), c);
  // Set as well, it may say the same in other words.
  EXPECT_EQ(ParseOk(NodeMap("owned_partitions = [\"2\", \"3-5\"]\n")).nats.owned_partitions,
            (std::vector<std::string>{"2", "3-5"}));
}

TEST(ClusterTest, AMapThatCannotAnswerEveryPartitionIsRefusedNamingTheKey) {
  const std::string map = "[nats]\npartitions = 6\n[cluster]\nnode = \"n1\"\n[[cluster.nodes]]\nname = \"n1\"\n"
                          "url = \"http://10.0.0.1:8080\"\npartitions = [\"0-3\"]\n";
  EXPECT_EQ(TomlError(map), "readingsd.toml:5: cluster.nodes: partition 4 (of nats.partitions = 6) has no owner: "
                            "every partition needs one, two for a node to be able to fail");
  EXPECT_EQ(TomlError(NodeMap("owned_partitions = [\"0-5\"]\n")),
            "readingsd.toml:3: nats.owned_partitions ([\"0-5\"]) disagrees with the partitions of node \"n2\" in "
            "cluster.nodes ([\"2-5\"]); the node map is enough: remove nats.owned_partitions");
  EXPECT_THAT(TomlError(NodeMap("", "n4")),
              HasSubstr("cluster.node (\"n4\") must name one of cluster.nodes: n1, n2, n3"));
  EXPECT_EQ(TomlError("[cluster]\nnode = \"n1\"\n"),
            "readingsd.toml:2: cluster.node needs the node map, [[cluster.nodes]] tables");
  EXPECT_THAT(TomlError(map + "[[cluster.nodes]]\nname = \"n2\"\nurl = \"http://10.0.0.2:8080\"\npartitions = [\"4-9\"]\n"),
              HasSubstr("cluster.nodes: node \"n2\": partition entry \"4-9\" must be N or N-M with N <= M < 6"));
  EXPECT_EQ(TomlError(map + "[[cluster.nodes]]\nname = \"n2\"\nurl = \"https://10.0.0.2\"\npartitions = [\"4-5\"]\n"),
            "readingsd.toml:9: cluster.nodes: node \"n2\": url must be http://host:port (e.g. "
            "\"http://10.0.0.2:8080\"), got \"https://10.0.0.2\"");
  EXPECT_EQ(TomlError(map + "[[cluster.nodes]]\nname = \"n1\"\nurl = \"http://10.0.0.2:8080\"\npartitions = [\"4-5\"]\n"),
            "readingsd.toml:9: cluster.nodes: node \"n1\": duplicate node name \"n1\"");
  EXPECT_EQ(TomlError(map + "[[cluster.nodes]]\nname = \"n2\"\nport = 1\n"),
            "readingsd.toml:11: cluster.nodes: unknown key \"port\" (a node has name, url, partitions)");
  EXPECT_THAT(TomlError(map + "[[cluster.nodes]]\nname = \"n2\"\n"), HasSubstr("a node needs name, url and partitions"));
}

TEST(ParseTomlTest, ListenAddresses) {
  for (const char* good : {"127.0.0.1:8080", "0.0.0.0:0", "localhost:65535", "[::1]:8080"}) {
    EXPECT_EQ(ParseOk(std::string("[http]\nlisten = \"") + good + "\"\n").http.listen, good);
  }
  for (const char* bad : {"localhost", ":8080", "h:", "h:65536", "h:80x", "::1:8080", "[::1]8080",
                          "[::1]:", "h:-1"}) {
    EXPECT_THAT(TomlError(std::string("[http]\nlisten = \"") + bad + "\"\n"),
                HasSubstr("http.listen: must be host:port"))
        << bad;
  }
}

TEST(RetentionTest, ParsesDurations) {
  const std::pair<const char*, int64_t> cases[] = {
      {"30d", 2592000}, {"12h", 43200}, {"90m", 5400}, {"45s", 45}, {"0", 0}, {"", 0}, {"0d", 0}};
  for (const auto& [text, seconds] : cases) {
    Config c = ParseOk(std::string("[storage]\nretention = \"") + text + "\"\n");
    EXPECT_EQ(c.storage.retention, text);
    EXPECT_EQ(c.storage.retention_seconds.count(), seconds) << text;
  }
}

TEST(RetentionTest, RejectsOtherText) {
  for (const char* bad : {"10x", "-1d", "1.5h", "d", "30 d", " 30d", "30D", "99999999999999999d"}) {
    EXPECT_THAT(TomlError(std::string("[storage]\nretention = \"") + bad + "\"\n"),
                HasSubstr("readingsd.toml:2: storage.retention: must be a duration"))
        << bad;
  }
}

TEST(RetentionTest, FlagSetsSeconds) {
  Parsed p = Parse({"--storage.retention=12h"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.config.storage.retention_seconds.count(), 43200);
}

TEST(IngestWindowTest, BoundsAreSettingsAndEmptyTurnsThemOff) {
  Config c = ParseOk("[ingest]\nmin_timestamp = \"2020-01-01T00:00:00+02:00\"\nmax_future = \"90m\"\n");
  EXPECT_EQ(c.ingest.min_timestamp, "2020-01-01T00:00:00+02:00");
  EXPECT_EQ(c.ingest.max_future_seconds.count(), 5400);
  Parsed off = Parse({"--ingest.min_timestamp=", "--ingest.max_future="});
  ASSERT_TRUE(off.status.ok()) << off.status.message();
  EXPECT_EQ(off.config.ingest.min_timestamp, "");
  EXPECT_EQ(off.config.ingest.max_future_seconds.count(), 0);
  Parsed bad = Parse({"--ingest.min_timestamp=1970"});
  EXPECT_FALSE(bad.status.ok());
  EXPECT_THAT(bad.status.message(), StartsWith("--ingest.min_timestamp: must be an ISO-8601 time"));
}

TEST(CommandLineTest, FlagsOverrideTheFile) {
  std::string path = WriteTemp("override.toml",
                               "[http]\nlisten = \"127.0.0.1:7000\"\nthreads = 4\n"
                               "[mqtt]\nclient_id = \"from-file\"\n");
  // A flag before --config still wins: the file is always read first.
  Parsed p = Parse({"--http.listen=127.0.0.1:9000", "--config", path, "--storage.sync=true",
                    "--mqtt.topics=a/+/b,c/#", "--http.threads", "8"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.config_path, path);
  EXPECT_EQ(p.config.http.listen, "127.0.0.1:9000");
  EXPECT_EQ(p.config.http.threads, 8);
  EXPECT_TRUE(p.config.storage.sync);
  EXPECT_THAT(p.config.mqtt.topics, ElementsAre("a/+/b", "c/#"));
  EXPECT_EQ(p.config.mqtt.client_id, "from-file");
}

TEST(CommandLineTest, ConfigFileSpellings) {
  std::string path = WriteTemp("spellings.toml", "[http]\nthreads = 4\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-c", path}, {"--config", path}, {"--config=" + path}}) {
    Parsed p = Parse(args);
    ASSERT_TRUE(p.status.ok()) << p.status.message();
    EXPECT_EQ(p.config.http.threads, 4);
  }
}

TEST(CommandLineTest, BoolFlagsAndLastFlagWins) {
  EXPECT_TRUE(Parse({"--storage.sync"}).config.storage.sync);
  EXPECT_FALSE(Parse({"--storage.sync", "false"}).config.storage.sync);
  EXPECT_FALSE(Parse({"--storage.sync", "--storage.sync=false"}).config.storage.sync);
  Parsed p = Parse({"--storage.sync", "check-config"});
  EXPECT_TRUE(p.config.storage.sync);
  EXPECT_EQ(p.cmd.command, Command::kCheckConfig);
  EXPECT_EQ(Parse({"--http.threads=3", "--http.threads=5"}).config.http.threads, 5);
  EXPECT_EQ(Parse({"--mqtt.username="}).config.mqtt.username, "");
}

TEST(CommandLineTest, FlagErrorsNameTheFlag) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--mqtt.port=70000"}, "--mqtt.port: must be 1..65535, got 70000"},
      {{"--mqtt.port", "abc"}, "--mqtt.port: must be an integer, got \"abc\""},
      {{"--mqtt.port=99999999999999999999"}, "--mqtt.port: is out of range"},
      {{"--mqtt.prot=1"}, "--mqtt.prot: unknown flag (did you mean --mqtt.port?)"},
      {{"--http.threads"}, "--http.threads: needs a value"},
      {{"--storage.sync=yes"}, "--storage.sync: must be true or false, got \"yes\""},
      {{"--storage.retention=10x"}, "--storage.retention: must be a duration"},
      {{"--http.listen=localhost"}, "--http.listen: must be host:port"},
      {{"--metrics.low_cardinality_top_share=2"},
       "--metrics.low_cardinality_top_share: must be in (0, 1]"},
      {{"--metrics.partition_wcu_limit=1k"}, "--metrics.partition_wcu_limit: must be a number"},
      {{"--mqtt.topics="}, "--mqtt.topics: must list at least one topic filter"},
      {{"--mqtt.topics=a,"}, "--mqtt.topics: a topic filter must not be empty"},
      {{"--log.level=trace"}, "--log.level: must be one of error, warn, info, debug"},
      {{"--nats.partitions=8", "--nats.owned_partitions=0-3,8"},
       "--nats.owned_partitions: nats.owned_partitions: partition entry \"8\" must be N or N-M with N <= M < 8"},
      {{"--nats.durable_prefix=node.1"}, "--nats.durable_prefix: must be a NATS name without '.'"},
      {{"--nats.subject_prefix=readings.>"}, "--nats.subject_prefix: must be a NATS subject without wildcards"},
      {{"query", "--mqtt.port=0"}, "--mqtt.port: must be 1..65535, got 0"},
      {{"--mqtt.reconnect_max_ms=100"},
       "--mqtt.reconnect_max_ms: mqtt.reconnect_min_ms (500) must not exceed "
       "mqtt.reconnect_max_ms (100)"},
  };
  for (const auto& [args, want] : cases) {
    Parsed p = Parse(args);
    EXPECT_FALSE(p.status.ok()) << args[0];
    EXPECT_THAT(p.status.message(), HasSubstr(want));
  }
}

TEST(CommandLineTest, RuleSpanningKeysBlamesTheFlagOverTheFile) {
  std::string path = WriteTemp("rule.toml", "[mqtt]\nreconnect_min_ms = 1000\n");
  Parsed p = Parse({"-c", path, "--mqtt.reconnect_max_ms=200"});
  EXPECT_FALSE(p.status.ok());
  EXPECT_THAT(p.status.message(), StartsWith("--mqtt.reconnect_max_ms: mqtt.reconnect_min_ms (1000)"));
  p = Parse({"-c", path, "--mqtt.reconnect_min_ms=100"});
  EXPECT_TRUE(p.status.ok()) << p.status.message();
}

TEST(CommandLineTest, FileErrorsNameThePathAndLine) {
  std::string path = WriteTemp("bad.toml", "[mqtt]\n\nport = 0\n");
  Parsed p = Parse({"--config", path});
  EXPECT_FALSE(p.status.ok());
  EXPECT_TRUE(p.status.IsInvalidArgument());
  EXPECT_EQ(p.status.message(), path + ":3: mqtt.port: must be 1..65535, got 0");

  std::string missing = Scratch().File("missing.toml");
  p = Parse({"--config", missing});
  EXPECT_FALSE(p.status.ok());
  EXPECT_EQ(p.status.code(), Status::Code::kIOError);
  EXPECT_EQ(p.status.message(), "cannot read " + missing + ": No such file or directory");
}

TEST(CommandLineTest, PrintConfigOutputParsesBack) {
  std::string path = WriteTemp("print.toml", "[storage]\nretention = \"90m\"\n");
  Parsed p = Parse({"--config", path, "--print-config", "--mqtt.topics=x/#,y"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.command, Command::kPrintConfig);
  Config back;
  Status s = ParseToml(ToToml(p.config), "print-config", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back, p.config);
  EXPECT_EQ(back.storage.retention_seconds.count(), 5400);
  EXPECT_THAT(back.mqtt.topics, ElementsAre("x/#", "y"));
}

TEST(CommandLineTest, Commands) {
  const std::pair<const char*, Command> cases[] = {
      {"run", Command::kRun}, {"serve", Command::kServe}, {"query", Command::kQuery},
      {"check-config", Command::kCheckConfig}};
  for (const auto& [word, command] : cases) {
    Parsed p = Parse({word});
    ASSERT_TRUE(p.status.ok()) << p.status.message();
    EXPECT_EQ(p.cmd.command, command) << word;
  }
  Parsed p = Parse({"backup", "/tmp/x"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.command, Command::kBackup);
  EXPECT_THAT(p.cmd.args, ElementsAre("/tmp/x"));
}

TEST(CommandLineTest, QueryOptionsPassThroughUntouched) {
  Parsed p = Parse({"--http.listen=127.0.0.1:9001", "query", "--device", "a1", "--from",
                    "2024-01-01T00:00:00Z", "--limit", "5", "--storage.data_dir", "/srv/d", "-c",
                    "x", "--help", "--", "--http.threads=9"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.command, Command::kQuery);
  EXPECT_THAT(p.cmd.args, ElementsAre("--device", "a1", "--from", "2024-01-01T00:00:00Z", "--limit",
                                      "5", "-c", "x", "--help", "--http.threads=9"));
  EXPECT_EQ(p.cmd.config_path, "");
  EXPECT_EQ(p.config.storage.data_dir, "/srv/d");
  EXPECT_EQ(p.config.http.listen, "127.0.0.1:9001");
  EXPECT_EQ(p.config.http.threads, 2);
}

TEST(CommandLineTest, UsageErrors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"backup"}, "backup: needs exactly one argument"},
      {{"backup", "a", "b"}, "backup: needs exactly one argument"},
      {{"run", "extra"}, "run: unexpected argument \"extra\" (options go before the command)"},
      {{"check-config", "-c", "x"}, "check-config: unexpected argument \"-c\""},
      {{"frobnicate"}, "unknown command \"frobnicate\""},
      {{"--bogus"}, "unknown option --bogus (see --help)"},
      {{"--confg", "x"}, "unknown option --confg (did you mean --config?)"},
      {{"--config"}, "--config: needs a FILE"},
      {{"-c", "a", "-c", "b"}, "--config: given twice"},
      {{"--print-config", "run"}, "--print-config: takes no command, got run"},
  };
  for (const auto& [args, want] : cases) {
    Parsed p = Parse(args);
    EXPECT_FALSE(p.status.ok()) << args[0];
    EXPECT_THAT(p.status.message(), HasSubstr(want));
  }
}

TEST(CommandLineTest, HelpAndVersionReturnWithoutReadingTheFile) {
  for (const char* help : {"-h", "--help"}) {
    Parsed p = Parse({"--config", "/nonexistent/readingsd.toml", help});
    ASSERT_TRUE(p.status.ok()) << p.status.message();
    EXPECT_EQ(p.cmd.command, Command::kHelp);
  }
  Parsed p = Parse({"--version"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.cmd.command, Command::kVersion);
}

TEST(CommandLineTest, FailureLeavesOutputsUnchanged) {
  Config config;
  config.http.threads = 7;
  CommandLine cmd;
  cmd.config_path = "keep";
  const char* argv[] = {"readingsd", "--http.threads=3", "--mqtt.port=0"};
  EXPECT_FALSE(ParseCommandLine(3, argv, &config, &cmd).ok());
  EXPECT_EQ(config.http.threads, 7);
  EXPECT_EQ(cmd.config_path, "keep");
}

TEST(HelpTextTest, ListsCommandsAndEveryKeyWithItsDefault) {
  std::string help = HelpText();
  for (const char* word : {"run", "query", "backup DIR", "check-config", "--config FILE",
                           "--print-config", "--help", "--version"}) {
    EXPECT_THAT(help, HasSubstr(word));
  }
  EXPECT_THAT(help, HasSubstr("  --mqtt.port=INT  (default 1883)\n"));
  EXPECT_THAT(help, HasSubstr("  --mqtt.topics=LIST  (default [\"sensors/+/readings\"])\n"));
  for (const auto& [key, line] : KeyLines(ToToml(Config{}))) {
    EXPECT_THAT(help, HasSubstr("  --" + key + "="));
    EXPECT_THAT(help, HasSubstr("(default " + line.substr(line.find(" = ") + 3) + ")\n"));
  }
}

TEST(ExampleFileTest, ParsesToTheDefaultsAndListsEveryKey) {
  std::string text = ReadAll(READINGSD_EXAMPLE_TOML);
  ASSERT_FALSE(text.empty());
  Config config;
  Status s = ParseToml(text, READINGSD_EXAMPLE_TOML, &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config, Config{});
  EXPECT_EQ(KeyLines(text), KeyLines(ToToml(Config{})));
}

TEST(ReadSecretFileTest, DropsOneTrailingNewline) {
  const std::pair<const char*, const char*> cases[] = {
      {"hunter2\n", "hunter2"}, {"s3cret\r\n", "s3cret"}, {"a\n\n", "a\n"}, {"tok", "tok"}};
  for (const auto& [content, want] : cases) {
    std::string secret;
    Status s = ReadSecretFile(WriteTemp("secret", content), &secret);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(secret, want);
  }
}

TEST(ReadSecretFileTest, EmptyOrUnreadableIsAnError) {
  std::string secret = "untouched";
  for (const char* content : {"", "\n"}) {
    std::string path = WriteTemp("empty_secret", content);
    Status s = ReadSecretFile(path, &secret);
    EXPECT_TRUE(s.IsInvalidArgument());
    EXPECT_EQ(s.message(), path + ": is empty");
  }
  std::string missing = Scratch().File("no_such_secret");
  Status s = ReadSecretFile(missing, &secret);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(s.message(), "cannot read " + missing + ": No such file or directory");
  s = ReadSecretFile(Scratch().path(), &secret);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_THAT(s.message(), HasSubstr("Is a directory"));
  EXPECT_EQ(secret, "untouched");
}

TEST(ReadTokenFileTest, SkipsCommentsAndBlankLinesAndTrimsEachToken) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"tok\n", {"tok"}},
      {"# who: the dashboard\nfirst\nsecond\n", {"first", "second"}},
      {"first\r\n# old one\r\n\r\nsecond\r\n", {"first", "second"}},  // CRLF
      {"\n\n  first  \n\t\n\tsecond\t\r\n  # indented comment\n", {"first", "second"}},
      {"last-line-without-newline", {"last-line-without-newline"}},
      {"a#b\n", {"a#b"}},  // '#' starts a comment only at the start of a line
  };
  for (const auto& [content, want] : cases) {
    std::vector<std::string> tokens;
    Status s = ReadTokenFile(WriteTemp("tokens", content), &tokens);
    ASSERT_TRUE(s.ok()) << s.message() << " for " << content;
    EXPECT_EQ(tokens, want) << content;
  }
}

TEST(ReadTokenFileTest, AFileWithoutATokenIsAnError) {
  for (const char* content : {"", "\n", "# only a comment\n", "# a\r\n\r\n   \n#b"}) {
    std::string path = WriteTemp("no_tokens", content);
    std::vector<std::string> tokens = {"untouched"};
    Status s = ReadTokenFile(path, &tokens);
    EXPECT_TRUE(s.IsInvalidArgument()) << content;
    EXPECT_EQ(s.message(), path + ": no token in it (one per line; lines starting with # are comments)");
    EXPECT_THAT(tokens, ElementsAre("untouched"));
  }
  std::string missing = Scratch().File("no_such_tokens");
  std::vector<std::string> tokens;
  Status s = ReadTokenFile(missing, &tokens);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(s.message(), "cannot read " + missing + ": No such file or directory");
}

TEST(ReadTokenFileTest, ATokenNoHeaderCanCarryIsAnErrorNamingTheLine) {
  const std::pair<const char*, int> cases[] = {
      {"# tokens\nmy token\n", 2},       {"good\nbad\ttab\n", 2},
      {"\xef\xbb\xbftok\n", 1},             // a UTF-8 byte-order mark
      {"ok\n\nt\xc3\xb6k\n", 3},            // non-ASCII
      {"a\rb\n", 1},                        // a CR inside, not at the end
  };
  for (const auto& [content, line] : cases) {
    std::string path = WriteTemp("bad_token", content);
    std::vector<std::string> tokens;
    Status s = ReadTokenFile(path, &tokens);
    EXPECT_TRUE(s.IsInvalidArgument()) << content;
    EXPECT_EQ(s.message(), path + ":" + std::to_string(line) +
                         ": a token must be printable ASCII without spaces (an Authorization header "
                         "could not carry it)");
  }
}

}  // namespace
}  // namespace readingsd::config
