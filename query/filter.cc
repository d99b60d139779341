#include "query/filter.h"

#include <compare>
#include <optional>
#include <string_view>
#include <variant>

namespace readingsd::query {
namespace {

// A value as the filter compares it: an attribute as read, or a literal seen the same way.
using Value = std::optional<decltype(storage::AttributeView::value)>;

// The length of UTF-8 text in UTF-16 code units, DynamoDB's size() of a string: one per
// character, two for a character beyond the BMP (a four-byte sequence).
std::size_t Utf16Length(std::string_view text) {
  std::size_t length = 0;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
    length += byte >= 0xF0 ? 2 : 1;
  }
  return length;
}

// The operand's value for this item; nullopt when it names an attribute the item lacks, a path
// below an attribute (attributes are scalars), or the size of a value that has none. A size is
// written to *size, which the returned view then refers to.
Value Resolve(const Operand& operand, std::span<const storage::AttributeView> attributes,
              storage::Number* size) {
  Value value;
  if (!operand.is_attribute) {
    value = std::visit([](const auto& v) -> Value { return v; }, operand.literal);
  } else if (!operand.nested) {
    for (const storage::AttributeView& attribute : attributes) {
      if (attribute.name == operand.attribute) {
        value = attribute.value;
        break;
      }
    }
  }
  if (!operand.size || !value) return value;
  const auto* text = std::get_if<std::string_view>(&*value);
  if (!text) return std::nullopt;
  *size = storage::Number(Utf16Length(*text));
  return storage::NumberView(*size);
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

const std::string_view* Text(const Value& value) {
  return value ? std::get_if<std::string_view>(&*value) : nullptr;
}

// DynamoDB's name of the value's type.
std::string_view TypeName(const Value& value) {
  if (std::holds_alternative<storage::NumberView>(*value)) return "N";
  if (std::holds_alternative<std::string_view>(*value)) return "S";
  return "BOOL";
}

}  // namespace

bool Matches(const FilterExpr& filter, std::span<const storage::AttributeView> attributes) {
  switch (filter.kind) {
    case FilterExpr::Kind::kAnd:
      return Matches(*filter.children[0], attributes) && Matches(*filter.children[1], attributes);
    case FilterExpr::Kind::kOr:
      return Matches(*filter.children[0], attributes) || Matches(*filter.children[1], attributes);
    case FilterExpr::Kind::kNot:
      return !Matches(*filter.children[0], attributes);
    default:
      break;
  }
  // Room for the sizes of up to two operands resolved at once.
  storage::Number size0, size1;
  auto value = [&](std::size_t i, storage::Number* size) {
    return Resolve(filter.operands[i], attributes, size);
  };
  switch (filter.kind) {
    case FilterExpr::Kind::kCompare:
      return Compare(filter.op, value(0, &size0), value(1, &size1));
    case FilterExpr::Kind::kBetween: {
      const Value subject = value(0, &size0);
      return Compare(CompareOp::kGe, subject, value(1, &size1)) &&
             Compare(CompareOp::kLe, subject, value(2, &size1));
    }
    case FilterExpr::Kind::kIn: {
      const Value subject = value(0, &size0);
      if (!subject) return false;
      for (std::size_t i = 1; i < filter.operands.size(); ++i) {
        if (Equal(subject, value(i, &size1))) return true;
      }
      return false;
    }
    case FilterExpr::Kind::kBeginsWith: {
      const Value subject = value(0, &size0);
      const Value prefix = value(1, &size1);
      const std::string_view* text = Text(subject);
      const std::string_view* start = Text(prefix);
      return text && start && text->starts_with(*start);
    }
    case FilterExpr::Kind::kContains: {
      const Value subject = value(0, &size0);
      const Value part = value(1, &size1);
      const std::string_view* text = Text(subject);
      const std::string_view* needle = Text(part);
      return text && needle && text->find(*needle) != std::string_view::npos;
    }
    case FilterExpr::Kind::kAttributeType: {
      const Value subject = value(0, &size0);
      const auto* type = std::get_if<std::string>(&filter.operands[1].literal);
      return subject && type && TypeName(subject) == *type;
    }
    case FilterExpr::Kind::kAttributeExists:
      return value(0, &size0).has_value();
    case FilterExpr::Kind::kAttributeNotExists:
      return !value(0, &size0).has_value();
    case FilterExpr::Kind::kAnd:
    case FilterExpr::Kind::kOr:
    case FilterExpr::Kind::kNot:
      break;
  }
  return false;
}

}  // namespace readingsd::query
