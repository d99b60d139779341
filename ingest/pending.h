// PendingWrites: what every source does between reading messages and acknowledging them. It
// collects each message's readings, counts and reports its rejections, and writes the readings
// in one WriteBatch; a source acks the messages only after Write() returned true (the readings
// are in the WAL), never before.
#pragma once

#include <cstddef>
#include <mutex>
#include <string_view>
#include <vector>

#include "ingest/payload.h"
#include "ingest/source.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace readingsd::ingest {

// IngestState behind a mutex: written by a source's threads, read by anyone. Thread-safe.
class SharedState {
 public:
  template <typename F>
  void Update(F&& f) {
    std::lock_guard lock(mu_);
    f(state_);
  }
  IngestState Get() const {
    std::lock_guard lock(mu_);
    return state_;
  }

 private:
  mutable std::mutex mu_;
  IngestState state_;
};

// One per ingest thread. Thread-compatible; `store`, `hooks` and `state` outlive it.
class PendingWrites {
 public:
  PendingWrites(storage::Store* store, const IngestHooks* hooks, SharedState* state)
      : store_(store), hooks_(hooks), state_(state) {}

  // Takes the readings of `parsed` (a message from `origin`: its topic or subject) and reports
  // each of its rejections: messages_rejected and hooks.on_rejected.
  void Add(std::string_view origin, ParsedMessage* parsed);
  // Writes every pending reading. True when all are durable (or were refused by the store as
  // invalid, which is logged): the messages they came in may be acked now. False when the
  // store failed: the unwritten readings stay pending, nothing may be acked, call again later.
  bool Write();
  std::size_t size() const { return pending_.size(); }
  bool empty() const { return pending_.empty(); }

 private:
  void Log(LogLevel level, std::string_view message) const {
    if (hooks_->log) hooks_->log(level, message);
  }

  storage::Store* const store_;
  const IngestHooks* const hooks_;
  SharedState* const state_;
  std::vector<storage::Reading> pending_;
};

}  // namespace readingsd::ingest
