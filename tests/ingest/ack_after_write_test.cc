// The ack rule, observed on the wire: no PUBACK may reach the broker before its reading is in
// the store. A real mosquitto cannot show when a PUBACK arrives, so this test plays the broker
// side of MQTT 3.1.1 over a loopback socket and gates the store's Write.
//
// "No PUBACK yet" is checked without a waiting window. While the ingest thread is held inside
// the gated Write it cannot send anything, so whatever it sent before entering the write is
// already in the kernel; once the client socket's send queue is empty (SIOCOUTQ: every byte
// was acknowledged by the receiving end) it all sits in the broker socket, where a
// non-blocking read finds it, however loaded the machine is.
//
// Every scenario also runs with MqttOptions::ack_after_write off, i.e. libmosquitto's default
// of acknowledging a PUBLISH as it is read: there the same checks must see the PUBACKs early.
// That run shows the test tells the two apart, and would fail if the daemon acked on receipt.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "ingest/mqtt_ingest.h"
#include "storage/key.h"
#include "tests/support/ports.h"

namespace readingsd::ingest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A real store whose writes wait until the test permits them, or fail while failing.
// Thread-safe: the ingest thread writes, the test thread permits and inspects.
class GatedStore : public storage::Store {
 public:
  explicit GatedStore(std::unique_ptr<storage::Store> inner) : inner_(std::move(inner)) {}

  // Lets `n` more writes through (each attempt that gets through uses one).
  void Permit(int n) {
    std::lock_guard l(mu_);
    permits_ += n;
    cv_.notify_all();
  }
  void OpenForGood() { Permit(std::numeric_limits<int>::max() / 2); }
  void SetFailing(bool failing) { failing_ = failing; }

  // Waits until `n` writes were attempted (the last may be held at the gate); false after 30 s.
  bool WaitForAttempts(std::size_t n) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, seconds(30), [&] { return batch_sizes_.size() >= n; });
  }
  // Readings in each attempted write, in order.
  std::vector<std::size_t> batch_sizes() {
    std::lock_guard l(mu_);
    return batch_sizes_;
  }

  Status Put(const storage::Reading& r) override { return Write(std::span(&r, 1)); }
  Status Write(std::span<const storage::Reading> rs) override {
    std::unique_lock l(mu_);
    batch_sizes_.push_back(rs.size());
    cv_.notify_all();
    if (failing_) return Status::IOError("injected: disk full");
    cv_.wait(l, [&] { return permits_ > 0; });
    --permits_;
    return inner_->Write(rs);
  }
  Status DeleteReadings(std::string_view d, std::string_view lo, std::string_view hi,
                        const std::function<void(uint64_t)>& progress, uint64_t* deleted) override {
    return inner_->DeleteReadings(d, lo, hi, progress, deleted);
  }
  Status Get(std::string_view d, std::string_view s, storage::Reading* r) const override { return inner_->Get(d, s, r); }
  std::unique_ptr<storage::PartitionIterator> NewIterator(std::string_view d, std::string_view lo,
                                                          std::string_view hi) const override {
    return inner_->NewIterator(d, lo, hi);
  }
  std::unique_ptr<storage::TableIterator> NewTableIterator() const override { return inner_->NewTableIterator(); }
  Status ListDevices(std::string_view prefix, std::string_view after, std::size_t limit,
                     std::vector<storage::DeviceSummary>* devices) const override {
    return inner_->ListDevices(prefix, after, limit, devices);
  }
  std::string TableId() const override { return inner_->TableId(); }
  std::unique_ptr<storage::PartitionIterator> NewIndexIterator(std::string_view index, std::string_view partition,
                                                              std::string_view lower,
                                                              std::string_view upper) const override {
    return inner_->NewIndexIterator(index, partition, lower, upper);
  }
  std::vector<storage::IndexStatus> Indexes() const override { return inner_->Indexes(); }
  storage::StoreStats Stats() const override { return inner_->Stats(); }
  Status Checkpoint(const std::string& dir) const override { return inner_->Checkpoint(dir); }
  Status CompactAll() override { return inner_->CompactAll(); }

 private:
  std::unique_ptr<storage::Store> inner_;
  std::atomic<bool> failing_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int permits_ = 0;
  std::vector<std::size_t> batch_sizes_;
};

