// readingsd-publish: a load publisher that only reports success once the broker has acknowledged
// every reading.
//
// mosquitto_pub -l exits before all PUBACKs arrive, so it cannot tell a lost reading from a
// delivered one. This tool counts PUBACKs by message id, keeps at most --max-inflight messages
// unacknowledged, and survives broker restarts: with clean_session=false libmosquitto keeps
// unacknowledged messages and resends them after reconnecting. The last line printed is
//   published=N acked=N messages=M seconds=S rate=R/s
// and the exit code is 0 when acked == published == --count, 1 when --timeout passed first, and
// 2 for bad flags, an unreachable broker or a refused connection.
#include <mosquitto.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include <boost/program_options.hpp>

#include "tools/reading_generator.h"

namespace readingsd::tools {
namespace {

using Clock = std::chrono::steady_clock;

enum ExitCode { kAllAcked = 0, kNotAllAcked = 1, kUsageOrConnectError = 2 };

struct PublisherOptions {
  GeneratorOptions generator;
  std::string host = "localhost";
  int port = 1883;
  std::string client_id;  // default: readingsd-publish-<pid>
  std::string username;
  std::string password_file;
  std::string cafile;
  int qos = 1;
  int max_inflight = 1000;  // unacknowledged messages allowed on the wire
  double rate = 0;          // messages per second; 0 = as fast as acknowledgements allow
  double timeout_seconds = 300;
};

// Shared between the publishing thread and libmosquitto's network thread.
struct AckTracker {
  std::mutex mu;
  std::condition_variable changed;
  std::unordered_map<int, int> unacked;  // message id -> readings it carries
  std::uint64_t acked_readings = 0;
  std::uint64_t acked_messages = 0;
  std::string fatal;  // set when the broker refuses the connection: waiting would be pointless
};

void OnConnect(mosquitto*, void* user, int rc) {
  auto* tracker = static_cast<AckTracker*>(user);
  if (rc == 0) {
    std::cerr << "readingsd-publish: connected\n";
    return;
  }
  std::lock_guard lock(tracker->mu);
  tracker->fatal = std::string("connection refused: ") + mosquitto_connack_string(rc);
  tracker->changed.notify_all();
}

void OnDisconnect(mosquitto*, void*, int rc) {
  // rc 0 is our own mosquitto_disconnect; anything else is retried by the network thread.
  if (rc != 0) std::cerr << "readingsd-publish: connection lost (" << mosquitto_strerror(rc) << "), reconnecting\n";
}

void OnPublish(mosquitto*, void* user, int mid) {
  auto* tracker = static_cast<AckTracker*>(user);
  std::lock_guard lock(tracker->mu);
  // Look the id up rather than counting calls, so an acknowledgement can never count twice.
  auto it = tracker->unacked.find(mid);
  if (it == tracker->unacked.end()) return;
  tracker->acked_readings += static_cast<std::uint64_t>(it->second);
  ++tracker->acked_messages;
  tracker->unacked.erase(it);
  tracker->changed.notify_all();
}

// Returns the first line of `path`, or nullopt if it cannot be read.
std::optional<std::string> ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// Parses the command line into *options; returns false (after printing why) to exit.
bool ParseFlags(int argc, char** argv, PublisherOptions* options, int* exit_code) {
  namespace po = boost::program_options;
  GeneratorOptions& gen = options->generator;
  std::string start = FormatTimestamp(gen.start_ms);
  std::uint64_t seed = 0;
  po::options_description flags("readingsd-publish: publish synthetic readings and wait for every PUBACK");
  flags.add_options()
      ("help", "print this help")
      ("host", po::value(&options->host)->default_value(options->host), "broker host")
      ("port", po::value(&options->port)->default_value(options->port), "broker port")
      ("count", po::value(&gen.count)->default_value(gen.count), "readings to publish")
      ("devices", po::value(&gen.devices)->default_value(gen.devices), "device ids dev00001..devNNNNN")
      ("seed", po::value(&seed), "pick each message's device pseudo-randomly from this seed (default: round-robin)")
      ("rate", po::value(&options->rate)->default_value(options->rate), "messages per second, 0 = as fast as possible")
      ("start", po::value(&start)->default_value(start), "readingTs of each device's first reading (UTC, ...Z)")
      ("step-ms", po::value(&gen.step_ms)->default_value(gen.step_ms), "readingTs step between a device's readings")
      ("topic-template", po::value(&gen.topic_template)->default_value(gen.topic_template), "{deviceId} is substituted")
      ("batch", po::value(&gen.batch)->default_value(gen.batch), "readings per message (>1: JSON array)")
      ("payload-pad", po::value(&gen.payload_pad)->default_value(gen.payload_pad), "length of an extra \"pad\" string attribute")
      ("client-id", po::value(&options->client_id), "MQTT client id (default readingsd-publish-<pid>)")
      ("qos", po::value(&options->qos)->default_value(options->qos), "0, 1 or 2")
      ("max-inflight", po::value(&options->max_inflight)->default_value(options->max_inflight), "unacknowledged messages allowed, 1..65535")
      ("timeout", po::value(&options->timeout_seconds)->default_value(options->timeout_seconds), "seconds to wait for all PUBACKs before failing")
      ("username", po::value(&options->username), "MQTT username")
      ("password-file", po::value(&options->password_file), "file whose first line is the MQTT password")
      ("cafile", po::value(&options->cafile), "CA certificate: connect with TLS");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, flags), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "readingsd-publish: " << e.what() << "\n" << flags;
    *exit_code = kUsageOrConnectError;
    return false;
  }
  if (vm.count("help")) {
    std::cout << flags;
    *exit_code = 0;
    return false;
  }
  std::string error;
  if (vm.count("seed")) gen.seed = seed;
  if (!ParseTimestamp(start, &gen.start_ms)) error = "--start must look like 2026-06-23T00:00:00Z";
  if (gen.devices < 1 || gen.batch < 1 || gen.step_ms < 1) error = "--devices, --batch and --step-ms must be >= 1";
  if (options->qos < 0 || options->qos > 2) error = "--qos must be 0, 1 or 2";
  // Message ids are 16 bits: more in flight could reuse an id that is still unacknowledged.
  if (options->max_inflight < 1 || options->max_inflight > 65535) error = "--max-inflight must be 1..65535";
  if (options->rate < 0 || options->timeout_seconds <= 0) error = "--rate must be >= 0 and --timeout > 0";
  if (!error.empty()) {
    std::cerr << "readingsd-publish: " << error << "\n";
    *exit_code = kUsageOrConnectError;
    return false;
  }
  if (options->client_id.empty()) options->client_id = "readingsd-publish-" + std::to_string(getpid());
  return true;
}

