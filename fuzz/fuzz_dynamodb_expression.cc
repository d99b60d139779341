// DynamoDB's expression languages (expr/expr.h) on arbitrary text.
//
// Input layout: up to three '\n'-separated parts,
//     KeyConditionExpression \n FilterExpression \n ProjectionExpression
// each parsed with the same fixed ExpressionAttributeNames / ExpressionAttributeValues, then
// CheckPlaceholdersUsed over all three. Properties: no crash, no UB, no exception; and
//   - an accepted key condition yields a device id from a :value, `a` empty only for kAll and `b`
//     set only for BETWEEN, and MakeKeyCondition on it never crashes (and keeps a <= b);
//   - an accepted filter has the tree shape Matches relies on, never names a key attribute, and
//     evaluates on the sample readings;
//   - an accepted projection is a list of distinct, non-empty names (empty when every path is
//     nested, a.b or a[0]: below a scalar attribute there is nothing to select).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "expr/expr.h"
#include "fuzz/filter_checks.h"
#include "fuzz/fuzz_util.h"
#include "query/filter.h"
#include "query/query.h"

using namespace readingsd;
using readingsd::fuzz::AsView;

namespace {

const std::map<std::string, std::string> kNames = {
    {"#d", "deviceId"},    {"#ts", "readingTs"}, {"#t", "temperature"}, {"#s", "status"},
    {"#n", "name"},        {"#h", "humidity"},   {"#o", "online"},      {"#dot", "a.b"},
    {"#kw", "size"},
};
const std::map<std::string, storage::AttributeValue> kValues = {
    {":d", std::string("sensor-1")},
    {":bad", std::string("no/such device")},
    {":a", std::string("2026-06-23T00:00:00Z")},
    {":b", std::string("2026-06-24T00:00:00.5+02:00")},
    {":p", std::string("2026-06")},
    {":ts", std::string("2026-06-23T08:00:00.000000000Z")},
    {":s", std::string("ok")},
    {":e", std::string("")},
    {":n", 20.5},
    {":z", 0.0},
    {":t", true},
    {":f", false},
    {":ty", std::string("N")},
};

void CheckFilterTree(const query::FilterExpr& e) {
  for (const query::Operand& o : e.operands) {
    if (o.is_attribute) FUZZ_CHECK(o.attribute != "deviceId" && o.attribute != "readingTs");
  }
  for (const auto& child : e.children) CheckFilterTree(*child);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> parts = fuzz::Split(AsView(data, size), '\n', 3);
  const expr::ExpressionContext context{&kNames, &kValues};

  std::string device_id, a, b;
  query::SortKeyOp op = query::SortKeyOp::kAll;
  if (expr::ParseKeyConditionExpression(parts[0], context, &device_id, &op, &a, &b).ok()) {
    bool from_values = false;
    for (const auto& [placeholder, value] : kValues) {
      if (const std::string* s = std::get_if<std::string>(&value); s && *s == device_id) from_values = true;
    }
    FUZZ_CHECK(from_values);
    if (op == query::SortKeyOp::kAll) FUZZ_CHECK(a.empty());
    if (op != query::SortKeyOp::kBetween) FUZZ_CHECK(b.empty());
    query::KeyCondition key;
    if (query::MakeKeyCondition(device_id, op, a, b, &key).ok()) {
      FUZZ_CHECK(key.device_id == device_id && key.op == op);
      if (op == query::SortKeyOp::kBetween) FUZZ_CHECK(key.a <= key.b);
    }
  }

  std::unique_ptr<query::FilterExpr> filter;
  if (expr::ParseFilterExpression(parts[1], context, &filter).ok()) {
    FUZZ_CHECK(filter != nullptr);
    fuzz::CheckFilterShape(*filter);
    CheckFilterTree(*filter);
    for (const storage::Reading& reading : fuzz::SampleReadings()) {
      (void)query::Matches(*filter, storage::ViewsOf(reading.attributes));
    }
  }

  std::vector<std::string> projection{"left over"};  // the parser must clear it
  if (expr::ParseProjectionExpression(parts[2], context, &projection).ok()) {
    const std::set<std::string> distinct(projection.begin(), projection.end());
    FUZZ_CHECK(distinct.size() == projection.size());
    for (const std::string& name : projection) FUZZ_CHECK(!name.empty());
  }

  (void)expr::CheckPlaceholdersUsed(context, {parts[0], parts[1], parts[2]});
  return 0;
}
