#include "query/key_condition.h"

#include <utility>

#include "storage/key.h"

namespace readingsd::query {

Status MakeKeyCondition(std::string_view device_id, SortKeyOp op, std::string_view a,
                        std::string_view b, KeyCondition* condition) {
  if (Status s = storage::ValidateDeviceId(device_id); !s.ok()) return s;
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
  if (op == SortKeyOp::kBeginsWith) {
    if (Status s = storage::ValidateSortKeyPrefix(a); !s.ok()) return s;
    result.a = std::string(a);
  } else if (uses_a) {
    if (Status s = storage::NormalizeTimestamp(a, &result.a); !s.ok()) return s;
  }
  if (uses_b) {
    if (Status s = storage::NormalizeTimestamp(b, &result.b); !s.ok()) return s;
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

}  // namespace readingsd::query
