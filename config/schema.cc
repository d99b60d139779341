#include "config/schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "base/log_level.h"
#include "base/text.h"
#include "cluster/partition.h"
#include "storage/key.h"
#include "storage/reading.h"

namespace readingsd::config::internal {
namespace {

template <typename T>
struct ReprOf {
  using type = T;
};
template <>
struct ReprOf<int> {
  using type = int64_t;
};
template <>
struct ReprOf<uint64_t> {
  using type = int64_t;
};
// The Value alternative a member of type T travels as.
template <typename T>
using Repr = typename ReprOf<T>::type;

template <typename V>
using Check = std::function<std::string(const V&)>;

std::string Num(int64_t x) { return std::to_string(x); }
std::string Num(double x) { return FormatValue(Value(x)); }

template <typename S, typename T>
Key MakeKey(std::string_view name, S Config::*section, T S::*member, std::string_view doc,
            Check<Repr<T>> check = {}) {
  using V = Repr<T>;
  Key key{name, doc, static_cast<Kind>(Value(std::in_place_type<V>).index()), {}, {}, {}};
  key.get = [section, member](const Config& c) {
    return Value(std::in_place_type<V>, c.*section.*member);
  };
  key.set = [section, member](Config* c, const Value& v) {
    (c->*section).*member = static_cast<T>(std::get<V>(v));
  };
  key.check = [check](const Value& v) -> std::string {
    const V& x = std::get<V>(v);
    if (check) {
      if (std::string why = check(x); !why.empty()) return why;
    }
    if constexpr (std::is_same_v<V, int64_t>) {
      using Limits = std::numeric_limits<T>;
      constexpr int64_t kMax = std::cmp_greater(Limits::max(), std::numeric_limits<int64_t>::max())
                                   ? std::numeric_limits<int64_t>::max()
                                   : static_cast<int64_t>(Limits::max());
      if (std::cmp_less(x, Limits::min())) {
        return "must be >= " + Num(static_cast<int64_t>(Limits::min())) + ", got " + Num(x);
      }
      if (x > kMax) return "must be <= " + Num(kMax) + ", got " + Num(x);
    } else if constexpr (std::is_same_v<V, double>) {
      if (!std::isfinite(x)) return "must be a finite number, got " + Num(x);
    }
    return "";
  };
  return key;
}

// The TOML key and the flag are spelt from the member itself, so neither can drift from it.
#define READINGSD_KEY(section, member, ...) \
  MakeKey(#section "." #member, &Config::section, &decltype(Config::section)::member, __VA_ARGS__)

Check<int64_t> AtLeast(int64_t lo) {
  return
      [lo](const int64_t& x) { return x >= lo ? "" : "must be >= " + Num(lo) + ", got " + Num(x); };
}

Check<int64_t> Between(int64_t lo, int64_t hi) {
  return [lo, hi](const int64_t& x) {
    return lo <= x && x <= hi ? "" : "must be " + Num(lo) + ".." + Num(hi) + ", got " + Num(x);
  };
}

Check<std::string> OneOf(std::vector<std::string_view> allowed) {
  return [allowed = std::move(allowed)](const std::string& s) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return "";
    std::string why = "must be one of ";
    for (size_t i = 0; i < allowed.size(); ++i) why += std::string(i ? ", " : "") += allowed[i];
    return why + ", got " + Quote(s);
  };
}

std::string RollupSeconds(const int64_t& x) {
  Status s = storage::ValidateRollupSeconds(x);
  return s.ok() ? "" : "must be 0 (off) or divide a day (86400), e.g. 60, got " + Num(x);
}

std::string NonEmpty(const std::string& s) { return s.empty() ? "must not be empty" : ""; }

std::string Positive(const double& x) { return x > 0 ? "" : "must be > 0, got " + Num(x); }

std::string Share(const double& x) {
  return x > 0 && x <= 1 ? "" : "must be in (0, 1], got " + Num(x);
}

std::string Duration(const std::string& s) {
  std::chrono::seconds unused;
  if (ParseDuration(s, &unused)) return "";
  return "must be a duration like \"30d\", \"12h\", \"90m\" or \"45s\" (\"\" or \"0\" = forever), "
         "got " +
         Quote(s);
}

std::string MinTimestamp(const std::string& s) {
  if (s.empty()) return "";
  std::string sort_key;
  if (Status st = storage::NormalizeTimestamp(s, &sort_key); !st.ok()) {
    return "must be an ISO-8601 time like \"2000-01-01T00:00:00Z\" (\"\" = no lower bound): " +
           st.message();
  }
  return "";
}

std::string MaxFuture(const std::string& s) {
  // No "0" = off as for storage.retention: a zero window would refuse every device whose clock
  // runs a millisecond ahead.
  std::chrono::seconds window;
  if (s.empty() || (ParseDuration(s, &window) && window.count() > 0)) return "";
  return "must be a duration above zero like \"1d\", \"12h\", \"90m\" or \"45s\" (\"\" = no "
         "upper bound), got " +
         Quote(s);
}

std::string Keepalive(const int64_t& x) {
  // libmosquitto refuses 1..4; 0 turns keepalive off.
  return x == 0 || (5 <= x && x <= 65535) ? "" : "must be 0 (off) or 5..65535, got " + Num(x);
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string ListenAddress(const std::string& s) {
  HostPort unused;
  if (ParseHostPort(s, &unused).ok()) return "";
  return "must be host:port (e.g. 127.0.0.1:8080 or [::1]:8080), got " + Quote(s);
}

std::vector<std::string_view> Levels(std::string_view topic) {
  std::vector<std::string_view> levels;
  for (size_t start = 0;;) {
    size_t slash = topic.find('/', start);
    levels.push_back(topic.substr(start, slash - start));
    if (slash == std::string_view::npos) return levels;
    start = slash + 1;
  }
}

// Why `filter` is not a valid MQTT topic filter, "" when it is.
std::string FilterProblem(std::string_view filter) {
  if (filter.empty()) return "a topic filter must not be empty";
  if (filter.find('\0') != std::string_view::npos) return "a topic must not contain NUL";
  if (filter.size() > 65535) return "a topic must be at most 65535 bytes";
  std::vector<std::string_view> levels = Levels(filter);
  for (size_t i = 0; i < levels.size(); ++i) {
    std::string_view level = levels[i];
    if (level.find('#') != std::string_view::npos && (level != "#" || i + 1 != levels.size())) {
      return Quote(filter) + ": '#' is allowed only as the whole last level";
    }
    if (level.find('+') != std::string_view::npos && level != "+") {
      return Quote(filter) + ": '+' is allowed only as a whole level";
    }
  }
  return "";
}

// A list of field names of a JSON reading: at least one, each a valid attribute name, none twice.
std::string FieldList(const List& fields) {
  if (fields.empty()) return "must list at least one field name";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].empty() || fields[i].size() > storage::kMaxAttributeNameLength) {
      return "a field name must be 1 to " + std::to_string(storage::kMaxAttributeNameLength) + " bytes, got " +
             Quote(fields[i]);
    }
    if (std::find(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(i), fields[i]) !=
        fields.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Quote(fields[i]) + " is listed twice";
    }
  }
  return "";
}

