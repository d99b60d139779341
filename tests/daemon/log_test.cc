// The daemon's log: priority prefixes and the rate limit that counts what it holds back.
#include "daemon/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace readingsd::daemon {
namespace {

using std::chrono::seconds;

// A Log writing into memory, on a clock the test moves.
class LogTest : public testing::Test {
 protected:
  ~LogTest() override {
    std::fclose(out_);
    std::free(buffer_);
  }

  // Everything written since the last call.
  std::string Lines() {
    std::fflush(out_);
    std::string all(buffer_, size_);
    std::string fresh = all.substr(read_);
    read_ = all.size();
    return fresh;
  }

  Log::Clock::time_point now_ = Log::Clock::time_point(std::chrono::hours(1));
  char* buffer_ = nullptr;
  std::size_t size_ = 0;
  std::size_t read_ = 0;
  std::FILE* out_ = open_memstream(&buffer_, &size_);
  Log log_{LogLevel::kInfo, [this] { return now_; }, out_};
};

TEST_F(LogTest, LinesCarryTheirPriorityAndRespectTheLevel) {
  log_.Write(LogLevel::kWarning, "mqtt: hello");
  log_.Write(LogLevel::kDebug, "not shown at info");
  EXPECT_EQ(Lines(), "<4>mqtt: hello\n");
}

TEST_F(LogTest, AFloodIsCutToABurstAndCountedOnTheTimer) {
  for (int i = 0; i < 2000; ++i) log_.WriteLimited("ingest: rejected (x)", LogLevel::kWarning, "line " + std::to_string(i));
  EXPECT_EQ(Lines(), "<4>line 0\n<4>line 1\n<4>line 2\n<4>line 3\n<4>line 4\n");
  now_ += seconds(9);
  log_.ReportSuppressed();
  EXPECT_EQ(Lines(), "");  // the period is not over
  now_ += seconds(1);
  log_.ReportSuppressed();
  EXPECT_EQ(Lines(), "<4>ingest: rejected (x): 1995 more in the last 10 s, not logged one by one\n");
  log_.ReportSuppressed();
  EXPECT_EQ(Lines(), "");  // counted once
  // A new period begins with the next line.
  log_.WriteLimited("ingest: rejected (x)", LogLevel::kWarning, "again");
  EXPECT_EQ(Lines(), "<4>again\n");
}

TEST_F(LogTest, TheNextLineReportsTheCountWhenTheTimerHasNotYet) {
  for (int i = 0; i < 7; ++i) log_.WriteLimited("k", LogLevel::kWarning, "x", /*burst=*/2, seconds(5));
  Lines();
  now_ += seconds(6);
  log_.WriteLimited("k", LogLevel::kWarning, "y", 2, seconds(5));
  EXPECT_EQ(Lines(), "<4>k: 5 more in the last 5 s, not logged one by one\n<4>y\n");
}

TEST_F(LogTest, KeysAreLimitedApart) {
  for (int i = 0; i < 3; ++i) log_.WriteLimited("a", LogLevel::kWarning, "a", 1);
  log_.WriteLimited("b", LogLevel::kWarning, "b", 1);
  EXPECT_EQ(Lines(), "<4>a\n<4>b\n");
  now_ += seconds(10);
  log_.ReportSuppressed();
  EXPECT_EQ(Lines(), "<4>a: 2 more in the last 10 s, not logged one by one\n");  // b held none back
}

}  // namespace
}  // namespace readingsd::daemon
