// Filter: a condition on a reading's attributes, applied *after* the key read. It never narrows
// what is read: a Query with a filter still scans (and counts in ScannedCount) every item the
// key condition selects, exactly as DynamoDB charges for it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/reading.h"

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

// DynamoDB semantics: numbers compare numerically, strings bytewise, booleans only with = / <>.
// A missing attribute or a value of another type makes =, <, <=, >, >=, BETWEEN and begins_with
// false, and `<>` true: DynamoDB evaluates `a <> :v` as NOT (a = :v), so an item without `a`
// passes it (conditional writes such as "#status <> :busy" on a new item rely on that).
// `attributes` are an item's as read (storage::ReadAttributes), or storage::ViewsOf a Reading's.
bool Matches(const FilterExpr& filter, std::span<const storage::AttributeView> attributes);

}  // namespace readingsd::query
