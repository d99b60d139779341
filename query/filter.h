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

// One operand: an attribute of the reading or a literal, or the size of either.
struct Operand {
  bool is_attribute = false;
  std::string attribute;            // when is_attribute: the (top-level) attribute's name
  storage::AttributeValue literal;  // otherwise
  // is_attribute: a document path below `attribute` (a.b, a[0]). A reading's attributes are
  // scalars, with nothing below them, so the operand is always a missing value, as it is in
  // DynamoDB for such a path into a scalar.
  bool nested = false;
  // size() of the value above: a string's length in UTF-16 code units, as DynamoDB counts it. A
  // number or a boolean has no size: the operand is then missing, as for a missing attribute.
  bool size = false;
};

struct FilterExpr {
  enum class Kind {
    kCompare,
    kBetween,
    kIn,
    kBeginsWith,
    kContains,
    kAttributeType,
    kAnd,
    kOr,
    kNot,
    kAttributeExists,
    kAttributeNotExists,
  };
  Kind kind = Kind::kCompare;
  CompareOp op = CompareOp::kEq;  // kCompare
  // kCompare: 2, kBetween: 3, kIn: the subject then 1..100 candidates, kBeginsWith and kContains:
  // 2, kAttributeType: 2 (the second a string literal: S, N, BOOL, ... as DynamoDB names types),
  // exists: 1 (an attribute).
  std::vector<Operand> operands;
  std::vector<std::unique_ptr<FilterExpr>> children;  // kAnd / kOr: 2, kNot: 1
};

// DynamoDB semantics: numbers compare numerically, strings bytewise, booleans only with = / <>.
// A missing attribute or a value of another type makes =, <, <=, >, >=, BETWEEN, IN,
// begins_with, contains and attribute_type false, and `<>` true: DynamoDB evaluates `a <> :v` as
// NOT (a = :v), so an item without `a` passes it (conditional writes such as "#status <> :busy"
// on a new item rely on that). IN is true when the subject equals one of the candidates;
// contains(a, b) when both are strings and b is a substring of a (sets and lists, where DynamoDB
// also looks for members, do not exist here); attribute_type(a, t) when a exists with type t.
// `attributes` are an item's as read (storage::ReadAttributes), or storage::ViewsOf a Reading's.
bool Matches(const FilterExpr& filter, std::span<const storage::AttributeView> attributes);

}  // namespace readingsd::query
