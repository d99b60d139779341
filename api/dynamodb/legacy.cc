// The legacy (pre-expression) conditions older SDKs and tools still send: KeyConditions,
// QueryFilter / ScanFilter with ConditionalOperator. Each becomes the KeyCondition or FilterExpr
// the expressions produce, so both forms are answered by the same engine.
#include <algorithm>
#include <variant>
#include <vector>

#include "api/dynamodb/internal.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb::internal {
namespace {

using query::CompareOp;
using query::FilterExpr;
using query::Operand;

constexpr std::string_view kOperators[] = {"IN", "NULL",     "BETWEEN", "LT", "NOT_CONTAINS", "EQ",      "GT",
                                           "NOT_NULL", "NE", "LE", "BEGINS_WITH", "GE", "CONTAINS"};

Status Invalid(const std::string& what) {
  return Status::InvalidArgument("One or more parameter values were invalid: " + what);
}

struct Condition {
  std::string op;
  std::vector<storage::AttributeValue> values;
  std::string type;  // of the values ("" when there are none)
};

// The AttributeValue types DynamoDB accepts for each operator.
bool TypeAllowed(std::string_view op, std::string_view type) {
  const bool set = type == "SS" || type == "NS" || type == "BS";
  if (op == "EQ" || op == "NE") return type == "S" || type == "N" || type == "B" || set;
  if (op == "BEGINS_WITH") return type == "S" || type == "B";
  return type == "S" || type == "N" || type == "B";
}

bool CountAllowed(std::string_view op, std::size_t n) {
  if (op == "NULL" || op == "NOT_NULL") return n == 0;
  if (op == "IN") return n >= 1;
  if (op == "BETWEEN") return n == 2;
  return n == 1;
}

bool Greater(const storage::AttributeValue& a, const storage::AttributeValue& b) {
  if (const auto* x = std::get_if<storage::Number>(&a)) {
    const auto* y = std::get_if<storage::Number>(&b);
    return y && *x > *y;
  }
  if (const auto* x = std::get_if<std::string>(&a)) {
    const auto* y = std::get_if<std::string>(&b);
    return y && *x > *y;
  }
  return false;
}

// One entry of KeyConditions, QueryFilter or ScanFilter, checked as DynamoDB checks it.
Status ParseCondition(std::string_view member, const std::string& attribute, const Json& json, Condition* out) {
  const std::string path = std::string(member) + "." + attribute + ".member";
  if (!json.is_object()) {
    return Status::InvalidArgument("1 validation error detected: Value at '" + path +
                                   "' failed to satisfy constraint: Member must be a structure");
  }
  for (const auto& [name, value] : json.items()) {
    if (name != "ComparisonOperator" && name != "AttributeValueList") {
      return Status::InvalidArgument(std::string(member) + ": parameter " + name + " is not supported");
    }
  }
  std::optional<std::string> op;
  if (Status s = Get(json, "ComparisonOperator", &op); !s.ok()) return s;
  Constraints constraints;
  if (!op) constraints.Fail("null", path + ".comparisonOperator", "Member must not be null");
  constraints.OneOf(op, path + ".comparisonOperator", kOperators);
  if (Status s = constraints.status(); !s.ok()) return s;
  out->op = *op;

  auto list = json.find("AttributeValueList");
  std::size_t n = 0;
  if (list != json.end() && !list->is_null()) {
    if (!list->is_array()) {
      return Status::InvalidArgument("1 validation error detected: Value at '" + path +
                                     ".attributeValueList' failed to satisfy constraint: Member must be a list");
    }
    n = list->size();
    for (const Json& av : *list) {
      if (!av.is_object() || av.size() != 1) {
        return Status::InvalidArgument(
            "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes");
      }
      const std::string& type = av.begin().key();
      if (out->type.empty()) out->type = type;
      if (type != out->type) return Invalid("AttributeValues inside AttributeValueList must be of same type");
    }
  }
  if (!CountAllowed(out->op, n)) return Invalid("Invalid number of argument(s) for the " + out->op + " ComparisonOperator");
  if (n > 0 && !TypeAllowed(out->op, out->type)) {
    return Invalid("ComparisonOperator " + out->op + " is not valid for " + out->type + " AttributeValue type");
  }
  for (std::size_t i = 0; i < n; ++i) {
    out->values.emplace_back();
    if (Status s = FromAttributeValue((*list)[i], path + ".attributeValueList", &out->values.back()); !s.ok()) {
      return s;
    }
  }
  if (out->op == "BETWEEN" && Greater(out->values[0], out->values[1])) {
    return Status::InvalidArgument(
        "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound");
  }
  return Status::OK();
}

Operand Attribute(const std::string& name) {
  Operand operand;
  operand.is_attribute = true;
  operand.attribute = name;
  return operand;
}

Operand Literal(storage::AttributeValue value) {
  Operand operand;
  operand.literal = std::move(value);
  return operand;
}

std::unique_ptr<FilterExpr> Node(FilterExpr::Kind kind, std::vector<Operand> operands, CompareOp op = CompareOp::kEq) {
  auto node = std::make_unique<FilterExpr>();
  node->kind = kind;
  node->op = op;
  node->operands = std::move(operands);
  return node;
}

std::unique_ptr<FilterExpr> Combine(FilterExpr::Kind kind, std::unique_ptr<FilterExpr> left,
                                    std::unique_ptr<FilterExpr> right) {
  if (!left) return right;
  auto node = std::make_unique<FilterExpr>();
  node->kind = kind;
  node->children.push_back(std::move(left));
  node->children.push_back(std::move(right));
  return node;
}

Status ToFilter(const std::string& attribute, Condition condition, std::unique_ptr<FilterExpr>* out) {
  using Kind = FilterExpr::Kind;
  static const std::map<std::string_view, CompareOp> kCompare = {{"EQ", CompareOp::kEq}, {"NE", CompareOp::kNe},
                                                                  {"LT", CompareOp::kLt}, {"LE", CompareOp::kLe},
                                                                  {"GT", CompareOp::kGt}, {"GE", CompareOp::kGe}};
  std::vector<storage::AttributeValue>& v = condition.values;
  if (auto compare = kCompare.find(condition.op); compare != kCompare.end()) {
    *out = Node(Kind::kCompare, {Attribute(attribute), Literal(std::move(v[0]))}, compare->second);
  } else if (condition.op == "BETWEEN") {
    *out = Node(Kind::kBetween, {Attribute(attribute), Literal(std::move(v[0])), Literal(std::move(v[1]))});
  } else if (condition.op == "BEGINS_WITH") {
    *out = Node(Kind::kBeginsWith, {Attribute(attribute), Literal(std::move(v[0]))});
  } else if (condition.op == "NULL") {
    *out = Node(Kind::kAttributeNotExists, {Attribute(attribute)});
  } else if (condition.op == "NOT_NULL") {
    *out = Node(Kind::kAttributeExists, {Attribute(attribute)});
  } else if (condition.op == "IN") {
    std::vector<Operand> operands = {Attribute(attribute)};
    for (storage::AttributeValue& value : v) operands.push_back(Literal(std::move(value)));
    *out = Node(Kind::kIn, std::move(operands));
  } else {  // CONTAINS, NOT_CONTAINS: a substring of a string; NOT_CONTAINS is its complement
    *out = Node(Kind::kContains, {Attribute(attribute), Literal(std::move(v[0]))});
    if (condition.op == "NOT_CONTAINS") {
      auto negation = std::make_unique<FilterExpr>();
      negation->kind = Kind::kNot;
      negation->children.push_back(std::move(*out));
      *out = std::move(negation);
    }
  }
  return Status::OK();
}

}  // namespace

