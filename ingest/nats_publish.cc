#include "ingest/nats_publish.h"

#include <nats/nats.h>

#include <atomic>

#include "base/text.h"
#include "ingest/nats_util.h"

namespace readingsd::ingest {
namespace {

// The acks of one Publish call: its own JetStream context's handler counts them.
struct Acks {
  std::atomic<std::size_t> stored{0};
  std::atomic<std::size_t> refused{0};
  std::string first_error;  // set by the handler thread before `refused` counts it
};

void OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  auto* acks = static_cast<Acks*>(closure);
  if (ack != nullptr && error == nullptr) {
    ++acks->stored;
  } else {
    if (acks->refused == 0 && error != nullptr) {
      acks->first_error = NatsWhy(error->Err, error->ErrCode) + (error->ErrText ? std::string(": ") + error->ErrText : "");
    }
    ++acks->refused;
  }
  natsMsg_Destroy(msg);
}

class Publisher final : public NatsPublisher {
 public:
  explicit Publisher(const NatsOptions& options) : options_(options) {}
  ~Publisher() override {
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  Status Init() {
    OpenNatsLibrary();
    // Connected in the background (a callback, even one doing nothing, keeps the connect from
    // blocking): a write before the connection is up waits for its acks and gets 503 when they
    // do not come in time.
    natsOptions* opts = nullptr;
    natsStatus s = MakeNatsOptions(options_.servers, options_.name + " publisher", options_.retry_min,
                                   [](natsConnection*, void*) {}, nullptr, &opts);
    if (s != NATS_OK) return Status::InvalidArgument("nats: " + NatsWhy(s) + " (check nats.servers)");
    s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) return Status::IOError("nats: cannot connect: " + NatsWhy(s));
    return Status::OK();
  }

  Status Publish(std::span<const StreamMessage> messages) override {
    if (messages.empty()) return Status::OK();
    Acks acks;
    jsOptions js_options;
    jsOptions_Init(&js_options);
    js_options.PublishAsync.AckHandler = &OnAck;
    js_options.PublishAsync.AckHandlerClosure = &acks;
    js_options.PublishAsync.MaxPending = static_cast<int64_t>(messages.size()) + 1;
    jsCtx* js = nullptr;
    if (natsStatus s = natsConnection_JetStream(&js, nc_, &js_options); s != NATS_OK) {
      return Status::Unavailable("no JetStream context: " + NatsWhy(s));
    }
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.ExpectStream = options_.stream.c_str();  // captured by another stream: refused
    std::size_t sent = 0;
    std::string send_error;
    for (const StreamMessage& m : messages) {
      const std::string subject = options_.subject_prefix + "." + m.device_id;
      natsMsg* msg = nullptr;
      natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, m.payload.data(), static_cast<int>(m.payload.size()));
      if (s == NATS_OK) s = js_PublishMsgAsync(js, &msg, &publish);
      natsMsg_Destroy(msg);  // a no-op when the library took it
      if (s != NATS_OK) {
        send_error = NatsWhy(s);
        break;
      }
      ++sent;
    }
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    wait.MaxWait = options_.publish_timeout.count();
    const natsStatus completed = sent > 0 ? js_PublishAsyncComplete(js, &wait) : NATS_OK;
    // What was not acked in time is taken back, so no handler runs after this call.
    natsMsgList pending{nullptr, 0};
    if (js_PublishAsyncGetPendingList(&pending, js) == NATS_OK) natsMsgList_Destroy(&pending);
    jsCtx_Destroy(js);
    const std::size_t stored = acks.stored;
    if (stored == messages.size()) return Status::OK();
    std::string why = !send_error.empty()          ? "cannot publish: " + send_error
                      : acks.refused > 0            ? "the stream refused " + std::to_string(acks.refused.load()) +
                                                          " messages: " + acks.first_error
                      : completed == NATS_TIMEOUT ? "no ack within " + std::to_string(options_.publish_timeout.count()) +
                                                        " ms (nats.publish_timeout_ms)"
                                                  : NatsWhy(completed);
    return Status::Unavailable("stream " + options_.stream + " acked " + std::to_string(stored) + " of " +
                               std::to_string(messages.size()) + " messages: " + why);
  }

  Status PublishDelete(std::string_view device_id, std::string_view lower, std::string_view upper,
                       uint64_t* sequence) override {
    if (Status s = StreamDeviceId(device_id); !s.ok()) return s;
    jsCtx* js = nullptr;
    if (natsStatus s = natsConnection_JetStream(&js, nc_, nullptr); s != NATS_OK) {
      return Status::Unavailable("no JetStream context: " + NatsWhy(s));
    }
    const std::string subject = options_.subject_prefix + "." + std::string(device_id);
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, nullptr, 0);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, kDeleteHeader, DeleteHeaderValue(lower, upper).c_str());
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.ExpectStream = options_.stream.c_str();
    publish.MaxWait = options_.publish_timeout.count();
    jsPubAck* ack = nullptr;
    jsErrCode error = static_cast<jsErrCode>(0);
    if (s == NATS_OK) s = js_PublishMsg(&ack, js, msg, &publish, &error);
    natsMsg_Destroy(msg);
    if (s == NATS_OK) *sequence = ack->Sequence;
    jsPubAck_Destroy(ack);
    jsCtx_Destroy(js);
    if (s != NATS_OK) {
      return Status::Unavailable("stream " + options_.stream + " did not ack the delete within " +
                                 std::to_string(options_.publish_timeout.count()) + " ms: " + NatsWhy(s, error));
    }
    return Status::OK();
  }

 private:
  const NatsOptions options_;
  natsConnection* nc_ = nullptr;
};

}  // namespace

std::string DeleteHeaderValue(std::string_view lower, std::string_view upper) {
  return PercentEncode(lower) + " " + PercentEncode(upper);
}

Status ParseDeleteHeader(std::string_view value, std::string* lower, std::string* upper) {
  const std::size_t space = value.find(' ');
  if (space == std::string_view::npos || value.find(' ', space + 1) != std::string_view::npos ||
      !PercentDecode(value.substr(0, space), false, lower) || !PercentDecode(value.substr(space + 1), false, upper)) {
    return Status::InvalidArgument(std::string(kDeleteHeader) + " must be \"<lower> <upper>\", percent-encoded, got \"" +
                                   std::string(value.substr(0, 200)) + "\"");
  }
  return Status::OK();
}

Status StreamDeviceId(std::string_view device_id) {
  if (device_id.find('.') == std::string_view::npos) return Status::OK();
  return Status::InvalidArgument("device id \"" + std::string(device_id) +
                                 "\" holds a '.', which a NATS subject cannot carry as one token: with [nats], "
                                 "readings go through the stream, so such a device cannot be written");
}

Status NatsPublisher::Start(const NatsOptions& options, std::unique_ptr<NatsPublisher>* out) {
  if (Status s = CheckNames(options); !s.ok()) return s;
  auto publisher = std::make_unique<Publisher>(options);
  if (Status s = publisher->Init(); !s.ok()) return s;
  *out = std::move(publisher);
  return Status::OK();
}

}  // namespace readingsd::ingest
