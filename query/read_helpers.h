// ReadHelpers: a few threads that read the later part of a long page while the request's own
// thread reads the first part (see Query). A part is only ever given to a helper that is idle
// right then; when none is, the request reads the whole page itself, so a busy server never
// waits on a queue it made.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace readingsd::query {

class ReadHelpers {
 public:
  explicit ReadHelpers(int threads);  // 0 = none: every TryRun is declined
  ~ReadHelpers();                     // runs what was handed over, then joins
  ReadHelpers(const ReadHelpers&) = delete;
  ReadHelpers& operator=(const ReadHelpers&) = delete;

  // Starts `task` on an idle helper, or returns false (and drops it) when none is idle.
  bool TryRun(std::function<void()> task);
  // Tasks helpers were given since start (a task may still find its part taken back).
  uint64_t tasks_run() const;

 private:
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  int idle_;  // helpers not running a task (counted from the start, so none is missed)
  uint64_t tasks_run_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace readingsd::query
