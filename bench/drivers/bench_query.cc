// bench_query: per-request latency of one query workload against one system, over one
// persistent connection (or in process), requests one after another; or over several, each
// with its own thread (--clients). Every answer is checked against the generator's readings.
//
//   bench_query http   --host H --port P --paths FILE --format F    GET each line of FILE (keep-alive)
//   bench_query pg     --conninfo C --workload FILE
//   bench_query raw    --dir D --workload FILE
//   bench_query engine --dir D --workload FILE
//   common: --expect FILE (bench_gen --expect of the same workload: what each answer must hold)
//           [--mode between|latest] [--n 10] [--warmup 1] (untimed passes over the whole list first)
//           [--clients 1] (that many connections, each with its own thread, share the list)
//           [--latencies FILE] (every timed request's latency in µs, one per line, in order)
//           [--encoding gzip] (http: Accept-Encoding: gzip; bytes are then the compressed bytes received,
//           and each body is inflated after the run, outside the clock, for the check)
//
// FILE for pg/raw/engine is bench_gen's workload ("<device> <from_iso> <to_iso> ..."). pg runs
// one prepared statement (SELECT ... WHERE device_id=$1 AND ts BETWEEN $2 AND $3, or ORDER BY
// ts DESC LIMIT n) with text results, as psql would. raw is the ceiling: readingsd's own RocksDB
// iterator (Store::NewIterator: bounds + prefix bloom) walking the window and touching each
// key and value, no decoding. engine adds readingsd's query layer (query::Query: key condition,
// reading each value), i.e. everything the HTTP API does except HTTP and JSON.
// F (the HTTP answer's format): readingsd | readingsd-fields (attributes=temperature,humidity) |
// readingsd-columns (format=columns, all attributes) | victoriametrics (/api/v1/export JSON lines) | influxdb (/query JSON).
//
// A latency is measured from sending the request to having read the whole response body; nothing
// else is inside the clock. The check: every answer must hold exactly the expected number of
// readings, of the right device and timestamps in the right order (latest: newest first, except
// VictoriaMetrics' export of the range), with the generator's values. HTTP answers are kept
// as received (each in its own buffer, written first in the warm-up pass) and parsed whole after
// the run, so every item of every answer is compared. pg, raw and engine answers are sampled
// right after their request, outside the clock: their count, and their first, middle and last
// items (raw: the first, which it copies while it walks). Any mismatch is printed and exits 1.
//
// Prints one key=value line: n, p50_us, p90_us, p99_us, mean_us, max_us, items (per request),
// bytes (per request: HTTP body bytes; pg: text bytes of the cells; raw: key + value bytes read;
// engine: 0), errors (failed requests), wrong (answers that failed the check), clients, rps
// (requests per second of all clients together).
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "bench/drivers/common.h"
#include "query/query.h"
#include "storage/key.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using readingsd::Status;

struct WorkItem {
  std::string device, from_iso, to_iso, from_key, to_key;
};

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<WorkItem> Workload(const std::string& path) {
  std::vector<WorkItem> items;
  for (const auto& line : Lines(path)) {
    std::istringstream fields(line);
    WorkItem w;
    fields >> w.device >> w.from_iso >> w.to_iso;
    if (!readingsd::storage::NormalizeTimestamp(w.from_iso, &w.from_key).ok() ||
        !readingsd::storage::NormalizeTimestamp(w.to_iso, &w.to_key).ok()) {
      throw std::runtime_error("bad workload line: " + line);
    }
    items.push_back(std::move(w));
  }
  return items;
}

// --- what an answer must hold, and what it held ---

// One line of bench_gen --expect: the readings a request must be answered with, in time order.
struct Expected {
  std::string device;
  std::int64_t from_ms = 0, step_ms = 0;
  std::size_t count = 0;
  std::string pad;
  std::vector<double> temperature, humidity;
};

std::vector<Expected> ReadExpected(const std::string& path) {
  std::vector<Expected> all;
  for (const auto& line : Lines(path)) {
    std::istringstream in(line);
    Expected e;
    std::size_t pad = 0;
    in >> e.device >> e.from_ms >> e.step_ms >> e.count >> pad;
    e.pad.assign(pad, 'x');
    e.temperature.resize(e.count);
    e.humidity.resize(e.count);
    for (std::size_t j = 0; j < e.count; ++j) in >> e.temperature[j] >> e.humidity[j];
    if (!in) throw std::runtime_error("bad --expect line: " + line.substr(0, 80));
    all.push_back(std::move(e));
  }
  return all;
}