struct Message {
  uint16_t mid;
  std::string topic;
  std::string payload;
};

// Just enough of an MQTT 3.1.1 broker for one client: CONNACK, SUBACK, PUBLISH, PINGRESP, and
// the PUBACKs it reads. Used from the test thread only.
class WireBroker {
 public:
  WireBroker() : listen_fd_(test::ListenOnLoopback(/*backlog=*/1, &port_)) {}
  ~WireBroker() {
    if (fd_ >= 0) close(fd_);
    close(listen_fd_);
  }
  int port() const { return port_; }

  void AcceptAndHandshake() {
    pollfd p{listen_fd_, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 30'000), 1) << "the client never connected";
    fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_NO_FATAL_FAILURE(FindClientSocket());
    std::string body;
    ASSERT_EQ(NextPacket(&body) >> 4, 1);  // CONNECT
    Send({0x20, 0x02, 0x00, 0x00});       // CONNACK, no session, accepted
    ASSERT_EQ(NextPacket(&body) >> 4, 8);  // SUBSCRIBE
    Send({0x90, 0x03, static_cast<uint8_t>(body[0]), static_cast<uint8_t>(body[1]), 0x01});  // SUBACK QoS 1
  }

  // All in one write(): they reach the client's socket together, so it reads them as one batch.
  void Publish(const std::vector<Message>& messages) {
    std::vector<uint8_t> bytes;
    for (const Message& m : messages) {
      std::vector<uint8_t> body;
      body.push_back(static_cast<uint8_t>(m.topic.size() >> 8));
      body.push_back(static_cast<uint8_t>(m.topic.size()));
      body.insert(body.end(), m.topic.begin(), m.topic.end());
      body.push_back(static_cast<uint8_t>(m.mid >> 8));
      body.push_back(static_cast<uint8_t>(m.mid));
      body.insert(body.end(), m.payload.begin(), m.payload.end());
      ASSERT_LT(body.size(), 128u);  // a one-byte remaining length
      bytes.push_back(0x32);         // PUBLISH QoS 1
      bytes.push_back(static_cast<uint8_t>(body.size()));
      bytes.insert(bytes.end(), body.begin(), body.end());
    }
    Send(bytes);
  }

  // The mids of every PUBACK the client has sent so far, in order. Waits until the client
  // socket's send queue is empty, then reads without blocking: see the top of the file.
  std::vector<int> PubacksSentSoFar() {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    int unacknowledged = 0;
    while (ioctl(client_fd_, SIOCOUTQ, &unacknowledged) == 0 && unacknowledged > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_EQ(unacknowledged, 0) << "the client's bytes never reached the broker socket";
    Receive(/*wait=*/false);
    TakePubacks();
    return pubacks_;
  }

  // Waits until `n` PUBACKs have arrived in all (30 s at most); returns their mids in order.
  std::vector<int> WaitForPubacks(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    for (TakePubacks(); pubacks_.size() < n && std::chrono::steady_clock::now() < deadline; TakePubacks()) {
      if (!Receive(/*wait=*/true)) break;
    }
    return pubacks_;
  }

 private:
  // The ingest's own end of the connection: a socket of this process whose local port is the
  // accepted connection's peer port.
  void FindClientSocket() {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    ASSERT_EQ(getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &len), 0);
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      const int fd = std::atoi(entry.path().filename().c_str());
      sockaddr_in local{}, remote{};
      socklen_t l1 = sizeof local, l2 = sizeof remote;
      if (fd == fd_ || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &l1) != 0 ||
          getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &l2) != 0 || local.sin_family != AF_INET) {
        continue;
      }
      if (local.sin_port == peer.sin_port && remote.sin_port == htons(static_cast<uint16_t>(port_))) client_fd_ = fd;
    }
    ASSERT_GE(client_fd_, 0) << "the ingest's socket is not among this process's descriptors";
  }

  void Send(const std::vector<uint8_t>& bytes) {
    ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

  // Appends what the socket holds to in_, waiting up to 1 s for something if `wait`. False
  // when the connection is gone.
  bool Receive(bool wait) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, wait ? 1000 : 0) > 0) {
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) > 0) in_.append(buf, static_cast<std::size_t>(n));
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    }
    return true;
  }

  // Takes every complete packet off in_: PUBACK mids into pubacks_, PINGREQs answered.
  void TakePubacks() {
    for (std::string body; int header = TakePacket(&body);) {
      if (header >> 4 == 4) pubacks_.push_back((static_cast<uint8_t>(body[0]) << 8) | static_cast<uint8_t>(body[1]));
      if (header >> 4 == 12) Send({0xd0, 0x00});  // PINGREQ → PINGRESP
    }
  }

  // The next packet, read with blocking reads (the handshake).
  int NextPacket(std::string* body) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    for (;;) {
      if (int header = TakePacket(body)) return header;
      if (std::chrono::steady_clock::now() >= deadline || !Receive(/*wait=*/true)) return -1;
    }
  }

  // A complete packet off the front of in_ (its first byte, body in *body), or 0.
  int TakePacket(std::string* body) {
    std::size_t length = 0, at = 1;
    for (int shift = 0;; shift += 7, ++at) {
      if (at >= in_.size()) return 0;
      const auto b = static_cast<uint8_t>(in_[at]);
      length |= static_cast<std::size_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    if (in_.size() < at + 1 + length) return 0;
    const int header = static_cast<uint8_t>(in_[0]);
    *body = in_.substr(at + 1, length);
    in_.erase(0, at + 1 + length);
    return header;
  }

  int port_ = 0;
  int listen_fd_;
  int fd_ = -1, client_fd_ = -1;
  std::string in_;
  std::vector<int> pubacks_;
};

