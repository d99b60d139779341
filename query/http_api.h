// What the router hands both APIs (internal to readingsd_query).
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "http/handler.h"
#include "query/read_helpers.h"
#include "query/router.h"
#include "storage/store.h"

namespace readingsd::query {

// Responses keep their members in insertion order: deviceId and readingTs come first.
using Json = nlohmann::ordered_json;

struct ApiContext {
  const RouterOptions& options;
  const storage::Store& store;
  const RouterHooks& hooks;
  std::chrono::system_clock::time_point server_started;
  std::string request_id;  // unique per DynamoDB request (x-amzn-RequestId); empty for the native API
  ReadHelpers* read_helpers = nullptr;  // optional: for QueryRequest::helpers
};

// Never throws: bytes that are not UTF-8 (echoed user input) are replaced, not an exception.
std::string DumpJson(const Json& json);

// Calls hooks.on_partition_read with the items read and their storage::ItemSize total, filtered
// out or not: a filter does not make a read cheaper.
void ReportPartitionRead(const ApiContext& context, std::string_view device_id, std::size_t scanned,
                         std::size_t scanned_bytes);

}  // namespace readingsd::query