// An item of an answer as the check sees it.
struct Item {
  std::string device;
  std::string sort_key;  // readingTs, normalised as storage/key.h stores it
  std::optional<double> temperature, humidity;
  std::optional<std::string> pad;
};

struct Answer {
  std::size_t count = 0;  // items in the answer
  std::size_t bytes = 0;
  std::vector<std::pair<std::size_t, Item>> items;  // (position in the answer, item): all, or a sample
  std::string error;                                // what was wrong with its form
};

// How a system's answers are laid out.
struct Shape {
  bool newest_first = false;
  bool pad = true;  // items carry the "pad" string
};

std::string SortKeyOfMs(std::int64_t ms) {
  std::string key;
  if (!readingsd::storage::NormalizeTimestamp(readingsd::tools::FormatTimestamp(ms), &key).ok()) {
    throw std::runtime_error("cannot normalise " + std::to_string(ms));
  }
  return key;
}

std::string Num(std::optional<double> v) {
  if (!v) return "(none)";
  char b[32];
  return std::string(b, std::to_chars(b, b + sizeof(b), *v).ptr);
}

// "" when `a` is what `e` says it must be; otherwise what differs first.
std::string Check(const Expected& e, const Answer& a, const Shape& shape) {
  if (!a.error.empty()) return a.error;
  if (a.count != e.count) return std::to_string(a.count) + " items, expected " + std::to_string(e.count);
  for (const auto& [pos, item] : a.items) {
    if (pos >= e.count) return "item " + std::to_string(pos) + " beyond the count";
    const std::size_t j = shape.newest_first ? e.count - 1 - pos : pos;
    const std::string at = "item " + std::to_string(pos) + ": ";
    if (item.device != e.device) return at + "device " + item.device + ", expected " + e.device;
    const std::string key = SortKeyOfMs(e.from_ms + static_cast<std::int64_t>(j) * e.step_ms);
    if (item.sort_key != key) return at + "readingTs " + item.sort_key + ", expected " + key;
    if (item.temperature != e.temperature[j]) {
      return at + "temperature " + Num(item.temperature) + ", expected " + Num(e.temperature[j]);
    }
    if (item.humidity != e.humidity[j]) return at + "humidity " + Num(item.humidity) + ", expected " + Num(e.humidity[j]);
    const bool want_pad = shape.pad && !e.pad.empty();
    if (want_pad && item.pad != e.pad) return at + "pad \"" + item.pad.value_or("(none)") + "\", expected \"" + e.pad + "\"";
    if (!want_pad && item.pad) return at + "a pad attribute it should not have";
  }
  return "";
}

// An item read from the store (raw, engine): `sort_key` and the encoded value.
Item StoredItem(std::string_view device, std::string_view sort_key, std::string_view encoded, std::string* error) {
  Item item{std::string(device), std::string(sort_key), {}, {}, {}};
  std::vector<readingsd::storage::Attribute> attributes;
  if (Status s = readingsd::storage::DecodeAttributes(encoded, &attributes); !s.ok()) {
    *error = "undecodable value: " + s.ToString();
    return item;
  }
  for (const auto& a : attributes) {
    const auto* n = std::get_if<readingsd::storage::Number>(&a.value);
    const std::string* str = std::get_if<std::string>(&a.value);
    if (a.name == "temperature" && n) {
      item.temperature = readingsd::storage::NumberToDouble(n->text);
    } else if (a.name == "humidity" && n) {
      item.humidity = readingsd::storage::NumberToDouble(n->text);
    } else if (a.name == "pad" && str) {
      item.pad = *str;
    } else {
      *error = "unexpected attribute " + a.name;
    }
  }
  return item;
}

// The positions a sampled answer is checked at: first, middle, last.
std::vector<std::size_t> SamplePositions(std::size_t count) {
  std::vector<std::size_t> at;
  for (std::size_t p : {std::size_t{0}, count / 2, count - 1}) {
    if (count > 0 && (at.empty() || at.back() != p)) at.push_back(p);
  }
  return at;
}

// --- a minimal HTTP/1.1 keep-alive client (Content-Length and chunked bodies) ---

struct Framing {
  int status = 0;
  bool close_after = false;
  bool gzip = false;            // Content-Encoding: gzip
  std::size_t body_bytes = 0;  // as sent: compressed when gzip
  std::size_t end = 0;  // where the response ends in its buffer
};