std::string TopicFilters(const List& filters) {
  if (filters.empty()) return "must list at least one topic filter";
  for (const std::string& f : filters) {
    if (std::string why = FilterProblem(f); !why.empty()) return why;
  }
  return "";
}

std::string DeviceIdTopic(const std::string& pattern) {
  if (pattern.empty()) return "";
  std::vector<std::string_view> levels = Levels(pattern);
  if (std::count(levels.begin(), levels.end(), "{deviceId}") != 1) {
    return "must hold {deviceId} once, as a whole level, e.g. \"sensors/{deviceId}/readings\"; "
           "got " +
           Quote(pattern);
  }
  std::string filter;  // with {deviceId} matching any level, the rest must be a valid filter
  for (size_t i = 0; i < levels.size(); ++i) {
    filter += i ? "/" : "";
    filter += levels[i] == "{deviceId}" ? "+" : std::string(levels[i]);
  }
  return FilterProblem(filter);
}

std::string TopicName(const std::string& topic) {
  if (topic.empty()) return "";
  if (topic.find_first_of("+#") != std::string::npos) {
    return "must be a topic name without wildcards, got " + Quote(topic);
  }
  return FilterProblem(topic);
}

std::string TableName(const std::string& name) {
  bool ok =
      name.size() >= 3 && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
      });
  return ok ? ""
            : "must be 3..255 characters of a-z A-Z 0-9 _ - . (as DynamoDB), got " + Quote(name);
}