// The parameter: MqttOptions::ack_after_write.
class AckAfterWrite : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/readingsd-ack-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::unique_ptr<storage::Store> inner;
    ASSERT_TRUE(storage::Store::Open({.path = dir_ + "/db"}, &inner).ok());
    store_ = std::make_unique<GatedStore>(std::move(inner));
    MqttOptions options;
    options.port = broker_.port();
    options.client_id = "ack-test";
    options.reconnect_min = milliseconds(50);
    options.ack_after_write = GetParam();
    ASSERT_TRUE(MqttIngest::Start(options, store_.get(), {}, &ingest_).ok());
    ASSERT_NO_FATAL_FAILURE(broker_.AcceptAndHandshake());
  }
  void TearDown() override {
    store_->SetFailing(false);
    store_->OpenForGood();
    ingest_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Message `mid` of device a1, for each mid: its reading at 08:00:<mid>.
  static std::vector<Message> Readings(std::initializer_list<uint16_t> mids) {
    std::vector<Message> messages;
    for (uint16_t mid : mids) {
      messages.push_back(
          {mid, "sensors/a1/readings", R"({"readingTs":")" + Ts(mid) + R"(","t":)" + std::to_string(mid) + "}"});
    }
    return messages;
  }
  static std::string Ts(uint16_t mid) {
    char ts[32];
    std::snprintf(ts, sizeof ts, "2026-06-23T08:00:%02dZ", mid);
    return ts;
  }
  bool Stored(uint16_t mid) {
    std::string sk;
    EXPECT_TRUE(storage::NormalizeTimestamp(Ts(mid), &sk).ok());
    storage::Reading r;
    return store_->Get("a1", sk, &r).ok();
  }
  // What PubacksSentSoFar must return while the write of `mids` is held: nothing when acks
  // wait for the write; with libmosquitto's default, every one of them already.
  std::vector<int> EarlyAcks(std::vector<int> mids) const { return GetParam() ? std::vector<int>{} : mids; }

  // Polls the ingest's state until `done` holds; false after 30 s.
  bool WaitForState(const std::function<bool(const IngestState&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (!done(ingest_->State())) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }

  // After the gate opened: the PUBACKs of `mids` arrive, in order, and their readings are
  // stored. When acks wait for the write, a PUBACK already means stored. libmosquitto's default
  // acks sooner, so there the writes are waited for first.
  void ExpectAckedAndStored(const std::vector<int>& mids) {
    if (!GetParam()) {
      ASSERT_TRUE(WaitForState([&](const IngestState& s) { return s.readings_written >= mids.size(); }));
    }
    EXPECT_EQ(broker_.WaitForPubacks(mids.size()), mids);
    for (int mid : mids) EXPECT_TRUE(Stored(static_cast<uint16_t>(mid))) << mid;
  }

  WireBroker broker_;
  std::string dir_;
  std::unique_ptr<GatedStore> store_;
  std::unique_ptr<MqttIngest> ingest_;
};

TEST_P(AckAfterWrite, NoPubackOfABatchLeavesBeforeTheBatchIsWritten) {
  ASSERT_NO_FATAL_FAILURE(broker_.Publish(Readings({1, 2, 3, 4, 5})));
  ASSERT_TRUE(store_->WaitForAttempts(1));
  EXPECT_EQ(store_->batch_sizes(), std::vector<std::size_t>{5});  // one group commit
  // The write is held at the gate.
  EXPECT_EQ(broker_.PubacksSentSoFar(), EarlyAcks({1, 2, 3, 4, 5}));
  for (uint16_t mid = 1; mid <= 5; ++mid) EXPECT_FALSE(Stored(mid)) << mid;
  store_->OpenForGood();
  ExpectAckedAndStored({1, 2, 3, 4, 5});
}

// Messages that arrive while a batch is being written form the next batch; its acks wait for
// its own write, not the flush after the previous one.
TEST_P(AckAfterWrite, TheNextBatchIsAckedOnlyAfterItsOwnWrite) {
  ASSERT_NO_FATAL_FAILURE(broker_.Publish(Readings({1, 2, 3})));
  ASSERT_TRUE(store_->WaitForAttempts(1));
  ASSERT_NO_FATAL_FAILURE(broker_.Publish(Readings({4, 5})));
  store_->Permit(1);
  ASSERT_TRUE(store_->WaitForAttempts(2));
  EXPECT_EQ(store_->batch_sizes(), (std::vector<std::size_t>{3, 2}));
  std::vector<int> acked = broker_.WaitForPubacks(3);
  acked.resize(std::min<std::size_t>(acked.size(), 3));
  EXPECT_EQ(acked, (std::vector<int>{1, 2, 3}));
  // The second write is held at the gate.
  const std::vector<int> early = EarlyAcks({4, 5});
  std::vector<int> sent = {1, 2, 3};
  sent.insert(sent.end(), early.begin(), early.end());
  EXPECT_EQ(broker_.PubacksSentSoFar(), sent);
  EXPECT_FALSE(Stored(4));
  store_->Permit(1);
  ExpectAckedAndStored({1, 2, 3, 4, 5});
}

TEST_P(AckAfterWrite, AFailingStoreHoldsAcksUntilWritesSucceed) {
  store_->SetFailing(true);
  ASSERT_NO_FATAL_FAILURE(broker_.Publish(Readings({7, 8, 9})));
  ASSERT_TRUE(store_->WaitForAttempts(2));  // it retries the batch
  EXPECT_EQ(broker_.PubacksSentSoFar(), EarlyAcks({7, 8, 9}));
  EXPECT_TRUE(ingest_->State().store_failing);
  store_->SetFailing(false);
  store_->OpenForGood();
  ExpectAckedAndStored({7, 8, 9});
  EXPECT_FALSE(ingest_->State().store_failing);
  for (std::size_t size : store_->batch_sizes()) EXPECT_EQ(size, 3u);  // retried whole
}

TEST_P(AckAfterWrite, RejectedMessagesAreAckedSoTheyDoNotBlockTheStream) {
  store_->OpenForGood();
  ASSERT_NO_FATAL_FAILURE(broker_.Publish({{3, "sensors/a1/readings", "not json"}}));
  EXPECT_EQ(broker_.WaitForPubacks(1), std::vector<int>{3});
  EXPECT_TRUE(WaitForState([](const IngestState& s) { return s.messages_rejected == 1; }));
}

INSTANTIATE_TEST_SUITE_P(Modes, AckAfterWrite, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& info) {
  return info.param ? std::string("AckAfterWrite") : std::string("LibmosquittoDefaultAcksOnReceipt");
});

}  // namespace
}  // namespace readingsd::ingest