// Reads one HTTP/1.1 response from the front of `buf`; `fill(buf)` appends more bytes (false at
// the end of the stream). `body`, when given, receives the body without its chunk framing. The
// client reads with a socket as `fill`, and parses the kept bytes again after the run with none.
template <typename Fill>
bool ParseResponse(std::string& buf, Fill&& fill, Framing* f, std::string* body) {
  std::size_t pos = 0;
  std::string line;
  auto next_line = [&] {  // up to "\r\n", which is skipped
    for (;;) {
      const auto at = buf.find("\r\n", pos);
      if (at != std::string::npos) {
        line.assign(buf, pos, at - pos);
        pos = at + 2;
        return true;
      }
      if (!fill(buf)) return false;
    }
  };
  auto take = [&](std::size_t n, bool is_body) {
    while (buf.size() - pos < n) {
      if (!fill(buf)) return false;
    }
    if (is_body && body != nullptr) body->append(buf, pos, n);
    pos += n;
    return true;
  };
  if (!next_line() || line.size() < 12) return false;
  f->status = std::atoi(line.c_str() + 9);
  std::optional<std::size_t> length;
  bool chunked = false;
  for (;;) {
    if (!next_line()) return false;
    if (line.empty()) break;
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    if (line.starts_with("content-length:")) length = std::stoull(line.substr(15));
    if (line.starts_with("transfer-encoding:") && line.find("chunked") != std::string::npos) chunked = true;
    if (line.starts_with("connection:") && line.find("close") != std::string::npos) f->close_after = true;
    if (line.starts_with("content-encoding:") && line.find("gzip") != std::string::npos) f->gzip = true;
  }
  if (chunked) {
    for (;;) {
      if (!next_line()) return false;
      const std::size_t n = std::stoull(line, nullptr, 16);
      if (n == 0) {
        do {  // trailers, then the empty line
          if (!next_line()) return false;
        } while (!line.empty());
        break;
      }
      if (!take(n, true) || !take(2, false)) return false;
      f->body_bytes += n;
    }
  } else if (length) {
    if (!take(*length, true)) return false;
    f->body_bytes += *length;
  } else {
    f->close_after = true;  // body until close
    while (fill(buf)) {
    }
    const std::size_t n = buf.size() - pos;
    take(n, true);
    f->body_bytes += n;
  }
  f->end = pos;
  return true;
}

