// The native ?filter= grammar, and Matches (DynamoDB comparison semantics) on what it builds.
#include "expr/expr.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace readingsd::expr {
namespace {

using storage::Attribute;
using query::CompareOp;
using query::FilterExpr;
using query::Matches;
using query::Operand;
using storage::Reading;

Reading With(std::vector<Attribute> attributes) {
  return Reading{"a1", "2026-06-23T08:00:00.000000000Z", std::move(attributes)};
}

// Parses `filter` natively and evaluates it on `reading`; a parse error fails the test.
bool Eval(std::string_view filter, const Reading& reading) {
  std::unique_ptr<FilterExpr> expr;
  Status s = ParseNativeFilter(filter, &expr);
  EXPECT_TRUE(s.ok()) << filter << ": " << s.ToString();
  return s.ok() && Matches(*expr, storage::ViewsOf(reading.attributes));
}

std::string NativeError(std::string_view filter) {
  std::unique_ptr<FilterExpr> expr;
  Status s = ParseNativeFilter(filter, &expr);
  EXPECT_TRUE(s.IsInvalidArgument()) << filter;
  return s.message();
}

TEST(MatchesTest, NumbersCompareNumericallyStringsBytewise) {
  const Reading r = With({{"n", 9.0}, {"s", std::string("9")}, {"upper", std::string("B")}});
  EXPECT_TRUE(Eval("n < 10", r));  // "9" > "10" as strings; 9 < 10 as numbers
  EXPECT_FALSE(Eval("s < \"10\"", r));
  EXPECT_TRUE(Eval("upper < \"a\"", r));  // 'B' (0x42) < 'a' (0x61)
  EXPECT_TRUE(Eval("n = 9.0 and n >= 9 and n <= 9e0 and n > 8.999", r));
  EXPECT_TRUE(Eval("n between 9 and 9", r));
  EXPECT_FALSE(Eval("n between 9.5 and 100", r));
}

TEST(MatchesTest, TypeMismatchIsFalseExceptNotEqual) {
  const Reading r = With({{"n", 6.0}});
  EXPECT_FALSE(Eval("n = \"6\"", r));
  EXPECT_TRUE(Eval("n <> \"6\"", r));
  EXPECT_FALSE(Eval("n < \"7\"", r));
  EXPECT_FALSE(Eval("n >= \"0\"", r));
  EXPECT_FALSE(Eval("n between \"0\" and \"9\"", r));
  EXPECT_FALSE(Eval("n = true", r));
  EXPECT_FALSE(Eval("begins_with(n, \"6\")", r));
}

TEST(MatchesTest, MissingAttributeIsFalseExceptNotEqualAndNotExists) {
  const Reading r = With({{"present", 1.0}});
  EXPECT_FALSE(Eval("missing = 1", r));
  EXPECT_TRUE(Eval("missing <> 1", r));  // DynamoDB: NOT (missing = 1)
  EXPECT_FALSE(Eval("missing < 1", r));
  EXPECT_FALSE(Eval("missing >= 1", r));
  EXPECT_FALSE(Eval("missing between 0 and 2", r));
  EXPECT_FALSE(Eval("begins_with(missing, \"x\")", r));
  EXPECT_FALSE(Eval("attribute_exists(missing)", r));
  EXPECT_TRUE(Eval("attribute_not_exists(missing)", r));
  EXPECT_TRUE(Eval("attribute_exists(present)", r));
  EXPECT_FALSE(Eval("attribute_not_exists(present)", r));
}

TEST(MatchesTest, BooleansOnlyEqualOrNot) {
  const Reading r = With({{"ok", true}});
  EXPECT_TRUE(Eval("ok = true", r));
  EXPECT_FALSE(Eval("ok = false", r));
  EXPECT_TRUE(Eval("ok <> false", r));
  EXPECT_TRUE(Eval("ok != false", r));
  EXPECT_FALSE(Eval("ok = \"true\"", r));
}

TEST(MatchesTest, BeginsWithAndAttributeComparisons) {
  FilterExpr compare;  // two attributes, built by hand: a < b
  compare.kind = FilterExpr::Kind::kCompare;
  compare.op = CompareOp::kLt;
  compare.operands = {Operand{true, "a", {}}, Operand{true, "b", {}}};
  EXPECT_TRUE(Matches(compare, storage::ViewsOf({{"a", 1.0}, {"b", 2.0}})));
  EXPECT_FALSE(Matches(compare, storage::ViewsOf({{"a", 1.0}, {"b", std::string("2")}})));
  EXPECT_FALSE(Matches(compare, storage::ViewsOf({{"a", 1.0}})));

  const Reading r = With({{"fw", std::string("v2.1.0")}});
  EXPECT_TRUE(Eval("begins_with(fw, \"v2.\")", r));
  EXPECT_TRUE(Eval("begins_with(fw, v2)", r));
  EXPECT_TRUE(Eval("begins_with(fw, \"\")", r));
  EXPECT_FALSE(Eval("begins_with(fw, \"v2.1.0.1\")", r));
}

TEST(NativeFilterTest, PrecedenceIsNotThenAndThenOr) {
  auto r = [](double a, double b, double c) { return With({{"a", a}, {"b", b}, {"c", c}}); };
  // a=1 or (b=1 and c=1)
  EXPECT_TRUE(Eval("a=1 or b=1 and c=1", r(1, 0, 0)));
  EXPECT_FALSE(Eval("a=1 or b=1 and c=1", r(0, 1, 0)));
  EXPECT_TRUE(Eval("a=1 or b=1 and c=1", r(0, 1, 1)));
  // (a=1 or b=1) and c=1
  EXPECT_FALSE(Eval("(a=1 or b=1) and c=1", r(1, 0, 0)));
  // (not a=1) and b=1
  EXPECT_TRUE(Eval("not a=1 and b=1", r(0, 1, 0)));
  EXPECT_FALSE(Eval("not a=1 and b=1", r(1, 1, 0)));
  EXPECT_TRUE(Eval("not (a=1 and b=1)", r(1, 0, 0)));
  EXPECT_TRUE(Eval("not not a=1", r(1, 0, 0)));
  // Keywords in any case; and/or chains associate left.
  EXPECT_TRUE(Eval("a=0 OR b=0 Or c=1 AND NOT a=1", r(0, 1, 1)));
}

TEST(NativeFilterTest, Literals) {
  const Reading r = With({{"t", -5.0}, {"big", 1000.0}, {"half", 0.5}, {"s", std::string("ok")},
                          {"q", std::string("say \"hi\" \\o/")}, {"inf", std::string("inf")},
                          {"ts", std::string("2026-06-23T10:00:00+02:00")}, {"word", std::string("and")}});
  EXPECT_TRUE(Eval("t=-5", r));
  EXPECT_TRUE(Eval("t<-4.5", r));
  EXPECT_TRUE(Eval("big=1e3 and big=+1000 and half=.5", r));
  EXPECT_TRUE(Eval("s=ok", r));
  EXPECT_TRUE(Eval("s=\"ok\"", r));
  EXPECT_TRUE(Eval(R"(q="say \"hi\" \\o/")", r));
  EXPECT_TRUE(Eval("inf=inf", r)) << "inf is a bare string, not a number";
  EXPECT_TRUE(Eval("ts=2026-06-23T10:00:00+02:00", r));
  EXPECT_TRUE(Eval("word=\"and\"", r));
  EXPECT_TRUE(Eval("  s = ok  ", r));
}

TEST(NativeFilterTest, ErrorsNameWhatAndWhere) {
  EXPECT_EQ(NativeError("temperature>"), "filter: expected a value after '>' at offset 12");
  EXPECT_EQ(NativeError("temperature 5"),
            "filter: expected a comparison operator after 'temperature' at offset 12");
  EXPECT_EQ(NativeError("temperature > and"), "filter: expected a value after '>' at offset 14");
  EXPECT_EQ(NativeError("a=1 and"), "filter: expected an attribute name after 'and' at offset 7");
  EXPECT_EQ(NativeError(">5"), "filter: expected an attribute name at offset 0");
  EXPECT_EQ(NativeError("5>5"), "filter: expected an attribute name at offset 0");
  EXPECT_EQ(NativeError("(a=1"), "filter: expected ')' after '1' at offset 4");
  EXPECT_EQ(NativeError("a=1)"), "filter: expected 'and', 'or' or the end after '1' at offset 3");
  EXPECT_EQ(NativeError("a=1 b=2"), "filter: expected 'and', 'or' or the end after '1' at offset 4");
  EXPECT_EQ(NativeError("status=\"ok"), "filter: unterminated string at offset 7");
  EXPECT_EQ(NativeError("s=\"a\\n\""),
            "filter: invalid escape in string (only \\\" and \\\\ are allowed) at offset 4");
  EXPECT_EQ(NativeError("a ! 1"), "filter: lone '!' (not-equal is <> or !=) at offset 2");
  EXPECT_EQ(NativeError("a between 1 or 2"), "filter: expected 'and' after '1' at offset 12");
  EXPECT_EQ(NativeError(""), "filter: the filter is empty");
  EXPECT_EQ(NativeError("   "), "filter: the filter is empty");
  EXPECT_EQ(NativeError("a < true"), "filter: '<' cannot take the boolean true at offset 2");
  EXPECT_EQ(NativeError("a between false and true"),
            "filter: 'BETWEEN' cannot take the boolean false at offset 2");
  EXPECT_EQ(NativeError("begins_with(a, 5)"),
            "filter: 'begins_with' cannot take the number 5 at offset 0");
  EXPECT_EQ(NativeError("a=1e999"),
            "filter: Number overflow. Attempting to store a number with magnitude larger than supported range at "
            "offset 2");
  EXPECT_EQ(NativeError("a=" + std::string(39, '1')),
            "filter: Attempting to store more than 38 significant digits in a Number at offset 2");
}

TEST(NativeFilterTest, KeyAttributesAreRejected) {
  EXPECT_EQ(NativeError("readingTs > 2026"),
            "filter: 'readingTs' is a key attribute; filters can only use non-key attributes "
            "(select readings by time with the key condition) at offset 0");
  EXPECT_NE(NativeError("a=1 or deviceId=x").find("'deviceId' is a key attribute"), std::string::npos);
  EXPECT_NE(NativeError("attribute_exists(deviceId)").find("key attribute"), std::string::npos);
}

TEST(NativeFilterTest, InListsLiterals) {
  const Reading r = With({{"status", std::string("warn")}, {"n", 2.0}, {"ok", true}});
  EXPECT_TRUE(Eval("status in (ok, warn)", r));
  EXPECT_TRUE(Eval("status IN (\"warn\")", r));
  EXPECT_FALSE(Eval("status in (ok, \"in\", 2)", r));
  EXPECT_TRUE(Eval("n in (1, 2.0, 3)", r));  // numbers compare as numbers
  EXPECT_FALSE(Eval("n in (\"2\")", r));
  EXPECT_TRUE(Eval("ok in (true)", r));
  EXPECT_FALSE(Eval("missing in (1, ok)", r));
  EXPECT_TRUE(Eval("not missing in (1, ok)", r));
  EXPECT_TRUE(Eval("n in (5) or status in (warn) and ok = true", r));

  std::string list = "0";
  for (int i = 1; i < 100; ++i) list += "," + std::to_string(i);
  EXPECT_TRUE(Eval("n in (" + list + ")", r));
  EXPECT_EQ(NativeError("n in (" + list + ",100)"), "filter: IN takes at most 100 values, not 101 at offset 2");
  EXPECT_EQ(NativeError("a in ()"), "filter: expected a value after '(' at offset 6");
  EXPECT_EQ(NativeError("a in (1, b"), "filter: expected ')' after 'b' at offset 10");
  EXPECT_EQ(NativeError("a in 1"), "filter: expected '(' after 'in' at offset 5");
  EXPECT_EQ(NativeError("readingTs in (1)"),
            "filter: 'readingTs' is a key attribute; filters can only use non-key attributes "
            "(select readings by time with the key condition) at offset 0");
}

TEST(NativeFilterTest, SizeContainsAndAttributeType) {
  const Reading r = With({{"status", std::string("ok")}, {"n", 2.0}, {"on", true},
                          {"word", std::string("tr\xC3\xA9s \xF0\x9D\x84\x9E")}});
  EXPECT_TRUE(Eval("size(status) = 2", r));
  EXPECT_TRUE(Eval("size(word) = 7", r)) << "UTF-16 code units, as DynamoDB counts";
  EXPECT_TRUE(Eval("size(status) between 1 and 3 and size(word) in (6, 7)", r));
  EXPECT_FALSE(Eval("size(n) >= 0", r)) << "a number has no size";
  EXPECT_FALSE(Eval("size(on) < 10", r));
  EXPECT_FALSE(Eval("size(missing) = 0", r));
  EXPECT_TRUE(Eval("size(n) <> 1", r));
  EXPECT_TRUE(Eval("size = 1", With({{"size", 1.0}}))) << "without '(', size is an attribute";

  EXPECT_TRUE(Eval("contains(status, k)", r));
  EXPECT_TRUE(Eval("contains(word, \"s \")", r));
  EXPECT_FALSE(Eval("contains(status, x)", r));
  EXPECT_FALSE(Eval("contains(n, 2)", r));
  EXPECT_TRUE(Eval("not contains(missing, x)", r));

  EXPECT_TRUE(Eval("attribute_type(status, S)", r));
  EXPECT_TRUE(Eval("attribute_type(n, \"N\") and attribute_type(on, BOOL)", r));
  EXPECT_FALSE(Eval("attribute_type(n, S) or attribute_type(status, M)", r));
  EXPECT_FALSE(Eval("attribute_type(missing, S)", r));

  EXPECT_EQ(NativeError("attribute_type(n, DOG)"),
            "filter: unknown attribute type 'DOG' (the types are S, N, BOOL, NULL, B, SS, NS, BS, L "
            "and M) at offset 0");
  EXPECT_EQ(NativeError("attribute_type(n, 5)"), "filter: 'attribute_type' cannot take the number 5 at offset 0");
  EXPECT_EQ(NativeError("contains(a)"), "filter: 'contains' takes 2 operands, not 1 at offset 0");
  EXPECT_EQ(NativeError("size(a, b) > 1"), "filter: 'size' takes 1 operand, not 2 at offset 0");
  EXPECT_EQ(NativeError("size(a)"), "filter: expected a comparison operator after ')' at offset 7");
  EXPECT_EQ(NativeError("size(a) > size(b)"),
            "filter: expected 'and', 'or' or the end after 'size' at offset 14");
  EXPECT_EQ(NativeError("size(deviceId) > 1").find("'deviceId' is a key attribute"), 8u);
  EXPECT_EQ(NativeError("frobnicate(a)"), "filter: unknown function 'frobnicate' at offset 0");
  EXPECT_EQ(NativeError("Begins_With(a, x)"), "filter: unknown function 'Begins_With' at offset 0");
}

TEST(NativeFilterTest, AWordIsAWholeAttributeName) {
  // The native filter has no document paths: "a.b" names the attribute a.b.
  const Reading r = With({{"a.b", 1.0}});
  EXPECT_TRUE(Eval("a.b = 1", r));
  EXPECT_EQ(NativeError("a[0] = 1"), "filter: expected a comparison operator after 'a' at offset 1");
}

TEST(NativeFilterTest, DeepNestingIsRefusedNotACrash) {
  std::string deep = std::string(64, '(') + "a=1" + std::string(64, ')');
  EXPECT_TRUE(Eval(deep, With({{"a", 1.0}})));
  deep = std::string(65, '(') + "a=1" + std::string(65, ')');
  EXPECT_NE(NativeError(deep).find("nest deeper than 64"), std::string::npos);
  std::string nots;
  for (int i = 0; i < 1000; ++i) nots += "not ";
  EXPECT_NE(NativeError(nots + "a=1").find("nest deeper than 64"), std::string::npos);
}

TEST(NativeFilterTest, LongerThanDynamoDbsExpressionLimitIsRefused) {
  std::string chain = "a=1";
  while (chain.size() + 8 <= 4096) chain += " and a=1";
  EXPECT_TRUE(Eval(chain, With({{"a", 1.0}})));
  chain += " and a=1";
  EXPECT_EQ(NativeError(chain), "filter: longer than 4096 bytes");
}

}  // namespace
}  // namespace readingsd::expr
