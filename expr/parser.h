// The one recursive-descent parser behind the native ?filter= syntax and DynamoDB's expressions.
// Both share the grammar
//
//   condition   := disjunction <end>
//   disjunction := conjunction { OR conjunction }
//   conjunction := negation { AND negation }
//   negation    := NOT negation | primary
//   primary     := '(' disjunction ')'
//                | operand comparator operand
//                | operand BETWEEN operand AND operand
//                | operand IN '(' operand { ',' operand } ')'          (at most 100)
//                | begins_with '(' operand ',' operand ')' | contains '(' operand ',' operand ')'
//                | attribute_type '(' operand ',' operand ')'
//                | attribute_exists '(' path ')' | attribute_not_exists '(' path ')'
//   operand     := path | value | size '(' operand ')'
//   path        := name { '.' name | '[' digits ']' }                 (at most 32 levels)
//   projection  := path { ',' path } <end>
//
// and differ only in operands and error texts: native operands are `attribute op literal`
// (numbers, true/false, "strings", bare words; size() of an attribute as a subject; no document
// paths, a word is an attribute's whole name), DynamoDB operands are paths, #names, :values and
// size() on either side, and its errors copy DynamoDB's ValidationException texts.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "expr/expr.h"
#include "query/filter.h"

namespace readingsd::expr::internal {

// What is being parsed decides the operand syntax, the error texts and the attributes allowed.
enum class ExpressionKind {
  kNativeFilter,            // ?filter=; no key attributes
  kFilterExpression,        // no key attributes
  kKeyConditionExpression,  // any attribute; the caller checks the key schema on the result
  kProjectionExpression,
};

// `context` is required for the DynamoDB kinds and unused for kNativeFilter.
Status ParseCondition(std::string_view text, ExpressionKind kind, const ExpressionContext* context,
                      std::unique_ptr<query::FilterExpr>* condition);

Status ParseAttributeList(std::string_view text, const ExpressionContext& context,
                          std::vector<std::string>* attributes);

}  // namespace readingsd::expr::internal
