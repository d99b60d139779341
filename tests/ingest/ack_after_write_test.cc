// The ack rule, observed on the wire: no PUBACK may reach the broker before the reading is in
// the store. A real mosquitto cannot show when a PUBACK arrives, so this test plays the broker
// side of MQTT 3.1.1 over a loopback socket and gates the store's Write.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "ingest/mqtt_ingest.h"
#include "storage/key.h"

namespace readingsd::ingest {
namespace {

// A real store whose writes wait for the test (or fail while `fail` is set).
class GatedStore : public storage::Store {
 public:
  explicit GatedStore(std::unique_ptr<storage::Store> inner) : inner_(std::move(inner)) {}
  void Open() {
    std::lock_guard l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool fail = false;
  int writes_attempted() {
    std::lock_guard l(mu_);
    return attempts_;
  }

  Status Put(const storage::Reading& r) override { return Write(std::span(&r, 1)); }
  Status Write(std::span<const storage::Reading> rs) override {
    std::unique_lock l(mu_);
    ++attempts_;
    cv_.notify_all();
    if (fail) return Status::IOError("injected: disk full");
    cv_.wait(l, [&] { return open_; });
    return inner_->Write(rs);
  }
  void WaitForAttempts(int n) {
    std::unique_lock l(mu_);
    cv_.wait_for(l, std::chrono::seconds(10), [&] { return attempts_ >= n; });
  }
  Status Get(std::string_view d, std::string_view s, storage::Reading* r) const override { return inner_->Get(d, s, r); }
  std::unique_ptr<storage::PartitionIterator> NewIterator(std::string_view d, std::string_view lo,
                                                          std::string_view hi) const override {
    return inner_->NewIterator(d, lo, hi);
  }
  storage::StoreStats Stats() const override { return inner_->Stats(); }
  Status Checkpoint(const std::string& dir) const override { return inner_->Checkpoint(dir); }
  Status CompactAll() override { return inner_->CompactAll(); }

 private:
  std::unique_ptr<storage::Store> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int attempts_ = 0;
};

// Just enough of an MQTT 3.1.1 broker: one client, CONNACK, SUBACK, PUBLISH, read PUBACK.
class WireBroker {
 public:
  WireBroker() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listen_fd_, 1);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~WireBroker() {
    if (fd_ >= 0) close(fd_);
    close(listen_fd_);
  }
  int port() const { return port_; }

  void AcceptAndHandshake() {
    fd_ = accept(listen_fd_, nullptr, nullptr);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(ReadPacket() >> 4, 1);  // CONNECT
    Send({0x20, 0x02, 0x00, 0x00});   // CONNACK, no session, accepted
    std::string sub;
    ASSERT_EQ(ReadPacket(&sub) >> 4, 8);  // SUBSCRIBE
    Send({0x90, 0x03, static_cast<uint8_t>(sub[0]), static_cast<uint8_t>(sub[1]), 0x01});  // SUBACK QoS 1
  }

  void Publish(uint16_t mid, const std::string& topic, const std::string& payload) {
    std::vector<uint8_t> body;
    body.push_back(static_cast<uint8_t>(topic.size() >> 8));
    body.push_back(static_cast<uint8_t>(topic.size()));
    body.insert(body.end(), topic.begin(), topic.end());
    body.push_back(static_cast<uint8_t>(mid >> 8));
    body.push_back(static_cast<uint8_t>(mid));
    body.insert(body.end(), payload.begin(), payload.end());
    std::vector<uint8_t> packet = {0x32, static_cast<uint8_t>(body.size())};  // PUBLISH QoS 1
    packet.insert(packet.end(), body.begin(), body.end());
    Send(packet);
  }

  // The mid of the next PUBACK within `timeout`, or -1 when none came.
  int WaitPuback(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return -1;
      std::string body;
      int type = ReadPacket(&body) >> 4;
      if (type == 4) return (static_cast<uint8_t>(body[0]) << 8) | static_cast<uint8_t>(body[1]);
      if (type == 12) Send({0xd0, 0x00});  // PINGREQ → PINGRESP
      if (type < 0) return -1;
    }
  }

 private:
  void Send(const std::vector<uint8_t>& bytes) { ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  bool ReadExactly(void* buf, std::size_t n) {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
      ssize_t r = read(fd_, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
  int ReadPacket(std::string* body = nullptr) {
    uint8_t header;
    if (!ReadExactly(&header, 1)) return -16;
    std::size_t length = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b;
      if (!ReadExactly(&b, 1)) return -16;
      length |= static_cast<std::size_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    std::string data(length, '\0');
    if (!ReadExactly(data.data(), length)) return -16;
    if (body != nullptr) *body = std::move(data);
    return header;
  }

  int listen_fd_ = -1, fd_ = -1, port_ = 0;
};

class AckAfterWrite : public ::testing::Test {
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
    options.reconnect_min = std::chrono::milliseconds(50);
    ASSERT_TRUE(MqttIngest::Start(options, store_.get(), {}, &ingest_).ok());
    broker_.AcceptAndHandshake();
  }
  void TearDown() override {
    store_->fail = false;
    store_->Open();
    ingest_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool Stored(const std::string& ts) {
    std::string sk;
    EXPECT_TRUE(storage::NormalizeTimestamp(ts, &sk).ok());
    storage::Reading r;
    return store_->Get("a1", sk, &r).ok();
  }

  WireBroker broker_;
  std::string dir_;
  std::unique_ptr<GatedStore> store_;
  std::unique_ptr<MqttIngest> ingest_;
};

TEST_F(AckAfterWrite, NoPubackLeavesBeforeTheWriteCompletes) {
  broker_.Publish(7, "sensors/a1/readings", R"({"readingTs":"2026-06-23T08:00:00Z","t":1})");
  store_->WaitForAttempts(1);
  // The write is in progress (gated): the PUBACK must not be on the wire yet.
  EXPECT_EQ(broker_.WaitPuback(std::chrono::milliseconds(700)), -1);
  EXPECT_FALSE(Stored("2026-06-23T08:00:00Z"));
  store_->Open();
  EXPECT_EQ(broker_.WaitPuback(std::chrono::seconds(5)), 7);
  EXPECT_TRUE(Stored("2026-06-23T08:00:00Z"));
}

TEST_F(AckAfterWrite, FailingStoreHoldsAcksUntilWritesSucceed) {
  store_->fail = true;
  broker_.Publish(9, "sensors/a1/readings", R"({"readingTs":"2026-06-23T08:00:01Z","t":1})");
  store_->WaitForAttempts(2);  // it retries
  EXPECT_EQ(broker_.WaitPuback(std::chrono::milliseconds(500)), -1);
  EXPECT_TRUE(ingest_->State().store_failing);
  store_->fail = false;
  store_->Open();
  EXPECT_EQ(broker_.WaitPuback(std::chrono::seconds(5)), 9);
  EXPECT_TRUE(Stored("2026-06-23T08:00:01Z"));
  EXPECT_FALSE(ingest_->State().store_failing);
}

TEST_F(AckAfterWrite, RejectedMessagesAreAckedSoTheyDoNotBlockTheStream) {
  store_->Open();
  broker_.Publish(3, "sensors/a1/readings", "not json");
  EXPECT_EQ(broker_.WaitPuback(std::chrono::seconds(5)), 3);
  EXPECT_EQ(ingest_->State().messages_rejected, 1u);
}

}  // namespace
}  // namespace readingsd::ingest
