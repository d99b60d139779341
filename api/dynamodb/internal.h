// What the DynamoDB operations share (api/dynamodb/*.cc): responses and errors, request members,
// AttributeValues, keys and items, expressions and their legacy forms, Select and
// ReturnConsumedCapacity. Internal to api/dynamodb/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/dynamodb/dynamodb.h"
#include "base/status.h"
#include "expr/expr.h"
#include "json/dump.h"
#include "query/filter.h"
#include "query/key_condition.h"
#include "storage/index.h"
#include "storage/reading.h"

namespace readingsd::api::dynamodb::internal {

using Json = OrderedJson;

// A response in DynamoDB's shape: JSON 1.0, x-amzn-RequestId and x-amz-crc32 (which botocore verifies).
http::Response Respond(const Context& context, http::status status, const Json& body);
http::Response Ok(const Context& context, const Json& body);
// A node's share of a request merged across nodes (binary, for dynamodb::Merge on another node).
http::Response ShareAnswer(std::string share);
// InvalidArgument is the caller's ValidationException and NotFound the table it named; anything
// else is the store failing.
http::Response ErrorFromStatus(const Context& context, const Status& s);

Status CheckTable(const Context& context, const std::optional<std::string>& table);
// Every operation names the members it understands; anything else is refused rather than
// silently ignored.
Status CheckMembers(const Json& request, std::string_view operation, std::initializer_list<std::string_view> accepted);

// An optional member of the request of type T (std::string, bool, int64_t or a JSON object).
template <typename T>
Status Get(const Json& request, const char* name, std::optional<T>* out);
extern template Status Get(const Json&, const char*, std::optional<std::string>*);
extern template Status Get(const Json&, const char*, std::optional<bool>*);
extern template Status Get(const Json&, const char*, std::optional<int64_t>*);
extern template Status Get(const Json&, const char*, std::optional<Json>*);

// DynamoDB's "N validation error(s) detected: …; …" for the members' constraints.
class Constraints {
 public:
  // "Value '<value>' at '<member>' failed to satisfy constraint: <constraint>"
  void Fail(std::string_view value, std::string_view member, std::string_view constraint);
  void AtLeast(const std::optional<int64_t>& value, std::string_view member, int64_t least);
  void AtMost(const std::optional<int64_t>& value, std::string_view member, int64_t most);
  void OneOf(const std::optional<std::string>& value, std::string_view member,
             std::span<const std::string_view> allowed);
  Status status() const;

 private:
  std::vector<std::string> failures_;
};

Json Typed(std::string_view type, Json value);
Json ToAttributeValue(const storage::AttributeValue& value);
Json ToAttributeValue(const storage::AttributeView& value);
// Readings hold S, N and BOOL values only; other DynamoDB types could never compare equal.
Status FromAttributeValue(const Json& av, std::string_view where, storage::AttributeValue* out);

Json KeyJson(std::string_view device_id, std::string_view sort_key);
// {"deviceId":{"S":…},"readingTs":{"S":…}}: the two strings as given (not yet validated nor
// normalised). Errors are InvalidArgument prefixed with `what` + ": " (none when empty).
Status ParseKey(const Json& key, std::string_view what, std::string* device_id, std::string* timestamp);
// The stored key for a key as given: false when no stored item can have it (a device id outside
// the charset, a readingTs that is no timestamp), where DynamoDB would simply find nothing.
bool StoredKey(std::string_view device_id, std::string_view timestamp, std::string* sort_key);

// A projection: attribute names (ProjectionExpression or AttributesToGet); nullopt = all.
using Projection = std::optional<std::vector<std::string>>;
Json ItemJson(std::string_view device_id, std::string_view sort_key,
              std::span<const storage::AttributeView> attributes, const Projection& projection);

// ExpressionAttributeNames / ExpressionAttributeValues and the context the parsers read them
// through. Not copyable: `context` points into this object.
struct Expressions {
  Expressions() = default;
  Expressions(const Expressions&) = delete;
  Expressions& operator=(const Expressions&) = delete;

