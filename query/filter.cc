#include "query/filter.h"

#include <compare>
#include <optional>
#include <variant>

#include "query/condition_parser.h"

namespace readingsd::query {
namespace {

using storage::AttributeValue;

// The operand's value for this reading; nullptr when it names an attribute the reading lacks.
const AttributeValue* Resolve(const Operand& operand, const storage::Reading& reading) {
  if (!operand.is_attribute) return &operand.literal;
  for (const storage::Attribute& attribute : reading.attributes) {
    if (attribute.name == operand.attribute) return &attribute.value;
  }
  return nullptr;
}

bool Equal(const AttributeValue* left, const AttributeValue* right) {
  return left && right && *left == *right;  // variant ==: same type and same value
}

// Numbers numerically, strings bytewise (UTF-8 byte order, as DynamoDB); nullopt for a missing
// value, two different types or booleans, which have no order.
std::optional<std::partial_ordering> Order(const AttributeValue* left, const AttributeValue* right) {
  if (!left || !right || left->index() != right->index() || std::holds_alternative<bool>(*left)) {
    return std::nullopt;
  }
  return *left <=> *right;
}

bool Compare(CompareOp op, const AttributeValue* left, const AttributeValue* right) {
  if (op == CompareOp::kEq) return Equal(left, right);
  if (op == CompareOp::kNe) return !Equal(left, right);
  const std::optional<std::partial_ordering> order = Order(left, right);
  if (!order) return false;
  switch (op) {
    case CompareOp::kLt: return *order < 0;
    case CompareOp::kLe: return *order <= 0;
    case CompareOp::kGt: return *order > 0;
    case CompareOp::kGe: return *order >= 0;
    case CompareOp::kEq:
    case CompareOp::kNe: break;
  }
  return false;
}

}  // namespace

bool Matches(const FilterExpr& filter, const storage::Reading& reading) {
  auto value = [&](std::size_t i) { return Resolve(filter.operands[i], reading); };
  switch (filter.kind) {
    case FilterExpr::Kind::kCompare:
      return Compare(filter.op, value(0), value(1));
    case FilterExpr::Kind::kBetween:
      return Compare(CompareOp::kGe, value(0), value(1)) && Compare(CompareOp::kLe, value(0), value(2));
    case FilterExpr::Kind::kBeginsWith: {
      const AttributeValue* subject = value(0);
      const AttributeValue* prefix = value(1);
      const auto* text = subject ? std::get_if<std::string>(subject) : nullptr;
      const auto* start = prefix ? std::get_if<std::string>(prefix) : nullptr;
      return text && start && text->starts_with(*start);
    }
    case FilterExpr::Kind::kAttributeExists:
      return value(0) != nullptr;
    case FilterExpr::Kind::kAttributeNotExists:
      return value(0) == nullptr;
    case FilterExpr::Kind::kAnd:
      return Matches(*filter.children[0], reading) && Matches(*filter.children[1], reading);
    case FilterExpr::Kind::kOr:
      return Matches(*filter.children[0], reading) || Matches(*filter.children[1], reading);
    case FilterExpr::Kind::kNot:
      return !Matches(*filter.children[0], reading);
  }
  return false;
}

Status ParseNativeFilter(std::string_view text, std::unique_ptr<FilterExpr>* filter) {
  return internal::ParseCondition(text, internal::ExpressionKind::kNativeFilter, nullptr, filter);
}

}  // namespace readingsd::query
