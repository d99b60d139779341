// bench_query: per-request latency of one query workload against one system, over one
// persistent connection (or in process), requests one after another; or over several, each
// with its own thread (--clients).
//
//   bench_query http   --host H --port P --paths FILE           GET each line of FILE (keep-alive)
//   bench_query pg     --conninfo C --workload FILE --mode between|latest [--n 10]
//   bench_query raw    --dir D --workload FILE --mode between|latest [--n 10]
//   bench_query engine --dir D --workload FILE --mode between|latest [--n 10]
//   common: [--warmup 1] (untimed passes over the whole list first)
//           [--clients 1] (that many connections, each with its own thread, share the list)
//           [--latencies FILE] (every timed request's latency in µs, one per line, in order)
//
// FILE for pg/raw/engine is bench_gen's workload ("<device> <from_iso> <to_iso> ..."). pg runs
// one prepared statement (SELECT ... WHERE device_id=$1 AND ts BETWEEN $2 AND $3, or ORDER BY
// ts DESC LIMIT n) with text results, as psql would. raw is the ceiling: readingsd's own RocksDB
// iterator (Store::NewIterator: bounds + prefix bloom) walking the window and touching each
// key and value, no decoding. engine adds readingsd's query layer (query::Query: key condition,
// decoding into Readings), i.e. everything the HTTP API does except HTTP and JSON.
//
// A latency is measured from sending the request to having read the whole response body.
// Prints one key=value line: n, p50_us, p90_us, p99_us, mean_us, max_us, items (per request,
// where the mode can count them), bytes (per request), errors, clients, rps (requests per second
// of all clients together).
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "bench/drivers/common.h"
#include "query/query.h"
#include "storage/key.h"
#include "storage/store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  std::size_t items = 0;
  std::size_t bytes = 0;
  bool ok = true;
};

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

// --- a minimal HTTP/1.1 keep-alive client (Content-Length and chunked bodies) ---

class HttpClient {
 public:
  HttpClient(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~HttpClient() { Close(); }

  Outcome Get(const std::string& path) {
    Outcome out;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fd_ < 0) Connect();
      std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host_ + "\r\nConnection: keep-alive\r\n\r\n";
      if (!SendAll(req)) {
        Close();
        continue;  // the server closed an idle connection: reconnect once
      }
      int status = 0;
      bool close_after = false;
      if (!ReadResponse(&status, &out.bytes, &close_after)) {
        Close();
        if (attempt == 0 && out.bytes == 0) continue;
        out.ok = false;
        return out;
      }
      if (close_after) Close();
      out.ok = status == 200;
      if (!out.ok && errors_shown_++ < 3) std::cerr << "bench_query: HTTP " << status << " for " << path << "\n";
      return out;
    }
    out.ok = false;
    return out;
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
    buf_.clear();
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    buf_.clear();
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
  bool Fill() {
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
  // Reads up to and including "\r\n"; returns the line without it.
  bool Line(std::string* line) {
    for (;;) {
      auto at = buf_.find("\r\n", pos_);
      if (at != std::string::npos) {
        *line = buf_.substr(pos_, at - pos_);
        pos_ = at + 2;
        return true;
      }
      if (!Fill()) return false;
    }
  }
  bool Take(std::size_t n) {
    while (buf_.size() - pos_ < n) {
      if (!Fill()) return false;
    }
    pos_ += n;
    return true;
  }
  bool ReadResponse(int* status, std::size_t* body_bytes, bool* close_after) {
    pos_ = 0;
    std::string line;
    if (!Line(&line) || line.size() < 12) return false;
    *status = std::atoi(line.c_str() + 9);
    std::optional<std::size_t> length;
    bool chunked = false;
    for (;;) {
      if (!Line(&line)) return false;
      if (line.empty()) break;
      std::string lower = line;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.starts_with("content-length:")) length = std::stoull(lower.substr(15));
      if (lower.starts_with("transfer-encoding:") && lower.find("chunked") != std::string::npos) chunked = true;
      if (lower.starts_with("connection:") && lower.find("close") != std::string::npos) *close_after = true;
    }
    if (chunked) {
      for (;;) {
        if (!Line(&line)) return false;
        const std::size_t n = std::stoull(line, nullptr, 16);
        if (n == 0) {
          do {  // trailers, then the empty line
            if (!Line(&line)) return false;
          } while (!line.empty());
          break;
        }
        if (!Take(n + 2)) return false;
        *body_bytes += n;
      }
    } else if (length) {
      if (!Take(*length)) return false;
      *body_bytes += *length;
    } else {
      *close_after = true;  // body until close
      while (Fill()) {
      }
      *body_bytes += buf_.size() - pos_;
      pos_ = buf_.size();
    }
    buf_.erase(0, pos_);
    pos_ = 0;
    return true;
  }

