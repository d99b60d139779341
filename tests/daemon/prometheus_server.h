// A real Prometheus server (Debian package `prometheus`) for the end-to-end tests: started on a
// free loopback port with a prometheus.yml of the test's, and queried through its own HTTP API.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace readingsd::test {

inline constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";

// Form-encodes `s` for a query string.
std::string UrlEncode(const std::string& s);

// Polls `done` every 200 ms until it is true or `timeout` passes; returns the last result.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

class PrometheusServer {
 public:
  // prometheus.yml: `global` with a 1 s scrape interval, then `config` (scrape_configs,
  // remote_read, ...). Returns once /-/ready answers 200; throws with the log otherwise.
  explicit PrometheusServer(const std::string& config);

  // A scrape config of one job, readingsd, scraping 127.0.0.1:`port` every second.
  static std::string ScrapeConfig(int port);

  int port() const { return port_; }
  std::string log() const;

  // data of a successful GET /api/v1/<path>?<params> (params form-encoded by the caller);
  // nullopt when it failed, with the answer in *error when given.
  std::optional<nlohmann::json> Api(const std::string& path, const std::string& params,
                                    std::string* error = nullptr) const;
  // data.result of an instant query (a vector's samples); nullopt when the query failed.
  std::optional<nlohmann::json> Query(const std::string& promql) const;
  // The value of the first sample of an instant query; nullopt when the result is empty.
  std::optional<double> Value(const std::string& promql) const;
  // Waits until the readingsd target has been scraped at least `scrapes` more times.
  bool WaitForScrapes(int scrapes) const;

 private:
  TempDir dir_;
  int port_ = 0;
  std::optional<Process> process_;
};

}  // namespace readingsd::test