// Creates and configures the client; returns nullptr after printing why.
mosquitto* NewClient(const PublisherOptions& options, AckTracker* tracker) {
  // clean_session=false: the broker and libmosquitto both keep the session across a dropped
  // connection, and MQTT then requires unacknowledged PUBLISHes to be resent on reconnect.
  mosquitto* mosq = mosquitto_new(options.client_id.c_str(), /*clean_session=*/false, tracker);
  if (mosq == nullptr) {
    std::cerr << "readingsd-publish: mosquitto_new failed\n";
    return nullptr;
  }
  mosquitto_connect_callback_set(mosq, OnConnect);
  mosquitto_disconnect_callback_set(mosq, OnDisconnect);
  mosquitto_publish_callback_set(mosq, OnPublish);
  // libmosquitto's own window matches ours, so every message we release goes straight out
  // instead of waiting in the library's queue.
  mosquitto_max_inflight_messages_set(mosq, static_cast<unsigned>(options.max_inflight));
  // Retry quickly after a broker restart, backing off to 10 s while it stays down.
  mosquitto_reconnect_delay_set(mosq, 1, 10, true);

  int rc = MOSQ_ERR_SUCCESS;
  if (!options.username.empty() || !options.password_file.empty()) {
    std::optional<std::string> password;
    if (!options.password_file.empty()) {
      password = ReadFirstLine(options.password_file);
      if (!password) {
        std::cerr << "readingsd-publish: cannot read --password-file " << options.password_file << "\n";
        mosquitto_destroy(mosq);
        return nullptr;
      }
    }
    rc = mosquitto_username_pw_set(mosq, options.username.empty() ? nullptr : options.username.c_str(),
                                   password ? password->c_str() : nullptr);
  }
  if (rc == MOSQ_ERR_SUCCESS && !options.cafile.empty()) {
    rc = mosquitto_tls_set(mosq, options.cafile.c_str(), nullptr, nullptr, nullptr, nullptr);
  }
  if (rc != MOSQ_ERR_SUCCESS) {
    std::cerr << "readingsd-publish: " << mosquitto_strerror(rc) << "\n";
    mosquitto_destroy(mosq);
    return nullptr;
  }
  return mosq;
}

