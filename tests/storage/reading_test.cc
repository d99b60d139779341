#include "storage/reading.h"

#include <gtest/gtest.h>

#include <limits>

namespace readingsd::storage {
namespace {

// Same names and values in the same order.
// Attributes or their views.
template <typename A>
void ExpectSameAttributes(const std::vector<A>& actual, const std::vector<A>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].value, expected[i].value) << expected[i].name;
  }
}

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
  ExpectSameAttributes(out, in);
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
  // Few names and many are checked alike: a duplicate anywhere, first and last among them.
  for (int n : {3, 16, 17, 40}) {
    std::vector<Attribute> many;
    for (int i = 0; i < n; ++i) many.push_back({"a" + std::to_string(i), 1.0});
    EXPECT_TRUE(ValidateAttributes(many).ok()) << n;
    many.push_back({"a0", 2.0});
    EXPECT_FALSE(ValidateAttributes(many).ok()) << n;
    many.back().name = "a" + std::to_string(n - 1);
    EXPECT_FALSE(ValidateAttributes(many).ok()) << n;
  }
}

TEST(Attributes, ReaderSeesWhatDecodeSees) {
  std::string encoded;
  EncodeAttributes({{"t", -0.25}, {"s", std::string("a\0b", 3)}, {"on", true}, {"off", false}}, &encoded);
  AttributeReader reader(encoded);
  std::vector<AttributeView> seen;
  for (AttributeView a; reader.Next(&a);) seen.push_back(a);
  ASSERT_TRUE(reader.status().ok());
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].name, "t");
  EXPECT_EQ(std::get<NumberView>(seen[0].value), NumberView(Number(-0.25)));
  EXPECT_EQ(std::get<std::string_view>(seen[1].value), std::string_view("a\0b", 3));
  EXPECT_TRUE(std::get<bool>(seen[2].value));
  EXPECT_FALSE(std::get<bool>(seen[3].value));
  EXPECT_FALSE(reader.Next(&seen[0]));  // stays at the end

  std::string empty;
  EncodeAttributes({}, &empty);
  AttributeReader none(empty);
  EXPECT_FALSE(none.Next(&seen[0]));
  EXPECT_TRUE(none.status().ok());
}

TEST(Attributes, ReaderStopsAtTheFirstDamagedAttribute) {
  std::string encoded;
  EncodeAttributes({{"temperature", 21.5}, {"status", std::string("ok")}}, &encoded);
  for (std::size_t cut = 0; cut < encoded.size(); ++cut) {
    std::vector<Attribute> decoded;
    const Status decode = DecodeAttributes(std::string_view(encoded).substr(0, cut), &decoded);
    AttributeReader reader(std::string_view(encoded).substr(0, cut));
    std::size_t read = 0;
    for (AttributeView a; reader.Next(&a);) ++read;
    // The reader accepts exactly what DecodeAttributes accepts, with the same error.
    EXPECT_EQ(reader.status().ToString(), decode.ToString()) << cut;
    if (decode.ok()) {
      EXPECT_EQ(read, decoded.size()) << cut;
    }
  }
  encoded[1 + 1 + std::string_view("temperature").size()] = '?';  // an unknown type tag
  AttributeReader reader(encoded);
  AttributeView a;
  EXPECT_FALSE(reader.Next(&a));
  EXPECT_EQ(reader.status().code(), Status::Code::kCorruption);
  EXPECT_NE(reader.status().message().find("unknown attribute type tag"), std::string::npos);
}

TEST(Attributes, ItemSizeCountsNamesAndValues) {
  Reading r{"a1", std::string(30, '0'), {{"t", 1.0}, {"s", std::string("abc")}, {"b", true}}};
  EXPECT_EQ(ItemSize(r), 8u + 2 + 9 + 30 + (1 + 2) + (1 + 3) + (1 + 1));  // 1: one digit, 2 bytes
  // A stored item bills the same as the Reading it was encoded from.
  std::string encoded;
  EncodeAttributes(r.attributes, &encoded);
  std::vector<AttributeView> read;
  ASSERT_TRUE(ReadAttributes(encoded, &read).ok());
  EXPECT_EQ(ItemSize(r.device_id, r.sort_key, read), ItemSize(r));
}

