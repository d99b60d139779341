#include "query/http_api.h"


namespace readingsd::query {

std::string DumpJson(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

void ReportPartitionRead(const ApiContext& context, std::string_view device_id, std::size_t scanned,
                         std::size_t scanned_bytes) {
  if (context.hooks.on_partition_read) context.hooks.on_partition_read(device_id, scanned, scanned_bytes);
}

}  // namespace readingsd::query
