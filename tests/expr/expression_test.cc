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
  // Without the partition key, that is what is named, even beside a non-key attribute.
  EXPECT_EQ(KeyError("temperature = :one"), "Query condition missed key schema element: deviceId");
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
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: Multiple "
            "attribute names used in one condition");
  EXPECT_EQ(KeyError("deviceId = :d AND :t = :u"),
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: No key "
            "attribute specified");
  EXPECT_EQ(KeyError("deviceId = :d AND temperature > :one AND temperature < :five"),
            "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one "
            "condition per key");
}

TEST_F(ExpressionTest, KeyConditionValueFirstIsTurnedRound) {
  const std::pair<std::string_view, SortKeyOp> cases[] = {
      {":d = deviceId AND :t = readingTs", SortKeyOp::kEq},
      {":d = deviceId AND :t < readingTs", SortKeyOp::kGt},
      {"deviceId = :d AND :t <= readingTs", SortKeyOp::kGe},
      {":t > #sk AND #pk = :d", SortKeyOp::kLt},
      {":d = #pk and :t >= #sk", SortKeyOp::kLe},
  };
  for (const auto& [text, op] : cases) {
    KeyResult r = Key(text);
    ASSERT_TRUE(r.status.ok()) << text << ": " << r.status.ToString();
    EXPECT_EQ(r.device_id, "a1") << text;
    EXPECT_EQ(r.op, op) << text;
    EXPECT_EQ(r.a, "2026-06-23T08:00:00Z") << text;
  }
  // BETWEEN and begins_with have no such form: the key attribute comes first.
  EXPECT_EQ(KeyError("deviceId = :d AND :t BETWEEN readingTs AND :u"),
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: BETWEEN "
            "operator must have the key attribute as its first operand");
  EXPECT_EQ(KeyError("deviceId = :d AND begins_with(:p, readingTs)"),
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: "
            "begins_with operator must have the key attribute as its first operand");
  EXPECT_EQ(KeyError(":one = deviceId"),
            "One or more parameter values were invalid: Condition parameter type does not match "
            "schema type");
}

TEST_F(ExpressionTest, KeyConditionOperatorErrors) {
  const std::string prefix = "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: ";
  EXPECT_EQ(KeyError("deviceId = :d OR readingTs > :t"), prefix + "OR");
  EXPECT_EQ(KeyError("deviceId = :d AND NOT readingTs > :t"), prefix + "NOT");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs <> :t"), prefix + "<>");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs IN (:t, :u)"), prefix + "IN");
  EXPECT_EQ(KeyError("deviceId = :d AND attribute_exists(readingTs)"), prefix + "attribute_exists");
  EXPECT_EQ(KeyError("deviceId = :d AND contains(readingTs, :t)"), prefix + "contains");
  values_[":s"] = std::string("S");
  EXPECT_EQ(KeyError("deviceId = :d AND attribute_type(readingTs, :s)"), prefix + "attribute_type");
  EXPECT_EQ(KeyError("deviceId = :d AND size(readingTs) > :t"),
            "Invalid KeyConditionExpression: KeyConditionExpressions cannot contain nested operations");
  EXPECT_EQ(KeyError("deviceId = :d AND readingTs < size(:t)"),
            "Invalid KeyConditionExpression: KeyConditionExpressions cannot contain nested operations");
  for (std::string_view nested : {"deviceId.x = :d", "deviceId = :d AND readingTs[0] > :t",
                                  "deviceId = :d AND #sk.#s > :t"}) {
    EXPECT_EQ(KeyError(nested),
              "Invalid KeyConditionExpression: KeyConditionExpressions cannot have conditions on "
              "nested attributes") << nested;
  }
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
  EXPECT_EQ(KeyError("deviceId = :d"), "Query condition missed key schema element: pk");
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
            "Invalid FilterExpression: Operator or function requires a document path; operator or "
            "function: attribute_exists");
  EXPECT_EQ(FilterError("attribute_not_exists(size(a))"),
            "Invalid FilterExpression: Operator or function requires a document path; operator or "
            "function: attribute_not_exists");
  EXPECT_EQ(FilterError("dog(a) = :one"), "Invalid FilterExpression: Invalid function name; function: dog");
  EXPECT_EQ(FilterError("a = dog(b)"), "Invalid FilterExpression: Invalid function name; function: dog");
  EXPECT_EQ(FilterError("begins_with(a, :ok) = :yes"),
            "Invalid FilterExpression: The function is not allowed to be used this way in an "
            "expression; function: begins_with");
  EXPECT_EQ(FilterError("attribute_exists(a) < :one"),
            "Invalid FilterExpression: The function is not allowed to be used this way in an "
            "expression; function: attribute_exists");
  EXPECT_EQ(FilterError(":yes = contains(a, :ok)"),
            "Invalid FilterExpression: The function is not allowed to be used this way in an "
            "expression; function: contains");
  EXPECT_EQ(FilterError("begins_with(a)"),
            "Invalid FilterExpression: Incorrect number of operands for operator or function; "
            "operator or function: begins_with, number of operands: 1");
  EXPECT_EQ(FilterError("a = a"),
            "Invalid FilterExpression: The first operand must be distinct from the remaining "
            "operands for this operator or function; operator: =, first operand: [a]");
  EXPECT_EQ(FilterError("#s.x[1] <> status.x[1]"),
            "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status");
  EXPECT_EQ(FilterError("#s.x[1] <> #s.x[1]"),
            "Invalid FilterExpression: The first operand must be distinct from the remaining "
            "operands for this operator or function; operator: <>, first operand: [status, x, [1]]");
  EXPECT_EQ(FilterError("   "), "Invalid FilterExpression: The expression can not be empty;");
  EXPECT_EQ(FilterError(std::string(4097, ' ')),
            "Invalid FilterExpression: Expression size has exceeded the maximum allowed size; "
            "expression size: 4097");
}

