// What the native API's endpoints share: their query parameters as parsed, the parameters more
// than one endpoint takes, and the JSON answers and errors. Internal to api/native/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/handler.h"
#include "query/key_condition.h"

namespace readingsd::api::native {

// A request's query parameters, decoded, each given at most once.
using Params = std::map<std::string, std::string, std::less<>>;

// User input echoed in a message, cut short so an error never grows with the request.
std::string Quoted(std::string_view s);
// `s` as InvalidArgument whose message begins with the parameter it is about.
Status Named(std::string_view param, const Status& s);
// nullptr when the parameter is absent.
const std::string* Find(const Params& params, std::string_view name);

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

// The range of from, to (inclusive), after, before (exclusive) and begins_with as the engine's
// single-operator KeyCondition. `*empty` is set for a range that holds no possible sort key
// (after=X&before=X+1ns), which needs no read.
Status NativeKeyCondition(const std::string& device_id, const Params& params, query::KeyCondition* key,
                          bool* empty);

}  // namespace readingsd::api::native
