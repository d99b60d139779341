#include "base/log_level.h"

#include <gtest/gtest.h>

namespace readingsd {
namespace {

TEST(LogLevelTest, EveryNameParsesToItsOwnLevel) {
  EXPECT_EQ(ParseLogLevel(kLogLevelNames[0]), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel(kLogLevelNames[1]), LogLevel::kWarning);
  EXPECT_EQ(ParseLogLevel(kLogLevelNames[2]), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel(kLogLevelNames[3]), LogLevel::kDebug);
}

TEST(LogLevelTest, AnythingElseIsInfo) {
  EXPECT_EQ(ParseLogLevel("ERROR"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel(""), LogLevel::kInfo);
}

}  // namespace
}  // namespace readingsd
