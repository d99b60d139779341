// expr: the two expression languages readingsd reads, parsed into the engine's types
// (query::KeyCondition's parts, query::FilterExpr). Both are one grammar over one lexer
// (expr/parser.h, expr/lexer.h), so they can never disagree about a word or a precedence.
//
// DynamoDB's expressions, as the DynamoDB-compatible API receives them:
// KeyConditionExpression, FilterExpression and ProjectionExpression with their
// ExpressionAttributeNames (#n) and ExpressionAttributeValues (:v).
//
// Supported: comparisons = <> < <= > >=, BETWEEN, IN (at most 100 operands), begins_with,
// contains, attribute_type, attribute_exists, attribute_not_exists, size() as an operand, AND /
// OR / NOT and parentheses (precedence NOT > AND > OR); keywords are case-insensitive, function
// names are not. Values only ever come from :placeholders, as in DynamoDB. Document paths (a.b,
// a[0], #n.#m; at most 32 levels) parse as in DynamoDB, and since a reading's attributes are
// scalars, such a path finds nothing: a missing attribute in a filter, no attribute in a
// projection. An expression is at most 4096 bytes (DynamoDB's limit); parentheses and NOT nest at
// most 64 deep. Errors are InvalidArgument carrying DynamoDB's ValidationException text where one
// is known.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "query/filter.h"
#include "query/key_condition.h"
#include "storage/reading.h"

namespace readingsd::expr {

struct ExpressionContext {
  const std::map<std::string, std::string>* names = nullptr;                // "#n" -> attribute name
  const std::map<std::string, storage::AttributeValue>* values = nullptr;  // ":v" -> value
  std::string hash_key = std::string(storage::kDeviceIdAttribute);
  std::string range_key = std::string(storage::kReadingTsAttribute);
};

// `hash_key = :v` optionally AND one range condition: = < <= > >= :v, BETWEEN :a AND :b or
// begins_with(range_key, :p). A comparison may also be written value first (`:t < readingTs` is
// `readingTs > :t`), as DynamoDB accepts it.
// Writes the raw (not yet normalised) values: the caller passes them to MakeKeyCondition.
// `b` is set for BETWEEN only; `a` is empty for kAll.
Status ParseKeyConditionExpression(std::string_view text, const ExpressionContext& context,
                                   std::string* device_id, query::SortKeyOp* op, std::string* a,
                                   std::string* b);
// The same grammar and errors for any key schema (a secondary index's): `hash_value` is the
// partition key's string; `a` / `b` the range condition's values as given, numbers when
// `range_number` (else strings; another type is DynamoDB's type mismatch error).
Status ParseKeyCondition(std::string_view text, const ExpressionContext& context, bool range_number,
                         std::string* hash_value, query::SortKeyOp* op, storage::AttributeValue* a,
                         storage::AttributeValue* b);

// Key attributes are rejected, also as the head of a path (deviceId.x), as in DynamoDB: they
// belong in the key condition.
Status ParseFilterExpression(std::string_view text, const ExpressionContext& context,
                             std::unique_ptr<query::FilterExpr>* filter);

// A comma-separated list of document paths (key attributes included). `attributes` gets the
// names of the paths that are a whole top-level attribute; a longer path (temperature.x, a[0])
// selects nothing, since attributes are scalars, and is a key attribute's an error. Paths that
// overlap (a and a.b, or a twice) or conflict (a.b and a[0]) are an error, as in DynamoDB.
Status ParseProjectionExpression(std::string_view text, const ExpressionContext& context,
                                 std::vector<std::string>* attributes);

// DynamoDB rejects a request whose ExpressionAttributeNames or ExpressionAttributeValues hold an
// entry that none of its expressions uses. Call it after every expression of the request parsed,
// with all of them (empty ones are skipped).
Status CheckPlaceholdersUsed(const ExpressionContext& context,
                             const std::vector<std::string_view>& expressions);

// The native API's compact filter, e.g. "temperature>30", "temperature >= 30 and status = ok",
// "humidity<>0 or not (a<1)", "status in (ok, warn)", "size(status) > 2". It is the DynamoDB
// condition grammar (above: = <> < <= > >=, BETWEEN, IN, begins_with(a, v), contains(a, v),
// attribute_type(a, N), attribute_exists(a), attribute_not_exists(a), size(a) as a subject,
// not > and > or, parentheses; keywords case-insensitive) with literals instead of placeholders:
// `attribute op value`, where a value is a number when it is a plain decimal, true / false
// (lower case) a boolean, "..." a string (\" and \\ escapes), and any other bare word a string
// (quote "and", "or", "not", "between", "in" to mean the words). `!=` is accepted for `<>`. An
// attribute is a word and names itself whole: "a.b" is the attribute a.b, there are no document
// paths. Key attributes are rejected: they belong in the key condition. At most 4096 bytes, as any
// DynamoDB expression; parentheses and NOT nest at most 64 deep. Errors name the byte offset:
// "filter: expected a value after '>' at offset 12".
Status ParseNativeFilter(std::string_view text, std::unique_ptr<query::FilterExpr>* filter);

}  // namespace readingsd::expr
