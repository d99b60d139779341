#include "daemon/service.h"

#include <signal.h>
#include <systemd/sd-daemon.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "api/router.h"
#include "base/text.h"
#include "http/client.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "http/server.h"
#include "ingest/mqtt_ingest.h"
#include "ingest/nats_ingest.h"
#include "ingest/nats_publish.h"
#include "ingest/write.h"
#include "metrics/exporter.h"
#include "storage/index.h"
#include "storage/key.h"
#include "storage/store.h"

namespace readingsd::daemon {
namespace {

// /readyz: ready while the store takes writes, the broker has acknowledged our subscriptions,
// no other client took our session in the last minute, and the broker's count of dropped
// messages has not risen for `drops_unready` (0 = drops never make it unready). Drops are readings the broker acknowledged to devices and then lost: unlike a slow
// consumer, nothing downstream can see them, so they must make an alert fire. The first count
// seen only warns: readingsd cannot tell when those drops were.
bool Readiness(const ingest::IngestState& st, std::chrono::seconds drops_unready, std::string* detail) {
  std::string warnings = st.session_lost ? "; warning: the broker lost our persistent session once" : "";
  const bool dropping = drops_unready.count() > 0 && st.broker_dropped_rose != std::chrono::steady_clock::time_point{} &&
                        std::chrono::steady_clock::now() - st.broker_dropped_rose < drops_unready;
  if (st.broker_dropped > 0 && !dropping) {
    warnings += "; warning: the broker dropped " + std::to_string(st.broker_dropped) + " messages for full queues";
  }
  bool ready = false;
  if (st.store_failing) {
    *detail = st.last_error;
  } else if (!st.client_id_conflict.empty() &&
             std::chrono::steady_clock::now() - st.client_id_conflict_at < std::chrono::seconds(60)) {
    // Before the connection state: a twin keeps us disconnected most of the time, and "broker
    // not connected: connection lost" alone does not say why.
    *detail = st.client_id_conflict;
  } else if (!st.connected) {
    *detail = "broker not connected: " + st.last_error;
  } else if (!st.subscribed) {
    *detail = "broker connected, subscribing";
  } else if (dropping) {
    *detail = "the broker is dropping messages for full queues: it dropped " + std::to_string(st.broker_dropped) +
              " since it started, some within the last " + std::to_string(drops_unready.count()) +
              " s; readings it acknowledged to devices were lost (raise max_queued_messages, see "
              "systemd/mosquitto-readingsd.conf)";
  } else {
    *detail = "store open, broker connected and subscribed";
    ready = true;
  }
  *detail += warnings;
  return ready;
}

std::string Percent(double share) { return std::to_string(static_cast<int>(share * 100)) + " %"; }

// Each index's built share into /metrics, and a log line at each 10 % of a backfill it sees
// passed and when it is done (even one done before the first look). `deciles`: per index, the
// last one logged (-1: none; 10: built). A read-only daemon builds nothing: it says so once.
void ReportIndexes(const storage::Store& store, bool read_only, metrics::Exporter* exporter, std::vector<int>* deciles,
                   Log* log) {
  const std::vector<storage::IndexStatus> indexes = store.Indexes();
  for (std::size_t i = 0; i < indexes.size() && i < deciles->size(); ++i) {
    const storage::IndexStatus& index = indexes[i];
    exporter->index_built(index.spec.name).Set(index.active ? 1 : index.built);
    const int decile = index.active || read_only ? 10 : static_cast<int>(index.built * 10);
    if (decile <= (*deciles)[i]) continue;
    if (index.backfilled) {
      log->Write(LogLevel::kInfo, "index " + index.spec.name + ": built, queries on it are answered");
    } else if (!index.active && read_only) {
      log->Write(LogLevel::kWarning, "index " + index.spec.name +
                                         ": not built in this store, and a read-only daemon does not build it: "
                                         "queries on it are refused until the daemon has built it");
    } else if (!index.active) {
      log->Write(LogLevel::kInfo, "index " + index.spec.name + ": backfill " + Percent(index.built) +
                                      " (queries on it wait until it is built)");
    }
    (*deciles)[i] = decile;
  }
}

// Corruption met at run time turns /readyz degraded until a restart: a damaged file stays
// damaged, and part of what the daemon serves is gone.
std::string StoreDamage(const storage::StoreStats& st) {
  return "store damaged (corruption errors since start: " + std::to_string(st.corruption_errors) +
         "), the last: " + st.last_corruption + "; `readingsd verify` lists every damaged file";
}

// Logged once a tick at most: a client retrying a query over a damaged block must not flood the log.
void LogCorruption(const storage::Store& store, uint64_t* logged, Log* log) {
  storage::StoreStats st = store.Stats();
  if (st.corruption_errors == *logged) return;
  *logged = st.corruption_errors;
  log->Write(LogLevel::kError, "storage: " + StoreDamage(st));
}

// SIGHUP: what can change without a restart, the log level, is re-read from the config file.
void Reload(const config::Config& running, const std::string& config_path, Log* log) {
  if (config_path.empty()) {
    log->Write(LogLevel::kInfo, "SIGHUP: no config file to reload");
    return;
  }
  std::ifstream in(config_path);
  std::stringstream text;
  text << in.rdbuf();
  config::Config reloaded = running;
  if (!in) {
    log->Write(LogLevel::kError, "SIGHUP: keeping the running config: " + config_path + ": unreadable");
  } else if (Status s = config::ParseToml(text.str(), config_path, &reloaded); !s.ok()) {
    log->Write(LogLevel::kError, "SIGHUP: keeping the running config: " + s.message());
  } else {
    log->SetLevel(ParseLogLevel(reloaded.log.level));
    log->Write(LogLevel::kInfo, "SIGHUP: reloaded log.level = " + reloaded.log.level);
  }
}

// Pings systemd only while both halves are alive: the ingest loop turned recently and HTTP
// answers its own /healthz. A wedged daemon is then restarted by the watchdog.
// `ingest` is null when the daemon only serves.
void PingWatchdog(const ingest::Source* ingest, const std::string& http_host, const std::string& http_port,
                  const std::string& token, Log* log) {
  bool ingest_alive = !ingest || std::chrono::steady_clock::now() - ingest->LastLoop() < std::chrono::seconds(10);
  http::HttpGetResult probe;
  bool http_alive =
      http::HttpGet(http_host, http_port, "/healthz", token, std::chrono::seconds(2), &probe).ok() && probe.status == 200;
  if (!ingest_alive || !http_alive) {
    log->Write(LogLevel::kWarning, std::string("watchdog: not pinging:") + (ingest_alive ? "" : " ingest loop stuck") +
                                       (http_alive ? "" : " HTTP not answering"));
    return;
  }
  if (!ingest) {
    sd_notify(0, "WATCHDOG=1\nSTATUS=serving a read-only store, ingest off");
    return;
  }
  ingest::IngestState st = ingest->State();
  sd_notifyf(0, "WATCHDOG=1\nSTATUS=%s; %llu readings written, %llu rejected",
             st.connected ? "broker connected" : "broker not connected",
             static_cast<unsigned long long>(st.readings_written), static_cast<unsigned long long>(st.messages_rejected));
}

// What a start creates for the store, removed again if the start fails: a store left behind
// would be taken for one that lost its readings, or hide a mistyped data_dir at the next try.
// Only what did not exist before: the outermost missing directory of the data dir, or what
// came into the data dir when it was empty. Declared before the store, so that the store is
// closed first.
class StartCreates {
 public:
  explicit StartCreates(const std::filesystem::path& data_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = fs::absolute(data_dir, ec).lexically_normal();
    if (ec) return;
    if (!dir.has_filename()) dir = dir.parent_path();  // "data/" as "data"
    if (fs::is_empty(dir, ec) && !ec) {
      empty_dir_ = dir;
      return;
    }
    if (fs::exists(dir, ec) || ec) return;
    while (dir.has_relative_path() && !fs::exists(dir.parent_path(), ec) && !ec) dir = dir.parent_path();
    missing_dir_ = dir;
  }
  ~StartCreates() {
    if (kept_) return;
    std::error_code ec;
    if (!missing_dir_.empty()) std::filesystem::remove_all(missing_dir_, ec);
    if (!empty_dir_.empty()) {
      for (const auto& entry : std::filesystem::directory_iterator(empty_dir_, ec)) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
  }
  StartCreates(const StartCreates&) = delete;
  StartCreates& operator=(const StartCreates&) = delete;
  void Keep() { kept_ = true; }  // the start succeeded

 private:
  std::filesystem::path missing_dir_;
  std::filesystem::path empty_dir_;
  bool kept_ = false;
};

// Blocks the signals we handle in every thread (so the ones started below inherit the mask) and
// lets the main thread take them synchronously with sigtimedwait.
sigset_t BlockHandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

// The index names, in declaration order.
std::vector<std::string> IndexNames(const storage::Store& store) {
  std::vector<std::string> names;
  for (const storage::IndexStatus& index : store.Indexes()) names.push_back(index.spec.name);
  return names;
}

// What every way in (MQTT, the write API) reports: its writes and refusals, to the exporter and
// the log. A written reading loads its device's partition and, in each index it has an entry
// in, that index's partition (the hotness of each index is its own).
ingest::IngestHooks WriteHooks(const storage::Store& store, metrics::Exporter* exporter, Log* log) {
  struct IndexHotness {
    storage::IndexSpec spec;
    metrics::HotnessTracker* tracker;
  };
  std::vector<IndexHotness> indexes;
  for (const storage::IndexStatus& index : store.Indexes()) {
    indexes.push_back({index.spec, exporter->index_hotness(index.spec.name)});
  }
  ingest::IngestHooks hooks;
  hooks.log = [log](LogLevel level, std::string_view msg) { log->Write(level, msg); };
  hooks.on_batch_written = [exporter, indexes = std::move(indexes)](std::span<const storage::Reading> batch,
                                                                    std::chrono::duration<double> seconds) {
    exporter->write_batch_size().Observe(static_cast<double>(batch.size()));
    exporter->write_batch_seconds().Observe(seconds.count());
    std::string partition;
    for (const auto& r : batch) {
      const std::size_t size = storage::ItemSize(r);
      exporter->hotness().RecordWrite(storage::PartitionKey(r.device_id), size);
      if (indexes.empty()) continue;
      const std::vector<storage::AttributeView> attributes = storage::ViewsOf(r.attributes);
      for (const IndexHotness& index : indexes) {
        if (storage::IndexEntryPartition(index.spec, r.device_id, r.sort_key, attributes, &partition)) {
          index.tracker->RecordWrite(partition, size);
        }
      }
    }
    // Counted last, so a scrape that shows a batch ingested also shows its partitions' writes.
    exporter->readings_ingested().Increment(static_cast<double>(batch.size()));
  };
  hooks.on_rejected = [exporter, log](std::string_view topic, const ingest::Rejection& r) {
    const std::string reason(ingest::ReasonName(r.reason));
    exporter->readings_rejected(reason).Increment();
    // Limited per reason, so one flood cannot hide the first lines of another.
    const std::string key = "ingest: rejected (" + reason + ")";
    log->WriteLimited(key, LogLevel::kWarning,
                      key + " on " + std::string(topic) + (r.device_id.empty() ? "" : ", device " + r.device_id) +
                          ": " + r.message);
  };
  return hooks;
}

// A delete's range for the log, from the bounds the API hands the store: an exclusive lower
// bound and an inclusive upper one are a sort key with a '\0' after it (query::Successor).
std::string RangeText(const query::SortKeyRange& range) {
  auto bound = [](std::string_view key, std::string_view open, std::string_view plain, std::string_view succeeded) {
    if (key.empty()) return std::string(open);
    if (key.ends_with('\0')) return std::string(succeeded) + std::string(key.substr(0, key.size() - 1));
    return std::string(plain) + std::string(key);
  };
  return bound(range.lower, "from the first", "from ", "after ") + " " + bound(range.upper, "to the last", "before ", "to ");
}

// DELETE /v1/devices/{id}/readings: into the store, each batch counted by `counted` as it is
// written (the stream's deletes count through the same function), and one log line.
api::native::DeleteHook DeleteReadingsHook(storage::Store* store, std::function<void(uint64_t removed)> counted,
                                           Log* log) {
  return [store, counted = std::move(counted), log](std::string_view device, const query::SortKeyRange& range,
                                                    api::native::DeleteOutcome* outcome) {
    uint64_t* deleted = &outcome->deleted;
    const Status s = store->DeleteReadings(device, range.lower, range.upper, counted, deleted);
    log->Write(s.ok() ? LogLevel::kInfo : LogLevel::kError,
               "delete: device " + std::string(device) + ", readings " + RangeText(range) + ": " +
                   std::to_string(*deleted) + " deleted" + (s.ok() ? "" : "; then it failed: " + s.ToString()));
    return s;
  };
}

// DELETE /v1/devices/{id}/readings on a node with [nats]: into the stream, for every owner of the
// device's partition to apply (ingest::NatsIngest), with one log line.
api::native::DeleteHook StreamDeleteHook(ingest::NatsPublisher* publisher, Log* log) {
  return [publisher, log](std::string_view device, const query::SortKeyRange& range,
                          api::native::DeleteOutcome* outcome) {
    uint64_t sequence = 0;
    const Status s = publisher->PublishDelete(device, range.lower, range.upper, &sequence);
    if (s.ok()) outcome->stream_sequence = sequence;
    log->Write(s.ok() ? LogLevel::kInfo : LogLevel::kError,
               "delete: device " + std::string(device) + ", readings " + RangeText(range) +
                   (s.ok() ? ": published at stream sequence " + std::to_string(sequence)
                           : ": not published: " + s.ToString()));
    return s;
  };
}

// Starts ingest into `store`: from NATS JetStream when nats.servers is set, else from MQTT.
// `hooks` are WriteHooks, to which it adds the broker's state.
Status StartIngest(const config::Config& config, const std::string& password, storage::Store* store,
                   ingest::IngestHooks hooks, metrics::Exporter* exporter, std::unique_ptr<ingest::Source>* ingest) {
  if (!config.nats.servers.empty()) {
    hooks.on_connection = [exporter](bool connected) { exporter->nats_connected().Set(connected ? 1 : 0); };
    std::unique_ptr<ingest::NatsIngest> nats;
    Status s = ingest::NatsIngest::Start(NatsOptionsFrom(config), store, hooks, &nats);
    *ingest = std::move(nats);
    return s;
  }
  hooks.on_connection = [exporter, ever_connected = false](bool connected) mutable {
    exporter->mqtt_connected().Set(connected ? 1 : 0);
    if (connected && ever_connected) exporter->mqtt_reconnects().Increment();
    ever_connected = ever_connected || connected;
  };
  hooks.on_broker_dropped = [exporter](uint64_t total) { exporter->SetBrokerDroppedMessages(total); };
  ingest::MqttOptions ingest_options = IngestOptionsFrom(config.mqtt, config.ingest);
  ingest_options.password = password;
  std::unique_ptr<ingest::MqttIngest> mqtt;
  Status s = ingest::MqttIngest::Start(ingest_options, store, hooks, &mqtt);
  *ingest = std::move(mqtt);
  return s;
}

}  // namespace

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kBusy: return kExitTempFail;
    case Status::Code::kCorruption:
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound: return kExitDataErr;
    default: return kExitIoErr;
  }
}


