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

}  // namespace
}  // namespace readingsd