TEST(Attributes, ReadAttributesTakesAWholeValueOrNothing) {
  const std::vector<Attribute> attributes{{"temperature", 21.5}, {"status", std::string("ok")}, {"on", true}};
  std::string encoded;
  EncodeAttributes(attributes, &encoded);
  std::vector<AttributeView> read{{"stale", true}};
  ASSERT_TRUE(ReadAttributes(encoded, &read).ok());
  ASSERT_EQ(read.size(), 3u);
  std::vector<Attribute> decoded;
  ASSERT_TRUE(DecodeAttributes(encoded, &decoded).ok());
  ExpectSameAttributes(read, ViewsOf(decoded));
  for (std::size_t cut = 0; cut < encoded.size(); ++cut) {
    const Status s = ReadAttributes(std::string_view(encoded).substr(0, cut), &read);
    EXPECT_EQ(s.ToString(), DecodeAttributes(std::string_view(encoded).substr(0, cut), &decoded).ToString()) << cut;
  }
}

// ReadAttributes reads short attributes without the general reader and hands it the rest: both
// must see every value as AttributeReader does, and report the same damage.
TEST(Attributes, ReadAttributesSeesWhatTheReaderSees) {
  auto reader_sees = [](std::string_view encoded, std::vector<AttributeView>* seen) {
    seen->clear();
    AttributeReader reader(encoded);
    for (AttributeView a; reader.Next(&a);) seen->push_back(a);
    return reader.status();
  };
  auto expect_same = [&](const std::string& encoded, const std::string& what) {
    std::vector<AttributeView> read{{"stale", true}}, seen;
    const Status s = ReadAttributes(encoded, &read);
    EXPECT_EQ(s.ToString(), reader_sees(encoded, &seen).ToString()) << what;
    if (s.ok()) {
      ASSERT_EQ(read.size(), seen.size()) << what;
      for (std::size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(read[i].name, seen[i].name) << what;
        EXPECT_EQ(read[i].value, seen[i].value) << what << " " << seen[i].name;
      }
    }
  };
  const std::string long_name(200, 'n'), long_text(300, 'x');
  Number big;
  big.text = "12345678901234567890123456789012345678";
  const std::vector<std::vector<Attribute>> values{
      {{"t", 21.5}, {long_name, 1.0}, {"s", std::string("ok")}},     // a long name in the middle
      {{"t", -0.25}, {"s", long_text}, {"on", true}, {"off", false}},  // a long value
      {{"n", big}, {"e", std::string()}},
      {{std::string(127, 'a'), std::string(127, 'b')}},  // the longest one-byte lengths
  };
  for (std::size_t v = 0; v < values.size(); ++v) {
    std::string encoded;
    EncodeAttributes(values[v], &encoded);
    for (std::size_t cut = 0; cut <= encoded.size(); ++cut) {
      expect_same(encoded.substr(0, cut), "value " + std::to_string(v) + " cut at " + std::to_string(cut));
    }
    for (std::size_t at = 1; at < encoded.size(); ++at) {  // each byte damaged in turn
      for (char bad : {'?', '\x7f', '\x80', 'd', '0', '-'}) {
        std::string damaged = encoded;
        damaged[at] = bad;
        expect_same(damaged, "value " + std::to_string(v) + " byte " + std::to_string(at) + " " + bad);
      }
    }
  }
  // A number that is not canonical is damage, even in a short attribute.
  std::string encoded;
  EncodeAttributes({{"t", 1.5}, {"u", 2.5}}, &encoded);
  encoded[encoded.size() - 1] = '0';  // "2.0"
  std::vector<AttributeView> read;
  const Status s = ReadAttributes(encoded, &read);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("malformed number attribute"), std::string::npos);
  expect_same(encoded, "2.0");
}

}  // namespace
}  // namespace readingsd::storage
