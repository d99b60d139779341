#include "json/parse.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace readingsd {
namespace {

std::string Arrays(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

template <typename T>
class ParseJsonTest : public ::testing::Test {};
using JsonTypes = ::testing::Types<nlohmann::json, nlohmann::ordered_json>;
struct JsonTypeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, nlohmann::json> ? "json" : "ordered_json";
  }
};
TYPED_TEST_SUITE(ParseJsonTest, JsonTypes, JsonTypeNames);

TYPED_TEST(ParseJsonTest, ParsesUpToTheLimitAndRefusesOneLevelMore) {
  TypeParam value;
  ASSERT_EQ(ParseJson(Arrays(kMaxJsonDepth), &value), JsonParseError::kNone);
  int depth = 0;
  for (const TypeParam* v = &value; v->is_array(); v = v->empty() ? nullptr : &v->front()) {
    ++depth;
    if (v->empty()) break;
  }
  EXPECT_EQ(depth, kMaxJsonDepth);

  TypeParam untouched = 7;
  EXPECT_EQ(ParseJson(Arrays(kMaxJsonDepth + 1), &untouched), JsonParseError::kTooDeep);
  EXPECT_EQ(untouched, 7);
}

TYPED_TEST(ParseJsonTest, DepthIsCountedAlongEachPathNotAcrossSiblings) {
  const std::string inner = Arrays(kMaxJsonDepth - 1);
  TypeParam value;
  ASSERT_EQ(ParseJson(R"({"a":)" + inner + R"(,"b":)" + inner + R"(,"c":[)" + inner + "]}", &value),
            JsonParseError::kTooDeep);
  ASSERT_EQ(ParseJson(R"({"a":)" + inner + R"(,"b":)" + inner + "}", &value), JsonParseError::kNone);
  EXPECT_EQ(value.size(), 2u);
  auto objects = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += R"({"M":)";
    return text + "1" + std::string(levels, '}');
  };
  EXPECT_EQ(ParseJson(objects(kMaxJsonDepth), &value), JsonParseError::kNone);
  EXPECT_EQ(ParseJson(objects(kMaxJsonDepth + 1), &value), JsonParseError::kTooDeep);
}

// Far deeper than any stack: refused at once, where copying the tree used to overflow.
TYPED_TEST(ParseJsonTest, AMillionLevelsAreRefusedWithoutBuildingThem) {
  TypeParam value;
  EXPECT_EQ(ParseJson(Arrays(1000000), &value), JsonParseError::kTooDeep);
  EXPECT_EQ(ParseJson(std::string(1000000, '['), &value), JsonParseError::kTooDeep);
}

TYPED_TEST(ParseJsonTest, MalformedInputIsRefusedAndLeavesTheValueAlone) {
  for (const std::string text : {"", "{", "[1]x", "[1] [2]", "{\"a\":1,}", "\xff", "\"\xc3\"", "nul"}) {
    TypeParam value = "kept";
    EXPECT_EQ(ParseJson(text, &value), JsonParseError::kMalformed) << text;
    EXPECT_EQ(value, "kept");
  }
  TypeParam value;
  ASSERT_EQ(ParseJson(R"( {"n":1.5,"s":"x","b":true,"z":null,"l":[1,-2]} )", &value), JsonParseError::kNone);
  EXPECT_EQ(value["l"][1], -2);
  EXPECT_EQ(value["s"], "x");
}

// Writes down what it is told, one token per step.
class Transcript : public JsonParseObserver {
 public:
  void Value() override { text += "v "; }
  void StartObject() override { text += "{ "; }
  void Key(const std::string& key) override { text += key + ": "; }
  void EndObject() override { text += "} "; }
  void StartArray() override { text += "[ "; }
  void EndArray() override { text += "] "; }
  std::string text;
};

TYPED_TEST(ParseJsonTest, AnObserverIsToldEveryStepIncludingAKeyTheValueKeepsOnce) {
  TypeParam value;
  Transcript told;
  ASSERT_EQ(ParseJson(R"({"t":1,"l":[true,null,{"s":"x"}],"t":2})", &value, &told), JsonParseError::kNone);
  EXPECT_EQ(told.text, "{ t: v l: [ v v { s: v } ] t: v } ");
  EXPECT_EQ(value.size(), 2u);  // the value has "t" once

  Transcript refused;
  EXPECT_EQ(ParseJson(Arrays(kMaxJsonDepth + 1), &value, &refused), JsonParseError::kTooDeep);
  std::string opened;
  for (int i = 0; i < kMaxJsonDepth; ++i) opened += "[ ";
  EXPECT_EQ(refused.text, opened);  // the container past the limit is not told
}

}  // namespace
}  // namespace readingsd