Status ParseKeyConditions(const Json& conditions, query::KeyCondition* key) {
  std::map<std::string, Condition> parsed;
  for (const auto& [attribute, json] : conditions.items()) {
    if (Status s = ParseCondition("keyConditions", attribute, json, &parsed[attribute]); !s.ok()) return s;
  }
  if (parsed.size() != 1 && parsed.size() != 2) return Status::InvalidArgument("Conditions can be of length 1 or 2 only");
  const std::string hash(storage::kDeviceIdAttribute), range(storage::kReadingTsAttribute);
  for (const std::string& name : {hash, range}) {
    auto it = parsed.find(name);
    if (it == parsed.end()) continue;
    const std::string& op = it->second.op;
    if (op == "NULL" || op == "NOT_NULL" || op == "NE" || op == "CONTAINS" || op == "NOT_CONTAINS" || op == "IN") {
      return Status::InvalidArgument("Attempted conditional constraint is not an indexable operation");
    }
    if (it->second.type != "S") return Invalid("Condition parameter type does not match schema type");
  }
  auto hash_condition = parsed.find(hash);
  if (hash_condition == parsed.end()) return Status::InvalidArgument("Query condition missed key schema element: " + hash);
  if (hash_condition->second.op != "EQ") return Status::InvalidArgument("Query key condition not supported");
  auto range_condition = parsed.find(range);
  if (parsed.size() == 2 && range_condition == parsed.end()) {
    return Status::InvalidArgument("Query condition missed key schema element: " + range);
  }

  static const std::map<std::string_view, query::SortKeyOp> kOps = {
      {"EQ", query::SortKeyOp::kEq},           {"LT", query::SortKeyOp::kLt},
      {"LE", query::SortKeyOp::kLe},           {"GT", query::SortKeyOp::kGt},
      {"GE", query::SortKeyOp::kGe},           {"BETWEEN", query::SortKeyOp::kBetween},
      {"BEGINS_WITH", query::SortKeyOp::kBeginsWith}};
  const std::string& device_id = std::get<std::string>(hash_condition->second.values[0]);
  query::SortKeyOp op = query::SortKeyOp::kAll;
  std::string a, b;
  if (range_condition != parsed.end()) {
    const Condition& c = range_condition->second;
    op = kOps.at(c.op);
    a = std::get<std::string>(c.values[0]);
    if (op == query::SortKeyOp::kBetween) b = std::get<std::string>(c.values[1]);
  }
  return query::MakeKeyCondition(device_id, op, a, b, key, query::KeyValues::kAsDynamoDb);
}

Status ParseLegacyFilter(const Json& conditions, std::string_view filter_name,
                         const std::optional<std::string>& conditional_operator,
                         std::unique_ptr<query::FilterExpr>* filter) {
  const bool query_filter = filter_name == "QueryFilter";
  const std::string member = query_filter ? "queryFilter" : "scanFilter";
  const FilterExpr::Kind join = conditional_operator == "OR" ? FilterExpr::Kind::kOr : FilterExpr::Kind::kAnd;
  std::unique_ptr<FilterExpr> all;
  for (const auto& [attribute, json] : conditions.items()) {
    Condition condition;
    if (Status s = ParseCondition(member, attribute, json, &condition); !s.ok()) return s;
    if (query_filter && (attribute == storage::kDeviceIdAttribute || attribute == storage::kReadingTsAttribute)) {
      return Status::InvalidArgument("QueryFilter can only contain non-primary key attributes: Primary key attribute: " +
                                     attribute);
    }
    std::unique_ptr<FilterExpr> one;
    if (Status s = ToFilter(attribute, std::move(condition), &one); !s.ok()) return s;
    all = Combine(join, std::move(all), std::move(one));
  }
  *filter = std::move(all);
  return Status::OK();
}

}  // namespace readingsd::api::dynamodb::internal