// A gzip body inflated whole (after the run, outside the clock).
bool Gunzip(const std::string& in, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return false;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char chunk[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out->append(chunk, sizeof(chunk) - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END && z.avail_in == 0;
}

class HttpClient {
 public:
  // `gzip`: every request says Accept-Encoding: gzip.
  HttpClient(std::string host, int port, bool gzip) : host_(std::move(host)), port_(port), gzip_(gzip) {}
  ~HttpClient() { Close(); }

  // GET `path`; the whole response, as received, is left in *raw. False when the connection
  // failed twice.
  bool Get(const std::string& path, std::string* raw, Framing* f) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fd_ < 0) Connect();
      raw->assign(carry_);
      carry_.clear();
      *f = Framing{};
      std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host_ + "\r\nConnection: keep-alive\r\n" +
                        (gzip_ ? "Accept-Encoding: gzip\r\n\r\n" : "\r\n");
      if (!SendAll(req)) {
        Close();
        continue;  // the server closed an idle connection: reconnect once
      }
      if (!ParseResponse(*raw, [this](std::string& b) { return Fill(b); }, f, nullptr)) {
        Close();
        if (attempt == 0 && raw->empty()) continue;
        return false;
      }
      if (f->end < raw->size()) {  // bytes of a response that was not asked for yet
        carry_.assign(*raw, f->end);
        raw->resize(f->end);
      }
      if (f->close_after) Close();
      return true;
    }
    return false;
  }

 private:
  void Connect() {
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &res) != 0 || res == nullptr) {
      throw std::runtime_error("cannot resolve " + host_);
    }
    fd_ = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || connect(fd_, res->ai_addr, res->ai_addrlen) != 0) {
      freeaddrinfo(res);
      throw std::runtime_error("cannot connect to " + host_ + ":" + std::to_string(port_));
    }
    freeaddrinfo(res);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    carry_.clear();
  }
  bool SendAll(const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      ssize_t n = send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  bool Fill(std::string& buf) {
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  std::string host_;
  int port_;
  bool gzip_;
  int fd_ = -1;
  std::string carry_;
};

// --- the answers of each system, parsed after the run ---

double Number(const nlohmann::json& v) {
  if (!v.is_number()) throw std::runtime_error("not a number: " + v.dump());
  return v.get<double>();
}

std::string SortKeyOfIso(const std::string& iso) {
  std::string key;
  if (Status s = readingsd::storage::NormalizeTimestamp(iso, &key); !s.ok()) {
    throw std::runtime_error("bad timestamp " + iso + ": " + s.ToString());
  }
  return key;
}

// Sets `item`'s attribute `name` from an answer's JSON value; false for a name readings do not have.
bool SetAttribute(const std::string& name, const nlohmann::json& v, Item* item) {
  if (name == "temperature") {
    item->temperature = Number(v);
  } else if (name == "humidity") {
    item->humidity = Number(v);
  } else if (name == "pad") {
    if (!v.is_null()) item->pad = v.get<std::string>();
  } else {
    return false;
  }
  return true;
}

// readingsd's native page {"items":[{"deviceId":…,"readingTs":…,…}],"count":N,…}.
void ParseReadingsd(const std::string& body, Answer* a) {
  const auto page = nlohmann::json::parse(body);
  const auto& items = page.at("items");
  a->count = items.size();
  if (page.at("count").get<std::size_t>() != items.size()) {
    a->error = "\"count\" " + page.at("count").dump() + " but " + std::to_string(items.size()) + " items";
    return;
  }
  for (std::size_t p = 0; p < items.size(); ++p) {
    Item item;
    for (const auto& [name, v] : items[p].items()) {
      if (name == "deviceId") {
        item.device = v.get<std::string>();
      } else if (name == "readingTs") {
        item.sort_key = v.get<std::string>();
      } else if (!SetAttribute(name, v, &item)) {
        a->error = "item " + std::to_string(p) + " has an unexpected attribute " + name;
        return;
      }
    }
    a->items.emplace_back(p, std::move(item));
  }
}

// readingsd's format=columns page {"deviceId":…,"readingTs":[…],"columns":{"temperature":[…],…},
// "count":N,…}: a column as long as readingTs, null where a reading lacks the attribute.
void ParseReadingsdColumns(const std::string& body, Answer* a) {
  const auto page = nlohmann::json::parse(body);
  const auto& ts = page.at("readingTs");
  a->count = ts.size();
  if (page.at("count").get<std::size_t>() != ts.size()) {
    a->error = "\"count\" " + page.at("count").dump() + " but " + std::to_string(ts.size()) + " readingTs";
    return;
  }
  std::vector<Item> items(ts.size());
  for (std::size_t p = 0; p < ts.size(); ++p) {
    items[p].device = page.at("deviceId").get<std::string>();
    items[p].sort_key = ts[p].get<std::string>();
  }
  for (const auto& [name, column] : page.at("columns").items()) {
    if (column.size() != ts.size()) {
      a->error = "column " + name + " has " + std::to_string(column.size()) + " values for " +
                 std::to_string(ts.size()) + " readingTs";
      return;
    }
    for (std::size_t p = 0; p < ts.size(); ++p) {
      if (!column[p].is_null() && !SetAttribute(name, column[p], &items[p])) {
        a->error = "an unexpected column " + name;
        return;
      }
    }
  }
  for (std::size_t p = 0; p < items.size(); ++p) a->items.emplace_back(p, std::move(items[p]));
}

// VictoriaMetrics' /api/v1/export: one JSON line per series, here temperature and humidity.
void ParseVictoriaMetrics(const std::string& body, Answer* a) {
  std::map<std::string, nlohmann::json> series;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto s = nlohmann::json::parse(line);
    const std::string name = s.at("metric").at("__name__").get<std::string>();
    if (!series.emplace(name, std::move(s)).second) {
      a->error = "two series named " + name;
      return;
    }
  }
  if (series.empty()) return;  // no readings: count 0
  if (series.size() != 2 || !series.count("temperature") || !series.count("humidity")) {
    a->error = std::to_string(series.size()) + " series, expected temperature and humidity";
    return;
  }
  const auto& t = series["temperature"];
  const auto& h = series["humidity"];
  if (t.at("timestamps") != h.at("timestamps") || t.at("values").size() != t.at("timestamps").size() ||
      h.at("values").size() != h.at("timestamps").size()) {
    a->error = "the two series' timestamps differ";
    return;
  }
  a->count = t.at("timestamps").size();
  for (std::size_t p = 0; p < a->count; ++p) {
    Item item;
    item.device = t.at("metric").at("device").get<std::string>();
    if (h.at("metric").at("device") != item.device) {
      a->error = "the two series are of different devices";
      return;
    }
    item.sort_key = SortKeyOfMs(t.at("timestamps")[p].get<std::int64_t>());
    item.temperature = Number(t.at("values")[p]);
    item.humidity = Number(h.at("values")[p]);
    a->items.emplace_back(p, std::move(item));
  }
}

