#include "tests/api/served.h"

#include <poll.h>
#include <sys/socket.h>
#include <zlib.h>

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>

namespace readingsd::test {

namespace net = boost::asio;
namespace beast_http = boost::beast::http;
using tcp = net::ip::tcp;

nlohmann::json HttpResult::Json() const { return nlohmann::json::parse(body); }

std::string HttpResult::Header(const std::string& lower_case_name) const {
  auto it = headers.find(lower_case_name);
  return it == headers.end() ? "" : it->second;
}

HttpConnection::HttpConnection(uint16_t port) : socket_(ioc_) {
  socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
}

HttpResult HttpConnection::Send(const std::string& method, const std::string& target, const Headers& headers,
                                const std::string& body) {
  beast_http::request<beast_http::string_body> request;
  request.method_string(method);
  request.target(target);
  request.version(11);
  request.set(beast_http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  if (!body.empty() || method == "POST") request.prepare_payload();
  beast_http::write(socket_, request);
  return ReadResponse(method == "HEAD");
}

void HttpConnection::Write(const std::string& bytes) { net::write(socket_, net::buffer(bytes)); }

HttpResult HttpConnection::ReadResponse(bool head) {
  beast_http::response_parser<beast_http::string_body> parser;
  parser.body_limit(boost::none);
  parser.skip(head);
  beast_http::read(socket_, buffer_, parser);
  const auto& response = parser.get();
  HttpResult result;
  result.status = response.result_int();
  for (const auto& field : response) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    result.headers[name] = std::string(field.value());
  }
  result.body = response.body();
  return result;
}

std::optional<std::string> HttpConnection::ReadUntilClosed(std::chrono::milliseconds timeout) {
  std::string received(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) return std::nullopt;
    pollfd p{socket_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
    const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) return received;  // EOF or reset
    received.append(buf, static_cast<std::size_t>(n));
  }
}

std::string Inflate(const std::string& body, bool gzip) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  std::string out;
  char chunk[4096];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END) << "does not inflate as " << (gzip ? "gzip" : "deflate");
  EXPECT_EQ(z.avail_in, 0u);
  inflateEnd(&z);
  return out;
}

HttpResult Get(uint16_t port, const std::string& target, const Headers& headers) {
  HttpConnection connection(port);
  return connection.Get(target, headers);
}

HttpResult Post(uint16_t port, const std::string& target, const Headers& headers, const std::string& body) {
  HttpConnection connection(port);
  return connection.Send("POST", target, headers, body);
}

nlohmann::ordered_json Transposed(const nlohmann::ordered_json& page) {
  using Json = nlohmann::ordered_json;
  const bool index = page.contains("index");
  Json out = Json::object();
  if (index) {
    out["index"] = page["index"];
    out["deviceId"] = Json::array();
  } else {
    out["deviceId"] = page["deviceId"];
  }
  out["readingTs"] = Json::array();
  Json columns = Json::object();
  const Json& items = page["items"];
  for (std::size_t row = 0; row < items.size(); ++row) {
    if (index) out["deviceId"].push_back(items[row]["deviceId"]);
    out["readingTs"].push_back(items[row]["readingTs"]);
    for (const auto& [name, value] : items[row].items()) {
      if (name == "deviceId" || name == "readingTs") continue;
      Json& column = columns[name];
      while (column.size() < row) column.push_back(nullptr);
      column.push_back(value);
    }
  }
  for (auto& [name, column] : columns.items()) {
    while (column.size() < items.size()) column.push_back(nullptr);
  }
  out["columns"] = columns;
  for (const char* field : {"count", "scannedCount", "nextCursor"}) {
    if (page.contains(field)) out[field] = page[field];
  }
  return out;
}

nlohmann::json ExpectColumnsAreRowsTransposed(uint16_t port, uint16_t alone_port, const std::string& target) {
  const HttpResult rows = Get(alone_port, target);
  EXPECT_EQ(rows.status, 200) << target << " " << rows.body;
  const std::string columns_target = target + "&format=columns";
  const HttpResult columns = Get(port, columns_target);
  EXPECT_EQ(columns.status, 200) << columns_target << " " << columns.body;
  EXPECT_EQ(columns.body, Get(alone_port, columns_target).body) << columns_target;
  EXPECT_EQ(nlohmann::ordered_json::parse(columns.body), Transposed(nlohmann::ordered_json::parse(rows.body)))
      << columns_target;
  return rows.Json();
}

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

storage::Reading MakeReading(const std::string& device_id, const std::string& sort_key,
                             std::vector<storage::Attribute> attributes) {
  return storage::Reading{device_id, sort_key, std::move(attributes)};
}

std::string SampleSortKey(int minute) {
  char key[40];
  std::snprintf(key, sizeof key, "2026-06-23T%02d:%02d:00.000000000Z", 8 + minute / 60, minute % 60);
  return key;
}

void HttpServerTest::SetUp() {
  storage::StoreOptions options;
  options.path = dir_.File("db");
  options.indexes = indexes_;
  ASSERT_TRUE(storage::Store::Open(options, &store_).ok());
  std::vector<storage::Reading> readings;
  for (int i = 0; i < kA1Count; ++i) {
    readings.push_back(MakeReading("a1", SampleSortKey(i),
                                   {{"temperature", 20 + 0.5 * i},
                                    {"status", std::string(i % 2 == 0 ? "ok" : "warn")},
                                    {"door", i % 3 == 0}}));
  }
  for (int i = 0; i < 3; ++i)
    readings.push_back(MakeReading("a10", SampleSortKey(i), {{"temperature", 99.0}}));
  readings.push_back(MakeReading("b2", "2026-06-24T00:00:00.000000000Z", {{"humidity", 40.0}}));
  for (const char* key : {"2026-12-31T23:59:59.999999999Z", "2027-01-01T00:00:00.000000000Z",
                          "2027-01-01T00:00:00.000000001Z"}) {
    readings.push_back(MakeReading("edge", key, {{"v", 1.0}}));
  }
  Status s = store_->Write(readings);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

Status Serve(const storage::Store* store, const ServeOptions& options, ServeHooks hooks, Served* out) {
  Served served;
  if (Status s = api::Router::Make(options.api, store, std::move(hooks.api), &served.router); !s.ok()) return s;
  if (Status s = http::Server::Start(options.server, served.router.get(), std::move(hooks.server), &served.server);
      !s.ok()) {
    return s;
  }
  *out = std::move(served);
  return Status::OK();
}

void HttpServerTest::StartServer(ServeOptions options, ServeHooks hooks) {
  options.server.port = 0;
  server_.reset();
  Served served;
  Status s = Serve(store_.get(), options, std::move(hooks), &served);
  ASSERT_TRUE(s.ok()) << s.ToString();
  router_ = std::move(served.router);
  server_ = std::move(served.server);
}

}  // namespace readingsd::test
