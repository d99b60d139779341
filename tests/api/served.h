// Shared by the API and HTTP tests: a synchronous Beast client over real loopback TCP and a
// fixture that serves a RocksDB store in a temp dir through the real Router on an ephemeral port.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/router.h"
#include "http/server.h"
#include "storage/index.h"
#include "storage/reading.h"
#include "storage/store.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {

using Headers = std::map<std::string, std::string>;

struct HttpResult {
  int status = 0;
  Headers headers;  // names in lower case
  std::string body;

  nlohmann::json Json() const;
  std::string Header(const std::string& lower_case_name) const;
};

// One connection; Send() may be called repeatedly while the server keeps it alive.
class HttpConnection {
 public:
  explicit HttpConnection(uint16_t port);

  HttpResult Send(const std::string& method, const std::string& target, const Headers& headers = {},
                  const std::string& body = "");
  HttpResult Get(const std::string& target, const Headers& headers = {}) {
    return Send("GET", target, headers);
  }
  // Raw bytes, for requests no well-behaved client would send.
  void Write(const std::string& bytes);
  // `head`: the answer to a HEAD request, whose header announces a body that does not follow.
  HttpResult ReadResponse(bool head = false);
  // True when the server closes the connection (EOF or reset) within `timeout`.
  bool ClosedWithin(std::chrono::milliseconds timeout) { return ReadUntilClosed(timeout).has_value(); }
  // Every byte not yet read by ReadResponse, up to the server closing the connection; nullopt
  // when it does not close within `timeout`.
  std::optional<std::string> ReadUntilClosed(std::chrono::milliseconds timeout);

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// A request on a connection of its own.
HttpResult Get(uint16_t port, const std::string& target, const Headers& headers = {});
HttpResult Post(uint16_t port, const std::string& target, const Headers& headers, const std::string& body);

std::string UrlEncode(const std::string& text);

// `body` inflated as gzip (`gzip`) or zlib (HTTP's deflate), strictly that format: a test
// failure when it is not one whole stream of it.
std::string Inflate(const std::string& body, bool gzip);

// A rows page as format=columns transposes it: readingTs in item order, a column per attribute
// in the order the items first hold it, null where an item lacks it; counts and cursor as they
// are. An index's page ({"index":…,"items":[…]}) has its items' deviceId as a column too.
nlohmann::ordered_json Transposed(const nlohmann::ordered_json& page);
// Expects `target`&format=columns to be the same page from `port` and from `alone_port` (a server
// on the same store without read helpers), and to be its rows page (from `alone_port`)
// transposed. Returns the rows page.
nlohmann::json ExpectColumnsAreRowsTransposed(uint16_t port, uint16_t alone_port, const std::string& target);

storage::Reading MakeReading(const std::string& device_id, const std::string& sort_key,
                             std::vector<storage::Attribute> attributes);

// "2026-06-23T08:MM:00.000000000Z" for minute `i` of the sample day.
std::string SampleSortKey(int minute);

struct ServeOptions {
  http::ServerOptions server;
  api::RouterOptions api;
};
struct ServeHooks {
  api::RouterHooks api;
  http::ServerHooks server;
};
struct Served {
  std::unique_ptr<api::Router> router;
  std::unique_ptr<http::Server> server;  // after the router: stops first
};

// `store` served as the daemon serves it: the real Router on an http::Server.
Status Serve(const storage::Store* store, const ServeOptions& options, ServeHooks hooks, Served* out);

class HttpServerTest : public ::testing::Test {
 protected:
  // 60 readings of a1 (one a minute from 2026-06-23T08:00Z: temperature 20 + 0.5 i,
  // status "ok" on even minutes else "warn", door true every third minute), 3 of a10,
  // 1 of b2 on 2026-06-24, and three of "edge" around the new year 2027.
  void SetUp() override;
  // On an ephemeral port, replacing the server running.
  void StartServer(ServeOptions options = {}, ServeHooks hooks = {});
  uint16_t port() const { return server_->port(); }

  static constexpr int kA1Count = 60;

  TempDir dir_{"readingsd-http-test"};
  std::vector<storage::IndexSpec> indexes_;  // declared on the store SetUp opens
  // The index tests' two: hot_by_hour (readingHour, temperature, `shards`) and by_status
  // (the status attribute, readingTs).
  static std::vector<storage::IndexSpec> HotAndStatusIndexes(int shards) {
    return {storage::IndexSpec{.name = "hot_by_hour", .sort_attribute = "temperature", .shards = shards},
            storage::IndexSpec{.name = "by_status", .partition = storage::IndexPartition::kAttribute,
                               .partition_attribute = "status", .sort = storage::IndexSort::kReadingTs}};
  }
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<api::Router> router_;
  std::unique_ptr<http::Server> server_;  // after the router: stops first
};

}  // namespace readingsd::test
