#include "api/write/write.h"

#include <algorithm>
#include <vector>

#include "api/native/native.h"
#include "api/write/body.h"
#include "ingest/line_readings.h"
#include "base/text.h"
#include "json/dump.h"
#include "storage/key.h"

namespace readingsd::api::write {
namespace {

constexpr std::string_view kReadingsPath = "/v1/readings";
constexpr std::string_view kInfluxPath = "/write", kInflux2Path = "/api/v2/write", kPingPath = "/ping";
// What /ping and every line protocol answer says it is; clients print it, none needs more.
constexpr const char* kInfluxVersion = "1.8-compatible readingsd";

http::Response InfluxResponse(http::status status) {
  http::Response res{status, 11};
  res.set("X-Influxdb-Version", kInfluxVersion);
  return res;
}

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
  o.timestamp_fields = options.timestamp_fields;
  o.device_id_fields = options.device_id_fields;
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

// Reports each refusal, writes the rest (or publishes them into the stream). InvalidArgument when
// a reading cannot go into the stream (nothing reported or written), another error when the
// store or the stream did not take them all.
Status ReportAndWrite(const Context& context, const http::Request& request, const ingest::ParsedMessage& parsed) {
  std::vector<ingest::StreamMessage> messages;
  if (context.hooks.publish) {
    if (Status s = StreamMessages(context.options, parsed.readings, &messages); !s.ok()) return s;
  }
  const std::string source = "POST " + std::string(PathOf(request));
  if (context.hooks.on_rejected) {
    for (const ingest::Rejection& r : parsed.rejections) context.hooks.on_rejected(source, r);
  }
  if (parsed.readings.empty()) return Status::OK();
  if (context.hooks.publish) return context.hooks.publish(messages);
  return context.hooks.write ? context.hooks.write(parsed.readings) : Status::Unavailable("writes are off");
}

// Why nothing is claimed written: the store refused the write, or the stream did not ack it all.
std::string NotWritten(const Context& context, const Status& s) {
  if (!context.hooks.publish) return "nothing was written: " + s.ToString();
  return "not every reading was acknowledged by the stream, so none is claimed: " + s.ToString() +
         "; send the request again (a reading sent twice is stored once)";
}

http::Response JsonReadings(const Context& context, const http::Request& request, std::string_view device_id) {
  std::string storage, message;
  std::string_view body;
  if (BodyError error = DecodedBody(request, context.options.max_body_bytes, &storage, &body, &message);
      error != BodyError::kNone) {
    return BodyErrorResponse(error, message);
  }
  ingest::ParsedMessage parsed;
  ingest::ParsePayloadFor(PayloadOptionsOf(context.options), device_id, body, &parsed);
  if (Status s = ReportAndWrite(context, request, parsed); !s.ok()) {
    if (s.IsInvalidArgument()) return native::Error(http::status::bad_request, "NotStreamable", s.message());
    return native::Error(http::status::service_unavailable,
                         context.hooks.publish ? "StreamUnavailable" : "StoreUnavailable", NotWritten(context, s));
  }
  return Answer(parsed.readings.size(), parsed.rejections);
}

// An answer in InfluxDB's error shape: 1.x {"error":…} with X-Influxdb-Error, 2.x {"code","message"}.
http::Response InfluxError(bool v2, http::status status, std::string_view code, const std::string& message) {
  http::Response res = InfluxResponse(status);
  res.set(http::field::content_type, "application/json");
  OrderedJson body = OrderedJson::object();
  if (v2) {
    body["code"] = code;
    body["message"] = message;
  } else {
    body["error"] = message;
    std::string header = message.substr(0, 200);  // echoes the request: no control byte may split it
    for (char& c : header) c = static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
    res.set("X-Influxdb-Error", header);
  }
  res.body() = DumpJson(body);
  return res;
}

// "partial write: line 3: malformed_line: …; line 9: …; dropped=2", the first few lines in full.
std::string PartialWrite(const std::vector<ingest::Rejection>& rejections) {
  constexpr std::size_t kShown = 10;
  std::string text = "partial write:";
  for (std::size_t i = 0; i < rejections.size() && i < kShown; ++i) {
    const ingest::Rejection& r = rejections[i];
    text += (i ? "; line " : " line ") + std::to_string(r.index) + ": " + std::string(ingest::ReasonName(r.reason)) +
            ": " + r.message;
  }
  if (rejections.size() > kShown) text += "; …";
  return text + "; dropped=" + std::to_string(rejections.size());
}

http::Response LineProtocol(const Context& context, const http::Request& request, bool v2) {
  std::string precision_name;
  QueryParam(http::ToStd(request.target()), "precision", &precision_name);
  ingest::LineProtocolOptions line{context.options.line_device, ingest::Precision::kNanoseconds};
  const bool v2_precision = precision_name.empty() || precision_name == "ns" || precision_name == "us" ||
                            precision_name == "ms" || precision_name == "s";
  if (!ingest::ParsePrecision(precision_name, &line.precision) || (v2 && !v2_precision)) {
    return InfluxError(v2, http::status::bad_request, "invalid",
                       "precision \"" + precision_name.substr(0, 20) + "\" is not one of " +
                           (v2 ? "ns, us, ms, s" : "n, ns, u, us, ms, s, m, h"));
  }
  std::string storage, message;
  std::string_view body;
  if (BodyError error = DecodedBody(request, context.options.max_body_bytes, &storage, &body, &message);
      error != BodyError::kNone) {
    const http::status status = error == BodyError::kTooLarge ? http::status::payload_too_large
                                : error == BodyError::kUnsupportedEncoding ? http::status::unsupported_media_type
                                                                           : http::status::bad_request;
    return InfluxError(v2, status, error == BodyError::kTooLarge ? "request too large" : "invalid", message);
  }
  ingest::ParsedMessage parsed;
  ingest::ParseLineProtocol(PayloadOptionsOf(context.options), line, body, &parsed);
  if (Status s = ReportAndWrite(context, request, parsed); !s.ok()) {
    if (s.IsInvalidArgument()) return InfluxError(v2, http::status::bad_request, "invalid", s.message());
    return InfluxError(v2, v2 ? http::status::service_unavailable : http::status::internal_server_error,
                       "unavailable", NotWritten(context, s));
  }
  if (parsed.rejections.empty()) return InfluxResponse(http::status::no_content);
  const ingest::RejectReason first = parsed.rejections.front().reason;
  if (first == ingest::RejectReason::kOversize || first == ingest::RejectReason::kBatchTooLarge) {
    return InfluxError(v2, http::status::payload_too_large, "request too large", parsed.rejections.front().message);
  }
  if (parsed.readings.empty() && first == ingest::RejectReason::kEmptyBatch) {
    return InfluxError(v2, http::status::bad_request, "invalid", parsed.rejections.front().message);
  }
  return InfluxError(v2, http::status::bad_request, "invalid", PartialWrite(parsed.rejections));
}

}  // namespace

Status ValidateOptions(const WriteOptions& options) {
  if (options.max_body_bytes == 0 || options.max_readings == 0) {
    return Status::InvalidArgument("max_body_bytes and max_readings must be at least 1");
  }
  if (options.stream_message_bytes > 0) {
    const bool named = std::find(options.timestamp_fields.begin(), options.timestamp_fields.end(),
                                 storage::kReadingTsAttribute) != options.timestamp_fields.end() &&
                       std::find(options.device_id_fields.begin(), options.device_id_fields.end(),
                                 storage::kDeviceIdAttribute) != options.device_id_fields.end();
    if (!named || options.stream_message_readings == 0) {
      return Status::InvalidArgument(
          "with [nats], writes go into the stream as {\"deviceId\",\"readingTs\",…} readings: "
          "ingest.timestamp_fields must list readingTs and ingest.device_id_fields deviceId");
    }
  }
  if (Status s = ingest::ValidateDeviceTemplate(options.line_device); !s.ok()) {
    return Status::InvalidArgument("line protocol device template \"" + options.line_device + "\": " + s.message());
  }
  return Status::OK();
}

bool IsWriteRequest(const http::Request& request) {
  const std::string_view path = PathOf(request);
  if (path == kPingPath) return request.method() == http::verb::get || request.method() == http::verb::head;
  if (request.method() != http::verb::post) return false;
  std::string_view id;
  return path == kReadingsPath || path == kInfluxPath || path == kInflux2Path || DevicePath(path, &id);
}

std::string InfluxPassword(const http::Request& request) {
  std::string password;
  if (PathOf(request) != kInfluxPath || !QueryParam(http::ToStd(request.target()), "p", &password)) return "";
  return password;
}

http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint) {
  const std::string_view path = PathOf(request);
  if (path == kPingPath) {
    *endpoint = "ping";
    return InfluxResponse(http::status::no_content);
  }
  if (path == kInfluxPath || path == kInflux2Path) {
    *endpoint = path == kInfluxPath ? "write.influx" : "write.influx2";
    return LineProtocol(context, request, path == kInflux2Path);
  }
  *endpoint = "write.json";
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
