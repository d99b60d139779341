#include "query/http_api.h"

#include <variant>

namespace readingsd::query {

std::string DumpJson(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

void ReportPartitionRead(const ApiContext& context, std::string_view device_id, std::size_t scanned,
                         std::span<const storage::Reading> returned) {
  if (!context.hooks.on_partition_read) return;
  std::size_t bytes = 0;
  for (const storage::Reading& r : returned) {
    bytes += storage::kDeviceIdAttribute.size() + r.device_id.size() + storage::kReadingTsAttribute.size() +
             r.sort_key.size();
    for (const storage::Attribute& a : r.attributes) {
      bytes += a.name.size();
      if (const auto* s = std::get_if<std::string>(&a.value)) {
        bytes += s->size();
      } else {
        bytes += std::holds_alternative<double>(a.value) ? sizeof(double) : 1;
      }
    }
  }
  context.hooks.on_partition_read(device_id, scanned, bytes);
}

}  // namespace readingsd::query