int RunService(const config::Config& config, const std::string& config_path, ServiceMode mode) {
  const bool serve_only = mode == ServiceMode::kServeReadOnly;
  Log log(ParseLogLevel(config.log.level));
  sigset_t signals = BlockHandledSignals();

  std::vector<std::string> tokens;
  if (!config.http.auth_token_file.empty()) {
    if (Status s = config::ReadTokenFile(config.http.auth_token_file, &tokens); !s.ok()) {
      log.Write(LogLevel::kError, "config: http.auth_token_file: " + s.message());
      return kExitConfig;
    }
  }
  std::string password;
  if (!serve_only && !config.mqtt.password_file.empty()) {
    if (Status s = config::ReadSecretFile(config.mqtt.password_file, &password); !s.ok()) {
      log.Write(LogLevel::kError, "config: mqtt.password_file: " + s.message());
      return kExitConfig;
    }
  }

  // A read-only open creates nothing, so there is nothing to take back.
  std::optional<StartCreates> start_creates;
  if (!serve_only) start_creates.emplace(config.storage.data_dir);
  storage::StoreOptions store_options = StoreOptionsFrom(config);
  store_options.read_only = serve_only;
  std::unique_ptr<storage::Store> store;
  if (Status s = storage::Store::Open(store_options, &store); !s.ok()) {
    log.Write(LogLevel::kError, "storage: " + s.ToString());
    return ExitCodeFor(s);
  }
  log.Write(LogLevel::kInfo, "storage: opened " + config.storage.data_dir + (serve_only ? " read-only; ingest is off" : ""));
  for (const std::string& name : store->Stats().dropped_indexes) {
    log.Write(LogLevel::kInfo, "index " + name +
                                   ": entries dropped (no longer declared, or declared with other keys); "
                                   "readings untouched");
  }

  metrics::Exporter exporter(HotnessOptionsFrom(config.metrics), metrics::HotnessTracker::Clock::now,
                             IndexNames(*store));
  // Reported once before HTTP serves, so the first scrape has every index's series.
  std::vector<int> index_deciles(store->Indexes().size(), -1);
  ReportIndexes(*store, serve_only, &exporter, &index_deciles, &log);
  exporter.SetStoreFiguresSource([&store] {
    storage::StoreStats st = store->Stats();
    return metrics::StoreFigures{st.sst_bytes, st.memtable_bytes, st.pending_compaction_bytes, st.stall_micros,
                                 st.estimated_keys, st.block_cache_misses, st.block_cache_bytes,
                                 st.block_cache_capacity_bytes, st.corruption_errors,
                                 st.wal_syncs};
  });
  std::unique_ptr<ingest::Source> ingest;

  HostPort listen;
  if (!ParseHostPort(config.http.listen, &listen).ok()) {
    log.Write(LogLevel::kError, "config: http.listen: expected host:port, got " + config.http.listen);
    return kExitConfig;
  }
  api::RouterHooks router_hooks;
  router_hooks.ops.metrics = [&exporter] { return exporter.Serialize(); };
  const std::chrono::seconds drops_unready(config.mqtt.broker_drops_unready_seconds);
  router_hooks.ops.ready = [&ingest, &store, drops_unready, serve_only](std::string* detail) {
    if (serve_only) {
      *detail = "serving a read-only store (readingsd serve): ingest is off";
      return true;
    }
    if (!ingest) {
      *detail = "starting";
      return false;
    }
    if (storage::StoreStats st = store->Stats(); st.corruption_errors > 0) {
      *detail = StoreDamage(st);
      return false;
    }
    const bool ready = Readiness(ingest->State(), drops_unready, detail);
    // A backfill leaves the daemon ready (readings are taken and stored); it is said here.
    for (const storage::IndexStatus& index : store->Indexes()) {
      if (!index.active) *detail += "; index " + index.spec.name + " is being built (" + Percent(index.built) + ")";
    }
    return ready;
  };
  router_hooks.on_partition_read = [&exporter](std::string_view device, std::size_t items, std::size_t bytes) {
    exporter.hotness().RecordRead(storage::PartitionKey(device), items, bytes);
  };
  router_hooks.on_index_partition_read = [&exporter](std::string_view index, std::string_view partition,
                                                     std::size_t items, std::size_t bytes) {
    if (metrics::HotnessTracker* tracker = exporter.index_hotness(index)) {
      tracker->RecordRead(partition, items, bytes);
    }
  };
  ingest::IngestHooks ingest_hooks = WriteHooks(*store, &exporter, &log);
  ingest_hooks.on_readings_deleted = [&exporter](uint64_t removed) {
    exporter.readings_deleted().Increment(static_cast<double>(removed));
  };
  router_hooks.write.write = [&store, &ingest_hooks](std::span<const storage::Reading> readings) {
    return ingest::WriteReadings(store.get(), ingest_hooks, readings);
  };
  router_hooks.write.on_rejected = ingest_hooks.on_rejected;
  if (!serve_only) router_hooks.delete_readings = DeleteReadingsHook(store.get(), ingest_hooks.on_readings_deleted, &log);
  api::RouterOptions router_options = RouterOptionsFrom(config.http, config.ingest, tokens);
  router_options.cluster = ForwardOptionsFrom(config);
  // With [nats], writes and deletes through the HTTP API go into the stream (docs/cluster.md).
  std::unique_ptr<ingest::NatsPublisher> publisher;  // before the router, which calls it
  if (!serve_only && !config.nats.servers.empty()) {
    const ingest::NatsOptions nats_options = NatsOptionsFrom(config);
    if (Status s = ingest::NatsPublisher::Start(nats_options, &publisher); !s.ok()) {
      log.Write(LogLevel::kError, s.ToString());
      return kExitConfig;
    }
    router_options.write.stream_message_bytes = nats_options.payload.max_payload_bytes;
    router_options.write.stream_message_readings = nats_options.payload.max_batch;
    router_hooks.write.publish = [&publisher](std::span<const ingest::StreamMessage> messages) {
      return publisher->Publish(messages);
    };
    router_hooks.delete_readings = StreamDeleteHook(publisher.get(), &log);
  }
  std::unique_ptr<api::Router> router;  // before `server`, which serves it until destroyed
  if (Status s = api::Router::Make(router_options, store.get(), router_hooks, &router); !s.ok()) {
    log.Write(LogLevel::kError, "http: " + s.ToString());
    return kExitConfig;
  }
  http::ServerHooks server_hooks;
  server_hooks.on_request = [&exporter](std::string_view endpoint, double seconds) {
    exporter.query_seconds(endpoint).Observe(seconds);
  };
  server_hooks.on_connection_shed = [&exporter] { exporter.http_connections_shed().Increment(); };
  server_hooks.on_connection_refused = [&exporter] { exporter.http_connections_refused().Increment(); };
  std::unique_ptr<http::Server> server;
  if (Status s = http::Server::Start(ServerOptionsFrom(config.http, listen), router.get(), server_hooks, &server);
      !s.ok()) {
    log.Write(LogLevel::kError, "http: " + s.ToString());
    return s.IsInvalidArgument() ? kExitConfig : kExitUnavailable;
  }
  const std::string http_port = std::to_string(server->port());
  log.Write(LogLevel::kInfo, "http: listening on " + listen.host + ":" + http_port);
  const std::string http_host = http::LoopbackFor(listen.host);  // where the watchdog probe connects

  if (Status s = serve_only ? Status::OK() : StartIngest(config, password, store.get(), ingest_hooks, &exporter, &ingest);
      !s.ok()) {
    log.Write(LogLevel::kError, s.ToString());
    return kExitConfig;
  }
  if (start_creates) start_creates->Keep();
  // READY once the store is open and the port listens; the broker may come later (/readyz says).
  sd_notifyf(0, "READY=1\nSTATUS=serving HTTP on port %s, store %s", http_port.c_str(),
             config.storage.data_dir.c_str());
  uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  auto tick = watchdog ? std::chrono::microseconds(watchdog_usec / 3) : std::chrono::microseconds(1'000'000);
  tick = std::min<std::chrono::microseconds>(tick, std::chrono::seconds(1));
  std::string token = tokens.empty() ? "" : tokens.front();
  uint64_t corruption_logged = 0;

  for (;;) {
    timespec timeout{static_cast<time_t>(tick.count() / 1'000'000), static_cast<long>(tick.count() % 1'000'000) * 1000};
    int sig = sigtimedwait(&signals, nullptr, &timeout);
    if (sig == SIGTERM || sig == SIGINT) {
      log.Write(LogLevel::kInfo, std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
      break;
    }
    if (sig == SIGHUP) Reload(config, config_path, &log);
    log.ReportSuppressed();
    LogCorruption(*store, &corruption_logged, &log);
    ReportIndexes(*store, serve_only, &exporter, &index_deciles, &log);
    if (watchdog) PingWatchdog(ingest.get(), http_host, http_port, token, &log);
  }

  sd_notify(0, "STOPPING=1\nSTATUS=stopping: finishing in-flight writes");
  if (ingest) ingest->Stop(std::chrono::seconds(10));
  server->Stop();
  const uint64_t written = ingest ? ingest->State().readings_written : 0;
  store.reset();
  log.Write(LogLevel::kInfo, "stopped; " + std::to_string(written) + " readings written this run");
  return kExitOk;
}

}  // namespace readingsd::daemon