// The network thread reconnects after a lost connection, but not after a failed first connect
// (measured with libmosquitto 2.0.11), so retry that here until the deadline.
bool ConnectBefore(mosquitto* mosq, const PublisherOptions& options, Clock::time_point deadline) {
  constexpr int kKeepAliveSeconds = 30;
  for (;;) {
    const int rc = mosquitto_connect(mosq, options.host.c_str(), options.port, kKeepAliveSeconds);
    if (rc == MOSQ_ERR_SUCCESS) return true;
    if (Clock::now() >= deadline) {
      std::cerr << "readingsd-publish: cannot connect to " << options.host << ":" << options.port << ": "
                << (rc == MOSQ_ERR_ERRNO ? std::strerror(errno) : mosquitto_strerror(rc)) << "\n";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Publishes everything, then waits for the last acknowledgement. Returns the exit code.
int Publish(mosquitto* mosq, const PublisherOptions& options, AckTracker* tracker, Clock::time_point deadline) {
  ReadingGenerator generator(options.generator);
  GeneratedMessage message;
  std::uint64_t published_readings = 0;
  std::uint64_t published_messages = 0;
  const auto started = Clock::now();
  const auto window = static_cast<std::size_t>(options.max_inflight);

  std::unique_lock lock(tracker->mu);
  while (tracker->fatal.empty() && generator.Next(&message)) {
    if (options.rate > 0) {
      const auto due = started + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(published_messages / options.rate));
      lock.unlock();
      std::this_thread::sleep_until(due);
      lock.lock();
    }
    if (!tracker->changed.wait_until(lock, deadline, [&] {
          return tracker->unacked.size() < window || !tracker->fatal.empty();
        })) {
      break;
    }
    if (!tracker->fatal.empty()) break;
    // The lock is held across the call: the acknowledgement may arrive on the network thread
    // before mosquitto_publish returns, and must find the id already recorded.
    int mid = 0;
    const int rc = mosquitto_publish(mosq, &mid, message.topic.c_str(), static_cast<int>(message.payload.size()),
                                     message.payload.data(), options.qos, /*retain=*/false);
    // MOSQ_ERR_NO_CONN: the connection is down, but the message is queued in the library and is
    // sent once the network thread reconnects (measured with libmosquitto 2.0.11).
    if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN) {
      tracker->fatal = std::string("publish failed: ") + mosquitto_strerror(rc);
      break;
    }
    if (options.qos > 0) tracker->unacked.emplace(mid, static_cast<int>(message.readings.size()));
    published_readings += message.readings.size();
    ++published_messages;
    // QoS 0 has no acknowledgement: count it as soon as the library accepted it.
    if (options.qos == 0) {
      tracker->acked_readings += message.readings.size();
      ++tracker->acked_messages;
    }
  }
  tracker->changed.wait_until(lock, deadline, [&] { return tracker->unacked.empty() || !tracker->fatal.empty(); });

  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("published=%llu acked=%llu messages=%llu seconds=%.3f rate=%.0f/s\n",
              static_cast<unsigned long long>(published_readings),
              static_cast<unsigned long long>(tracker->acked_readings),
              static_cast<unsigned long long>(tracker->acked_messages), seconds,
              seconds > 0 ? static_cast<double>(tracker->acked_readings) / seconds : 0.0);
  std::fflush(stdout);
  if (!tracker->fatal.empty()) {
    std::cerr << "readingsd-publish: " << tracker->fatal << "\n";
    return kUsageOrConnectError;
  }
  if (tracker->acked_readings != options.generator.count) {
    std::cerr << "readingsd-publish: timed out with " << tracker->unacked.size() << " messages unacknowledged\n";
    return kNotAllAcked;
  }
  return kAllAcked;
}

int Main(int argc, char** argv) {
  PublisherOptions options;
  int exit_code = 0;
  if (!ParseFlags(argc, argv, &options, &exit_code)) return exit_code;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeout_seconds));

  mosquitto_lib_init();
  AckTracker tracker;
  exit_code = kUsageOrConnectError;
  if (mosquitto* mosq = NewClient(options, &tracker)) {
    if (ConnectBefore(mosq, options, deadline)) {
      if (const int rc = mosquitto_loop_start(mosq); rc != MOSQ_ERR_SUCCESS) {
        std::cerr << "readingsd-publish: " << mosquitto_strerror(rc) << "\n";
      } else {
        exit_code = Publish(mosq, options, &tracker, deadline);
        mosquitto_disconnect(mosq);
        mosquitto_loop_stop(mosq, /*force=*/false);
      }
    }
    mosquitto_destroy(mosq);
  }
  mosquitto_lib_cleanup();
  return exit_code;
}

}  // namespace
}  // namespace readingsd::tools

int main(int argc, char** argv) { return readingsd::tools::Main(argc, argv); }
