#include "base/text.h"

#include <gtest/gtest.h>

namespace readingsd {
namespace {

TEST(EqualsIgnoreCaseTest, ComparesAsciiLettersWithoutCase) {
  EXPECT_TRUE(EqualsIgnoreCase("Bearer", "bEARER"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("Bearer", "Bearer "));
  EXPECT_FALSE(EqualsIgnoreCase("and", "an"));
  EXPECT_FALSE(EqualsIgnoreCase("or", "op"));
}

TEST(ParseHostPortTest, AcceptsHostPortAndBracketedV6) {
  HostPort hp;
  ASSERT_TRUE(ParseHostPort("127.0.0.1:8080", &hp).ok());
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 8080);
  ASSERT_TRUE(ParseHostPort("[::1]:0", &hp).ok());
  EXPECT_EQ(hp.host, "::1");
  EXPECT_EQ(hp.port, 0);
  ASSERT_TRUE(ParseHostPort("localhost:65535", &hp).ok());
  EXPECT_EQ(hp.host, "localhost");
  EXPECT_EQ(hp.port, 65535);
}

TEST(ParseHostPortTest, RefusesWhatIsNotHostPort) {
  for (const char* bad : {"", "8080", ":8080", "host:", "host:65536", "host:123456", "host:80a", "host:-1",
                          "::1:8080", "[::1]", "[::1]8080", "[::1:8080"}) {
    HostPort hp;
    Status s = ParseHostPort(bad, &hp);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
}

// Every byte comes back through PercentDecode, and the encoding holds no space, '+' or '%'
// of its own: it can sit in a query string or in the delete header's "<lower> <upper>".
TEST(PercentEncodeTest, EveryByteRoundTripsAndTimestampsStayReadable) {
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  const std::string encoded = PercentEncode(every);
  EXPECT_EQ(encoded.find_first_of(" +"), std::string::npos);
  std::string decoded;
  ASSERT_TRUE(PercentDecode(encoded, /*plus_is_space=*/true, &decoded));
  EXPECT_EQ(decoded, every);
  EXPECT_EQ(PercentEncode("2026-06-23T10:00:00.000000000Z"), "2026-06-23T10:00:00.000000000Z");
  EXPECT_EQ(PercentEncode(std::string("a\0b%", 4) + " "), "a%00b%25%20");
}

}  // namespace
}  // namespace readingsd