  std::string host_;
  int port_;
  int fd_ = -1;
  std::string buf_;
  std::size_t pos_ = 0;
  int errors_shown_ = 0;
};

// --- one request kind per mode ---

using Request = std::function<Outcome(std::size_t)>;
// Called once per client, on the main thread: that client's connection, as a Request.
using Connect = std::function<Request()>;

void Report(const std::string& mode, int clients, double seconds, std::vector<double> us, std::size_t items,
            std::size_t bytes, std::size_t errors) {
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[static_cast<std::size_t>(std::ceil(q * us.size())) - 1]; };
  double sum = 0;
  for (double v : us) sum += v;
  const double n = static_cast<double>(us.size());
  std::printf("mode=%s n=%zu p50_us=%.0f p90_us=%.0f p99_us=%.0f mean_us=%.0f max_us=%.0f items=%.1f bytes=%.0f errors=%zu "
              "clients=%d rps=%.0f\n",
              mode.c_str(), us.size(), pct(0.50), pct(0.90), pct(0.99), sum / n, us.back(),
              static_cast<double>(items) / n, static_cast<double>(bytes) / n, errors, clients, n / seconds);
}

// Client c sends requests c, c + clients, ... one after another on its own connection; all
// clients start timing together, after each has sent its share of warm-up passes.
int Run(const std::string& mode, std::size_t count, int warmup, int clients, const std::string& latencies_path,
        const Connect& connect) {
  struct Client {
    Request request;
    std::vector<double> us;
    std::size_t items = 0, bytes = 0, errors = 0;
  };
  std::vector<Client> all(static_cast<std::size_t>(clients));
  for (Client& c : all) c.request = connect();
  Clock::time_point start;
  std::barrier ready(clients, [&]() noexcept { start = Clock::now(); });
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Client& me = all[static_cast<std::size_t>(c)];
      me.us.reserve(count / static_cast<std::size_t>(clients) + 1);  // no reallocation between timed requests
      for (int w = 0; w < warmup; ++w) {
        for (std::size_t i = c; i < count; i += clients) me.request(i);
      }
      ready.arrive_and_wait();
      for (std::size_t i = c; i < count; i += clients) {
        const auto t0 = Clock::now();
        Outcome o = me.request(i);
        me.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        me.items += o.items;
        me.bytes += o.bytes;
        me.errors += o.ok ? 0 : 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> us;
  std::size_t items = 0, bytes = 0, errors = 0;
  for (const Client& c : all) {
    us.insert(us.end(), c.us.begin(), c.us.end());
    items += c.items;
    bytes += c.bytes;
    errors += c.errors;
  }
  if (!latencies_path.empty()) {  // client by client, each in request order: shows bursts
    std::ofstream out(latencies_path);
    for (double v : us) out << v << "\n";
  }
  Report(mode, clients, seconds, std::move(us), items, bytes, errors);
  return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace readingsd;
  try {
    bench::Flags f(argc, argv);
    if (f.positional().empty()) {
      std::cerr << "usage: bench_query http|pg|raw|engine ... (see the header of bench/drivers/bench_query.cc)\n";
      return 2;
    }
    const std::string kind = f.positional()[0];
    const int warmup = static_cast<int>(f.Int("warmup", 1));
    const std::string latencies = f.Str("latencies", "");
    const int clients = static_cast<int>(f.Int("clients", 1));
    if (clients < 1) throw std::runtime_error("--clients must be at least 1");
    const std::string mode = f.Str("mode", "between");
    const auto latest_n = static_cast<std::size_t>(f.Int("n", 10));

    if (kind == "http") {
      auto paths = Lines(f.Str("paths"));
      const std::string host = f.Str("host", "127.0.0.1");
      const int port = static_cast<int>(f.Int("port", 80));
      return Run("http", paths.size(), warmup, clients, latencies, [&]() -> Request {
        auto client = std::make_shared<HttpClient>(host, port);
        return [client, &paths](std::size_t i) { return client->Get(paths[i]); };
      });
    }

    auto work = Workload(f.Str("workload"));
    if (kind == "pg") {
      const std::string sql =
          mode == "latest"
              ? "SELECT device_id, ts, temperature, humidity, pad FROM readings WHERE device_id = $1 ORDER BY ts DESC LIMIT " +
                    std::to_string(latest_n)
              : "SELECT device_id, ts, temperature, humidity, pad FROM readings WHERE device_id = $1 AND ts BETWEEN $2 AND $3 ORDER BY ts";
      const int params = mode == "latest" ? 1 : 3;
      return Run("pg-" + mode, work.size(), warmup, clients, latencies, [&]() -> Request {
        std::shared_ptr<PGconn> conn(PQconnectdb(f.Str("conninfo").c_str()), PQfinish);
        if (PQstatus(conn.get()) != CONNECTION_OK) throw std::runtime_error(std::string("pg: ") + PQerrorMessage(conn.get()));
        PGresult* prep = PQprepare(conn.get(), "q", sql.c_str(), params, nullptr);
        if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
          throw std::runtime_error(std::string("pg prepare: ") + PQerrorMessage(conn.get()));
        }
        PQclear(prep);
        return [conn, params, &work](std::size_t i) {
          const char* values[3] = {work[i].device.c_str(), work[i].from_iso.c_str(), work[i].to_iso.c_str()};
          PGresult* r = PQexecPrepared(conn.get(), "q", params, values, nullptr, nullptr, 0);
          Outcome o;
          o.ok = PQresultStatus(r) == PGRES_TUPLES_OK;
          if (o.ok) {
            o.items = static_cast<std::size_t>(PQntuples(r));
            for (int row = 0; row < PQntuples(r); ++row) {
              for (int col = 0; col < PQnfields(r); ++col) o.bytes += static_cast<std::size_t>(PQgetlength(r, row, col));
            }
          }
          PQclear(r);
          return o;
        };
      });
    }

    storage::StoreOptions options;
    options.path = f.Str("dir");
    options.read_only = true;
    std::unique_ptr<storage::Store> store;
    if (Status s = storage::Store::Open(options, &store); !s.ok()) throw std::runtime_error(s.ToString());

    if (kind == "raw") {
      return Run("raw-" + mode, work.size(), warmup, clients, latencies, [&]() -> Request { return [&](std::size_t i) {
        Outcome o;
        const auto& w = work[i];
        if (mode == "latest") {
          auto it = store->NewIterator(w.device, "", "");
          it->SeekToLast();
          for (std::size_t k = 0; k < latest_n && it->Valid(); ++k, it->Prev()) {
            ++o.items;
            o.bytes += it->sort_key().size() + it->encoded_attributes().size();
          }
          o.ok = it->status().ok();
        } else {
          auto it = store->NewIterator(w.device, w.from_key, w.to_key + '\0');  // inclusive upper bound
          for (it->SeekToFirst(); it->Valid(); it->Next()) {
            ++o.items;
            o.bytes += it->sort_key().size() + it->encoded_attributes().size();
          }
          o.ok = it->status().ok();
        }
        return o;
      }; });
    }
    if (kind == "engine") {
      return Run("engine-" + mode, work.size(), warmup, clients, latencies, [&]() -> Request { return [&](std::size_t i) {
        Outcome o;
        const auto& w = work[i];
        query::QueryRequest req;
        Status s = mode == "latest"
                       ? query::MakeKeyCondition(w.device, query::SortKeyOp::kAll, "", "", &req.key)
                       : query::MakeKeyCondition(w.device, query::SortKeyOp::kBetween, w.from_iso, w.to_iso, &req.key);
        req.limit = mode == "latest" ? latest_n : 10000;
        req.scan_forward = mode != "latest";
        query::QueryResult result;
        if (s.ok()) s = query::Query(*store, req, &result);
        o.ok = s.ok();
        o.items = result.items.size();
        return o;
      }; });
    }
    std::cerr << "bench_query: unknown kind " << kind << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_query: " << e.what() << "\n";
    return 1;
  }
}