// InfluxDB 1.x /query with epoch=ms: {"results":[{"series":[{"columns":[…],"values":[[…]]}]}]}.
void ParseInflux(const std::string& body, Answer* a) {
  const auto doc = nlohmann::json::parse(body);
  const auto& result = doc.at("results").at(0);
  if (result.contains("error")) {
    a->error = "InfluxDB error " + result["error"].dump();
    return;
  }
  std::size_t p = 0;
  for (const auto& series : result.value("series", nlohmann::json::array())) {
    const auto& columns = series.at("columns");
    for (const auto& row : series.at("values")) {
      Item item;
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const std::string name = columns[c].get<std::string>();
        const auto& v = row.at(c);
        if (name == "time") {
          item.sort_key = SortKeyOfMs(v.get<std::int64_t>());
        } else if (name == "device") {
          item.device = v.get<std::string>();
        } else if (!SetAttribute(name, v, &item)) {
          a->error = "unexpected column " + name;
          return;
        }
      }
      a->items.emplace_back(p++, std::move(item));
    }
  }
  a->count = p;
}

// --- one connection per client, one kind per mode ---

class Connection {
 public:
  virtual ~Connection() = default;
  // Sends request i and waits for its whole answer: all that is timed.
  virtual bool Send(std::size_t i) = 0;
  // Right after Send, outside the clock: keeps what the check needs of the answer. It runs
  // between timed requests, so it only copies a few items.
  virtual void Keep(std::size_t i, Answer* a) = 0;
  // After the run: completes the answers Keep could not read cheaply.
  virtual void Finish(std::size_t /*i*/, Answer* /*a*/) {}
};

class HttpConnection final : public Connection {
 public:
  HttpConnection(const std::string& host, int port, bool gzip, const std::vector<std::string>& paths,
                 std::string format)
      : client_(host, port, gzip), paths_(paths), format_(std::move(format)), raw_(paths.size()), framing_(paths.size()) {}

  bool Send(std::size_t i) override {
    return client_.Get(paths_[i], &raw_[i], &framing_[i]) && framing_[i].status == 200;
  }
  void Keep(std::size_t i, Answer* a) override {
    *a = Answer{};
    a->bytes = framing_[i].body_bytes;
  }
  void Finish(std::size_t i, Answer* a) override {
    if (framing_[i].status != 200) {
      a->error = "HTTP " + std::to_string(framing_[i].status) + ": " + raw_[i].substr(0, 300);
      return;
    }
    std::string body;
    Framing f;
    if (!ParseResponse(raw_[i], [](std::string&) { return false; }, &f, &body)) {
      a->error = "the kept response does not parse";
      return;
    }
    if (f.gzip) {
      std::string inflated;
      if (!Gunzip(body, &inflated)) {
        a->error = "the gzip body does not inflate";
        return;
      }
      body.swap(inflated);
    }
    try {
      if (format_ == "victoriametrics") {
        ParseVictoriaMetrics(body, a);
      } else if (format_ == "influxdb") {
        ParseInflux(body, a);
      } else if (format_ == "readingsd-columns") {
        ParseReadingsdColumns(body, a);
      } else {
        ParseReadingsd(body, a);
      }
    } catch (const std::exception& e) {
      a->error = std::string("malformed answer (") + e.what() + "): " + body.substr(0, 200);
    }
    std::string().swap(raw_[i]);
  }

 private:
  HttpClient client_;
  const std::vector<std::string>& paths_;
  std::string format_;
  std::vector<std::string> raw_;  // request i's response as received; written first by the warm-up pass
  std::vector<Framing> framing_;
};

