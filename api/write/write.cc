#include "api/write/write.h"

#include <vector>

#include "api/native/native.h"
#include "api/write/body.h"
#include "base/text.h"
#include "json/dump.h"
#include "storage/key.h"

namespace readingsd::api::write {
namespace {

constexpr std::string_view kReadingsPath = "/v1/readings";

std::string_view PathOf(const http::Request& request) {
  const std::string_view target = http::ToStd(request.target());
  return target.substr(0, target.find('?'));
}

// The still-encoded {id} of /v1/devices/{id}/readings; false for any other path.
bool DevicePath(std::string_view path, std::string_view* id) {
  constexpr std::string_view kHead = "/v1/devices/", kTail = "/readings";
  if (path.size() <= kHead.size() + kTail.size() || !path.starts_with(kHead) || !path.ends_with(kTail)) return false;
  *id = path.substr(kHead.size(), path.size() - kHead.size() - kTail.size());
  return id->find('/') == std::string_view::npos;
}

ingest::PayloadOptions PayloadOptionsOf(const WriteOptions& options) {
  ingest::PayloadOptions o;
  o.device_id_topic.clear();
  o.min_sort_key = options.min_sort_key;
  o.max_future = options.max_future;
  o.max_payload_bytes = options.max_body_bytes;
  o.max_batch = options.max_readings;
  return o;
}

http::Response BodyErrorResponse(BodyError error, const std::string& message) {
  switch (error) {
    case BodyError::kTooLarge: return native::Error(http::status::payload_too_large, "PayloadTooLarge", message);
    case BodyError::kUnsupportedEncoding:
      return native::Error(http::status::unsupported_media_type, "UnsupportedEncoding", message);
    default: return native::Error(http::status::bad_request, "MalformedBody", message);
  }
}

// 204 when nothing was refused; else 207 (some written), 413 (the body was too large or held
// too many readings) or 400 (nothing written), each with the index and reason of every refusal.
http::Response Answer(std::size_t written, const std::vector<ingest::Rejection>& rejections) {
  http::Response res{http::status::no_content, 11};
  if (rejections.empty()) return res;
  OrderedJson body = OrderedJson::object();
  body["written"] = written;
  body["rejected"] = OrderedJson::array();
  bool too_large = false;
  for (const ingest::Rejection& r : rejections) {
    body["rejected"].push_back({{"index", r.index}, {"reason", ingest::ReasonName(r.reason)}, {"message", r.message}});
    too_large = too_large || r.reason == ingest::RejectReason::kOversize || r.reason == ingest::RejectReason::kBatchTooLarge;
  }
  res.result(written > 0 ? http::status::multi_status
                         : too_large ? http::status::payload_too_large : http::status::bad_request);
  res.set(http::field::content_type, "application/json");
  res.body() = DumpJson(body);
  return res;
}

http::Response JsonReadings(const Context& context, const http::Request& request, std::string_view device_id) {
  std::string storage;
  std::string_view body;
  std::string message;
  if (BodyError error = DecodedBody(request, context.options.max_body_bytes, &storage, &body, &message);
      error != BodyError::kNone) {
    return BodyErrorResponse(error, message);
  }
  ingest::ParsedMessage parsed;
  ingest::ParsePayloadFor(PayloadOptionsOf(context.options), device_id, body, &parsed);
  const std::string source = "POST " + std::string(PathOf(request));
  if (context.hooks.on_rejected) {
    for (const ingest::Rejection& r : parsed.rejections) context.hooks.on_rejected(source, r);
  }
  if (!parsed.readings.empty()) {
    Status s = context.hooks.write ? context.hooks.write(parsed.readings) : Status::Unavailable("writes are off");
    if (!s.ok()) {
      return native::Error(http::status::service_unavailable, "StoreUnavailable",
                           "nothing was written: " + s.ToString());
    }
  }
  return Answer(parsed.readings.size(), parsed.rejections);
}

}  // namespace

bool IsWriteRequest(const http::Request& request) {
  if (request.method() != http::verb::post) return false;
  const std::string_view path = PathOf(request);
  std::string_view id;
  return path == kReadingsPath || DevicePath(path, &id);
}

http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint) {
  *endpoint = "write.json";
  const std::string_view path = PathOf(request);
  std::string_view encoded_id;
  if (!DevicePath(path, &encoded_id)) return JsonReadings(context, request, "");
  std::string device_id;
  if (!PercentDecode(encoded_id, false, &device_id)) {
    return native::Error(http::status::bad_request, "InvalidParameter", "path: malformed percent-encoding");
  }
  if (Status s = storage::ValidateDeviceId(device_id); !s.ok()) {
    return native::Error(http::status::bad_request, "InvalidParameter", "deviceId: " + s.message());
  }
  return JsonReadings(context, request, device_id);
}

}  // namespace readingsd::api::write
