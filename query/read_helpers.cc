#include "query/read_helpers.h"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <utility>

namespace readingsd::query {

int ReadHelpers::AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ReadHelpers::ReadHelpers(int threads, int cores) : cores_(cores), idle_(threads) {
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
    const int helpers_at_work = static_cast<int>(threads_.size()) - idle_ + static_cast<int>(tasks_.size());
    if (requests_.load() + helpers_at_work >= cores_) return false;
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
