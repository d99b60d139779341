#include "ingest/mqtt_ingest.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>


#include "ingest/dead_letter.h"
#include "ingest/pending.h"

namespace readingsd::ingest {
namespace {

std::once_flag lib_init;

// Session expiry for MQTT v5: without it a v5 broker drops the session at disconnect, which
// would turn "persistent session" into a lie. 0xFFFFFFFF = never expires; the broker's own
// persistent_client_expiration still bounds it.
constexpr uint32_t kSessionNeverExpires = 0xFFFFFFFF;

// mosquitto publishes (retained, every sys_interval) how many messages it dropped because a
// client's queue was full. It is not per client, but it is the only sign a subscriber gets that
// readings were lost before they ever reached it.
constexpr const char* kBrokerDroppedTopic = "$SYS/broker/publish/messages/dropped";

class MosquittoIngest : public MqttIngest {
 public:
  MosquittoIngest(const MqttOptions& options, storage::Store* store, IngestHooks hooks)
      : options_(options), store_(store), hooks_(std::move(hooks)), rng_(std::random_device{}()) {}

  ~MosquittoIngest() override {
    Stop(std::chrono::seconds(5));
    if (mosq_ != nullptr) mosquitto_destroy(mosq_);
    mosquitto_property_free_all(&connect_properties_);
  }

  Status Init() {
    std::call_once(lib_init, [] { mosquitto_lib_init(); });
    mosq_ = mosquitto_new(options_.client_id.c_str(), /*clean_session=*/false, this);
    if (mosq_ == nullptr) return Status::InvalidArgument("mqtt: cannot create client (client id empty or too long?)");
    // The heart of the ack rule, see the header: packets leave only in mosquitto_loop_write.
    mosquitto_threaded_set(mosq_, options_.ack_after_write);
    mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, options_.mqtt_v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311);
    if (options_.mqtt_v5) {
      // How many unacked PUBLISHes the broker may send us: one group commit's worth.
      mosquitto_int_option(mosq_, MOSQ_OPT_RECEIVE_MAXIMUM, static_cast<int>(std::min<std::size_t>(options_.max_batch, 65535)));
      mosquitto_property_add_int32(&connect_properties_, MQTT_PROP_SESSION_EXPIRY_INTERVAL, kSessionNeverExpires);
    }
    if (!options_.username.empty() &&
        mosquitto_username_pw_set(mosq_, options_.username.c_str(),
                                  options_.password.empty() ? nullptr : options_.password.c_str()) != MOSQ_ERR_SUCCESS) {
      return Status::InvalidArgument("mqtt: invalid username/password");
    }
    if (!options_.ca_file.empty()) {
      int rc = mosquitto_tls_set(mosq_, options_.ca_file.c_str(), nullptr,
                                 options_.cert_file.empty() ? nullptr : options_.cert_file.c_str(),
                                 options_.key_file.empty() ? nullptr : options_.key_file.c_str(), nullptr);
      if (rc != MOSQ_ERR_SUCCESS) {
        return Status::InvalidArgument(std::string("mqtt: TLS setup failed: ") + mosquitto_strerror(rc) +
                                       " (check ca_file, cert_file, key_file)");
      }
      mosquitto_tls_insecure_set(mosq_, options_.tls_insecure);
    }
    mosquitto_connect_v5_callback_set(mosq_, &OnConnect);
    mosquitto_disconnect_v5_callback_set(mosq_, &OnDisconnect);
    mosquitto_message_v5_callback_set(mosq_, &OnMessage);
    mosquitto_subscribe_v5_callback_set(mosq_, &OnSubscribe);
    mosquitto_log_callback_set(mosq_, &OnLog);
    thread_ = std::thread([this] { Run(); });
    return Status::OK();
  }

  void Stop(std::chrono::milliseconds timeout) override {
    std::lock_guard lock(stop_mu_);
    if (!thread_.joinable()) return;
    stop_deadline_ = std::chrono::steady_clock::now() + timeout;
    stopping_ = true;
    thread_.join();
  }

  IngestState State() const override { return state_.Get(); }

