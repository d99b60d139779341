// FakeClock: time the test moves by hand, so window tests do not sleep.
#pragma once

#include <chrono>
#include <functional>

#include "metrics/hotness.h"

namespace readingsd::metrics {

class FakeClock {
 public:
  using TimePoint = HotnessTracker::Clock::time_point;

  void Advance(std::chrono::milliseconds by) { now_ += by; }
  // The returned function reads this clock; it must not outlive it.
  std::function<TimePoint()> AsFunction() const {
    return [this] { return now_; };
  }

 private:
  // Away from the clock's epoch, like a real steady clock.
  TimePoint now_ = TimePoint(std::chrono::hours(1));
};

}  // namespace readingsd::metrics
