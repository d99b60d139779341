#include "storage/reading.h"

#include <gtest/gtest.h>

#include <limits>

namespace readingsd::storage {
namespace {

TEST(Attributes, EncodeDecodeRoundTrip) {
  std::vector<Attribute> in = {{"temperature", 21.5},
                               {"count", 42.0},
                               {"tiny", std::numeric_limits<double>::denorm_min()},
                               {"status", std::string("ok")},
                               {"blob", std::string("a\0b\xff", 4)},
                               {"empty", std::string()},
                               {"on", true},
                               {"off", false}};
  std::string encoded;
  EncodeAttributes(in, &encoded);
  std::vector<Attribute> out;
  ASSERT_TRUE(DecodeAttributes(encoded, &out).ok());
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].name, in[i].name);
    EXPECT_EQ(out[i].value, in[i].value) << in[i].name;
  }
}

TEST(Attributes, DecodeRejectsDamagedValues) {
  std::string encoded;
  EncodeAttributes({{"temperature", 21.5}, {"status", std::string("ok")}}, &encoded);
  std::vector<Attribute> out;
  for (std::size_t cut = 0; cut < encoded.size(); ++cut) {
    // A strict prefix decodes to fewer attributes (cut at a boundary) or is corrupt, never a crash.
    Status s = DecodeAttributes(std::string_view(encoded).substr(0, cut), &out);
    if (s.ok()) {
      EXPECT_LT(out.size(), 2u) << cut;
    } else {
      EXPECT_EQ(s.code(), Status::Code::kCorruption) << cut;
    }
  }
  std::string bad_version = encoded;
  bad_version[0] = 9;
  EXPECT_EQ(DecodeAttributes(bad_version, &out).code(), Status::Code::kCorruption);
}

TEST(Attributes, Validation) {
  EXPECT_TRUE(ValidateAttributes({{"a", 1.0}, {"b", true}}).ok());
  EXPECT_FALSE(ValidateAttributes({{"a", 1.0}, {"a", 2.0}}).ok());
  EXPECT_FALSE(ValidateAttributes({{"", 1.0}}).ok());
  EXPECT_FALSE(ValidateAttributes({{std::string(kMaxAttributeNameLength + 1, 'n'), 1.0}}).ok());
  EXPECT_FALSE(ValidateAttributes({{"deviceId", std::string("x")}}).ok());
  EXPECT_FALSE(ValidateAttributes({{"readingTs", std::string("x")}}).ok());
}

}  // namespace
}  // namespace readingsd::storage

namespace readingsd::storage {
namespace {

TEST(Attributes, ItemSizeCountsNamesAndValues) {
  Reading r{"a1", std::string(30, '0'), {{"t", 1.0}, {"s", std::string("abc")}, {"b", true}}};
  EXPECT_EQ(ItemSize(r), 8u + 2 + 9 + 30 + (1 + 8) + (1 + 3) + (1 + 1));
}

}  // namespace
}  // namespace readingsd::storage
