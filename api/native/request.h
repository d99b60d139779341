// What the native API's endpoints share: their query parameters as parsed, the parameters more
// than one endpoint takes, and the JSON answers and errors. Internal to api/native/.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/handler.h"
#include "query/key_condition.h"
#include "storage/reading.h"

namespace readingsd::api::native {

// A request's query parameters, decoded, each given at most once.
using Params = std::map<std::string, std::string, std::less<>>;

// User input echoed in a message, cut short so an error never grows with the request.
std::string Quoted(std::string_view s);
// `s` as InvalidArgument whose message begins with the parameter it is about.
Status Named(std::string_view param, const Status& s);
// nullptr when the parameter is absent.
const std::string* Find(const Params& params, std::string_view name);
// `name` as an integer in [1, max]; min(fallback, max) when absent.
Status CountParam(const Params& params, std::string_view name, std::size_t fallback, std::size_t max,
                  std::size_t* out);
inline constexpr std::size_t kDefaultLimit = 100;  // a page's items when limit is not given

http::Response JsonResponse(http::status status, std::string body);
// InvalidArgument is the client's mistake, NotFound an absent item; anything else is the
// store failing, the only cause of a 500.
http::Response ErrorFromStatus(const Status& s);

// attributes=a,b: the attributes an item keeps besides its key (deviceId and readingTs, which
// every item has), as DynamoDB's ProjectionExpression; unset keeps all. Only what is sent is
// cut: a filter still sees every attribute, and reads are billed for whole items. A name that
// holds ',' cannot be listed here; the DynamoDB API can name it through ExpressionAttributeNames.
// An aggregate takes the same list for the attributes it aggregates.
using Projection = std::optional<std::vector<std::string>>;
Status ProjectionParam(const Params& params, Projection* projection);
// format=rows (the default): a page's items as objects; format=columns: the same page
// transposed, one array per field, a missing value null at its position; format=csv (only where
// `csv`: a device's readings): the page as RFC 4180 text (csv.h, docs/native-api.md).
enum class Format { kRows, kColumns, kCsv };
Status FormatParam(const Params& params, bool csv, Format* format);

// The attributes of `all` that `projection` keeps, in stored order: `all` itself when it is unset.
std::span<const storage::AttributeView> Project(std::span<const storage::AttributeView> all,
                                                const Projection& projection,
                                                std::vector<storage::AttributeView>* kept);
// An item as every endpoint answers it: {"deviceId":…,"readingTs":…, attributes…}.
void AppendItem(std::string_view device_id, std::string_view sort_key,
                std::span<const storage::AttributeView> attributes, std::string* out);
// A readings page's cursor: where the next page of `device_id` resumes, after `sort_key`.
std::string EncodeCursor(std::string_view device_id, std::string_view sort_key);
// Cursors: unpadded base64url; Decode is false for any other byte or a non-canonical tail.
std::string Base64UrlEncode(std::string_view bytes);
bool Base64UrlDecode(std::string_view text, std::string* bytes);

// The range of from, to (inclusive), after, before (exclusive) and begins_with as the engine's
// single-operator KeyCondition. `*empty` is set for a range that holds no possible sort key
// (after=X&before=X+1ns), which needs no read.
Status NativeKeyCondition(const std::string& device_id, const Params& params, query::KeyCondition* key,
                          bool* empty);

}  // namespace readingsd::api::native
