// The HTTP handler fuzzers' world: one real Store in a fresh temporary directory, opened once
// per process and filled with a few readings (every attribute type; "big-1" has items large
// enough that the page-size cap is reached, "long-1" enough items that a page is read in two
// parts), a read helper (query/read_helpers.h) as the Router has, and each API's Context over them.
// The directory is removed when the process exits normally (libFuzzer's -max_total_time,
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
#include "api/dynamodb/dynamodb.h"
#include "api/native/native.h"
#include "query/query.h"
#include "query/read_helpers.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::fuzz {

class ApiFixture {
 public:
  static ApiFixture& Get() {
    static ApiFixture fixture;  // destroyed at exit: the store closes, then the directory goes
    return fixture;
  }

  api::native::Context NativeContext() const { return api::native::Context{*read_, ops_, no_delete_}; }
  api::dynamodb::Context DynamoDbContext() const {
    return api::dynamodb::Context{*read_, "readings", started_, "fuzz-request-id", "us-east-1"};
  }
  const query::ReadLimits& limits() const { return read_->limits; }
  const storage::Store& store() const { return *store_; }

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
    for (int i = 0; i < 12; ++i) {
      char sort_key[40];
      std::snprintf(sort_key, sizeof sort_key, "2026-06-23T08:%02d:00.000000000Z", i);
      readings.push_back({"big-1", sort_key, {{"blob", std::string(4096, static_cast<char>('a' + i))}}});
    }
    // One a second: after the first 64 items of a page Query hands the rest to the helper when
    // the page can take at least 160 more (query.cc's kProbeItems, kMinPartItems).
    for (int i = 0; i < 400; ++i) {
      char sort_key[40];
      std::snprintf(sort_key, sizeof sort_key, "2026-06-23T09:%02d:%02d.000000000Z", i / 60, i % 60);
      readings.push_back({"long-1", sort_key, {{"temperature", 20.0 + i % 7}, {"ok", i % 5 != 0}}});
    }
    if (!store_->Write(readings).ok()) Die("Store::Write");

    query::ReadLimits limits;
    limits.max_limit = 300;
    limits.max_page_bytes = 32u << 10;
    // Two cores as far as the helper knows, whatever this machine has, so it is offered parts.
    helpers_ = std::make_unique<query::ReadHelpers>(1, /*cores=*/2);
    ops_.metrics = [] { return std::string("# fuzz\n"); };
    ops_.ready = [](std::string* detail) {
      *detail = "fuzz";
      return true;
    };
    // A page never reads more than max_limit items, whatever Limit / n asked for.
    auto on_partition_read = [max = limits.max_limit](std::string_view device_id, std::size_t items, std::size_t) {
      FUZZ_CHECK(!device_id.empty());
      FUZZ_CHECK(items <= max);
    };
    read_ = std::make_unique<query::ReadContext>(
        query::ReadContext{*store_, limits, helpers_.get(), std::move(on_partition_read)});
    started_ = std::chrono::system_clock::time_point(std::chrono::seconds(1782201600));
  }

  ~ApiFixture() {
    read_.reset();
    helpers_.reset();
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
  std::unique_ptr<query::ReadHelpers> helpers_;
  api::native::OpsHooks ops_;
  // Empty: DELETE answers 503 (as on a read-only store), so every run sees the same readings.
  api::native::DeleteHook no_delete_;
  std::unique_ptr<query::ReadContext> read_;
  std::chrono::system_clock::time_point started_;
};

}  // namespace readingsd::fuzz
