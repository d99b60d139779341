#include "tests/daemon/prometheus_server.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/ports.h"

namespace readingsd::test {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(200));
  }
}

std::string PrometheusServer::ScrapeConfig(int port) {
  return "scrape_configs:\n"
         "  - job_name: readingsd\n"
         "    static_configs:\n"
         "      - targets: ['127.0.0.1:" +
         std::to_string(port) + "']\n";
}

PrometheusServer::PrometheusServer(const std::string& config) : dir_("readingsd-prometheus") {
  {
    std::ofstream yml(dir_.File("prometheus.yml"));
    yml << "global:\n"
           "  scrape_interval: 1s\n"
           "  scrape_timeout: 1s\n"
           "  evaluation_interval: 1m\n"
        << config;
  }
  StartOnFreePorts(1, [&](const std::vector<int>& ports) {
    port_ = ports[0];
    process_.emplace(ProcessOptions{{kPrometheusBinary, "--config.file=" + dir_.File("prometheus.yml"),
                                     "--storage.tsdb.path=" + dir_.File("data"), "--storage.tsdb.retention.time=1h",
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--query.max-concurrency=2", "--log.level=warn"},
                                    {},
                                    dir_.File("prometheus.log")});
    WaitUntil([&] { return !process_->Running() || Get(port_, "/-/ready").first == 200; }, seconds(30));
    if (process_->Running() && Get(port_, "/-/ready").first == 200) return true;
    process_.reset();
    if (log().find("address already in use") != std::string::npos) {
      std::filesystem::remove(dir_.File("prometheus.log"));  // the next try's log starts empty
      return false;
    }
    throw std::runtime_error("prometheus did not become ready:\n" + log());
  });
}

std::string PrometheusServer::log() const {
  std::ifstream in(dir_.File("prometheus.log"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<nlohmann::json> PrometheusServer::Api(const std::string& path, const std::string& params,
                                                    std::string* error) const {
  auto [status, body] = Get(port_, "/api/v1/" + path + "?" + params);
  if (error) *error = std::to_string(status) + " " + body;
  if (status != 200) return std::nullopt;
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || json.value("status", "") != "success") return std::nullopt;
  return json["data"];
}

std::optional<nlohmann::json> PrometheusServer::Query(const std::string& promql) const {
  auto data = Api("query", "query=" + UrlEncode(promql));
  if (!data) return std::nullopt;
  return (*data)["result"];
}

std::optional<double> PrometheusServer::Value(const std::string& promql) const {
  auto result = Query(promql);
  if (!result || !result->is_array() || result->empty()) return std::nullopt;
  return std::stod((*result)[0]["value"][1].get<std::string>());
}

bool PrometheusServer::WaitForScrapes(int scrapes) const {
  auto last = Value(R"(timestamp(up{job="readingsd"}))");
  if (!last) return false;
  const double after = *last + scrapes - 0.5;
  return WaitUntil([&] { return Value(R"(timestamp(up{job="readingsd"}))").value_or(0) > after; },
                   seconds(scrapes * 3 + 5));
}

}  // namespace readingsd::test
