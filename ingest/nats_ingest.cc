#include "ingest/nats_ingest.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "cluster/partition.h"
#include "ingest/dead_letter.h"
#include "ingest/pending.h"

namespace readingsd::ingest {
namespace {

std::once_flag lib_init;

std::string Why(natsStatus s, jsErrCode js_error = static_cast<jsErrCode>(0)) {
  std::string why = natsStatus_GetText(s);
  if (js_error != 0) why += " (JetStream error " + std::to_string(js_error) + ")";
  if (const char* last = nats_GetLastError(nullptr); last != nullptr && *last != '\0') why += ": " + std::string(last);
  return why;
}

// Subjects and consumer names travel as NATS tokens: no separators, wildcards or spaces.
bool IsNameToken(const std::string& s) {
  return !s.empty() && s.find_first_of(".*> \t\r\n") == std::string::npos;
}

class NatsSource : public NatsIngest {
 public:
  NatsSource(const NatsOptions& options, storage::Store* store, IngestHooks hooks)
      : options_(options), store_(store), hooks_(std::move(hooks)), last_loop_(options.owned.size()) {}

  ~NatsSource() override {
    Stop(std::chrono::seconds(5));
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  Status Init() {
    std::call_once(lib_init, [] { nats_Open(-1); });
    natsOptions* opts = nullptr;
    if (natsOptions_Create(&opts) != NATS_OK) return Status::IOError("nats: cannot create options");
    std::vector<const char*> servers;
    for (const std::string& server : options_.servers) servers.push_back(server.c_str());
    natsStatus s = natsOptions_SetServers(opts, servers.data(), static_cast<int>(servers.size()));
    if (s == NATS_OK) s = natsOptions_SetName(opts, options_.name.c_str());
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);  // a node keeps trying forever
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, options_.retry_min.count());
    if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts, true, &OnConnected, this);
    if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, &OnDisconnected, this);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, &OnConnected, this);
    if (s != NATS_OK) {
      natsOptions_Destroy(opts);
      return Status::InvalidArgument("nats: " + Why(s) + " (check nats.servers)");
    }
    // With a connected callback, a server that is not up yet is not an error: the library
    // connects in the background, and the threads wait for it.
    s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    if (s == NATS_OK) HandleConnection(true);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) return Status::IOError("nats: cannot connect: " + Why(s));
    if (natsStatus js = natsConnection_JetStream(&js_, nc_, nullptr); js != NATS_OK) {
      return Status::IOError("nats: no JetStream context: " + Why(js));
    }
    for (std::size_t i = 0; i < options_.owned.size(); ++i) {
      threads_.emplace_back([this, i] { Run(i); });
    }
    return Status::OK();
  }

  void Stop(std::chrono::milliseconds timeout) override {
    std::lock_guard lock(stop_mu_);
    if (threads_.empty()) return;
    stop_deadline_ = std::chrono::steady_clock::now() + timeout;
    stopping_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    // The acks are published asynchronously: see them out before the connection goes.
    if (nc_ != nullptr) natsConnection_FlushTimeout(nc_, 2000);
  }

  IngestState State() const override { return state_.Get(); }

  std::chrono::steady_clock::time_point LastLoop() const override {
    auto oldest = std::chrono::steady_clock::time_point::max();
    for (const auto& beat : last_loop_) {
      oldest = std::min(oldest, std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(beat.load())));
    }
    return oldest;
  }

 private:
  static void OnConnected(natsConnection*, void* self) { static_cast<NatsSource*>(self)->HandleConnection(true); }
  static void OnDisconnected(natsConnection*, void* self) { static_cast<NatsSource*>(self)->HandleConnection(false); }

  void HandleConnection(bool connected) {
    state_.Update([&](IngestState& s) {
      s.connected = connected;
      if (connected) s.last_error.clear();
      if (!connected) s.last_error = "connection to NATS lost";
    });
    Log(connected ? LogLevel::kInfo : LogLevel::kWarning,
        connected ? "nats: connected" : "nats: connection lost; reconnecting");
    if (hooks_.on_connection) hooks_.on_connection(connected);
  }

  void Log(LogLevel level, std::string_view msg) const {
    if (hooks_.log) hooks_.log(level, msg);
  }

  void Fail(const std::string& what) {
    state_.Update([&](IngestState& s) { s.last_error = what; });
    Log(LogLevel::kWarning, "nats: " + what);
  }

  // Creates the stream when it does not exist yet (once; every partition thread asks).
  bool EnsureStream() {
    std::lock_guard lock(stream_mu_);
    if (stream_ready_) return true;
    jsStreamInfo* info = nullptr;
    jsErrCode error = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&info, js_, options_.stream.c_str(), nullptr, &error);
    if (s == NATS_OK) {
      jsStreamInfo_Destroy(info);
      stream_ready_ = true;
      return true;
    }
    if (error != JSStreamNotFoundErr) {
      Fail("cannot look up stream " + options_.stream + ": " + Why(s, error));
      return false;
    }
    const std::string subjects = options_.subject_prefix + ".*.*";
    const char* subject_list[] = {subjects.c_str()};
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = options_.stream.c_str();
    config.Subjects = subject_list;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    config.Replicas = options_.stream_replicas;
    config.MaxAge = std::chrono::nanoseconds(options_.stream_max_age).count();
    error = static_cast<jsErrCode>(0);
    s = js_AddStream(&info, js_, &config, nullptr, &error);
    if (s != NATS_OK && error != JSStreamNameExistErr) {  // another node made it first: fine
      Fail("cannot create stream " + options_.stream + ": " + Why(s, error));
      return false;
    }
    if (info != nullptr) jsStreamInfo_Destroy(info);
    Log(LogLevel::kInfo, "nats: created stream " + options_.stream + " on " + subjects + " with " +
                             std::to_string(options_.stream_replicas) + " replicas");
    stream_ready_ = true;
    return true;
  }

  // Binds partition `partition`'s durable pull consumer, creating it the first time.
  natsSubscription* Bind(uint32_t partition) {
    if (!EnsureStream()) return nullptr;
    const std::string filter = options_.subject_prefix + "." + std::to_string(partition) + ".*";
    const std::string durable = ConsumerName(options_, partition);
    jsSubOptions sub_options;
    jsSubOptions_Init(&sub_options);
    sub_options.Stream = options_.stream.c_str();
    sub_options.Config.AckPolicy = js_AckExplicit;
    sub_options.Config.DeliverPolicy = js_DeliverAll;
    // Room for one fetched batch while the acks of the one before are on their way.
    sub_options.Config.MaxAckPending = static_cast<int64_t>(2 * options_.fetch_batch);
    sub_options.Config.AckWait = std::chrono::nanoseconds(options_.ack_wait).count();
    jsErrCode error = static_cast<jsErrCode>(0);
    if (!KeepAckWait(durable, &error)) return nullptr;
    natsSubscription* sub = nullptr;
    if (natsStatus s = js_PullSubscribe(&sub, js_, filter.c_str(), durable.c_str(), nullptr, &sub_options, &error);
        s != NATS_OK) {
      Fail("cannot bind consumer " + durable + " on " + filter + ": " + Why(s, error));
      return nullptr;
    }
    Log(LogLevel::kInfo, "nats: consuming partition " + std::to_string(partition) + " as " + durable);
    if (++bound_ == options_.owned.size()) state_.Update([](IngestState& s) { s.subscribed = true; });
    return sub;
  }

  // A consumer made by an earlier start keeps the AckWait it was made with, whatever a later
  // bind asks for: set it on the consumer first. False (and failed) when the consumer exists
  // and cannot be updated.
  bool KeepAckWait(const std::string& durable, jsErrCode* error) {
    jsConsumerInfo* info = nullptr;
    if (js_GetConsumerInfo(&info, js_, options_.stream.c_str(), durable.c_str(), nullptr, error) != NATS_OK) {
      return true;  // none yet: js_PullSubscribe makes it with ours
    }
    const int64_t want = std::chrono::nanoseconds(options_.ack_wait).count();
    bool ok = true;
    if (info->Config->AckWait != want) {
      const int64_t had = info->Config->AckWait;
      info->Config->AckWait = want;
      jsConsumerInfo* updated = nullptr;
      if (natsStatus s = js_UpdateConsumer(&updated, js_, options_.stream.c_str(), info->Config, nullptr, error);
          s != NATS_OK) {
        Fail("cannot set ack_wait on consumer " + durable + ": " + Why(s, *error));
        ok = false;
      } else {
        jsConsumerInfo_Destroy(updated);
        Log(LogLevel::kInfo, "nats: consumer " + durable + ": ack wait " + std::to_string(had / 1000000000) + " s -> " +
                                 std::to_string(options_.ack_wait.count()) + " s");
      }
    }
    jsConsumerInfo_Destroy(info);
    return ok;
  }

  // Each rejection of a message to the dead-letter subject, when there is one: core NATS, so a
  // stream on that subject keeps them; published before the batch's acks, as MQTT's are.
  void DeadLetters(std::string_view subject, std::string_view payload, const ParsedMessage& parsed) {
    if (options_.dead_letter_subject.empty()) return;
    for (const Rejection& rejection : parsed.rejections) {
      const std::string body = DeadLetterBody(subject, payload, rejection);
      if (natsStatus s = natsConnection_Publish(nc_, options_.dead_letter_subject.c_str(), body.data(),
                                                static_cast<int>(body.size()));
          s != NATS_OK) {
        Log(LogLevel::kWarning, "nats: cannot publish to dead-letter subject " + options_.dead_letter_subject + ": " + Why(s));
      }
    }
  }

  void Unbound() {
    std::lock_guard lock(stream_mu_);
    stream_ready_ = false;
    --bound_;
    state_.Update([](IngestState& s) { s.subscribed = false; });
  }

  void Beat(std::size_t i) { last_loop_[i] = std::chrono::steady_clock::now().time_since_epoch().count(); }

  // Waits `delay` in short steps, beating; false when stopping.
  bool Sleep(std::size_t i, std::chrono::milliseconds delay) {
    const auto until = std::chrono::steady_clock::now() + delay;
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      Beat(i);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return !stopping_;
  }

  // The device a subject "<prefix>.<partition>.<deviceId>" names, or the rejection of a subject
  // whose device NATS' partition() does not put there: nats.partitions differs from the
  // servers' mapping, and a query for the device would go to the wrong node.
  std::string DeviceOf(std::string_view subject, uint32_t partition, ParsedMessage* parsed) const {
    const std::string head = options_.subject_prefix + "." + std::to_string(partition) + ".";
    const std::string device(subject.substr(std::min(head.size(), subject.size())));
    if (const uint32_t expected = cluster::PartitionOf(device, options_.partitions); expected != partition) {
      parsed->readings.clear();
      parsed->rejections = {{RejectReason::kDeviceIdMismatch,
                             "subject " + std::string(subject) + " files device \"" + device + "\" under partition " +
                                 std::to_string(partition) + ", but partition(" + std::to_string(options_.partitions) +
                                 ") puts it in " + std::to_string(expected) +
                                 ": nats.partitions must equal the P of the servers' partition() mapping",
                             device}};
      return "";
    }
    return device;
  }

  void Run(std::size_t i) {
    const uint32_t partition = options_.owned[i];
    PendingWrites pending(store_, &hooks_, &state_);
    ParsedMessage parsed;
    natsSubscription* sub = nullptr;
    auto retry = options_.retry_min;
    while (!stopping_) {
      Beat(i);
      if (sub == nullptr && (sub = Bind(partition)) == nullptr) {
        Sleep(i, retry);
        retry = std::min(retry * 2, options_.retry_max);
        continue;
      }
      natsMsgList list{nullptr, 0};
      jsErrCode error = static_cast<jsErrCode>(0);
      natsStatus s = natsSubscription_Fetch(&list, sub, static_cast<int>(options_.fetch_batch),
                                            options_.fetch_wait.count(), &error);
      if (s == NATS_TIMEOUT) continue;  // nothing new
      if (s != NATS_OK) {
        // Bind again: the consumer or the stream may be gone. A consumer made anew starts at the
        // stream's first message, and what is stored already is stored once.
        Fail("fetch on partition " + std::to_string(partition) + ": " + Why(s, error));
        natsMsgList_Destroy(&list);
        natsSubscription_Destroy(sub);
        sub = nullptr;
        Unbound();
        Sleep(i, retry);
        retry = std::min(retry * 2, options_.retry_max);
        continue;
      }
      retry = options_.retry_min;
      for (int m = 0; m < list.Count; ++m) {
        natsMsg* msg = list.Msgs[m];
        const std::string_view subject(natsMsg_GetSubject(msg));
        const std::string_view payload(natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
        const std::string device = DeviceOf(subject, partition, &parsed);
        if (!device.empty()) ParsePayloadFor(options_.payload, device, payload, &parsed);
        pending.Add(subject, &parsed);
        DeadLetters(subject, payload, parsed);
      }
      // No ack before the WAL: a batch the store will not take stays unacked and is retried;
      // stopping then leaves it to JetStream's redelivery.
      bool written = pending.Write();
      while (!written && Sleep(i, retry)) {
        retry = std::min(retry * 2, options_.retry_max);
        written = pending.Write();
      }
      while (!written && std::chrono::steady_clock::now() < stop_deadline_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        written = pending.Write();
      }
      if (written) {
        for (int m = 0; m < list.Count; ++m) natsMsg_Ack(list.Msgs[m], nullptr);
      } else {
        Log(LogLevel::kError, "ingest: stopping with " + std::to_string(pending.size()) +
                                  " unwritten readings; they were not acked and JetStream will redeliver them");
      }
      natsMsgList_Destroy(&list);
    }
    // Destroy, not Unsubscribe: the durable consumer stays, with its place in the stream.
    if (sub != nullptr) natsSubscription_Destroy(sub);
  }

  const NatsOptions options_;
  storage::Store* const store_;
  const IngestHooks hooks_;

  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::vector<std::thread> threads_;
  std::mutex stop_mu_;
  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point stop_deadline_ = std::chrono::steady_clock::time_point::max();
  std::vector<std::atomic<std::chrono::steady_clock::rep>> last_loop_;  // per thread
  std::mutex stream_mu_;
  bool stream_ready_ = false;  // guarded by stream_mu_
  std::atomic<std::size_t> bound_{0};
  SharedState state_;
};

}  // namespace

