// DynamoDB's KeyConditionExpression, FilterExpression and ProjectionExpression.
#include "expr/expr.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "expr/reserved_words.h"

namespace readingsd::expr {
namespace {

using query::CompareOp;
using query::FilterExpr;
using query::Matches;
using query::SortKeyOp;
using storage::AttributeValue;

class ExpressionTest : public ::testing::Test {
 protected:
  ExpressionTest() {
    context_.names = &names_;
    context_.values = &values_;
  }

  struct KeyResult {
    Status status;
    std::string device_id;
    SortKeyOp op = SortKeyOp::kAll;
    std::string a, b;
  };
  KeyResult Key(std::string_view text) {
    KeyResult r;
    r.status = ParseKeyConditionExpression(text, context_, &r.device_id, &r.op, &r.a, &r.b);
    return r;
  }
  std::string KeyError(std::string_view text) {
    KeyResult r = Key(text);
    EXPECT_TRUE(r.status.IsInvalidArgument()) << text;
    return r.status.message();
  }

  std::unique_ptr<FilterExpr> Filter(std::string_view text) {
    std::unique_ptr<FilterExpr> filter;
    Status s = ParseFilterExpression(text, context_, &filter);
    EXPECT_TRUE(s.ok()) << text << ": " << s.ToString();
    return filter;
  }
  std::string FilterError(std::string_view text) {
    std::unique_ptr<FilterExpr> filter;
    Status s = ParseFilterExpression(text, context_, &filter);
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    return s.message();
  }

  std::string ProjectionError(std::string_view text) {
    std::vector<std::string> attributes;
    Status s = ParseProjectionExpression(text, context_, &attributes);
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    return s.message();
  }

  std::map<std::string, std::string> names_ = {
      {"#pk", "deviceId"}, {"#sk", "readingTs"}, {"#s", "status"}, {"#dot", "a.b"}};
  std::map<std::string, AttributeValue> values_ = {
      {":d", std::string("a1")},
      {":t", std::string("2026-06-23T08:00:00Z")},
      {":u", std::string("2026-06-24T08:00:00Z")},
      {":p", std::string("2026-06-23")},
      {":ok", std::string("ok")},
      {":one", 1.0},
      {":five", 5.0},
      {":yes", true}};
  ExpressionContext context_;
};

TEST_F(ExpressionTest, KeyConditionOnTheHashKeyAlone) {
  KeyResult r = Key("deviceId = :d");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.device_id, "a1");
  EXPECT_EQ(r.op, SortKeyOp::kAll);
  EXPECT_EQ(r.a, "");
  EXPECT_EQ(r.b, "");
}

TEST_F(ExpressionTest, KeyConditionRangeOperators) {
  const std::pair<std::string_view, SortKeyOp> cases[] = {
      {"deviceId = :d AND readingTs = :t", SortKeyOp::kEq},
      {"deviceId = :d AND readingTs < :t", SortKeyOp::kLt},
      {"deviceId = :d AND readingTs <= :t", SortKeyOp::kLe},
      {"deviceId = :d AND readingTs > :t", SortKeyOp::kGt},
      {"deviceId = :d AND readingTs >= :t", SortKeyOp::kGe},
      {"#pk=:d and #sk>=:t", SortKeyOp::kGe},
      {"readingTs > :t AND deviceId = :d", SortKeyOp::kGt},
      {"(deviceId = :d) AND (readingTs < :t)", SortKeyOp::kLt},
      {"((deviceId = :d AND readingTs <= :t))", SortKeyOp::kLe},
  };
  for (const auto& [text, op] : cases) {
    KeyResult r = Key(text);
    ASSERT_TRUE(r.status.ok()) << text << ": " << r.status.ToString();
    EXPECT_EQ(r.device_id, "a1") << text;
    EXPECT_EQ(r.op, op) << text;
    EXPECT_EQ(r.a, "2026-06-23T08:00:00Z") << text;
    EXPECT_EQ(r.b, "") << text;
  }
}

TEST_F(ExpressionTest, KeyConditionBetweenAndBeginsWith) {
  KeyResult r = Key("deviceId = :d AND readingTs between :t and :u");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.op, SortKeyOp::kBetween);
  EXPECT_EQ(r.a, "2026-06-23T08:00:00Z");
  EXPECT_EQ(r.b, "2026-06-24T08:00:00Z");

  r = Key("deviceId = :d AND begins_with(#sk, :p)");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.op, SortKeyOp::kBeginsWith);
  EXPECT_EQ(r.a, "2026-06-23");

  // Raw values: the order check happens after normalisation, in MakeKeyCondition.
  values_[":late"] = std::string("2026-06-23T10:00:00+02:00");
  values_[":early"] = std::string("2026-06-23T09:00:00Z");
  EXPECT_TRUE(Key("deviceId = :d AND readingTs BETWEEN :late AND :early").status.ok());
}