class PgConnection final : public Connection {
 public:
  PgConnection(const std::string& conninfo, const std::vector<WorkItem>& work, const std::string& mode, std::size_t n)
      : conn_(PQconnectdb(conninfo.c_str()), PQfinish), work_(work), params_(mode == "latest" ? 1 : 3) {
    if (PQstatus(conn_.get()) != CONNECTION_OK) throw std::runtime_error(std::string("pg: ") + PQerrorMessage(conn_.get()));
    // timestamptz is printed in the session's zone: UTC, so the check can read it.
    Exec("SET TimeZone = 'UTC'", PGRES_COMMAND_OK);
    const std::string sql =
        mode == "latest"
            ? "SELECT device_id, ts, temperature, humidity, pad FROM readings WHERE device_id = $1 ORDER BY ts DESC LIMIT " +
                  std::to_string(n)
            : "SELECT device_id, ts, temperature, humidity, pad FROM readings WHERE device_id = $1 AND ts BETWEEN $2 AND $3 "
              "ORDER BY ts";
    PGresult* prep = PQprepare(conn_.get(), "q", sql.c_str(), params_, nullptr);
    const bool ok = PQresultStatus(prep) == PGRES_COMMAND_OK;
    PQclear(prep);
    if (!ok) throw std::runtime_error(std::string("pg prepare: ") + PQerrorMessage(conn_.get()));
  }
  ~PgConnection() override { PQclear(result_); }

  bool Send(std::size_t i) override {
    const char* values[3] = {work_[i].device.c_str(), work_[i].from_iso.c_str(), work_[i].to_iso.c_str()};
    result_ = PQexecPrepared(conn_.get(), "q", params_, values, nullptr, nullptr, 0);
    return PQresultStatus(result_) == PGRES_TUPLES_OK;
  }
  void Keep(std::size_t, Answer* a) override {
    *a = Answer{};
    if (PQresultStatus(result_) != PGRES_TUPLES_OK) {
      a->error = std::string("pg: ") + PQresultErrorMessage(result_);
    } else {
      const int rows = PQntuples(result_);
      a->count = static_cast<std::size_t>(rows);
      for (int row = 0; row < rows; ++row) {
        for (int col = 0; col < PQnfields(result_); ++col) a->bytes += static_cast<std::size_t>(PQgetlength(result_, row, col));
      }
      for (std::size_t p : SamplePositions(a->count)) {
        const int row = static_cast<int>(p);
        auto text = [&](int col) { return std::string(PQgetvalue(result_, row, col)); };
        Item item;
        item.device = text(0);
        // "2026-06-23 00:00:00+00" -> ISO-8601
        std::string ts = text(1);
        if (ts.size() > 10) ts[10] = 'T';
        try {
          item.sort_key = SortKeyOfIso(ts);
        } catch (const std::exception& e) {
          a->error = e.what();
        }
        if (!PQgetisnull(result_, row, 2)) item.temperature = std::strtod(PQgetvalue(result_, row, 2), nullptr);
        if (!PQgetisnull(result_, row, 3)) item.humidity = std::strtod(PQgetvalue(result_, row, 3), nullptr);
        if (!PQgetisnull(result_, row, 4)) item.pad = text(4);
        a->items.emplace_back(p, std::move(item));
      }
    }
    PQclear(result_);
    result_ = nullptr;
  }

 private:
  void Exec(const char* sql, ExecStatusType want) {
    PGresult* r = PQexec(conn_.get(), sql);
    const bool ok = PQresultStatus(r) == want;
    PQclear(r);
    if (!ok) throw std::runtime_error(std::string("pg: ") + sql + ": " + PQerrorMessage(conn_.get()));
  }

  std::shared_ptr<PGconn> conn_;
  const std::vector<WorkItem>& work_;
  int params_;
  PGresult* result_ = nullptr;
};

class RawConnection final : public Connection {
 public:
  RawConnection(const readingsd::storage::Store& store, const std::vector<WorkItem>& work, bool latest, std::size_t n)
      : store_(store), work_(work), latest_(latest), n_(n) {}

  bool Send(std::size_t i) override {
    const auto& w = work_[i];
    items_ = bytes_ = 0;
    auto touch = [&](const readingsd::storage::PartitionIterator& it) {
      if (items_++ == 0) {  // the first item is the sample: copied, the rest only touched
        first_key_.assign(it.sort_key());
        first_value_.assign(it.encoded_attributes());
      }
      bytes_ += it.sort_key().size() + it.encoded_attributes().size();
    };
    if (latest_) {
      auto it = store_.NewIterator(w.device, "", "");
      it->SeekToLast();
      for (std::size_t k = 0; k < n_ && it->Valid(); ++k, it->Prev()) touch(*it);
      return it->status().ok();
    }
    auto it = store_.NewIterator(w.device, w.from_key, w.to_key + '\0');  // inclusive upper bound
    for (it->SeekToFirst(); it->Valid(); it->Next()) touch(*it);
    return it->status().ok();
  }
  void Keep(std::size_t i, Answer* a) override {
    *a = Answer{};
    a->count = items_;
    a->bytes = bytes_;
    if (items_ > 0) a->items.emplace_back(0, StoredItem(work_[i].device, first_key_, first_value_, &a->error));
  }

