// Shared by the filter fuzzers: the shape every parsed FilterExpr must have (Matches indexes
// operands and children without checking), and a few readings to evaluate filters against.
#pragma once

#include <cstddef>
#include <variant>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "query/filter.h"
#include "storage/reading.h"

namespace readingsd::fuzz {

// Checks the tree's shape and returns its depth.
inline std::size_t CheckFilterShape(const query::FilterExpr& e) {
  using Kind = query::FilterExpr::Kind;
  std::size_t operands = 0, children = 0;
  switch (e.kind) {
    case Kind::kCompare: operands = 2; break;
    case Kind::kBetween: operands = 3; break;
    case Kind::kIn:  // the subject and 1..100 candidates
      FUZZ_CHECK(e.operands.size() >= 2 && e.operands.size() <= 101);
      operands = e.operands.size();
      break;
    case Kind::kBeginsWith:
    case Kind::kContains: operands = 2; break;
    case Kind::kAttributeType:
      operands = 2;
      FUZZ_CHECK(e.operands.size() == 2 && !e.operands[1].is_attribute && !e.operands[1].size &&
                 std::holds_alternative<std::string>(e.operands[1].literal));
      break;
    case Kind::kAttributeExists:
    case Kind::kAttributeNotExists: operands = 1; break;
    case Kind::kAnd:
    case Kind::kOr: children = 2; break;
    case Kind::kNot: children = 1; break;
  }
  FUZZ_CHECK(e.operands.size() == operands);
  FUZZ_CHECK(e.children.size() == children);
  if (e.kind == Kind::kAttributeExists || e.kind == Kind::kAttributeNotExists) {
    FUZZ_CHECK(e.operands[0].is_attribute && !e.operands[0].size);
  }
  for (const query::Operand& o : e.operands) {
    if (o.is_attribute) FUZZ_CHECK(!o.attribute.empty());
    if (!o.is_attribute) FUZZ_CHECK(!o.nested);
    // size() is only ever of a string literal or of an attribute
    if (o.size && !o.is_attribute) FUZZ_CHECK(std::holds_alternative<std::string>(o.literal));
  }
  std::size_t depth = 0;
  for (const auto& child : e.children) {
    FUZZ_CHECK(child != nullptr);
    const std::size_t d = CheckFilterShape(*child);
    if (d > depth) depth = d;
  }
  return depth + 1;
}

// Readings with numbers (including NaN-free edge values), strings and booleans, and one without
// any attribute, so comparisons meet every type and missing attributes.
inline const std::vector<storage::Reading>& SampleReadings() {
  static const std::vector<storage::Reading> kReadings = [] {
    std::vector<storage::Reading> r(3);
    r[0] = {"sensor-1", "2026-06-23T08:00:00.000000000Z",
            {{"temperature", 21.5}, {"humidity", 0.0}, {"status", std::string("ok")},
             {"online", true}, {"a", -1.0}, {"name", std::string("and")}, {"b", std::string("")}}};
    r[1] = {"sensor-1", "2026-06-23T09:00:00.000000000Z",
            {{"temperature", 35.0}, {"status", std::string("busy \"x\"")}, {"online", false},
             {"big", 1e308}, {"neg", -0.0}}};
    r[2] = {"sensor-2", "2026-06-23T10:00:00.000000000Z", {}};
    return r;
  }();
  return kReadings;
}

}  // namespace readingsd::fuzz
