// ReadHelpers: a few threads that read the later part of a long page while the request's own
// thread reads the first part (see Query). A part is only ever given to a helper that is idle
// right then, and only while a core is left for it; otherwise the request reads the whole page
// itself, so a busy server never waits on a queue it made nor splits work it has no core for.
#pragma once

#include <atomic>
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
  // threads 0 = none: every TryRun is declined. cores: how many threads can run at once; by
  // default the CPUs this process may run on.
  explicit ReadHelpers(int threads, int cores = AvailableCores());
  ~ReadHelpers();  // runs what was handed over, then joins
  ReadHelpers(const ReadHelpers&) = delete;
  ReadHelpers& operator=(const ReadHelpers&) = delete;

  // While one lives, its thread counts as answering a request. On a server whose cores are all
  // answering requests a helper has no core of its own and only slows its request down: 4
  // clients on 2 cores got 0.94x VictoriaMetrics' window throughput with helpers, 1.00 without.
  class ScopedRequest {
   public:
    explicit ScopedRequest(ReadHelpers& helpers) : helpers_(helpers) { ++helpers_.requests_; }
    ~ScopedRequest() { --helpers_.requests_; }
    ScopedRequest(const ScopedRequest&) = delete;
    ScopedRequest& operator=(const ScopedRequest&) = delete;

   private:
    ReadHelpers& helpers_;
  };

  // Starts `task` on an idle helper, or returns false (and drops it) when none is idle or the
  // requests being answered and the helpers at work already take every core.
  bool TryRun(std::function<void()> task);
  // Tasks helpers were given since start (a task may still find its part taken back).
  uint64_t tasks_run() const;

 private:
  void Loop();

  static int AvailableCores();

  const int cores_;
  std::atomic<int> requests_{0};  // ScopedRequests alive
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  int idle_;  // helpers not running a task (counted from the start, so none is missed)
  uint64_t tasks_run_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace readingsd::query
