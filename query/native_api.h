// The native JSON API (internal to readingsd_query; the Router routes to it).
//
//   GET /v1/devices/{id}/readings   from, to (inclusive), after, before (exclusive), begins_with,
//                                   limit, order=asc|desc, cursor, filter
//   GET /v1/devices/{id}/latest     n (newest first)
//   GET /v1/devices/{id}/readings/{timestamp}
//   GET /healthz, /readyz, /metrics
//
// Every request that is not a DynamoDB call (POST /) lands here, so this module also owns the
// 404 and 405 answers and the error shape {"error":{"code":…,"message":…}}.
// Query strings are form-encoded ('+' or %20 is a space, %2B a plus); a timestamp parameter also
// takes a bare '+' before its offset (from=2026-06-23T10:00:00+02:00). Paths are percent-encoded.
#pragma once

#include <string_view>

#include "query/http_api.h"

namespace readingsd::query {

// `endpoint` is set to the name reported to http::ServerHooks::on_request.
http::Response HandleNativeRequest(const ApiContext& context, const http::Request& request,
                                 std::string_view* endpoint);

// The native error response; the server uses it too (401, 413, 431, malformed HTTP).
http::Response NativeError(http::status status, std::string_view code, std::string_view message);

}  // namespace readingsd::query