  std::chrono::steady_clock::time_point LastLoop() const override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_loop_.load()));
  }

 private:
  void Log(LogLevel level, std::string_view msg) {
    if (hooks_.log) hooks_.log(level, msg);
  }

  template <typename F>
  void UpdateState(F&& f) {
    state_.Update(std::forward<F>(f));
  }

  void Beat() { last_loop_ = std::chrono::steady_clock::now().time_since_epoch().count(); }

  // --- libmosquitto callbacks (run inside mosquitto_loop_read on our thread) ---

  static void OnConnect(mosquitto*, void* self, int rc, int flags, const mosquitto_property*) {
    static_cast<MosquittoIngest*>(self)->HandleConnect(rc, flags);
  }
  static void OnDisconnect(mosquitto*, void* self, int rc, const mosquitto_property*) {
    static_cast<MosquittoIngest*>(self)->HandleDisconnect(rc);
  }
  static void OnSubscribe(mosquitto*, void* self, int, int, const int*, const mosquitto_property*) {
    auto* ingest = static_cast<MosquittoIngest*>(self);
    if (--ingest->pending_subacks_ == 0) ingest->UpdateState([](IngestState& s) { s.subscribed = true; });
  }
  static void OnMessage(mosquitto*, void* self, const mosquitto_message* msg, const mosquitto_property*) {
    static_cast<MosquittoIngest*>(self)->HandleMessage(*msg);
  }
  // libmosquitto tells why a TLS handshake failed (OpenSSL's "certificate verify failed", a
  // broker's "alert certificate required") only in its log: keep its errors for the next report.
  static void OnLog(mosquitto*, void* self, int level, const char* message) {
    auto* ingest = static_cast<MosquittoIngest*>(self);
    if (level != MOSQ_LOG_ERR || ingest->library_errors_.size() > 1024) return;
    ingest->library_errors_ += (ingest->library_errors_.empty() ? "" : "; ") + std::string(message);
  }

  // What a libmosquitto error code means (`err`: errno right after the call), with what
  // libmosquitto logged as errors since the current connection attempt began.
  std::string Why(int rc, int err) const {
    std::string why = rc == MOSQ_ERR_ERRNO ? std::strerror(err) : mosquitto_strerror(rc);
    if (!library_errors_.empty()) why += " (" + library_errors_ + ")";
    return why;
  }
  bool TlsFailure(int rc) const { return rc == MOSQ_ERR_TLS || library_errors_.find("SSL") != std::string::npos; }

  void HandleConnect(int rc, int flags) {
    if (rc != 0) {
      std::string why = options_.mqtt_v5 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc);
      Log(LogLevel::kError, "mqtt: broker refused the connection: " + why);
      UpdateState([&](IngestState& s) { s.last_error = "broker refused: " + why; });
      refused_ = true;  // the drop that follows says no more than this
      return;
    }
    connack_ok_ = true;
    connected_at_ = std::chrono::steady_clock::now();
    bool session_present = (flags & 1) != 0;
    bool reconnect = ever_connected_;
    bool lost = reconnect && !session_present;
    ever_connected_ = true;
    UpdateState([&](IngestState& s) {
      s.connected = true;
      s.session_present = session_present;
      s.session_lost = s.session_lost || lost;
      s.last_error.clear();
    });
    if (lost) {
      Log(LogLevel::kWarning,
          "mqtt: the broker had no session for client id '" + options_.client_id +
              "' on reconnect: readings published while we were away may be lost (broker restarted without "
              "persistence, or persistent_client_expiration passed)");
    }
    Log(LogLevel::kInfo, "mqtt: connected to " + options_.host + ":" + std::to_string(options_.port) +
                             (session_present ? " (session resumed)" : " (new session)"));
    pending_subacks_ = options_.topics.size() + 1;
    for (const auto& topic : options_.topics) {
      int sub = mosquitto_subscribe_v5(mosq_, nullptr, topic.c_str(), 1, 0, nullptr);
      if (sub != MOSQ_ERR_SUCCESS) {
        Log(LogLevel::kError, "mqtt: cannot subscribe to '" + topic + "': " + mosquitto_strerror(sub));
      }
    }
    mosquitto_subscribe_v5(mosq_, nullptr, kBrokerDroppedTopic, 0, 0, nullptr);
    backoff_ = options_.reconnect_min;
    if (hooks_.on_connection) hooks_.on_connection(true);
  }

  // A connection that was up went down (called by libmosquitto and again by Dropped: only the
  // first call does anything). A connection attempt that never got that far is Dropped's.
  void HandleDisconnect(int rc, int err = errno) {
    bool was = false;
    std::string why = rc != 0 ? Why(rc, err) : "";
    UpdateState([&](IngestState& s) {
      was = s.connected;
      s.connected = false;
      s.subscribed = false;
      if (was && rc != 0) s.last_error = "connection lost: " + why;
    });
    if (was) {
      if (rc != 0) {
        Log(LogLevel::kWarning, "mqtt: connection lost: " + why);
        NoteShortConnection(rc);
      }
      if (hooks_.on_connection) hooks_.on_connection(false);
    }
  }

  // Two clients with one client id take the session from each other on every reconnect,
  // forever; each only sees "connection lost". An MQTT 5 broker says why (reason 0x8E,
  // session taken over); with 3.1.1 the sign is the pattern: three connections in a minute
  // that each lasted under 10 s and were made at the first try (a broker that restarts or a
  // network that drops refuses some attempts in between; a broker handing our session to a
  // twin never does).
  void NoteShortConnection(int rc) {
    const auto now = std::chrono::steady_clock::now();
    if (now - connected_at_ < std::chrono::seconds(10) && !connect_failed_) short_connections_.push_back(now);
    connect_failed_ = false;
    while (!short_connections_.empty() && now - short_connections_.front() > std::chrono::seconds(60)) {
      short_connections_.pop_front();
    }
    const bool taken_over = options_.mqtt_v5 && rc == MQTT_RC_SESSION_TAKEN_OVER;
    if (!taken_over && short_connections_.size() < 3) return;
    std::string conflict =
        (taken_over ? "the broker gave our session to another client with client id '"
                    : "the connection was lost " + std::to_string(short_connections_.size()) +
                          " times in a minute, each within 10 s of connecting: another client with client id '") +
        options_.client_id + "' (e.g. a second readingsd with the same config) " +
        (taken_over ? "connected" : "is the likely cause") +
        "; give each one its own mqtt.client_id, or serve a copy read-only with `readingsd serve`";
    UpdateState([&](IngestState& s) {
      s.client_id_conflict = conflict;
      s.client_id_conflict_at = now;
    });
    Log(LogLevel::kError, "mqtt: " + conflict);
    short_connections_.clear();  // the next warning needs three more
  }

  void HandleMessage(const mosquitto_message& msg) {
    std::string_view payload(static_cast<const char*>(msg.payload), static_cast<std::size_t>(msg.payloadlen));
    if (std::strcmp(msg.topic, kBrokerDroppedTopic) == 0) {
      HandleBrokerDropped(payload);
      return;
    }
    ParsePayload(options_.payload, msg.topic, payload, &parsed_);
    pending_.Add(msg.topic, &parsed_);
    for (const auto& rejection : parsed_.rejections) DeadLetter(msg.topic, payload, rejection);
  }

  void HandleBrokerDropped(std::string_view payload) {
    uint64_t dropped = 0;
    if (std::from_chars(payload.data(), payload.data() + payload.size(), dropped).ec != std::errc()) return;
    const bool first = !broker_dropped_seen_;
    broker_dropped_seen_ = true;
    uint64_t rose = 0;
    UpdateState([&](IngestState& s) {
      // A lower count: the broker restarted, and every drop it counts is new to us.
      rose = dropped >= s.broker_dropped ? dropped - s.broker_dropped : dropped;
      s.broker_dropped = dropped;
      if (!first && rose > 0) s.broker_dropped_rose = std::chrono::steady_clock::now();
    });
    if (hooks_.on_broker_dropped) hooks_.on_broker_dropped(dropped);
    if (first && dropped > 0) {
      Log(LogLevel::kWarning, "mqtt: the broker reports " + std::to_string(dropped) +
                                  " messages dropped for full client queues since it started: readings may "
                                  "have been lost before reaching us; raise max_queued_messages (see "
                                  "systemd/mosquitto-readingsd.conf)");
    } else if (!first && rose > 0) {
      Log(LogLevel::kWarning, "mqtt: the broker dropped " + std::to_string(rose) +
                                  " more messages for full client queues (" + std::to_string(dropped) +
                                  " since it started): readings it acknowledged to devices are being lost; "
                                  "raise max_queued_messages (see systemd/mosquitto-readingsd.conf)");
    }
  }

  // What was rejected, with why, goes to the dead-letter topic (queued like the PUBACKs, so it
  // leaves with them).
  void DeadLetter(std::string_view topic, std::string_view payload, const Rejection& rejection) {
    if (options_.dead_letter_topic.empty()) return;
    const std::string body = DeadLetterBody(topic, payload, rejection);
    mosquitto_publish_v5(mosq_, nullptr, options_.dead_letter_topic.c_str(), static_cast<int>(body.size()),
                         body.data(), 1, false, nullptr);
  }

  // --- the loop ---

  void Connect() {
    library_errors_.clear();
    connack_ok_ = false;
    refused_ = false;
    int rc = ever_tried_ ? mosquitto_reconnect(mosq_)
                         : mosquitto_connect_bind_v5(mosq_, options_.host.c_str(), options_.port,
                                                     options_.keepalive_seconds, nullptr, connect_properties_);
    int err = errno;
    ever_tried_ = true;
    if (rc != MOSQ_ERR_SUCCESS) {
      socket_up_ = false;
      ConnectFailed(Why(rc, err), TlsFailure(rc));
      return;
    }
    socket_up_ = true;
  }

  // The attempt ended before the broker accepted us: TCP, the TLS handshake (which a broker
  // that wants a client certificate may fail only after connect returned) or CONNACK. TLS
  // failures are errors: retrying will not fix a certificate. Retries back off exponentially,
  // with jitter, so a fleet of daemons does not reconnect in lockstep.
  void ConnectFailed(const std::string& why, bool tls) {
    connect_failed_ = true;
    if (!refused_) {
      Log(tls ? LogLevel::kError : LogLevel::kWarning,
          "mqtt: cannot connect to " + options_.host + ":" + std::to_string(options_.port) + ": " + why +
              "; retrying in " + std::to_string(backoff_.count()) + " ms");
      UpdateState([&](IngestState& s) { s.last_error = "cannot connect: " + why; });
    }
    next_connect_ = std::chrono::steady_clock::now() + backoff_;
    auto doubled = std::min(backoff_ * 2, options_.reconnect_max);
    std::uniform_int_distribution<long> jitter(0, doubled.count() / 4);
    backoff_ = std::min(doubled + std::chrono::milliseconds(jitter(rng_)), options_.reconnect_max);
  }

  // Reads whatever the socket has, until max_batch readings are pending or it runs dry.
  void ReadAvailable(int fd) {
    while (socket_up_ && pending_.size() < options_.max_batch && !stopping_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
      if (int rc = mosquitto_loop_read(mosq_, 1); rc != MOSQ_ERR_SUCCESS) {
        Dropped(rc, errno);
        return;
      }
    }
  }

  void Dropped(int rc, int err) {
    socket_up_ = false;
    if (rc == MOSQ_ERR_SUCCESS) rc = MOSQ_ERR_CONN_LOST;
    HandleDisconnect(rc, err);
    if (connack_ok_) {
      next_connect_ = std::chrono::steady_clock::now() + backoff_;
    } else {
      ConnectFailed(Why(rc, err), TlsFailure(rc));
    }
  }

  void FlushAcks() {
    if (!socket_up_ || !mosquitto_want_write(mosq_)) return;
    if (int rc = mosquitto_loop_write(mosq_, 1); rc != MOSQ_ERR_SUCCESS) Dropped(rc, errno);
  }

  void Run() {
    backoff_ = options_.reconnect_min;
    auto retry_write = options_.reconnect_min;
    while (!stopping_) {
      Beat();
      if (!socket_up_) {
        if (std::chrono::steady_clock::now() >= next_connect_) Connect();
        if (!socket_up_) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
      }
      int fd = mosquitto_socket(mosq_);
      pollfd p{fd, static_cast<short>(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0)), 0};
      poll(&p, 1, 100);
      ReadAvailable(fd);
      if (!pending_.Write()) {
        // Acks stay queued; the broker keeps the messages. Back off, then try the batch again.
        std::this_thread::sleep_for(retry_write);
        retry_write = std::min(retry_write * 2, options_.reconnect_max);
        continue;
      }
      retry_write = options_.reconnect_min;
      FlushAcks();
      if (socket_up_) {
        if (int rc = mosquitto_loop_misc(mosq_); rc != MOSQ_ERR_SUCCESS) Dropped(rc, errno);
      }
    }
    Shutdown();
  }

  // Stop: whatever was read is written and acked; then a clean DISCONNECT (session kept).
  void Shutdown() {
    while (!pending_.Write() && std::chrono::steady_clock::now() < stop_deadline_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!pending_.empty()) {
      Log(LogLevel::kError, "ingest: stopping with " + std::to_string(pending_.size()) +
                                " unwritten readings; they were not acked and the broker will redeliver them");
      return;  // no flush: the unwritten readings must not be acked
    }
    if (!socket_up_) return;
    mosquitto_disconnect_v5(mosq_, 0, nullptr);
    while (socket_up_ && mosquitto_want_write(mosq_) && std::chrono::steady_clock::now() < stop_deadline_) {
      pollfd p{mosquitto_socket(mosq_), POLLOUT, 0};
      poll(&p, 1, 50);
      if (mosquitto_loop_write(mosq_, 1) != MOSQ_ERR_SUCCESS) break;
    }
    HandleDisconnect(0);
  }

  const MqttOptions options_;
  storage::Store* const store_;
  const IngestHooks hooks_;

  mosquitto* mosq_ = nullptr;
  mosquitto_property* connect_properties_ = nullptr;
  std::thread thread_;
  std::mutex stop_mu_;
  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point stop_deadline_;
  std::atomic<std::chrono::steady_clock::rep> last_loop_{0};

  // Owned by the ingest thread.
  bool socket_up_ = false;
  bool ever_tried_ = false;
  bool ever_connected_ = false;
  // The current connection attempt: CONNACK accepted / refused; libmosquitto's logged errors.
  bool connack_ok_ = false;
  std::chrono::steady_clock::time_point connected_at_{};
  std::deque<std::chrono::steady_clock::time_point> short_connections_;  // see NoteShortConnection
  bool connect_failed_ = false;  // an attempt failed since the last connection was lost
  bool refused_ = false;
  std::string library_errors_;
  std::size_t pending_subacks_ = 0;
  bool broker_dropped_seen_ = false;  // the broker's drop count was reported since start
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point next_connect_{};
  std::mt19937 rng_;
  ParsedMessage parsed_;
  SharedState state_;
  PendingWrites pending_{store_, &hooks_, &state_};
};

}  // namespace

Status MqttIngest::Start(const MqttOptions& options, storage::Store* store, IngestHooks hooks,
                         std::unique_ptr<MqttIngest>* out) {
  if (options.topics.empty()) return Status::InvalidArgument("mqtt: no topics to subscribe to");
  for (const auto& topic : options.topics) {
    if (mosquitto_sub_topic_check(topic.c_str()) != MOSQ_ERR_SUCCESS) {
      return Status::InvalidArgument("mqtt: invalid topic filter '" + topic + "'");
    }
  }
  auto ingest = std::make_unique<MosquittoIngest>(options, store, std::move(hooks));
  if (Status s = ingest->Init(); !s.ok()) return s;
  *out = std::move(ingest);
  return Status::OK();
}

}  // namespace readingsd::ingest
