// Prometheus' remote read (api::prometheus::HandleRequest) with a fuzzed request body, against a
// real Store (fuzz/api_fixture.h): snappy, then protobuf, then the matchers' regexes and the read.
//
// Input layout: a first byte 0x01 means the rest is the protobuf itself, which the target
// snappy-compresses first (so that mutations reach the protobuf and matcher code); any other
// input is the body as sent, snappy framing and all.
//
// Properties: no crash, no UB, no uncaught exception; every response is 200, 400 or 413, never
// 5xx (the store is healthy); an error is text/plain and not empty; a 200 body decompresses to a
// ReadResponse with one result per query, each series with labels sorted by name and unique,
// __name__ first and a valid metric name, a device label, samples in strictly increasing time
// order, and the caps held across the request.
#include <snappy.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "api/prometheus/prometheus.h"
#include "api/prometheus/remote_read.pb.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_util.h"

using namespace readingsd;
using readingsd::fuzz::AsView;
namespace http = readingsd::http;

namespace {

// Small enough that fuzzed requests reach every cap.
api::prometheus::RemoteReadLimits Limits() {
  api::prometheus::RemoteReadLimits limits;
  limits.max_request_bytes = 64u << 10;
  limits.max_queries = 4;
  limits.max_matchers = 8;
  limits.max_series = 20;
  limits.max_samples = 500;
  limits.max_scanned = 600;
  return limits;
}

bool IsMetricName(const std::string& name) {
  bool renamed = false;
  return !name.empty() && api::prometheus::MetricNameOf(name, &renamed) == name && !renamed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const fuzz::ApiFixture& fixture = fuzz::ApiFixture::Get();
  static const api::prometheus::RemoteReadLimits limits = Limits();
  static const query::ReadContext read{fixture.store(), fixture.limits(), nullptr,
                                       [](std::string_view device_id, std::size_t items, std::size_t) {
                                         FUZZ_CHECK(!device_id.empty());
                                         FUZZ_CHECK(items <= limits.max_scanned + 1);
                                       }};
  std::string_view input = AsView(data, size);
  std::string body;
  if (!input.empty() && input[0] == 0x01) {
    snappy::Compress(input.data() + 1, input.size() - 1, &body);
  } else {
    body = input;
  }

  http::Request request{http::verb::post, "/api/v1/read", 11};
  request.body() = body;
  std::string_view endpoint;
  const http::Response response =
      api::prometheus::HandleRequest(api::prometheus::Context{read, limits}, request, &endpoint);
  FUZZ_CHECK(endpoint == "prometheus.read");
  const unsigned status = response.result_int();
  FUZZ_CHECK(status == 200 || status == 400 || status == 413);
  if (status != 200) {
    FUZZ_CHECK(http::ToStd(response[http::field::content_type]) == "text/plain; charset=utf-8");
    FUZZ_CHECK(response.body().size() > 1);
    return 0;
  }

  // A 200 answers a request that decodes, so decoding it again gives its query count.
  std::vector<api::prometheus::SeriesQuery> queries;
  bool too_large = false;
  FUZZ_CHECK(api::prometheus::DecodeReadRequest(body, limits, &queries, &too_large).ok());
  std::string raw;
  FUZZ_CHECK(snappy::Uncompress(response.body().data(), response.body().size(), &raw));
  prompb::ReadResponse answer;
  FUZZ_CHECK(answer.ParseFromString(raw));
  FUZZ_CHECK(static_cast<std::size_t>(answer.results_size()) == queries.size());
  std::size_t series = 0, samples = 0;
  for (int q = 0; q < answer.results_size(); ++q) {
    for (const prompb::TimeSeries& ts : answer.results(q).timeseries()) {
      ++series;
      FUZZ_CHECK(ts.labels_size() >= 2);
      FUZZ_CHECK(ts.labels(0).name() == "__name__" && IsMetricName(ts.labels(0).value()));
      FUZZ_CHECK(ts.labels(ts.labels_size() - 1).name() == "device");
      for (int i = 1; i < ts.labels_size(); ++i) FUZZ_CHECK(ts.labels(i - 1).name() < ts.labels(i).name());
      FUZZ_CHECK(ts.samples_size() > 0);
      for (int i = 0; i < ts.samples_size(); ++i) {
        const int64_t t = ts.samples(i).timestamp();
        FUZZ_CHECK(t >= queries[q].start_ms && t <= queries[q].end_ms);
        if (i > 0) FUZZ_CHECK(ts.samples(i - 1).timestamp() < t);
      }
      samples += static_cast<std::size_t>(ts.samples_size());
    }
  }
  FUZZ_CHECK(series <= limits.max_series && samples <= limits.max_samples);
  return 0;
}
