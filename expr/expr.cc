#include "expr/expr.h"

#include <optional>
#include <set>
#include <utility>
#include <variant>

#include "expr/lexer.h"
#include "expr/parser.h"

namespace readingsd::expr {
namespace {

using query::CompareOp;
using query::FilterExpr;
using query::Operand;
using query::SortKeyOp;

using internal::ExpressionKind;

Status KeyConditionError(std::string_view message) {
  return Status::InvalidArgument("Invalid KeyConditionExpression: " + std::string(message));
}

Status InvalidOperator(std::string_view name) {
  return KeyConditionError("Invalid operator used in KeyConditionExpression: " + std::string(name));
}

CompareOp Mirrored(CompareOp op) {
  switch (op) {
    case CompareOp::kLt: return CompareOp::kGt;
    case CompareOp::kLe: return CompareOp::kGe;
    case CompareOp::kGt: return CompareOp::kLt;
    case CompareOp::kGe: return CompareOp::kLe;
    case CompareOp::kEq:
    case CompareOp::kNe: break;
  }
  return op;
}

// One comparison, BETWEEN or begins_with of a key condition, checked as DynamoDB checks it: one
// top-level attribute and otherwise :values. A value written first (`:t < readingTs`) is turned
// round, so that the attribute is operand 0.
Status CheckCondition(FilterExpr* condition) {
  if (condition->kind == FilterExpr::Kind::kCompare && condition->op == CompareOp::kNe) {
    return InvalidOperator("<>");
  }
  const Operand& first = condition->operands[0];
  if (condition->kind != FilterExpr::Kind::kCompare && (!first.is_attribute || first.size)) {
    return KeyConditionError(
        std::string("Invalid condition in KeyConditionExpression: ") +
        (condition->kind == FilterExpr::Kind::kBetween ? "BETWEEN" : "begins_with") +
        " operator must have the key attribute as its first operand");
  }
  std::optional<std::size_t> key;
  for (std::size_t i = 0; i < condition->operands.size(); ++i) {
    const Operand& operand = condition->operands[i];
    if (operand.size) return KeyConditionError("KeyConditionExpressions cannot contain nested operations");
    if (!operand.is_attribute) continue;
    if (key) {
      return KeyConditionError(
          "Invalid condition in KeyConditionExpression: Multiple attribute names used in one "
          "condition");
    }
    if (operand.nested) {
      return KeyConditionError("KeyConditionExpressions cannot have conditions on nested attributes");
    }
    key = i;
  }
  if (!key) {
    return KeyConditionError("Invalid condition in KeyConditionExpression: No key attribute specified");
  }
  if (*key == 1) {
    std::swap(condition->operands[0], condition->operands[1]);
    condition->op = Mirrored(condition->op);
  }
  return Status::OK();
}

// The key condition's conditions, in order: a tree of ANDs flattened, each condition checked.
// OR, NOT, IN and the other functions cannot select one contiguous key range, so they are
// refused; so is a second condition on one attribute.
Status CollectConditions(FilterExpr* expr, std::vector<const FilterExpr*>* conditions) {
  switch (expr->kind) {
    case FilterExpr::Kind::kAnd:
      for (const auto& child : expr->children) {
        if (Status s = CollectConditions(child.get(), conditions); !s.ok()) return s;
      }
      return Status::OK();
    case FilterExpr::Kind::kOr: return InvalidOperator("OR");
    case FilterExpr::Kind::kNot: return InvalidOperator("NOT");
    case FilterExpr::Kind::kIn: return InvalidOperator("IN");
    case FilterExpr::Kind::kContains: return InvalidOperator("contains");
    case FilterExpr::Kind::kAttributeType: return InvalidOperator("attribute_type");
    case FilterExpr::Kind::kAttributeExists: return InvalidOperator("attribute_exists");
    case FilterExpr::Kind::kAttributeNotExists: return InvalidOperator("attribute_not_exists");
    case FilterExpr::Kind::kCompare:
    case FilterExpr::Kind::kBetween:
    case FilterExpr::Kind::kBeginsWith:
      if (Status s = CheckCondition(expr); !s.ok()) return s;
      for (const FilterExpr* earlier : *conditions) {
        if (earlier->operands[0].attribute == expr->operands[0].attribute) {
          return KeyConditionError("KeyConditionExpressions must only contain one condition per key");
        }
      }
      conditions->push_back(expr);
      return Status::OK();
  }
  return Status::OK();
}

// The key attribute (operand 0) is compared with :values of the key's type, S.
// The condition's values are strings, or numbers when `number`.
Status CheckKeyValues(const FilterExpr& condition, bool number = false) {
  for (std::size_t i = 1; i < condition.operands.size(); ++i) {
    if (number ? !std::holds_alternative<storage::Number>(condition.operands[i].literal)
               : !std::holds_alternative<std::string>(condition.operands[i].literal)) {
      return Status::InvalidArgument(
          "One or more parameter values were invalid: Condition parameter type does not match "
          "schema type");
    }
  }
  return Status::OK();
}

SortKeyOp RangeOp(const FilterExpr& condition) {
  switch (condition.kind) {
    case FilterExpr::Kind::kBetween: return SortKeyOp::kBetween;
    case FilterExpr::Kind::kBeginsWith: return SortKeyOp::kBeginsWith;
    default: break;
  }
  switch (condition.op) {
    case CompareOp::kLt: return SortKeyOp::kLt;
    case CompareOp::kLe: return SortKeyOp::kLe;
    case CompareOp::kGt: return SortKeyOp::kGt;
    case CompareOp::kGe: return SortKeyOp::kGe;
    default: return SortKeyOp::kEq;
  }
}

const std::string& StringOperand(const FilterExpr& condition, std::size_t i) {
  return std::get<std::string>(condition.operands[i].literal);
}

// "{a, b}", as DynamoDB lists unused placeholders.
template <typename Map>
std::string UnusedKeys(const Map* map, const std::set<std::string_view>& used) {
  std::string keys;
  if (!map) return keys;
  for (const auto& [key, value] : *map) {
    if (used.contains(key)) continue;
    keys += (keys.empty() ? "{" : ", ") + key;
  }
  return keys.empty() ? keys : keys + "}";
}

}  // namespace

Status ParseKeyCondition(std::string_view text, const ExpressionContext& context, bool range_number,
                         std::string* hash_value, SortKeyOp* op, storage::AttributeValue* a,
                         storage::AttributeValue* b) {
  std::unique_ptr<FilterExpr> tree;
  Status s = internal::ParseCondition(text, ExpressionKind::kKeyConditionExpression, &context, &tree);
  if (!s.ok()) return s;
  std::vector<const FilterExpr*> conditions;
  if (s = CollectConditions(tree.get(), &conditions); !s.ok()) return s;

  const FilterExpr* hash = nullptr;
  const FilterExpr* range = nullptr;
  bool other_attribute = false;
  for (const FilterExpr* condition : conditions) {
    const std::string& attribute = condition->operands[0].attribute;
    const FilterExpr** slot = attribute == context.hash_key    ? &hash
                              : attribute == context.range_key ? &range
                                                               : nullptr;
    if (!slot) {
      other_attribute = true;
      continue;
    }
    if (s = CheckKeyValues(*condition, slot == &range && range_number); !s.ok()) return s;
    *slot = condition;
  }
  // As DynamoDB: a missing partition key is named first, whatever else the condition holds.
  if (!hash) {
    return Status::InvalidArgument("Query condition missed key schema element: " + context.hash_key);
  }
  if (other_attribute) return Status::InvalidArgument("Query key condition not supported");
  if (hash->kind != FilterExpr::Kind::kCompare || hash->op != CompareOp::kEq) {
    return Status::InvalidArgument("Query key condition not supported");
  }

  *hash_value = StringOperand(*hash, 1);
  *op = range ? RangeOp(*range) : SortKeyOp::kAll;
  *a = storage::AttributeValue();
  *b = storage::AttributeValue();
  if (range) *a = range->operands[1].literal;
  if (*op == SortKeyOp::kBetween) *b = range->operands[2].literal;
  return Status::OK();
}

Status ParseKeyConditionExpression(std::string_view text, const ExpressionContext& context,
                                   std::string* device_id, SortKeyOp* op, std::string* a,
                                   std::string* b) {
  storage::AttributeValue va, vb;
  if (Status s = ParseKeyCondition(text, context, /*range_number=*/false, device_id, op, &va, &vb); !s.ok()) return s;
  a->clear();
  b->clear();
  if (*op != SortKeyOp::kAll) *a = std::get<std::string>(va);
  if (*op == SortKeyOp::kBetween) *b = std::get<std::string>(vb);
  return Status::OK();
}

Status ParseFilterExpression(std::string_view text, const ExpressionContext& context,
                             std::unique_ptr<FilterExpr>* filter) {
  return internal::ParseCondition(text, ExpressionKind::kFilterExpression, &context, filter);
}

Status ParseProjectionExpression(std::string_view text, const ExpressionContext& context,
                                 std::vector<std::string>* attributes) {
  return internal::ParseAttributeList(text, context, attributes);
}

Status CheckPlaceholdersUsed(const ExpressionContext& context,
                             const std::vector<std::string_view>& expressions) {
  // The expressions parsed already, so every #word and :word in them is a placeholder; a
  // document path is one word ("#a.#b"), its names split at the dots.
  std::set<std::string_view> used;
  for (std::string_view expression : expressions) {
    for (const internal::Token& token : internal::Tokenize(expression)) {
      if (token.kind != internal::Token::Kind::kWord) continue;
      std::string_view word = token.source;
      while (!word.empty()) {
        const std::size_t dot = word.find('.');
        const std::string_view name = word.substr(0, dot);
        if (name.starts_with('#') || name.starts_with(':')) used.insert(name);
        word = dot == std::string_view::npos ? std::string_view() : word.substr(dot + 1);
      }
    }
  }
  if (std::string keys = UnusedKeys(context.names, used); !keys.empty()) {
    return Status::InvalidArgument(
        "Value provided in ExpressionAttributeNames unused in expressions: keys: " + keys);
  }
  if (std::string keys = UnusedKeys(context.values, used); !keys.empty()) {
    return Status::InvalidArgument(
        "Value provided in ExpressionAttributeValues unused in expressions: keys: " + keys);
  }
  return Status::OK();
}

Status ParseNativeFilter(std::string_view text, std::unique_ptr<FilterExpr>* filter) {
  return internal::ParseCondition(text, ExpressionKind::kNativeFilter, nullptr, filter);
}

}  // namespace readingsd::expr
