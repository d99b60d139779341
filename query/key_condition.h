// A key condition: DynamoDB's KeyConditionExpression as the engine takes it, one partition and at
// most one operator on its sort key. Apart from query.h so that the expression grammar (expr/)
// can produce one without seeing the store.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace readingsd::query {

enum class SortKeyOp { kAll, kEq, kLt, kLe, kGt, kGe, kBetween, kBeginsWith };

struct KeyCondition {
  std::string device_id;
  SortKeyOp op = SortKeyOp::kAll;
  std::string a;  // normalised sort key; the raw prefix for kBeginsWith
  std::string b;  // kBetween's upper bound (inclusive)
  // No stored item can match (KeyValues::kAsDynamoDb only): Query answers an empty page.
  bool matches_nothing = false;
};

// How MakeKeyCondition takes a value that no stored key can have.
enum class KeyValues {
  kStrict,  // InvalidArgument (the native API)
  // As DynamoDB, which compares key values as the strings they are (the DynamoDB API): a device
  // id outside the charset matches nothing; a sort-key value that is not a timestamp is compared
  // bytewise with the stored, normalised, sort keys ("tuesday" is above all of them, "2026" below
  // those of 2026); a begins_with prefix no sort key can begin with matches nothing. An empty
  // value is still InvalidArgument, in DynamoDB's words.
  kAsDynamoDb,
};

// Validates the device id and normalises `a` / `b` (any ISO-8601 form the ingest path accepts)
// exactly as keys are normalised; a begins_with prefix is checked with ValidateSortKeyPrefix.
// BETWEEN with a > b is InvalidArgument, as in DynamoDB; the bounds compare after normalisation
// (T10:00:00+02:00 is 08:00Z, before T09:00:00Z). `a` must be empty for kAll, `b` for all but
// kBetween. Query expects a KeyCondition made here.
Status MakeKeyCondition(std::string_view device_id, SortKeyOp op, std::string_view a,
                        std::string_view b, KeyCondition* condition,
                        KeyValues values = KeyValues::kStrict);

// [lower, upper) in sort-key byte order; an empty bound is the partition's own start / end: the
// bounds storage::Store::NewIterator and DeleteReadings take.
struct SortKeyRange {
  std::string lower;
  std::string upper;

  bool empty() const { return !lower.empty() && !upper.empty() && lower >= upper; }
};
// The sort keys a condition made by MakeKeyCondition matches (its device id aside).
SortKeyRange RangeOf(const KeyCondition& condition);

// The least byte string greater than `key`. Sort keys are fixed width, so no other sort key
// begins with `key`: as an exclusive upper bound key + '\0' admits `key`, as a lower bound it
// excludes exactly `key`.
std::string Successor(std::string_view key);

// Whether `sort_key` satisfies the condition's sort-key part (the device id is not compared).
bool InSortKeyRange(const KeyCondition& condition, std::string_view sort_key);

}  // namespace readingsd::query