 private:
  const readingsd::storage::Store& store_;
  const std::vector<WorkItem>& work_;
  bool latest_;
  std::size_t n_;
  std::size_t items_ = 0, bytes_ = 0;
  std::string first_key_, first_value_;
};

class EngineConnection final : public Connection {
 public:
  EngineConnection(const readingsd::storage::Store& store, const std::vector<WorkItem>& work, bool latest, std::size_t n)
      : store_(store), work_(work), latest_(latest), n_(n) {}

  bool Send(std::size_t i) override {
    using namespace readingsd::query;
    const auto& w = work_[i];
    QueryRequest req;
    status_ = latest_ ? MakeKeyCondition(w.device, SortKeyOp::kAll, "", "", &req.key)
                      : MakeKeyCondition(w.device, SortKeyOp::kBetween, w.from_iso, w.to_iso, &req.key);
    req.limit = latest_ ? n_ : 10000;
    req.scan_forward = !latest_;
    if (status_.ok()) status_ = Query(store_, req, &result_);
    return status_.ok();
  }
  void Keep(std::size_t i, Answer* a) override {
    *a = Answer{};
    if (!status_.ok()) {
      a->error = status_.ToString();
      return;
    }
    a->count = result_.items.size();
    for (std::size_t p : SamplePositions(a->count)) {
      const auto item = result_.items[p];
      a->items.emplace_back(p, StoredItem(work_[i].device, item.sort_key, item.encoded_attributes, &a->error));
    }
  }

 private:
  const readingsd::storage::Store& store_;
  const std::vector<WorkItem>& work_;
  bool latest_;
  std::size_t n_;
  Status status_;
  readingsd::query::QueryResult result_;
};

using Connect = std::function<std::unique_ptr<Connection>()>;  // called once per client, on the main thread

void Report(const std::string& mode, int clients, double seconds, std::vector<double> us, std::size_t items,
            std::size_t bytes, std::size_t errors, std::size_t wrong) {
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[static_cast<std::size_t>(std::ceil(q * us.size())) - 1]; };
  double sum = 0;
  for (double v : us) sum += v;
  const double n = static_cast<double>(us.size());
  std::printf("mode=%s n=%zu p50_us=%.0f p90_us=%.0f p99_us=%.0f mean_us=%.0f max_us=%.0f items=%.1f bytes=%.0f errors=%zu "
              "wrong=%zu clients=%d rps=%.0f\n",
              mode.c_str(), us.size(), pct(0.50), pct(0.90), pct(0.99), sum / n, us.back(),
              static_cast<double>(items) / n, static_cast<double>(bytes) / n, errors, wrong, clients, n / seconds);
}

