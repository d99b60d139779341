#include "ingest/nats_ingest.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cluster/partition.h"
#include "ingest/dead_letter.h"
#include "ingest/nats_publish.h"
#include "ingest/nats_util.h"
#include "ingest/pending.h"

namespace readingsd::ingest {
namespace {

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
    if (nc_ == nullptr) return;
    // The library calls back on a thread of its own, and closing posts a last "disconnected"
    // there that Destroy does not wait for: it would run on this object once freed. Callbacks run
    // in the order posted, so once "closed" (posted last) has run, none is left to come.
    natsConnection_Close(nc_);
    std::unique_lock lock(closed_mu_);
    closed_cv_.wait(lock, [this] { return closed_; });
    lock.unlock();
    natsConnection_Destroy(nc_);
  }

  Status Init() {
    OpenNatsLibrary();
    natsOptions* opts = nullptr;
    natsStatus s = MakeNatsOptions(options_.servers, options_.name, options_.retry_min, &OnConnected, this, &opts);
    if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, &OnDisconnected, this);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, &OnConnected, this);
    if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, &OnClosed, this);
    if (s != NATS_OK) {
      natsOptions_Destroy(opts);
      return Status::InvalidArgument("nats: " + NatsWhy(s) + " (check nats.servers)");
    }
    // With a connected callback, a server that is not up yet is not an error: the library
    // connects in the background, and the threads wait for it.
    s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    if (s == NATS_OK) HandleConnection(true);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) return Status::IOError("nats: cannot connect: " + NatsWhy(s));
    if (natsStatus js = natsConnection_JetStream(&js_, nc_, nullptr); js != NATS_OK) {
      return Status::IOError("nats: no JetStream context: " + NatsWhy(js));
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
  static void OnClosed(natsConnection*, void* self) {
    auto* source = static_cast<NatsSource*>(self);
    std::lock_guard lock(source->closed_mu_);
    source->closed_ = true;
    source->closed_cv_.notify_all();
  }

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
      Fail("cannot look up stream " + options_.stream + ": " + NatsWhy(s, error));
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
      Fail("cannot create stream " + options_.stream + ": " + NatsWhy(s, error));
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
    if (!Prepare(durable, &sub_options.Config, &error)) return nullptr;
    natsSubscription* sub = nullptr;
    if (natsStatus s = js_PullSubscribe(&sub, js_, filter.c_str(), durable.c_str(), nullptr, &sub_options, &error);
        s != NATS_OK) {
      Fail("cannot bind consumer " + durable + " on " + filter + ": " + NatsWhy(s, error));
      return nullptr;
    }
    Log(LogLevel::kInfo, "nats: consuming partition " + std::to_string(partition) + " as " + durable);
    if (++bound_ == options_.owned.size()) state_.Update([](IngestState& s) { s.subscribed = true; });
    return sub;
  }

  // What Bind finds of an existing consumer. One that holds messages delivered and never acked
  // (a node that died, a fetch whose answer came too late, a lost ack) would deliver them again
  // only after everything delivered since, out of the stream's order; a delete must come after
  // the readings before it and before those after it. So such a consumer is made again from its
  // ack floor (every message up to it is acked, so stored or deleted): all after it comes again in
  // stream order, and each reading is stored once more under its key, each delete applied again,
  // which leaves what the stream's order leaves. Otherwise its place is kept, and it is given
  // our AckWait (a consumer keeps the one it was made with, whatever a later bind asks for).
  // False (and failed) when the consumer cannot be updated or deleted.
  bool Prepare(const std::string& durable, jsConsumerConfig* config, jsErrCode* error) {
    jsConsumerInfo* info = nullptr;
    if (js_GetConsumerInfo(&info, js_, options_.stream.c_str(), durable.c_str(), nullptr, error) != NATS_OK) {
      return true;  // none yet: js_PullSubscribe makes it with ours
    }
    bool ok = true;
    if (info->NumAckPending > 0) {
      const uint64_t floor = info->AckFloor.Stream;
      if (natsStatus s = js_DeleteConsumer(js_, options_.stream.c_str(), durable.c_str(), nullptr, error); s != NATS_OK) {
        Fail("cannot make consumer " + durable + " again from its ack floor: " + NatsWhy(s, *error));
        ok = false;
      } else {
        config->DeliverPolicy = js_DeliverByStartSequence;
        config->OptStartSeq = floor + 1;
        Log(LogLevel::kInfo, "nats: consumer " + durable + " had " + std::to_string(info->NumAckPending) +
                                 " messages delivered and not acked: made again from stream sequence " +
                                 std::to_string(floor + 1) + ", to take them in stream order");
      }
      jsConsumerInfo_Destroy(info);
      return ok;
    }
    // A consumer made again above keeps its start: a bind must ask for what it has.
    config->DeliverPolicy = info->Config->DeliverPolicy;
    config->OptStartSeq = info->Config->OptStartSeq;
    const int64_t want = std::chrono::nanoseconds(options_.ack_wait).count();
    if (info->Config->AckWait != want) {
      const int64_t had = info->Config->AckWait;
      info->Config->AckWait = want;
      jsConsumerInfo* updated = nullptr;
      if (natsStatus s = js_UpdateConsumer(&updated, js_, options_.stream.c_str(), info->Config, nullptr, error);
          s != NATS_OK) {
        Fail("cannot set ack_wait on consumer " + durable + ": " + NatsWhy(s, *error));
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
        Log(LogLevel::kWarning, "nats: cannot publish to dead-letter subject " + options_.dead_letter_subject + ": " + NatsWhy(s));
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

  // Writes what `pending` holds, retrying while the store fails. False when stopping first.
  bool WritePending(std::size_t i, PendingWrites* pending, std::chrono::milliseconds* retry) {
    bool written = pending->Write();
    while (!written && Sleep(i, *retry)) {
      *retry = std::min(*retry * 2, options_.retry_max);
      written = pending->Write();
    }
    while (!written && std::chrono::steady_clock::now() < stop_deadline_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      written = pending->Write();
    }
    return written;
  }

  // A delete message (kDeleteHeader `range`) of `device`: applied to the store, retried while it
  // fails (a range deleted in part is deleted again whole). False when stopping first.
  bool ApplyDelete(std::size_t i, const std::string& device, const char* range, natsMsg* msg,
                   std::chrono::milliseconds* retry) {
    std::string lower, upper;
    if (Status s = ParseDeleteHeader(range, &lower, &upper); !s.ok()) {
      Log(LogLevel::kError, "nats: a message on " + std::string(natsMsg_GetSubject(msg)) + " is not a delete: " +
                                s.message() + "; passed over");
      return true;
    }
    uint64_t sequence = 0;
    if (jsMsgMetaData* meta = nullptr; natsMsg_GetMetaData(&meta, msg) == NATS_OK) {
      sequence = meta->Sequence.Stream;
      jsMsgMetaData_Destroy(meta);
    }
    for (;;) {
      uint64_t deleted = 0;
      const Status s = store_->DeleteReadings(
          device, lower, upper,
          [this](uint64_t removed) {
            if (hooks_.on_readings_deleted) hooks_.on_readings_deleted(removed);
          },
          &deleted);
      Log(s.ok() ? LogLevel::kInfo : LogLevel::kError,
          "delete: device " + device + ", readings in [lower upper) = [" + std::string(range) + ") (stream sequence " +
              std::to_string(sequence) + "): " + std::to_string(deleted) + " deleted" +
              (s.ok() ? "" : "; then it failed: " + s.ToString()));
      if (s.ok()) return true;
      if (!Sleep(i, *retry)) return false;
      *retry = std::min(*retry * 2, options_.retry_max);
    }
  }

  // Whether a message of `list` was delivered before: something delivered earlier was not acked
  // and comes out of the stream's order (Prepare).
  static bool Redelivered(const natsMsgList& list) {
    for (int m = 0; m < list.Count; ++m) {
      jsMsgMetaData* meta = nullptr;
      if (natsMsg_GetMetaData(&meta, list.Msgs[m]) != NATS_OK) continue;
      const bool again = meta->NumDelivered > 1;
      jsMsgMetaData_Destroy(meta);
      if (again) return true;
    }
    return false;
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
      const bool redelivered = s == NATS_OK && Redelivered(list);
      if (s != NATS_OK || redelivered) {
        // Bind again: the consumer or the stream may be gone. A consumer made anew starts at the
        // stream's first message, and what is stored already is stored once. A redelivery makes
        // the consumer again from its ack floor (Prepare).
        if (!redelivered) Fail("fetch on partition " + std::to_string(partition) + ": " + NatsWhy(s, error));
        natsMsgList_Destroy(&list);
        natsSubscription_Destroy(sub);
        sub = nullptr;
        Unbound();
        if (!redelivered) {
          Sleep(i, retry);
          retry = std::min(retry * 2, options_.retry_max);
        }
        continue;
      }
      retry = options_.retry_min;
      // No ack before the WAL: a batch the store will not take stays unacked and is retried;
      // stopping then leaves it to JetStream's redelivery. A delete comes after the readings
      // before it are written, and before those after it.
      bool done = true;
      for (int m = 0; m < list.Count && done; ++m) {
        natsMsg* msg = list.Msgs[m];
        const std::string_view subject(natsMsg_GetSubject(msg));
        parsed = {};
        const std::string device = DeviceOf(subject, partition, &parsed);
        if (const char* range = nullptr; natsMsgHeader_Get(msg, kDeleteHeader, &range) == NATS_OK) {
          pending.Add(subject, &parsed);  // a device of another partition is refused, as a reading
          done = WritePending(i, &pending, &retry) && (device.empty() || ApplyDelete(i, device, range, msg, &retry));
          continue;
        }
        const std::string_view payload(natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
        if (!device.empty()) ParsePayloadFor(options_.payload, device, payload, &parsed);
        pending.Add(subject, &parsed);
        DeadLetters(subject, payload, parsed);
      }
      if (done) done = WritePending(i, &pending, &retry);
      if (done) {
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
  std::mutex closed_mu_;
  std::condition_variable closed_cv_;
  bool closed_ = false;  // the library's closed callback has run; guarded by closed_mu_
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

Status CheckNames(const NatsOptions& options) {
  if (options.servers.empty()) return Status::InvalidArgument("nats: no servers");
  if (!IsNameToken(options.stream) || !IsNameToken(options.durable_prefix)) {
    return Status::InvalidArgument("nats: stream and durable_prefix must not hold '.', '*', '>' or spaces");
  }
  if (options.subject_prefix.empty() || options.subject_prefix.find_first_of("*> \t\r\n") != std::string::npos ||
      options.subject_prefix.front() == '.' || options.subject_prefix.back() == '.') {
    return Status::InvalidArgument("nats: subject_prefix must be a subject without wildcards");
  }
  return Status::OK();
}

Status NatsIngest::Start(const NatsOptions& options, storage::Store* store, IngestHooks hooks,
                         std::unique_ptr<NatsIngest>* out) {
  if (options.partitions == 0) return Status::InvalidArgument("nats: partitions must be at least 1");
  if (options.owned.empty()) return Status::InvalidArgument("nats: this node owns no partition");
  for (uint32_t p : options.owned) {
    if (p >= options.partitions) {
      return Status::InvalidArgument("nats: partition " + std::to_string(p) + " is not below " +
                                     std::to_string(options.partitions));
    }
  }
  if (Status s = CheckNames(options); !s.ok()) return s;
  auto ingest = std::make_unique<NatsSource>(options, store, std::move(hooks));
  if (Status s = ingest->Init(); !s.ok()) return s;
  *out = std::move(ingest);
  return Status::OK();
}

}  // namespace readingsd::ingest
