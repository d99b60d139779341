#include "query/read_helpers.h"

#include <utility>

namespace readingsd::query {

ReadHelpers::ReadHelpers(int threads) : idle_(threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReadHelpers::~ReadHelpers() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool ReadHelpers::TryRun(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    // A task queued behind another would wait for it: only as many as there are idle helpers.
    if (stopping_ || static_cast<std::size_t>(idle_) <= tasks_.size()) return false;
    tasks_.push_back(std::move(task));
    ++tasks_run_;
  }
  wake_.notify_one();
  return true;
}

uint64_t ReadHelpers::tasks_run() const {
  std::lock_guard lock(mu_);
  return tasks_run_;
}

void ReadHelpers::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left that a request waits for
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    --idle_;
    lock.unlock();
    task();
    lock.lock();
    ++idle_;
  }
}

}  // namespace readingsd::query