// A reading with attributes of every type, for the functions below.
storage::Reading Sample() {
  return {"a1", "2026-06-23T08:00:00.000000000Z",
          {{"status", std::string("ok")}, {"a", 5.0}, {"word", std::string("tr\xC3\xA9s \xF0\x9D\x84\x9E")}, {"lit", true}}};
}

TEST_F(ExpressionTest, FilterIn) {
  const storage::Reading reading = Sample();
  auto eval = [&](std::string_view text) {
    auto filter = Filter(text);
    return filter && Matches(*filter, storage::ViewsOf(reading.attributes));
  };
  EXPECT_TRUE(eval("#s IN (:ok)"));
  EXPECT_TRUE(eval("#s in (:one, :ok, :yes)"));
  EXPECT_FALSE(eval("#s IN (:one, :five)"));
  EXPECT_TRUE(eval("a IN (:one, :five)"));
  EXPECT_TRUE(eval("NOT absent IN (:one, :ok)"));
  EXPECT_FALSE(eval("absent IN (:one, :ok)"));
  EXPECT_TRUE(eval(":five IN (absent, a)"));  // any operand may be an attribute
  EXPECT_TRUE(eval("lit IN (:yes) AND a.b IN (:one) OR :ok IN (#s)"));

  // 100 operands are allowed, 101 are not.
  std::string list;
  for (int i = 0; i < 100; ++i) {
    const std::string placeholder = ":v" + std::to_string(i);
    values_[placeholder] = storage::Number(i);
    list += (list.empty() ? "" : ", ") + placeholder;
  }
  EXPECT_TRUE(eval("a IN (" + list + ")"));
  EXPECT_EQ(FilterError("a IN (" + list + ", :one)"),
            "Invalid FilterExpression: The IN operator is provided with too many operands; number "
            "of operands: 101");
  EXPECT_EQ(FilterError("a IN ()"), "Invalid FilterExpression: Syntax error; token: \")\", near: \"()\"");
  EXPECT_EQ(FilterError("a IN :one"),
            "Invalid FilterExpression: Syntax error; token: \":one\", near: \"IN :one\"");
  EXPECT_EQ(FilterError("a IN (b, a)"),
            "Invalid FilterExpression: The first operand must be distinct from the remaining "
            "operands for this operator or function; operator: IN, first operand: [a]");
  EXPECT_EQ(FilterError("a IN (:one, readingTs)"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: readingTs");
}

TEST_F(ExpressionTest, FilterSize) {
  const storage::Reading reading = Sample();
  auto eval = [&](std::string_view text) {
    auto filter = Filter(text);
    return filter && Matches(*filter, storage::ViewsOf(reading.attributes));
  };
  values_[":two"] = storage::Number(2);
  values_[":six"] = storage::Number(6);
  values_[":text"] = std::string("\xF0\x9D\x84\x9E!");
  EXPECT_TRUE(eval("size(#s) = :two"));
  EXPECT_TRUE(eval("size(#s) < :five AND size(#s) >= :two AND size(#s) <> :one"));
  // UTF-16 code units, as DynamoDB counts: "trés 𝄞" is 4 + 1 + 2.
  values_[":seven"] = storage::Number(7);
  EXPECT_TRUE(eval("size(word) = :seven"));
  EXPECT_TRUE(eval("size(word) BETWEEN :six AND :seven"));
  EXPECT_TRUE(eval("size(word) IN (:one, :seven)"));
  EXPECT_TRUE(eval("a > size(#s)"));
  values_[":three"] = storage::Number(3);
  EXPECT_TRUE(eval("size(:text) = :three"));  // a :value has a size too
  // A number or a boolean has no size, nor has a absent attribute or a path below a scalar:
  // every comparison is false but <>.
  for (std::string_view subject : {"size(a)", "size(lit)", "size(absent)", "size(#s.x)"}) {
    const std::string text(subject);
    EXPECT_FALSE(eval(text + " < :five")) << subject;
    EXPECT_FALSE(eval(text + " >= :one")) << subject;
    EXPECT_FALSE(eval(text + " = :one")) << subject;
    EXPECT_TRUE(eval(text + " <> :one")) << subject;
  }

  EXPECT_EQ(FilterError("size(#s)"),
            "Invalid FilterExpression: The function is not allowed to be used this way in an "
            "expression; function: size");
  EXPECT_EQ(FilterError("size(#s) AND a = :one"),
            "Invalid FilterExpression: The function is not allowed to be used this way in an "
            "expression; function: size");
  EXPECT_EQ(FilterError("size(:one) > :one"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: size, operand type: N");
  EXPECT_EQ(FilterError("size(size(#s)) > :one"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: size, operand type: N");
  EXPECT_EQ(FilterError("size(#s, a) > :one"),
            "Invalid FilterExpression: Incorrect number of operands for operator or function; "
            "operator or function: size, number of operands: 2");
  EXPECT_EQ(FilterError("size(#s) < :yes"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: <, operand type: BOOL");
  EXPECT_EQ(FilterError("begins_with(size(#s), :ok)"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: begins_with, operand type: N");
  EXPECT_EQ(FilterError("Size(#s) > :one"), "Invalid FilterExpression: Invalid function name; function: Size");
  EXPECT_EQ(FilterError("size(deviceId) > :one"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: deviceId");
}

TEST_F(ExpressionTest, FilterContainsAndAttributeType) {
  const storage::Reading reading = Sample();
  auto eval = [&](std::string_view text) {
    auto filter = Filter(text);
    return filter && Matches(*filter, storage::ViewsOf(reading.attributes));
  };
  values_[":k"] = std::string("k");
  values_[":S"] = std::string("S");
  values_[":N"] = std::string("N");
  values_[":BOOL"] = std::string("BOOL");
  values_[":SS"] = std::string("SS");
  EXPECT_TRUE(eval("contains(#s, :k)"));
  EXPECT_TRUE(eval("contains(#s, :ok)"));
  EXPECT_FALSE(eval("contains(#s, :p)"));
  EXPECT_FALSE(eval("contains(a, :five)"));  // only a string contains anything here
  EXPECT_FALSE(eval("contains(absent, :k)"));
  EXPECT_TRUE(eval("contains(:ok, #s)"));
  EXPECT_TRUE(eval("NOT contains(word, :k)"));

  EXPECT_TRUE(eval("attribute_type(#s, :S)"));
  EXPECT_TRUE(eval("attribute_type(a, :N)"));
  EXPECT_TRUE(eval("attribute_type(lit, :BOOL)"));
  EXPECT_FALSE(eval("attribute_type(#s, :N)"));
  EXPECT_FALSE(eval("attribute_type(#s, :SS)"));  // valid, but no attribute here has that type
  EXPECT_FALSE(eval("attribute_type(absent, :S)"));
  EXPECT_TRUE(eval("attribute_type(:one, :N)"));
  EXPECT_TRUE(eval("attribute_type(size(#s), :N)"));

  values_[":dog"] = std::string("DOG");
  EXPECT_EQ(FilterError("attribute_type(a, :dog)"),
            "Invalid FilterExpression: Invalid attribute type name found; type: DOG, valid types: "
            "{B,NULL,SS,BOOL,L,BS,N,NS,S,M}");
  EXPECT_EQ(FilterError("attribute_type(a, :one)"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: attribute_type, operand type: N");
  EXPECT_EQ(FilterError("attribute_type(a, b)"),
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator "
            "or function: attribute_type, operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}");
  EXPECT_EQ(FilterError("contains(a, a)"),
            "Invalid FilterExpression: The first operand must be distinct from the remaining "
            "operands for this operator or function; operator: contains, first operand: [a]");
  EXPECT_EQ(FilterError("contains(a, :k, :k)"),
            "Invalid FilterExpression: Incorrect number of operands for operator or function; "
            "operator or function: contains, number of operands: 3");
}

TEST_F(ExpressionTest, FilterDocumentPathsFindNothingBelowAScalar) {
  const storage::Reading reading = Sample();
  auto eval = [&](std::string_view text) {
    auto filter = Filter(text);
    return filter && Matches(*filter, storage::ViewsOf(reading.attributes));
  };
  for (std::string_view path : {"a.b", "a[0]", "#s.x", "#s.#dot", "a.b[2].c", "a . b", "a. b",
                                "a .b", "a [ 0 ]", "#s[0][1]"}) {
    const std::string p(path);
    EXPECT_FALSE(eval("attribute_exists(" + p + ")")) << path;
    EXPECT_TRUE(eval("attribute_not_exists(" + p + ")")) << path;
    EXPECT_FALSE(eval(p + " = :five")) << path;
    EXPECT_FALSE(eval(p + " < :five")) << path;
    EXPECT_TRUE(eval(p + " <> :five")) << path;
    EXPECT_FALSE(eval("begins_with(" + p + ", :ok)")) << path;
  }
  // An alias may name an attribute that contains a dot: that is no path.
  EXPECT_TRUE(Filter("#dot = :one"));
  storage::Reading dotted{"a1", "2026-06-23T08:00:00.000000000Z", {{"a.b", 1.0}}};
  auto filter = Filter("#dot = :one");
  ASSERT_TRUE(filter);
  EXPECT_TRUE(Matches(*filter, storage::ViewsOf(dotted.attributes)));
  filter = Filter("a.b = :one");
  ASSERT_TRUE(filter);
  EXPECT_FALSE(Matches(*filter, storage::ViewsOf(dotted.attributes)));

  EXPECT_EQ(FilterError("deviceId.x = :d"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: deviceId");
  EXPECT_EQ(FilterError("attribute_exists(#sk[0])"),
            "Filter Expression can only contain non-primary key attributes: Primary key attribute: readingTs");
  EXPECT_EQ(FilterError("a.status = :one"),
            "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status");
  EXPECT_EQ(FilterError("a.#nope = :one"),
            "Invalid FilterExpression: An expression attribute name used in the document path is "
            "not defined; attribute name: #nope");
  EXPECT_EQ(FilterError("a[-1] = :one"),
            "Invalid FilterExpression: Syntax error; token: \"-1\", near: \"[-1]\"");
  EXPECT_EQ(FilterError("a[] = :one"), "Invalid FilterExpression: Syntax error; token: \"]\", near: \"[] =\"");
  EXPECT_EQ(FilterError("a..b = :one"),
            "Invalid FilterExpression: Syntax error; token: \"a..b\", near: \"a..b =\"");
  EXPECT_EQ(FilterError("a. = :one"), "Invalid FilterExpression: Syntax error; token: \"=\", near: \"a. = :one\"");
  EXPECT_EQ(FilterError("[0] = :one"), "Invalid FilterExpression: Syntax error; token: \"[\", near: \"[0\"");
  EXPECT_TRUE(Filter("a[2147483647] = :one"));
  EXPECT_EQ(FilterError("a[2147483648] = :one"),
            "Invalid FilterExpression: List index is not within the allowable range; index: [2147483648]");
  EXPECT_EQ(FilterError("a[99999999999999] = :one"),
            "Invalid FilterExpression: List index is not within the allowable range; index: [99999999999999]");
  std::string deep = "a";
  for (int i = 1; i < 32; ++i) deep += ".b";
  EXPECT_TRUE(Filter(deep + " = :one"));
  EXPECT_EQ(FilterError(deep + ".b = :one"),
            "Invalid FilterExpression: The document path has too many nesting levels; nesting levels: 33");
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
  EXPECT_EQ(ProjectionError(""), "Invalid ProjectionExpression: The expression can not be empty;");
}

TEST_F(ExpressionTest, ProjectionDocumentPaths) {
  // Below a scalar there is nothing: a nested path selects no attribute.
  std::vector<std::string> attributes;
  ASSERT_TRUE(ParseProjectionExpression("temperature.x, a[0], #s.#dot[3].y, humidity", context_, &attributes).ok());
  EXPECT_EQ(attributes, (std::vector<std::string>{"humidity"}));
  ASSERT_TRUE(ParseProjectionExpression("a.b", context_, &attributes).ok());
  EXPECT_TRUE(attributes.empty());

  const std::string overlap = "Invalid ProjectionExpression: Two document paths overlap with each other; must "
                              "remove or rewrite one of these paths; ";
  EXPECT_EQ(ProjectionError("a, a.b"), overlap + "path one: [a], path two: [a, b]");
  EXPECT_EQ(ProjectionError("a.b[2].c, a.b"), overlap + "path one: [a, b, [2], c], path two: [a, b]");
  EXPECT_EQ(ProjectionError("#s[1], status2, #s[1]"), overlap + "path one: [status, [1]], path two: [status, [1]]");
  const std::string conflict = "Invalid ProjectionExpression: Two document paths conflict with each other; must "
                               "remove or rewrite one of these paths; ";
  EXPECT_EQ(ProjectionError("a.b, a[1]"), conflict + "path one: [a, b], path two: [a, [1]]");
  EXPECT_EQ(ProjectionError("x, a.b[1], a.b.c"), conflict + "path one: [a, b, [1]], path two: [a, b, c]");
  for (std::string_view fine : {"a, b", "a.b, a.c", "a.b.d, a.b.e", "a[1], a[2]", "a.b, a.c[2]"}) {
    EXPECT_TRUE(ParseProjectionExpression(fine, context_, &attributes).ok()) << fine;
  }

  const std::string scalars = "Key attributes must be scalars; list random access '[]' and map lookup '.' are "
                              "not allowed: Key: ";
  EXPECT_EQ(ProjectionError("temperature, deviceId.x"), scalars + "deviceId");
  EXPECT_EQ(ProjectionError("#sk[0]"), scalars + "readingTs");
  EXPECT_EQ(ProjectionError("a[2147483648]"),
            "Invalid ProjectionExpression: List index is not within the allowable range; index: [2147483648]");
  std::string deep = "a";
  for (int i = 1; i < 32; ++i) deep += ".b";
  EXPECT_TRUE(ParseProjectionExpression(deep, context_, &attributes).ok());
  EXPECT_EQ(ProjectionError(deep + "[0]"),
            "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33");
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
  // The names of a document path count one by one.
  EXPECT_EQ(CheckPlaceholdersUsed(context, {"deviceId = :d", "#s[0] = :ok", "a.b"}).message(),
            "Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}");
  names["#y"] = "y";
  EXPECT_TRUE(CheckPlaceholdersUsed(context, {"deviceId = :d", "#x.#s[0] = :ok", "a.#y"}).ok());
  EXPECT_EQ(CheckPlaceholdersUsed(context, {"deviceId = :d", "#x.#s[0] = :ok", "a.y"}).message(),
            "Value provided in ExpressionAttributeNames unused in expressions: keys: {#y}");
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
