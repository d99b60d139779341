#include "query/filter.h"

#include <compare>
#include <optional>
#include <variant>

namespace readingsd::query {
namespace {

// A value as the filter compares it: an attribute as read, or a literal seen the same way.
using Value = std::optional<decltype(storage::AttributeView::value)>;

// The operand's value for this item; nullopt when it names an attribute the item lacks.
Value Resolve(const Operand& operand, std::span<const storage::AttributeView> attributes) {
  if (!operand.is_attribute) {
    return std::visit([](const auto& v) -> Value { return v; }, operand.literal);
  }
  for (const storage::AttributeView& attribute : attributes) {
    if (attribute.name == operand.attribute) return attribute.value;
  }
  return std::nullopt;
}

bool Equal(const Value& left, const Value& right) {
  return left && right && *left == *right;  // variant ==: same type and same value
}

// Numbers numerically, strings bytewise (UTF-8 byte order, as DynamoDB); nullopt for a missing
// value, two different types or booleans, which have no order.
std::optional<std::partial_ordering> Order(const Value& left, const Value& right) {
  if (!left || !right || left->index() != right->index() || std::holds_alternative<bool>(*left)) {
    return std::nullopt;
  }
  return *left <=> *right;
}

bool Compare(CompareOp op, const Value& left, const Value& right) {
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

bool Matches(const FilterExpr& filter, std::span<const storage::AttributeView> attributes) {
  auto value = [&](std::size_t i) { return Resolve(filter.operands[i], attributes); };
  switch (filter.kind) {
    case FilterExpr::Kind::kCompare:
      return Compare(filter.op, value(0), value(1));
    case FilterExpr::Kind::kBetween:
      return Compare(CompareOp::kGe, value(0), value(1)) && Compare(CompareOp::kLe, value(0), value(2));
    case FilterExpr::Kind::kBeginsWith: {
      const Value subject = value(0);
      const Value prefix = value(1);
      const auto* text = subject ? std::get_if<std::string_view>(&*subject) : nullptr;
      const auto* start = prefix ? std::get_if<std::string_view>(&*prefix) : nullptr;
      return text && start && text->starts_with(*start);
    }
    case FilterExpr::Kind::kAttributeExists:
      return value(0).has_value();
    case FilterExpr::Kind::kAttributeNotExists:
      return !value(0).has_value();
    case FilterExpr::Kind::kAnd:
      return Matches(*filter.children[0], attributes) && Matches(*filter.children[1], attributes);
    case FilterExpr::Kind::kOr:
      return Matches(*filter.children[0], attributes) || Matches(*filter.children[1], attributes);
    case FilterExpr::Kind::kNot:
      return !Matches(*filter.children[0], attributes);
  }
  return false;
}

}  // namespace readingsd::query
