#include <algorithm>

#include "api/native/request.h"
#include "api/write/write.h"

namespace readingsd::api::write {
namespace {

bool Lists(const std::vector<std::string>& fields, std::string_view name) {
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}

}  // namespace

Status StreamMessages(const WriteOptions& options, std::span<const storage::Reading> readings,
                      std::vector<ingest::StreamMessage>* out) {
  out->clear();
  std::size_t in_message = 0;
  std::string item;
  for (const storage::Reading& r : readings) {
    if (Status s = ingest::StreamDeviceId(r.device_id); !s.ok()) return s;
    for (const storage::Attribute& a : r.attributes) {
      if (Lists(options.timestamp_fields, a.name) || Lists(options.device_id_fields, a.name)) {
        return Status::InvalidArgument("attribute \"" + a.name + "\" of device " + r.device_id +
                                       " is named as a timestamp or device id field (ingest.timestamp_fields, "
                                       "ingest.device_id_fields), which the stream's consumers would take it for");
      }
    }
    item.clear();
    native::AppendItem(r.device_id, r.sort_key, storage::ViewsOf(r.attributes), &item);
    if (item.size() + 2 > options.stream_message_bytes) {
      return Status::InvalidArgument("a reading of device " + r.device_id + " at " + r.sort_key + " is " +
                                     std::to_string(item.size()) + " bytes as a message, above the " +
                                     std::to_string(options.stream_message_bytes) +
                                     " a message of the stream may hold (mqtt.max_payload_bytes)");
    }
    const bool joins = !out->empty() && out->back().device_id == r.device_id &&
                       in_message < options.stream_message_readings &&
                       out->back().payload.size() + 1 + item.size() + 1 <= options.stream_message_bytes;
    if (!joins) {
      if (!out->empty()) out->back().payload.push_back(']');
      out->push_back({r.device_id, "["});
      in_message = 0;
    } else {
      out->back().payload.push_back(',');
    }
    out->back().payload += item;
    ++in_message;
  }
  if (!out->empty()) out->back().payload.push_back(']');
  return Status::OK();
}

}  // namespace readingsd::api::write