// An AWS region name as in ARNs: lower-case letters, digits and '-', e.g. "eu-central-1".
std::string RegionName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '-' && name.back() != '-' &&
            std::all_of(name.begin(), name.end(),
                        [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
  return ok ? "" : "must be a region name of a-z 0-9 - (e.g. \"eu-central-1\"), got " + Quote(name);
}

// A NATS subject token (stream and consumer names travel as one): no separator, wildcard or space.
std::string NatsName(const std::string& name) {
  if (!name.empty() && name.find_first_of(".*> \t\r\n") == std::string::npos) return "";
  return "must be a NATS name without '.', '*', '>' or spaces, got " + Quote(name);
}

// A NATS subject without wildcards ("readings", "acme.readings").
std::string NatsSubject(const std::string& subject) {
  if (!subject.empty() && subject.find_first_of("*> \t\r\n") == std::string::npos &&
      subject.front() != '.' && subject.back() != '.' && subject.find("..") == std::string::npos) {
    return "";
  }
  return "must be a NATS subject without wildcards or spaces, e.g. \"readings\", got " + Quote(subject);
}

std::string OptionalNatsSubject(const std::string& subject) {
  return subject.empty() ? "" : NatsSubject(subject);
}

std::string NatsUrls(const List& urls) {
  for (const std::string& url : urls) {
    if (url.empty() || url.find_first_of(" \t\r\n,") != std::string::npos) {
      return "each server must be one URL like \"nats://10.0.0.1:4222\", got " + Quote(url);
    }
  }
  return "";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

struct Rule {
  std::vector<std::string_view> keys;  // the one set last is blamed
  std::function<std::string(const Config&)> problem;
};

// The names of the node map's nodes, for messages: "n1, n2, n3".
std::string NodeNames(const ClusterConfig& cluster) {
  std::string names;
  for (const ClusterNodeConfig& node : cluster.nodes) names += (names.empty() ? "" : ", ") + node.name;
  return names;
}

// Why the node map does not fit nats.partitions: an entry out of range, or a partition no node owns.
std::string NodeMapProblem(const Config& c) {
  const auto partitions = static_cast<uint32_t>(c.nats.partitions);
  std::vector<bool> owned(partitions, false);
  for (const ClusterNodeConfig& node : c.cluster.nodes) {
    std::vector<uint32_t> list;
    if (Status s = cluster::ParsePartitionList(node.partitions, partitions, &list); !s.ok()) {
      return "cluster.nodes: node " + Quote(node.name) + ": " + s.message();
    }
    for (uint32_t p : list) owned[p] = true;
  }
  for (uint32_t p = 0; p < partitions; ++p) {
    if (!owned[p] && !c.cluster.nodes.empty()) {
      return "cluster.nodes: partition " + Num(int64_t{p}) + " (of nats.partitions = " + Num(int64_t{partitions}) +
             ") has no owner: every partition needs one, two for a node to be able to fail";
    }
  }
  return "";
}

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {{"mqtt.reconnect_min_ms", "mqtt.reconnect_max_ms"},
       [](const Config& c) -> std::string {
         if (c.mqtt.reconnect_min_ms <= c.mqtt.reconnect_max_ms) return "";
         return "mqtt.reconnect_min_ms (" + Num(int64_t{c.mqtt.reconnect_min_ms}) +
                ") must not exceed mqtt.reconnect_max_ms (" +
                Num(int64_t{c.mqtt.reconnect_max_ms}) + ")";
       }},
      {{"mqtt.cert_file", "mqtt.key_file"},
       [](const Config& c) -> std::string {
         return c.mqtt.cert_file.empty() == c.mqtt.key_file.empty()
                    ? ""
                    : "mqtt.cert_file and mqtt.key_file must be set together";
       }},
      {{"mqtt.ca_file", "mqtt.cert_file", "mqtt.tls_insecure"},
       [](const Config& c) -> std::string {
         return c.mqtt.ca_file.empty() && (!c.mqtt.cert_file.empty() || c.mqtt.tls_insecure)
                    ? "mqtt.cert_file and mqtt.tls_insecure need mqtt.ca_file (it turns TLS on)"
                    : "";
       }},
      {{"ingest.timestamp_fields", "ingest.device_id_fields"},
       [](const Config& c) -> std::string {
         for (const std::string& field : c.ingest.timestamp_fields) {
           if (std::find(c.ingest.device_id_fields.begin(), c.ingest.device_id_fields.end(), field) !=
               c.ingest.device_id_fields.end()) {
             return "ingest.timestamp_fields and ingest.device_id_fields both list " + Quote(field);
           }
         }
         return "";
       }},
      {{"mqtt.username", "mqtt.password_file"},
       [](const Config& c) -> std::string {
         return c.mqtt.username.empty() && !c.mqtt.password_file.empty()
                    ? "mqtt.password_file needs mqtt.username (MQTT sends no password without one)"
                    : "";
       }},
      {{"cluster.node", "cluster.nodes"},
       [](const Config& c) -> std::string {
         if (c.cluster.nodes.empty()) {
           return c.cluster.node.empty() ? "" : "cluster.node needs the node map, [[cluster.nodes]] tables";
         }
         for (const ClusterNodeConfig& node : c.cluster.nodes) {
           if (node.name == c.cluster.node) return "";
         }
         return "cluster.node (" + Quote(c.cluster.node) + ") must name one of cluster.nodes: " + NodeNames(c.cluster);
       }},
      {{"cluster.nodes", "nats.partitions"}, NodeMapProblem},
      {{"nats.owned_partitions", "nats.partitions"},
       [](const Config& c) -> std::string {
         std::vector<uint32_t> owned;
         Status s = cluster::ParsePartitionList(c.nats.owned_partitions, static_cast<uint32_t>(c.nats.partitions), &owned);
         return s.ok() ? "" : "nats.owned_partitions: " + s.message();
       }},
  };
  return rules;
}

}  // namespace

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      READINGSD_KEY(storage, data_dir, "RocksDB directory, created on first start", NonEmpty),
      READINGSD_KEY(storage, sync,
                    "fsync the write-ahead log on every group commit: survives power loss, not "
                    "only a crash, at the cost of write latency"),
      READINGSD_KEY(
          storage, retention,
          "compaction drops readings older than this: \"30d\", \"12h\", \"90m\", \"45s\"; "
          "\"\" or \"0\" keeps them forever",
          Duration),
      READINGSD_KEY(storage, block_cache_mb, "RocksDB block cache for reads, in MiB",
                    Between(0, 1 << 20)),
      READINGSD_KEY(storage, rollup_seconds,
                    "granule of the rollups kept at write time, in seconds: an aggregate whose step "
                    "is a multiple of it reads one record per granule instead of every reading; 0 "
                    "turns them off (and removes them), else a divisor of 86400",
                    RollupSeconds),

      READINGSD_KEY(mqtt, host, "MQTT broker host name or address", NonEmpty),
      READINGSD_KEY(mqtt, port, "MQTT broker port (8883 is the usual TLS port)", Between(1, 65535)),
      READINGSD_KEY(mqtt, client_id,
                    "MQTT client id; must be unique on the broker, which drops the older of two "
                    "clients with the same id",
                    NonEmpty),
      READINGSD_KEY(mqtt, username, "user name for the broker; \"\" connects anonymously"),
      READINGSD_KEY(mqtt, password_file,
                    "file holding the broker password (one trailing newline is dropped); there "
                    "is no password flag, so it never shows in ps"),
      READINGSD_KEY(mqtt, topics, "topic filters to subscribe to (+ and # wildcards allowed)",
                    TopicFilters),
      READINGSD_KEY(mqtt, device_id_topic,
                    "topic pattern whose {deviceId} level is the device id; \"\" takes the device "
                    "id from the payload only",
                    DeviceIdTopic),
      READINGSD_KEY(mqtt, protocol, "MQTT protocol version: \"mqttv311\" or \"mqttv5\"",
                    OneOf({"mqttv311", "mqttv5"})),
      READINGSD_KEY(mqtt, keepalive_seconds,
                    "seconds between keepalive pings; the broker drops us after 1.5x without one "
                    "(0 = off)",
                    Keepalive),
      READINGSD_KEY(mqtt, ca_file,
                    "CA certificates (PEM) to verify the broker with; setting it turns TLS on"),
      READINGSD_KEY(mqtt, cert_file, "client certificate (PEM) for mutual TLS; needs key_file"),
      READINGSD_KEY(mqtt, key_file, "private key (PEM) of cert_file"),
      READINGSD_KEY(mqtt, tls_insecure,
                    "do not check the broker's host name against its certificate (testing only)"),
      READINGSD_KEY(mqtt, dead_letter_topic,
                    "topic to republish each rejection to, with its reason: a refused reading alone with "
                    "its index in the batch, a payload refused whole as its first 1 KiB and its size; "
                    "\"\" logs and drops them",
                    TopicName),
      READINGSD_KEY(mqtt, max_payload_bytes, "larger messages are rejected as undecodable",
                    Between(1, 268435455)),  // MQTT's own limit
      READINGSD_KEY(mqtt, reconnect_min_ms,
                    "first delay before reconnecting to a lost broker; doubles on each failure",
                    AtLeast(1)),
      READINGSD_KEY(mqtt, reconnect_max_ms, "the reconnect delay stops growing here", AtLeast(1)),
      READINGSD_KEY(mqtt, max_batch,
                    "most readings per group commit (one RocksDB write batch); bigger batches "
                    "raise throughput and the latency of each reading",
                    AtLeast(1)),
      READINGSD_KEY(mqtt, broker_drops_unready_seconds,
                    "/readyz answers 503 for this long after the broker's count of messages it "
                    "dropped for full queues last rose (readings it had acknowledged to devices "
                    "were lost); 0 = never, the metric and the log still tell",
                    AtLeast(0)),

      READINGSD_KEY(nats, servers,
                    "NATS server URLs; when set, readings come from the JetStream stream below "
                    "instead of the MQTT broker (several nodes, docs/cluster.md); [] = MQTT",
                    NatsUrls),
      READINGSD_KEY(nats, stream, "the JetStream stream of readings; created when missing", NatsName),
      READINGSD_KEY(nats, subject_prefix,
                    "devices publish on <prefix>.<deviceId> (MQTT <prefix>/<deviceId>); the servers' "
                    "partition() mapping files them under <prefix>.<partition>.<deviceId>",
                    NatsSubject),
      READINGSD_KEY(nats, partitions,
                    "the partition count: the P of the servers' partition(P,1) mapping, the same on "
                    "every node and server",
                    Between(1, 65536)),
      READINGSD_KEY(nats, owned_partitions,
                    "the partitions this node stores, as \"N\" or \"N-M\" entries, e.g. [\"0-7\"]; "
                    "[] = all"),
      READINGSD_KEY(nats, durable_prefix,
                    "this node's consumer names are <durable_prefix>-p<partition>; unique per node "
                    "(two nodes with one name would split its readings)",
                    NatsName),
      READINGSD_KEY(nats, stream_replicas, "replicas of the stream when readingsd creates it",
                    Between(1, 5)),
      READINGSD_KEY(nats, stream_max_age,
                    "the stream keeps messages this long when readingsd creates it (long enough to "
                    "rebuild a node): \"30d\", \"12h\"; \"\" or \"0\" keeps them forever",
                    Duration),
      READINGSD_KEY(nats, fetch_batch, "most messages fetched, written in one WriteBatch and acked at once",
                    Between(1, 100000)),
      READINGSD_KEY(nats, ack_wait_seconds,
                    "seconds JetStream waits for a fetched message's ack before it delivers it again "
                    "(a lost ack; a node restarted after a crash makes its consumers again from their "
                    "ack floor and does not wait); set on the node's consumers, existing ones included",
                    Between(1, 86400)),
      READINGSD_KEY(nats, dead_letter_subject,
                    "NATS subject each rejected reading is published to, as mqtt.dead_letter_topic's "
                    "envelope; \"\" = log and count only",
                    OptionalNatsSubject),
      READINGSD_KEY(nats, publish_timeout_ms,
                    "milliseconds a write or a delete through the HTTP API waits for JetStream to ack "
                    "it (it goes into the stream, docs/cluster.md) before it answers 503",
                    Between(1, 600000)),

      READINGSD_KEY(cluster, node,
                    "this node's name among the [[cluster.nodes]] tables (the node map, config file "
                    "only; docs/cluster.md); \"\" = one node answering alone"),
      READINGSD_KEY(cluster, connect_timeout_ms,
                    "a node that does not accept a forwarded request's connection within this is taken "
                    "as down and the partition's next owner is asked",
                    AtLeast(1)),
      READINGSD_KEY(cluster, forward_timeout_ms,
                    "the most a request forwarded to another node waits for its whole answer",
                    AtLeast(1)),

      READINGSD_KEY(ingest, min_timestamp,
                    "readings stamped before this ISO-8601 time are refused (timestamp_too_old), "
                    "as from a device whose clock was never set; \"\" = no lower bound",
                    MinTimestamp),
      READINGSD_KEY(ingest, max_future,
                    "readings stamped further than this ahead of the host's clock are refused "
                    "(timestamp_in_future): \"1d\", \"12h\", \"90m\", \"45s\"; \"\" = no upper bound",
                    MaxFuture),
      READINGSD_KEY(ingest, line_protocol_device,
                    "the device id of an InfluxDB line protocol point (POST /write, import): "
                    "{measurement}, {tag:NAME} and literal text, e.g. \"{measurement}.{tag:site}\"; "
                    "the point's other tags become string attributes"),
      READINGSD_KEY(ingest, timestamp_fields,
                    "the fields of a JSON reading (MQTT, POST /v1/readings, import) that may hold its "
                    "timestamp, e.g. [\"readingTs\", \"ts\", \"time\"]; a reading holds one of them: "
                    "an ISO-8601 string or an epoch number, whose digits tell its unit (9-11 seconds, "
                    "12-14 ms, 15-17 us, 18-20 ns); other numbers are refused as ambiguous",
                    FieldList),
      READINGSD_KEY(ingest, device_id_fields,
                    "the fields of a JSON reading that may hold its device id, e.g. [\"deviceId\", "
                    "\"device\"]; a reading holds at most one of them (else the topic or path names it)",
                    FieldList),

      READINGSD_KEY(http, listen,
                    "host:port to serve the HTTP API on; 0.0.0.0:8080 accepts remote clients, "
                    "port 0 takes any free port",
                    ListenAddress),
      READINGSD_KEY(http, threads, "threads serving HTTP requests", AtLeast(1)),
      READINGSD_KEY(http, read_helpers,
                    "threads that read the later part of a long page (hundreds of readings) while "
                    "the request's thread reads the first, when idle; 0 = none (best on one core)",
                    Between(0, 64)),
      READINGSD_KEY(http, busy_poll_us,
                    "microseconds an idle HTTP thread keeps polling before it sleeps, so a "
                    "request right after a response needs no wake-up; 0 = sleep at once (least CPU)",
                    Between(0, 10000)),
      READINGSD_KEY(http, table_name, "table name the DynamoDB-compatible API answers to",
                    TableName),
      READINGSD_KEY(http, dynamodb_region,
                    "AWS region named in the table's ARN (DescribeTable); readingsd serves one "
                    "region's worth of table wherever it runs",
                    RegionName),
      READINGSD_KEY(http, auth_token_file,
                    "file of bearer tokens, one per line (# starts a comment line); every request "
                    "must carry one of them; \"\" = no authentication"),
      READINGSD_KEY(http, max_body_bytes, "larger request bodies are refused (413)", AtLeast(1)),
      READINGSD_KEY(http, max_decoded_body_bytes,
                    "a write request's body (POST /v1/readings, /write) may hold at most this "
                    "much once gzip is inflated; more is refused (413) without inflating further",
                    AtLeast(1)),
      READINGSD_KEY(http, max_write_readings,
                    "most readings (or lines of line protocol) one write request may carry (413)",
                    AtLeast(1)),
      READINGSD_KEY(http, max_header_bytes, "larger request headers are refused (431)", AtLeast(1)),
      READINGSD_KEY(http, compress_min_bytes,
                    "a response body of at least this many bytes is sent gzip or deflate "
                    "compressed when the request's Accept-Encoding allows it; 0 = never",
                    AtLeast(0)),
      READINGSD_KEY(http, max_limit, "largest page size (limit) a query may ask for", AtLeast(1)),
      READINGSD_KEY(http, max_page_bytes,
                    "a page ends once its items reach this size, as DynamoDB's 1 MB", AtLeast(1)),
      READINGSD_KEY(http, max_aggregate_buckets,
                    "most buckets an aggregate's window may span (window / step); more is a 400",
                    AtLeast(1)),
      READINGSD_KEY(http, max_aggregate_scan,
                    "most readings an aggregate may read; a window holding more is a 400 (an "
                    "aggregate is one answer, not pages)",
                    AtLeast(1)),
      READINGSD_KEY(http, max_connections,
                    "most client connections open at once; a new one sheds the one longest in the "
                    "middle of sending a request, else the one idle longest, or gets 503 when "
                    "every one is being answered",
                    AtLeast(1)),
      READINGSD_KEY(http, request_timeout_ms,
                    "time allowed to receive a request and answer it; also how long an idle "
                    "keep-alive connection stays open",
                    AtLeast(1)),
      READINGSD_KEY(http, header_timeout_ms,
                    "time allowed to receive a request's header, from the connection or the "
                    "request's first byte; slower clients are cut off",
                    AtLeast(1)),

      READINGSD_KEY(metrics, top_k, "hottest partitions reported by name", AtLeast(1)),
      READINGSD_KEY(metrics, window_seconds, "sliding window for write rates, in seconds",
                    AtLeast(1)),
      READINGSD_KEY(metrics, partition_wcu_limit,
                    "writes per second per partition counted as hot (DynamoDB's per-partition "
                    "limit is 1000 WCU)",
                    Positive),
      READINGSD_KEY(metrics, low_cardinality_top_share,
                    "flag low key cardinality when the top_k partitions take more than this "
                    "share of writes",
                    Share),
      READINGSD_KEY(metrics, low_cardinality_min_partitions,
                    "... or when fewer distinct partitions than this carry writes (0 = off)",
                    AtLeast(0)),

      READINGSD_KEY(log, level, "\"error\", \"warn\", \"info\" or \"debug\"",
                    OneOf({kLogLevelNames.begin(), kLogLevelNames.end()})),
  };
  return keys;
}