TEST_F(ExpressionTest, KeyConditionSchemaErrors) {
  EXPECT_EQ(KeyError("readingTs = :t"), "Query condition missed key schema element: deviceId");
  EXPECT_EQ(KeyError("deviceId = :d AND temperature > :one"), "Query key condition not supported");
  EXPECT_EQ(KeyError("deviceId < :d"), "Query key condition not supported");
  EXPECT_EQ(KeyError("begins_with(deviceId, :d)"), "Query key condition not supported");
  EXPECT_EQ(KeyError(":d = deviceId"), "Query key condition not supported");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs > :t AND readingTs < :u"),
            "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one "
            "condition per key");
  EXPECT_EQ(KeyError("deviceId = :d AND deviceId = :d"),
            "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one "
            "condition per key");
  EXPECT_EQ(KeyError("deviceId = :one"),
            "One or more parameter values were invalid: Condition parameter type does not match "
            "schema type");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs BETWEEN :t AND :five"),
            "One or more parameter values were invalid: Condition parameter type does not match "
            "schema type");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs = otherAttribute"),
            "Invalid KeyConditionExpression: a key attribute can only be compared with :values");
}

TEST_F(ExpressionTest, KeyConditionOperatorErrors) {
  const std::string prefix = "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: ";
  EXPECT_EQ(KeyError("deviceId = :d OR readingTs > :t"), prefix + "OR");
  EXPECT_EQ(KeyError("deviceId = :d AND NOT readingTs > :t"), prefix + "NOT");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs <> :t"), prefix + "<>");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs IN (:t, :u)"), prefix + "IN");
  EXPECT_EQ(KeyError("deviceId = :d AND attribute_exists(readingTs)"), prefix + "attribute_exists");
  EXPECT_EQ(KeyError("deviceId = :d AND contains(readingTs, :t)"), prefix + "contains");
}

TEST_F(ExpressionTest, KeyConditionSyntaxAndPlaceholderErrors) {
  EXPECT_EQ(KeyError("deviceId = "),
            "Invalid KeyConditionExpression: Syntax error; token: \"<EOF>\", near: \"=\"");
  EXPECT_EQ(KeyError("deviceId = 5"),
            "Invalid KeyConditionExpression: Syntax error; token: \"5\", near: \"= 5\"");
  EXPECT_EQ(KeyError("deviceId = \"a1\""),
            "Invalid KeyConditionExpression: Syntax error; token: \"\"a1\"\", near: \"= \"a1\"\"");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs"),
            "Invalid KeyConditionExpression: Syntax error; token: \"<EOF>\", near: \"readingTs\"");
  EXPECT_EQ(KeyError("deviceId = :d readingTs > :t"),
            "Invalid KeyConditionExpression: Syntax error; token: \"readingTs\", near: \":d readingTs >\"");
  EXPECT_EQ(KeyError("deviceId = :nope"),
            "Invalid KeyConditionExpression: An expression attribute value used in expression is "
            "not defined; attribute value: :nope");
  EXPECT_EQ(KeyError("#nope = :d"),
            "Invalid KeyConditionExpression: An expression attribute name used in the document "
            "path is not defined; attribute name: #nope");
  EXPECT_EQ(KeyError("deviceId = :d AND timestamp > :t"),
            "Invalid KeyConditionExpression: Attribute name is a reserved keyword; reserved "
            "keyword: timestamp");
  EXPECT_EQ(KeyError(""), "Invalid KeyConditionExpression: The expression can not be empty;");
}

TEST_F(ExpressionTest, PlaceholdersNeedTheirMaps) {
  ExpressionContext bare;  // no ExpressionAttributeNames / Values at all
  std::string device_id, a, b;
  SortKeyOp op;
  Status s = ParseKeyConditionExpression("deviceId = :d", bare, &device_id, &op, &a, &b);
  EXPECT_EQ(s.message(), "Invalid KeyConditionExpression: An expression attribute value used in "
                         "expression is not defined; attribute value: :d");
  std::unique_ptr<FilterExpr> filter;
  s = ParseFilterExpression("#s = :ok", bare, &filter);
  EXPECT_EQ(s.message(), "Invalid FilterExpression: An expression attribute name used in the "
                         "document path is not defined; attribute name: #s");
}

