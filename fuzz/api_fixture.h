// The HTTP handler fuzzers' world: one real Store in a fresh temporary directory, opened once
// per process and filled with a few readings (two devices, every attribute type, enough items
// that Limit, paging and the page-size cap are reached), and an ApiContext over it. The
// directory is removed when the process exits normally (libFuzzer's -max_total_time,
// -runs); a crashing run leaves /tmp/readingsd-fuzz-XXXXXX behind.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "query/http_api.h"
#include "query/http_server.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::fuzz {

class ApiFixture {
 public:
  static ApiFixture& Get() {
    static ApiFixture fixture;  // destroyed at exit: the store closes, then the directory goes
    return fixture;
  }

  query::ApiContext Context() const {
    return query::ApiContext{options_, *store_, hooks_, started_, "fuzz-request-id"};
  }
  const query::HttpServerOptions& options() const { return options_; }

  ApiFixture(const ApiFixture&) = delete;
  ApiFixture& operator=(const ApiFixture&) = delete;

 private:
  ApiFixture() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/readingsd-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) Die("mkdtemp");
    dir_ = pattern;

    storage::StoreOptions store_options;
    store_options.path = dir_ + "/store";
    store_options.block_cache_bytes = 1u << 20;
    store_options.write_buffer_bytes = 1u << 20;
    if (!storage::Store::Open(store_options, &store_).ok()) Die("Store::Open");

    std::vector<storage::Reading> readings;
    for (int i = 0; i < 24; ++i) {
      char sort_key[40];
      std::snprintf(sort_key, sizeof sort_key, "2026-06-23T%02d:00:00.%09dZ", i, i * 1000);
      storage::Reading r{"sensor-1", sort_key, {}};
      r.attributes.push_back({"temperature", 15.0 + i * 0.5});
      r.attributes.push_back({"status", std::string(i % 3 == 0 ? "busy" : "ok")});
      r.attributes.push_back({"online", i % 2 == 0});
      if (i % 4 == 0) r.attributes.push_back({"humidity", 40.0 + i});
      if (i == 5) r.attributes.push_back({"note", std::string("caf\xc3\xa9 \xff not utf-8")});
      readings.push_back(std::move(r));
    }
    readings.push_back({"th-01", "2026-06-23T08:00:00.000000000Z", {{"temperature", 21.5}}});
    readings.push_back({"th-01", "0000-01-01T00:00:00.000000000Z", {{"temperature", -40.0}}});
    readings.push_back({"th-01", "9999-12-31T23:59:59.999999999Z", {{"temperature", 85.0}}});
    readings.push_back({"a.b_c:d-e", "2026-01-01T00:00:00.000000000Z", {}});
    if (!store_->Write(readings).ok()) Die("Store::Write");

    options_.table_name = "readings";
    options_.max_limit = 10;
    options_.max_page_bytes = 1024;
    hooks_.metrics = [] { return std::string("# fuzz\n"); };
    hooks_.ready = [](std::string* detail) {
      *detail = "fuzz";
      return true;
    };
    // A page never reads more than max_limit items, whatever Limit / n asked for.
    hooks_.on_partition_read = [this](std::string_view device_id, std::size_t items, std::size_t) {
      FUZZ_CHECK(!device_id.empty());
      FUZZ_CHECK(items <= options_.max_limit);
    };
    started_ = std::chrono::system_clock::time_point(std::chrono::seconds(1782201600));
  }

  ~ApiFixture() {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  [[noreturn]] static void Die(const char* what) {
    std::fprintf(stderr, "fuzz fixture: %s failed\n", what);
    std::abort();
  }

  std::string dir_;
  std::unique_ptr<storage::Store> store_;
  query::HttpServerOptions options_;
  query::HttpHooks hooks_;
  std::chrono::system_clock::time_point started_;
};

}  // namespace readingsd::fuzz