#undef READINGSD_KEY

const Key* FindKey(std::string_view name) {
  for (const Key& key : Keys()) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::string_view SectionOf(std::string_view name) { return name.substr(0, name.find('.')); }

bool IsSection(std::string_view name) {
  return std::any_of(Keys().begin(), Keys().end(),
                     [name](const Key& key) { return SectionOf(key.name) == name; });
}

std::string_view Closest(std::string_view name, std::span<const std::string_view> also) {
  std::string_view best;
  size_t best_distance = 3;  // further than 2 edits is a different word, not a typo
  auto consider = [&](std::string_view candidate) {
    if (size_t d = EditDistance(name, candidate); d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  };
  for (std::string_view candidate : also) consider(candidate);
  for (const Key& key : Keys()) {
    consider(SectionOf(key.name));
    consider(key.name);
  }
  return best;
}

std::string Quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {  // TOML strings may hold no raw control characters
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + '"';
}

std::string FormatValue(const Value& value) {
  switch (static_cast<Kind>(value.index())) {
    case Kind::kBool:
      return std::get<bool>(value) ? "true" : "false";
    case Kind::kInt:
      return std::to_string(std::get<int64_t>(value));
    case Kind::kDouble: {
      char buf[64];
      std::string s(buf, std::to_chars(buf, buf + sizeof buf, std::get<double>(value)).ptr);
      // Shortest round-trip form; TOML reads "1000" as an integer, so keep it a float.
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kString:
      return Quote(std::get<std::string>(value));
    case Kind::kList: {
      std::string out = "[";
      for (const std::string& s : std::get<List>(value)) {
        out += (out.size() > 1 ? ", " : "") + Quote(s);
      }
      return out + "]";
    }
  }
  return "";
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kBool:
      return "BOOL";
    case Kind::kInt:
      return "INT";
    case Kind::kDouble:
      return "NUMBER";
    case Kind::kString:
      return "STRING";
    case Kind::kList:
      return "LIST";
  }
  return "";
}

bool ParseDuration(std::string_view text, std::chrono::seconds* out) {
  if (text.empty() || text == "0") {
    *out = std::chrono::seconds(0);
    return true;
  }
  static constexpr std::pair<char, int64_t> kUnits[] = {
      {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
  auto unit = std::find_if(std::begin(kUnits), std::end(kUnits),
                           [&text](const auto& u) { return u.first == text.back(); });
  if (unit == std::end(kUnits)) return false;
  std::string_view digits = text.substr(0, text.size() - 1);
  int64_t n;
  if (!AllDigits(digits) ||
      std::from_chars(digits.data(), digits.data() + digits.size(), n).ec != std::errc() ||
      n > std::numeric_limits<int64_t>::max() / unit->second) {
    return false;
  }
  *out = std::chrono::seconds(n * unit->second);
  return true;
}

namespace {

// One source of this node's partitions: with a node map, nats.owned_partitions is its entry's,
// and one set anyway must say the same.
Status OwnedPartitionsOfTheMap(Config* config, const Origins& origins, std::string_view fallback) {
  const ClusterConfig& map = config->cluster;
  if (map.nodes.empty()) return Status::OK();
  const auto self = std::find_if(map.nodes.begin(), map.nodes.end(),
                                 [&map](const ClusterNodeConfig& node) { return node.name == map.node; });
  const auto given = std::find_if(origins.rbegin(), origins.rend(),
                                  [](const Origin& o) { return o.key == "nats.owned_partitions"; });
  if (given == origins.rend()) {
    config->nats.owned_partitions = self->partitions;
    return Status::OK();
  }
  const auto partitions = static_cast<uint32_t>(config->nats.partitions);
  std::vector<uint32_t> in_map, in_nats;
  // Both were checked by the rules.
  cluster::ParsePartitionList(self->partitions, partitions, &in_map);
  cluster::ParsePartitionList(config->nats.owned_partitions, partitions, &in_nats);
  if (in_map == in_nats) return Status::OK();
  return Status::InvalidArgument(
      (given->where.empty() ? std::string(fallback) : given->where) + ": nats.owned_partitions (" +
      FormatValue(config->nats.owned_partitions) + ") disagrees with the partitions of node " + Quote(map.node) +
      " in cluster.nodes (" + FormatValue(self->partitions) +
      "); the node map is enough: remove nats.owned_partitions");
}

}  // namespace

Status Finish(Config* config, const Origins& origins, std::string_view fallback) {
  for (const Rule& rule : Rules()) {
    std::string problem = rule.problem(*config);
    if (problem.empty()) continue;
    auto blamed = std::find_if(origins.rbegin(), origins.rend(), [&rule](const Origin& o) {
      return std::find(rule.keys.begin(), rule.keys.end(), o.key) != rule.keys.end();
    });
    std::string_view where = blamed == origins.rend() ? fallback : std::string_view(blamed->where);
    return Status::InvalidArgument(std::string(where) + ": " + problem);
  }
  if (Status s = OwnedPartitionsOfTheMap(config, origins, fallback); !s.ok()) return s;
  // storage.retention, ingest.max_future and nats.stream_max_age were checked when they were set.
  ParseDuration(config->storage.retention, &config->storage.retention_seconds);
  ParseDuration(config->ingest.max_future, &config->ingest.max_future_seconds);
  ParseDuration(config->nats.stream_max_age, &config->nats.stream_max_age_seconds);
  return Status::OK();
}

}  // namespace readingsd::config::internal
