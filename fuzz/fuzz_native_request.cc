// The native HTTP API (api::native::HandleRequest) with a fuzzed request target — path and query
// string, e.g. /v1/devices/sensor-1/readings?from=2026-06-23T00:00:00Z&filter=temperature%3E20 —
// against a real Store (fuzz/api_fixture.h). Its parsers (percent-decoding, routing, query
// parameters, cursors, bounds, filters, aggregates) are internal to api/native/, so the handler is
// driven as the Router drives it.
//
// Input layout: the whole input is the target of a GET, except that a first byte 0x01 makes it
// a POST (the 405 path).
//
// Properties: no crash, no UB, no uncaught exception; every response is 200, 400, 404 or 405,
// never 5xx (the store is healthy); a streamed body (format=csv) is drained as the server
// would, each part without error, and starts with its header line and ends in CRLF; every JSON
// response body parses, and an error body is
// {"error":{"code":…,"message":…}}; a page has count == |items| <= scannedCount <= max_limit,
// and every item its key; an aggregate's bucket counts add up to its scannedCount.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/native/native.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_util.h"

using namespace readingsd;
using readingsd::fuzz::AsView;
namespace http = readingsd::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const fuzz::ApiFixture& fixture = fuzz::ApiFixture::Get();
  std::string_view target = AsView(data, size);
  http::verb method = http::verb::get;
  if (!target.empty() && target[0] == 0x01) {
    method = http::verb::post;
    target.remove_prefix(1);
  }

  http::Request request{method, boost::beast::string_view(target.data(), target.size()), 11};
  const auto context = fixture.NativeContext();
  std::string_view endpoint;
  http::Response response = api::native::HandleRequest(context, request, &endpoint);

  FUZZ_CHECK(!endpoint.empty());
  const unsigned status = response.result_int();
  FUZZ_CHECK(status == 200 || status == 400 || status == 404 || status == 405);
  if (response.stream) {
    FUZZ_CHECK(status == 200);
    std::string body;
    for (bool done = false; !done;) FUZZ_CHECK(response.stream->Next(&body, &done).ok());
    FUZZ_CHECK(body.starts_with("deviceId,readingTs") && body.ends_with("\r\n"));
    return 0;
  }
  if (http::ToStd(response[http::field::content_type]) != "application/json") {
    FUZZ_CHECK(status == 200);  // /healthz and /metrics are text
    return 0;
  }
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(!json.is_discarded() && json.is_object());
  if (status != 200) {
    FUZZ_CHECK(json.contains("error") && json["error"].is_object());
    FUZZ_CHECK(json["error"].contains("code") && json["error"]["code"].is_string());
    FUZZ_CHECK(json["error"].contains("message") && json["error"]["message"].is_string());
    return 0;
  }
  if (json.contains("items")) {
    FUZZ_CHECK(json["items"].is_array());
    const auto count = json["count"].get<std::size_t>();
    const auto scanned = json["scannedCount"].get<std::size_t>();
    FUZZ_CHECK(json["items"].size() == count && count <= scanned && scanned <= fixture.limits().max_limit);
    for (const nlohmann::ordered_json& item : json["items"]) {  // attributes= never drops the key
      FUZZ_CHECK(item["deviceId"].is_string() && item["readingTs"].is_string());
    }
  }
  if (json.contains("buckets")) {  // every reading an aggregate read lies in exactly one bucket
    std::size_t in_buckets = 0;
    for (const nlohmann::ordered_json& bucket : json["buckets"]) in_buckets += bucket["count"].get<std::size_t>();
    FUZZ_CHECK(in_buckets == json["scannedCount"].get<std::size_t>());
  }
  return 0;
}
