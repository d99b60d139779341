#include "expr/expr.h"

#include <set>
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

Status InvalidOperator(std::string_view name) {
  return Status::InvalidArgument(
      "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: " +
      std::string(name));
}

// The key condition's conditions, in order: a tree of ANDs flattened. OR, NOT and the existence
// functions cannot select one contiguous key range, so they are refused.
Status CollectConditions(const FilterExpr& expr, std::vector<const FilterExpr*>* conditions) {
  switch (expr.kind) {
    case FilterExpr::Kind::kAnd:
      for (const auto& child : expr.children) {
        if (Status s = CollectConditions(*child, conditions); !s.ok()) return s;
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
      conditions->push_back(&expr);
      return Status::OK();
  }
  return Status::OK();
}

// The key attribute (operand 0) is compared with :values of the key's type, S.
Status CheckKeyValues(const FilterExpr& condition) {
  for (std::size_t i = 1; i < condition.operands.size(); ++i) {
    const Operand& operand = condition.operands[i];
    if (operand.is_attribute) {
      return Status::InvalidArgument(
          "Invalid KeyConditionExpression: a key attribute can only be compared with :values");
    }
    if (!std::holds_alternative<std::string>(operand.literal)) {
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

Status ParseKeyConditionExpression(std::string_view text, const ExpressionContext& context,
                                   std::string* device_id, SortKeyOp* op, std::string* a,
                                   std::string* b) {
  std::unique_ptr<FilterExpr> tree;
  Status s = internal::ParseCondition(text, ExpressionKind::kKeyConditionExpression, &context, &tree);
  if (!s.ok()) return s;
  std::vector<const FilterExpr*> conditions;
  if (s = CollectConditions(*tree, &conditions); !s.ok()) return s;

  const FilterExpr* hash = nullptr;
  const FilterExpr* range = nullptr;
  for (const FilterExpr* condition : conditions) {
    const Operand& subject = condition->operands[0];
    const FilterExpr** slot = !subject.is_attribute                 ? nullptr
                              : subject.attribute == context.hash_key  ? &hash
                              : subject.attribute == context.range_key ? &range
                                                                       : nullptr;
    if (!slot) return Status::InvalidArgument("Query key condition not supported");
    if (*slot) {
      return Status::InvalidArgument(
          "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one "
          "condition per key");
    }
    if (s = CheckKeyValues(*condition); !s.ok()) return s;
    *slot = condition;
  }
  if (!hash) {
    return Status::InvalidArgument("Query condition missed key schema element: " + context.hash_key);
  }
  if (hash->kind != FilterExpr::Kind::kCompare || hash->op != CompareOp::kEq) {
    return Status::InvalidArgument("Query key condition not supported");
  }
  if (range && range->kind == FilterExpr::Kind::kCompare && range->op == CompareOp::kNe) {
    return InvalidOperator("<>");
  }

  *device_id = StringOperand(*hash, 1);
  *op = range ? RangeOp(*range) : SortKeyOp::kAll;
  a->clear();
  b->clear();
  if (range) *a = StringOperand(*range, 1);
  if (*op == SortKeyOp::kBetween) *b = StringOperand(*range, 2);
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
  // The expressions parsed already, so every #word and :word in them is a placeholder.
  std::set<std::string_view> used;
  for (std::string_view expression : expressions) {
    for (const internal::Token& token : internal::Tokenize(expression)) {
      if (token.kind == internal::Token::Kind::kWord &&
          (token.source.starts_with('#') || token.source.starts_with(':'))) {
        used.insert(token.source);
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
