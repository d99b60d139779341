#include "ingest/pending.h"

#include <chrono>
#include <string>
#include <utility>

namespace readingsd::ingest {

void PendingWrites::Add(std::string_view origin, ParsedMessage* parsed) {
  for (auto& r : parsed->readings) pending_.push_back(std::move(r));
  for (const auto& rejection : parsed->rejections) {
    state_->Update([](IngestState& s) { ++s.messages_rejected; });
    if (hooks_->on_rejected) hooks_->on_rejected(origin, rejection);
  }
}

bool PendingWrites::Write() {
  if (pending_.empty()) return true;
  auto start = std::chrono::steady_clock::now();
  Status s = store_->Write(pending_);
  if (!s.ok() && s.IsInvalidArgument()) {
    // Payload validation makes this unreachable; should it happen, write the readings one by
    // one and drop only the invalid ones instead of blocking the stream on them. Any other
    // failure stops here with the unwritten rest still pending, so none of it is acked.
    std::vector<storage::Reading> written, unwritten;
    s = Status::OK();
    for (auto& r : pending_) {
      Status put = s.ok() ? store_->Put(r) : s;
      if (put.ok()) {
        written.push_back(std::move(r));
      } else if (put.IsInvalidArgument()) {
        Log(LogLevel::kError, "ingest: dropping a reading the store refused: " + put.message());
      } else {
        s = put;
        unwritten.push_back(std::move(r));
      }
    }
    if (!s.ok()) {
      pending_ = std::move(unwritten);  // the written ones are durable; retry the rest
    } else {
      pending_ = std::move(written);
    }
  }
  if (!s.ok()) {
    bool first = false;
    state_->Update([&](IngestState& st) {
      first = !st.store_failing;
      st.store_failing = true;
      st.last_error = "store write failed: " + s.message();
    });
    if (first) Log(LogLevel::kError, "ingest: " + s.ToString() + "; holding acks and retrying");
    return false;
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  bool recovered = false;
  state_->Update([&](IngestState& st) {
    recovered = st.store_failing;
    st.store_failing = false;
    st.readings_written += pending_.size();
  });
  if (recovered) Log(LogLevel::kInfo, "ingest: store writes succeed again");
  if (hooks_->on_batch_written) hooks_->on_batch_written(pending_, elapsed);
  pending_.clear();
  return true;
}

}  // namespace readingsd::ingest