  std::map<std::string, std::string> names;
  std::map<std::string, storage::AttributeValue> values;
  expr::ExpressionContext context{&names, &values};
};
Status ParseExpressionAttributes(const Json& request, Expressions* out);

// DynamoDB's rule that expression parameters and their legacy forms are not mixed, and that
// ExpressionAttributeNames / Values come only with an expression that can use them.
// `expressions` and `legacy` are the operation's members of each kind, in DynamoDB's order.
Status CheckExpressionParameters(const Json& request, std::initializer_list<std::string_view> expressions,
                                 std::initializer_list<std::string_view> legacy);

// AttributesToGet: 1..255 unique names.
Status ParseAttributesToGet(const Json& request, Projection* projection);

// Legacy conditions (api/dynamodb/legacy.cc).
// KeyConditions: {"deviceId":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":…}]}, …}.
Status ParseKeyConditions(const Json& conditions, query::KeyCondition* key);
// QueryFilter / ScanFilter with ConditionalOperator (AND when absent): one FilterExpr. `filter_name`
// is the member's name; a QueryFilter may not name a key attribute.
Status ParseLegacyFilter(const Json& conditions, std::string_view filter_name,
                         const std::optional<std::string>& conditional_operator,
                         std::unique_ptr<query::FilterExpr>* filter);

// ReturnConsumedCapacity.
enum class Capacity { kNone, kTotal, kIndexes };
Capacity CapacityOf(const std::optional<std::string>& value);  // after Constraints::OneOf
// Read units for `bytes` read as one read (Query, Scan) or one item (GetItem; BatchGetItem adds
// them up): rounded up to 4 KB units, at least one, halved unless strongly consistent.
double ReadUnits(std::size_t bytes, bool consistent);
// {"TableName":…,"CapacityUnits":…} and, for INDEXES, "Table":{"CapacityUnits":…}.
Json ConsumedCapacityJson(const Context& context, Capacity capacity, double units);

// Enum members' values, in the order DynamoDB lists them in its messages.
inline constexpr std::string_view kCapacityValues[] = {"INDEXES", "TOTAL", "NONE"};
inline constexpr std::string_view kSelectValues[] = {"SPECIFIC_ATTRIBUTES", "COUNT", "ALL_ATTRIBUTES",
                                                     "ALL_PROJECTED_ATTRIBUTES"};
inline constexpr std::string_view kConditionalOperators[] = {"OR", "AND"};

// What Query and Scan share: the projection, the filter and Select, ConsistentRead,
// ReturnConsumedCapacity, Limit and IndexName (a declared index, for Query; Scan reads none).
struct ReadParameters {
  Projection projection;
  std::unique_ptr<query::FilterExpr> filter;
  bool count_only = false;
  bool consistent = false;
  Capacity capacity = Capacity::kNone;
  std::size_t limit = 0;
  std::vector<std::string> expression_texts;  // for CheckPlaceholdersUsed
  // IndexName (Query only): the index's declaration, its keys the expressions' key attributes.
  std::optional<storage::IndexSpec> index;
};
// `filter_member`: QueryFilter or ScanFilter. `key_attributes_in_filter`: a Scan's filter may
// name deviceId and readingTs, a Query's may not. `constraints` holds the operation's own
// members' failures so far: they are reported together with these, before the table is checked.
Status ParseReadParameters(const Context& context, const Json& body, std::string_view filter_member,
                           bool key_attributes_in_filter, Constraints* constraints, Expressions* expressions,
                           ReadParameters* out);
// After the operation's own expressions are in read.expression_texts: every placeholder given
// must be used by one of them, as DynamoDB requires.
Status CheckPlaceholdersUsed(const Expressions& expressions, const ReadParameters& read);

// A Query's or GetItem's (`operation`) reach (dynamodb.h ReachOf).
cluster::Reach ReachOfRead(std::string_view operation, const Json& body, std::string* device_id);

http::Response QueryOp(const Context& context, const Json& body);
// A Query of an index as a node's share of it merged across nodes (query::IndexShareWriter), only
// `share`'s devices; and the page from the nodes' shares (dynamodb::Merge).
http::Response QueryShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share);
http::Response MergeQueryOp(const Context& context, const Json& body, std::span<const std::string> shares);
http::Response GetItemOp(const Context& context, const Json& body);
http::Response ScanOp(const Context& context, const Json& body);
// A Scan as a node's share of it merged across nodes (query::ScanShareWriter), only `share`'s
// devices; and the page from the nodes' shares (dynamodb::Merge).
http::Response ScanShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share);
http::Response MergeScanOp(const Context& context, const Json& body, std::span<const std::string> shares);
http::Response BatchGetItemOp(const Context& context, const Json& body);
// BatchGetItem as a node's share of it merged across nodes (only `share`'s keys read), and the
// answer from the nodes' shares (dynamodb::Merge): each key once, in order, UnprocessedKeys as one
// node holding every partition gives them.
http::Response BatchGetShareOp(const Context& context, const Json& body, const cluster::PartitionSet& share);
http::Response MergeBatchGetOp(const Context& context, const Json& body, std::span<const std::string> shares);
http::Response DescribeTableOp(const Context& context, const Json& body);
http::Response ListTablesOp(const Context& context, const Json& body);

}  // namespace readingsd::api::dynamodb::internal
