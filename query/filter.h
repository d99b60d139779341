// Filter: a condition on a reading's attributes, applied *after* the key read. It never narrows
// what is read: a Query with a filter still scans (and counts in ScannedCount) every item the
// key condition selects, exactly as DynamoDB charges for it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/reading.h"
#include "storage/status.h"

namespace readingsd::query {

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe };

// One side of a comparison: an attribute of the reading or a literal.
struct Operand {
  bool is_attribute = false;
  std::string attribute;           // when is_attribute
  storage::AttributeValue literal;  // otherwise
};

struct FilterExpr {
  enum class Kind { kCompare, kBetween, kBeginsWith, kAnd, kOr, kNot, kAttributeExists, kAttributeNotExists };
  Kind kind = Kind::kCompare;
  CompareOp op = CompareOp::kEq;          // kCompare
  std::vector<Operand> operands;          // kCompare: 2, kBetween: 3, kBeginsWith: 2, exists: 1 (attribute)
  std::vector<std::unique_ptr<FilterExpr>> children;  // kAnd / kOr: 2, kNot: 1
};

// DynamoDB semantics: comparing values of different types, or a missing attribute, is false.
bool Matches(const FilterExpr& filter, const storage::Reading& reading);

// The native API's compact filter: comparisons joined by `and` / `or`, e.g.
// "temperature>30", "temperature>=30 and status=ok", "humidity<>0". A bare literal is a number
// when it parses as one, true/false are booleans, "..." quotes a string.
Status ParseNativeFilter(std::string_view text, std::unique_ptr<FilterExpr>* filter);

}  // namespace readingsd::query