std::string ConsumerName(const NatsOptions& options, uint32_t partition) {
  return options.durable_prefix + "-p" + std::to_string(partition);
}

Status NatsIngest::Start(const NatsOptions& options, storage::Store* store, IngestHooks hooks,
                         std::unique_ptr<NatsIngest>* out) {
  if (options.servers.empty()) return Status::InvalidArgument("nats: no servers");
  if (options.partitions == 0) return Status::InvalidArgument("nats: partitions must be at least 1");
  if (options.owned.empty()) return Status::InvalidArgument("nats: this node owns no partition");
  for (uint32_t p : options.owned) {
    if (p >= options.partitions) {
      return Status::InvalidArgument("nats: partition " + std::to_string(p) + " is not below " +
                                     std::to_string(options.partitions));
    }
  }
  if (!IsNameToken(options.stream) || !IsNameToken(options.durable_prefix)) {
    return Status::InvalidArgument("nats: stream and durable_prefix must not hold '.', '*', '>' or spaces");
  }
  if (options.subject_prefix.empty() || options.subject_prefix.find_first_of("*> \t\r\n") != std::string::npos ||
      options.subject_prefix.front() == '.' || options.subject_prefix.back() == '.') {
    return Status::InvalidArgument("nats: subject_prefix must be a subject without wildcards");
  }
  auto ingest = std::make_unique<NatsSource>(options, store, std::move(hooks));
  if (Status s = ingest->Init(); !s.ok()) return s;
  *out = std::move(ingest);
  return Status::OK();
}

}  // namespace readingsd::ingest
