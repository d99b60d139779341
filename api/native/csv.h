// format=csv on GET /v1/devices/{id}/readings: a page as RFC 4180 text instead of JSON. Same
// parameters, caps and paging as the JSON page; what the JSON body carries besides the items goes
// in headers: X-Count, X-Scanned-Count and, while more follow, X-Next-Cursor. The page is read
// first, as stored, which fixes those; its text is a stream (http::BodyStream) rendered part by
// part while it is sent (docs/native-api.md#csv).
//
//   deviceId,readingTs,temperature,note\r\n
//   a1,2026-06-23T08:00:00.000000000Z,20.5,"say ""hi"", twice"\r\n
//
// Columns: deviceId, readingTs, then the `attributes=` list in its order, or without it the union
// of the page's attribute names in first-seen order, so two pages of a device whose readings
// differ can differ in columns (ask with attributes= for columns that stay put). A cell with ',',
// '"', CR or LF is quoted, its quotes doubled; numbers are the stored digits, booleans true and
// false; an empty string is "" and an attribute a reading lacks an empty cell.
#pragma once

#include <cstddef>

#include "api/native/native.h"
#include "api/native/request.h"
#include "http/handler.h"
#include "query/query.h"

namespace readingsd::api::native {

// Without attributes=, a page whose readings hold more distinct attribute names than this is a
// 400 (a page of 10,000 readings each with its own name would otherwise be 10,000 columns wide).
inline constexpr std::size_t kMaxCsvColumns = 1000;

// Reads the page `request` asks for (nothing when `empty_range`) and answers it as text/csv, its
// body a stream that holds the page read. Thread-safe: it keeps nothing between calls.
http::Response CsvPage(const Context& context, const query::QueryRequest& request, const Projection& projection,
                       bool empty_range);

}  // namespace readingsd::api::native