// Client c sends requests c, c + clients, ... one after another on its own connection; all
// clients start timing together, after each has sent its share of warm-up passes. Then every
// answer is checked against `expected`.
int Run(const std::string& mode, const std::vector<Expected>& expected, const Shape& shape, int warmup, int clients,
        const std::string& latencies_path, const Connect& connect) {
  const std::size_t count = expected.size();
  struct Client {
    std::unique_ptr<Connection> conn;
    std::vector<double> us;
    std::size_t errors = 0;
  };
  std::vector<Client> all(static_cast<std::size_t>(clients));
  for (Client& c : all) c.conn = connect();
  std::vector<Answer> answers(count);
  Clock::time_point start;
  std::barrier ready(clients, [&]() noexcept { start = Clock::now(); });
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Client& me = all[static_cast<std::size_t>(c)];
      me.us.reserve(count / static_cast<std::size_t>(clients) + 1);  // no reallocation between timed requests
      for (int w = 0; w < warmup; ++w) {
        for (std::size_t i = c; i < count; i += clients) {
          me.conn->Send(i);
          me.conn->Keep(i, &answers[i]);
        }
      }
      ready.arrive_and_wait();
      for (std::size_t i = c; i < count; i += clients) {
        const auto t0 = Clock::now();
        const bool ok = me.conn->Send(i);
        me.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        me.conn->Keep(i, &answers[i]);
        me.errors += ok ? 0 : 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> us;
  std::size_t items = 0, bytes = 0, errors = 0, wrong = 0;
  for (int c = 0; c < clients; ++c) {
    Client& client = all[static_cast<std::size_t>(c)];
    us.insert(us.end(), client.us.begin(), client.us.end());
    errors += client.errors;
    for (std::size_t i = c; i < count; i += clients) {
      Answer& a = answers[i];
      client.conn->Finish(i, &a);
      items += a.count;
      bytes += a.bytes;
      if (std::string why = Check(expected[i], a, shape); !why.empty() && wrong++ < 5) {
        std::cerr << "bench_query: " << mode << " answer " << i << " (" << expected[i].device << " from "
                  << readingsd::tools::FormatTimestamp(expected[i].from_ms) << "): " << why << "\n";
      }
    }
  }
  if (!latencies_path.empty()) {  // client by client, each in request order: shows bursts
    std::ofstream out(latencies_path);
    for (double v : us) out << v << "\n";
  }
  Report(mode, clients, seconds, std::move(us), items, bytes, errors, wrong);
  if (wrong > 0) {
    std::cerr << "bench_query: " << wrong << " of " << count << " " << mode
              << " answers differ from the generator's readings\n";
  }
  return errors == 0 && wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace readingsd;
  try {
    bench::Flags f(argc, argv);
    if (f.positional().empty() || !f.Has("expect")) {
      std::cerr << "usage: bench_query http|pg|raw|engine --expect FILE ... (see the header of bench/drivers/bench_query.cc)\n";
      return 2;
    }
    const std::string kind = f.positional()[0];
    const int warmup = static_cast<int>(f.Int("warmup", 1));
    const std::string latencies = f.Str("latencies", "");
    const int clients = static_cast<int>(f.Int("clients", 1));
    if (clients < 1) throw std::runtime_error("--clients must be at least 1");
    const std::string mode = f.Str("mode", "between");
    if (mode != "between" && mode != "latest") throw std::runtime_error("--mode must be between or latest");
    const bool latest = mode == "latest";
    const auto latest_n = static_cast<std::size_t>(f.Int("n", 10));
    const std::vector<Expected> expected = ReadExpected(f.Str("expect"));
    auto same_size = [&](std::size_t n, const std::string& what) {
      if (n != expected.size()) {
        throw std::runtime_error(what + " has " + std::to_string(n) + " lines, --expect " + std::to_string(expected.size()));
      }
    };

    if (kind == "http") {
      const auto paths = Lines(f.Str("paths"));
      same_size(paths.size(), "--paths");
      const std::string host = f.Str("host", "127.0.0.1");
      const int port = static_cast<int>(f.Int("port", 80));
      const std::string format = f.Str("format");
      if (format != "readingsd" && format != "readingsd-fields" && format != "readingsd-columns" &&
          format != "victoriametrics" && format != "influxdb") {
        throw std::runtime_error(
            "--format must be readingsd, readingsd-fields, readingsd-columns, victoriametrics or influxdb");
      }
      const std::string encoding = f.Str("encoding", "identity");
      if (encoding != "identity" && encoding != "gzip") throw std::runtime_error("--encoding must be identity or gzip");
      const bool gzip = encoding == "gzip";
      // VictoriaMetrics has no "newest n": its latest is the export of their range, oldest first.
      const Shape shape{latest && format != "victoriametrics", format != "readingsd-fields" && format != "victoriametrics"};
      return Run("http-" + mode, expected, shape, warmup, clients, latencies,
                 [&] { return std::make_unique<HttpConnection>(host, port, gzip, paths, format); });
    }

    const auto work = Workload(f.Str("workload"));
    same_size(work.size(), "--workload");
    const Shape shape{latest, true};
    if (kind == "pg") {
      return Run("pg-" + mode, expected, shape, warmup, clients, latencies,
                 [&] { return std::make_unique<PgConnection>(f.Str("conninfo"), work, mode, latest_n); });
    }

    storage::StoreOptions options;
    options.path = f.Str("dir");
    options.read_only = true;
    std::unique_ptr<storage::Store> store;
    if (Status s = storage::Store::Open(options, &store); !s.ok()) throw std::runtime_error(s.ToString());
    if (kind == "raw") {
      return Run("raw-" + mode, expected, shape, warmup, clients, latencies,
                 [&] { return std::make_unique<RawConnection>(*store, work, latest, latest_n); });
    }
    if (kind == "engine") {
      return Run("engine-" + mode, expected, shape, warmup, clients, latencies,
                 [&] { return std::make_unique<EngineConnection>(*store, work, latest, latest_n); });
    }
    std::cerr << "bench_query: unknown kind " << kind << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_query: " << e.what() << "\n";
    return 1;
  }
}
