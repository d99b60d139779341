// The contract between HttpServer and the APIs it serves (internal to readingsd_query).
// A handler gets one whole request and returns a response with status, headers and body set;
// the server adds the HTTP version, keep-alive and Content-Length.
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "query/http_server.h"
#include "query/read_helpers.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::query {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;
// Responses keep their members in insertion order: deviceId and readingTs come first.
using Json = nlohmann::ordered_json;

struct ApiContext {
  const HttpServerOptions& options;
  const storage::Store& store;
  const HttpHooks& hooks;
  std::chrono::system_clock::time_point server_started;
  std::string request_id;  // unique per DynamoDB request (x-amzn-RequestId); empty for the native API
  ReadHelpers* read_helpers = nullptr;  // optional: for QueryRequest::helpers
};

// Beast 1.74 hands out boost::string_view.
inline std::string_view ToStd(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Never throws: bytes that are not UTF-8 (echoed user input) are replaced, not an exception.
std::string DumpJson(const Json& json);

// Calls hooks.on_partition_read with the items read and their storage::ItemSize total, filtered
// out or not: a filter does not make a read cheaper.
void ReportPartitionRead(const ApiContext& context, std::string_view device_id, std::size_t scanned,
                         std::size_t scanned_bytes);

}  // namespace readingsd::query