TEST_F(ExpressionTest, CustomKeySchema) {
  context_.hash_key = "pk";
  context_.range_key = "sk";
  KeyResult r = Key("pk = :d AND sk > :t");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.op, SortKeyOp::kGt);
  EXPECT_EQ(KeyError("deviceId = :d"), "Query key condition not supported");
  EXPECT_EQ(KeyError("sk = :t"), "Query condition missed key schema element: pk");
  EXPECT_TRUE(Filter("deviceId = :d") != nullptr) << "not a key attribute under this schema";
  EXPECT_EQ(FilterError("sk > :t"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk");
}

TEST_F(ExpressionTest, FilterEvaluatesWithPlaceholders) {
  auto filter = Filter("#s = :ok AND temperature > :one");
  ASSERT_TRUE(filter);
  storage::Reading reading{"a1", "2026-06-23T08:00:00.000000000Z",
                           {{"status", std::string("ok")}, {"temperature", 2.0}}};
  EXPECT_TRUE(Matches(*filter, storage::ViewsOf(reading.attributes)));
  reading.attributes[1].value = 1.0;
  EXPECT_FALSE(Matches(*filter, storage::ViewsOf(reading.attributes)));

  filter = Filter(":five > temperature");  // a value may stand on the left
  ASSERT_TRUE(filter);
  EXPECT_TRUE(Matches(*filter, storage::ViewsOf(reading.attributes)));
  filter = Filter("temperature < humidity");  // or two attributes be compared
  ASSERT_TRUE(filter);
  EXPECT_FALSE(Matches(*filter, storage::ViewsOf(reading.attributes)));
}

TEST_F(ExpressionTest, FilterPrecedenceMatchesDynamoDb) {
  auto eval = [&](std::string_view text, double a, double b, double c) {
    auto filter = Filter(text);
    storage::Reading reading{"a1", "2026-06-23T08:00:00.000000000Z", {{"a", a}, {"b", b}, {"c", c}}};
    return filter && Matches(*filter, storage::ViewsOf(reading.attributes));
  };
  EXPECT_TRUE(eval("a = :one OR b = :one AND c = :one", 1, 0, 0));
  EXPECT_FALSE(eval("a = :one OR b = :one AND c = :one", 0, 1, 0));
  EXPECT_FALSE(eval("(a = :one OR b = :one) AND c = :one", 1, 0, 0));
  EXPECT_TRUE(eval("NOT a = :one AND b = :one", 0, 1, 0));
  EXPECT_FALSE(eval("NOT a = :one AND b = :one", 1, 1, 0));
  EXPECT_TRUE(eval("not (a = :one and b = :one)", 1, 0, 0));
  EXPECT_TRUE(eval("a BETWEEN :one AND :five and attribute_not_exists(d)", 1, 0, 0));
  EXPECT_TRUE(eval("a between :one and :five or b = :one", 0, 1, 0));
  EXPECT_TRUE(eval("attribute_exists(c) AND c <> :one", 0, 0, 5));
}

TEST_F(ExpressionTest, FilterErrors) {
  EXPECT_EQ(FilterError("status = :ok"),
            "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status");
  EXPECT_EQ(FilterError("STATUS = :ok"),
            "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: STATUS");
  EXPECT_EQ(FilterError("#sk > :t"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: readingTs");
  EXPECT_EQ(FilterError("a = :one OR deviceId = :d"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: deviceId");
  EXPECT_EQ(FilterError("a = 1"), "Invalid FilterExpression: Syntax error; token: \"1\", near: \"= 1\"");
  EXPECT_EQ(FilterError("a != :one"),
            "Invalid FilterExpression: Syntax error; token: \"!=\", near: \"a != :one\"");
  EXPECT_EQ(FilterError("a-b = :one"),
            "Invalid FilterExpression: Syntax error; token: \"a-b\", near: \"a-b =\"");
  EXPECT_EQ(FilterError("a = :one AND"),
            "Invalid FilterExpression: Syntax error; token: \"<EOF>\", near: \"AND\"");
  EXPECT_EQ(FilterError("a < :yes"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: <, operand type: BOOL");
  EXPECT_EQ(FilterError("begins_with(a, :one)"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: begins_with, operand type: N");
  EXPECT_EQ(FilterError("a BETWEEN :five AND :one"),
            "Invalid FilterExpression: The BETWEEN operator requires upper bound to be greater "
            "than or equal to lower bound; lower bound operand: AttributeValue: {N:5}, upper "
            "bound operand: AttributeValue: {N:1}");
  EXPECT_EQ(FilterError("a BETWEEN :one AND :ok"),
            "Invalid FilterExpression: The BETWEEN operator requires same data type for lower and "
            "upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: "
            "AttributeValue: {S:ok}");
  EXPECT_EQ(FilterError("Begins_With(a, :ok)"),
            "Invalid FilterExpression: Invalid function name; function: Begins_With");
  EXPECT_EQ(FilterError("attribute_exists(:ok)"),
            "Invalid FilterExpression: Syntax error; token: \":ok\", near: \"(:ok)\"");
  EXPECT_EQ(FilterError("   "), "Invalid FilterExpression: The expression can not be empty;");
  EXPECT_EQ(FilterError(std::string(4097, ' ')),
            "Invalid FilterExpression: Expression size has exceeded the maximum allowed size; "
            "expression size: 4097");
}

TEST_F(ExpressionTest, FilterUnsupportedFeaturesSaySo) {
  EXPECT_EQ(FilterError("a IN (:one, :five)"), "Invalid FilterExpression: the IN operator is not supported");
  EXPECT_EQ(FilterError("contains(a, :ok)"),
            "Invalid FilterExpression: the function contains is not supported");
  EXPECT_EQ(FilterError("size(a) > :one"), "Invalid FilterExpression: the function size is not supported");
  EXPECT_EQ(FilterError("attribute_type(a, :ok)"),
            "Invalid FilterExpression: the function attribute_type is not supported");
  const std::string paths =
      "Invalid FilterExpression: document paths (a.b, a[0]) are not supported: reading attributes "
      "are scalar";
  EXPECT_EQ(FilterError("a.b = :one"), paths);
  EXPECT_EQ(FilterError("#s.x = :one"), paths);
  EXPECT_EQ(FilterError("a[0] = :one"), paths);
  // An alias may name an attribute that contains a dot: that is no path.
  EXPECT_TRUE(Filter("#dot = :one"));
}

TEST_F(ExpressionTest, Projection) {
  std::vector<std::string> attributes;
  ASSERT_TRUE(ParseProjectionExpression("temperature, #s,deviceId , readingTs", context_, &attributes).ok());
  EXPECT_EQ(attributes, (std::vector<std::string>{"temperature", "status", "deviceId", "readingTs"}));

  EXPECT_EQ(ProjectionError("status"),
            "Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: status");
  EXPECT_EQ(ProjectionError("a, #s, a"),
            "Invalid ProjectionExpression: Two document paths overlap with each other; must "
            "remove or rewrite one of these paths; path one: [a], path two: [a]");
  EXPECT_EQ(ProjectionError("a,"), "Invalid ProjectionExpression: Syntax error; token: \"<EOF>\", near: \",\"");
  EXPECT_EQ(ProjectionError("a b"), "Invalid ProjectionExpression: Syntax error; token: \"b\", near: \"a b\"");
  EXPECT_EQ(ProjectionError(":ok"), "Invalid ProjectionExpression: Syntax error; token: \":ok\", near: \":ok\"");
  EXPECT_EQ(ProjectionError("a.b"),
            "Invalid ProjectionExpression: document paths (a.b, a[0]) are not supported: reading "
            "attributes are scalar");
  EXPECT_EQ(ProjectionError(""), "Invalid ProjectionExpression: The expression can not be empty;");
}

TEST_F(ExpressionTest, UnusedPlaceholdersAreErrors) {
  ExpressionContext context;
  std::map<std::string, std::string> names = {{"#s", "status"}, {"#x", "x"}, {"#y", "y"}};
  std::map<std::string, AttributeValue> values = {{":d", std::string("a1")}, {":ok", std::string("ok")},
                                                  {":z", 0.0}};
  context.names = &names;
  context.values = &values;
  EXPECT_EQ(CheckPlaceholdersUsed(context, {"deviceId = :d", "#s = :ok", "#x"}).message(),
            "Value provided in ExpressionAttributeNames unused in expressions: keys: {#y}");
  names.erase("#y");
  EXPECT_EQ(CheckPlaceholdersUsed(context, {"deviceId = :d", "#s = :ok", "#x"}).message(),
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:z}");
  EXPECT_EQ(CheckPlaceholdersUsed(context, {"deviceId = :d", "", "#s, #x"}).message(),
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:ok, :z}");
  values.erase(":z");
  EXPECT_TRUE(CheckPlaceholdersUsed(context, {"deviceId = :d", "#s = :ok", "#x"}).ok());
  EXPECT_TRUE(CheckPlaceholdersUsed(ExpressionContext{}, {"deviceId = :d"}).ok());
}

TEST(ReservedWordsTest, DynamoDbListCaseInsensitive) {
  for (std::string_view word : {"status", "Status", "TIMESTAMP", "value", "name", "data", "count",
                                "date", "year", "zone", "abort", "flattern"}) {
    EXPECT_TRUE(internal::IsReservedWord(word)) << word;
  }
  for (std::string_view word : {"temperature", "humidity", "deviceId", "readingTs", "begins_with",
                                "statuses", ""}) {
    EXPECT_FALSE(internal::IsReservedWord(word)) << word;
  }
}

}  // namespace
}  // namespace readingsd::expr
