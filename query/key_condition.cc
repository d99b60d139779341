#include "query/key_condition.h"

#include <utility>

#include "storage/key.h"
#include "storage/reading.h"

namespace readingsd::query {

namespace {

Status EmptyKeyValue(std::string_view attribute) {
  return Status::InvalidArgument(
      "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
      "empty string value. Key: " +
      std::string(attribute));
}

// A sort-key value: normalised, or under kAsDynamoDb the raw string when it is no timestamp.
Status SortKeyValue(std::string_view value, KeyValues values, std::string* out) {
  if (values == KeyValues::kAsDynamoDb && value.empty()) return EmptyKeyValue(storage::kReadingTsAttribute);
  Status s = storage::NormalizeTimestamp(value, out);
  if (!s.ok() && values == KeyValues::kAsDynamoDb) {
    *out = std::string(value);
    return Status::OK();
  }
  return s;
}

// The smallest string greater than every string beginning with `prefix`. A sort-key prefix holds
// only ASCII digits and "-T:.Z", so incrementing its last byte never overflows. An empty prefix
// has no bound ("" = end of partition).
std::string PrefixSuccessor(std::string_view prefix) {
  std::string next(prefix);
  if (!next.empty()) ++next.back();
  return next;
}

}  // namespace

std::string Successor(std::string_view key) {
  std::string next(key);
  next.push_back('\0');
  return next;
}

SortKeyRange RangeOf(const KeyCondition& key) {
  switch (key.op) {
    case SortKeyOp::kAll: return {};
    case SortKeyOp::kEq: return {key.a, Successor(key.a)};
    case SortKeyOp::kLt: return {"", key.a};
    case SortKeyOp::kLe: return {"", Successor(key.a)};
    case SortKeyOp::kGt: return {Successor(key.a), ""};
    case SortKeyOp::kGe: return {key.a, ""};
    case SortKeyOp::kBetween: return {key.a, Successor(key.b)};
    case SortKeyOp::kBeginsWith: return {key.a, PrefixSuccessor(key.a)};
  }
  return {};
}

Status MakeKeyCondition(std::string_view device_id, SortKeyOp op, std::string_view a,
                        std::string_view b, KeyCondition* condition, KeyValues values) {
  bool matches_nothing = false;
  if (Status s = storage::ValidateDeviceId(device_id); !s.ok()) {
    if (values != KeyValues::kAsDynamoDb) return s;
    if (device_id.empty()) return EmptyKeyValue(storage::kDeviceIdAttribute);
    matches_nothing = true;
  }
  const bool uses_a = op != SortKeyOp::kAll;
  const bool uses_b = op == SortKeyOp::kBetween;
  // A value the operator ignores is a caller's mistake, not something to drop silently.
  if (!uses_a && !a.empty()) {
    return Status::InvalidArgument("a query of the whole partition takes no sort key value");
  }
  if (!uses_b && !b.empty()) return Status::InvalidArgument("only BETWEEN takes an upper bound");

  KeyCondition result;
  result.device_id = std::string(device_id);
  result.op = op;
  result.matches_nothing = matches_nothing;
  if (op == SortKeyOp::kBeginsWith) {
    if (values == KeyValues::kAsDynamoDb && a.empty()) return EmptyKeyValue(storage::kReadingTsAttribute);
    if (Status s = storage::ValidateSortKeyPrefix(a); !s.ok()) {
      if (values != KeyValues::kAsDynamoDb) return s;
      result.matches_nothing = true;
    }
    result.a = std::string(a);
  } else if (uses_a) {
    if (Status s = SortKeyValue(a, values, &result.a); !s.ok()) return s;
  }
  if (uses_b) {
    if (Status s = SortKeyValue(b, values, &result.b); !s.ok()) return s;
    if (result.a > result.b) {
      return Status::InvalidArgument(
          "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be "
          "greater than or equal to lower bound; lower bound operand: AttributeValue: {S:" +
          result.a + "}, upper bound operand: AttributeValue: {S:" + result.b + "}");
    }
  }
  *condition = std::move(result);
  return Status::OK();
}

bool InSortKeyRange(const KeyCondition& condition, std::string_view sort_key) {
  const std::string_view a = condition.a;
  switch (condition.op) {
    case SortKeyOp::kAll: return true;
    case SortKeyOp::kEq: return sort_key == a;
    case SortKeyOp::kLt: return sort_key < a;
    case SortKeyOp::kLe: return sort_key <= a;
    case SortKeyOp::kGt: return sort_key > a;
    case SortKeyOp::kGe: return sort_key >= a;
    case SortKeyOp::kBetween: return sort_key >= a && sort_key <= std::string_view(condition.b);
    case SortKeyOp::kBeginsWith: return sort_key.starts_with(a);
  }
  return false;
}

}  // namespace readingsd::query
