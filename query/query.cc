#include "query/query.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "storage/key.h"

namespace readingsd::query {
namespace {

// Paging narrows the range instead of seeking inside it: forward, the page starts just after
// the start key; backward, the start key becomes the exclusive upper bound. Either way the
// iterator's bounds stay exactly the keys still to be returned.
void ResumeAfter(std::string_view exclusive_start, bool scan_forward, SortKeyRange* range) {
  if (scan_forward) {
    std::string after = Successor(exclusive_start);
    if (after > range->lower) range->lower = std::move(after);
  } else if (range->upper.empty() || exclusive_start < range->upper) {
    range->upper = std::string(exclusive_start);
  }
}

// A normalised sort key (a bound may also be a raw DynamoDB key value, see KeyValues).
bool IsSortKey(std::string_view sort_key) {
  std::string normalised;
  return sort_key.size() == storage::kSortKeyLength && storage::NormalizeTimestamp(sort_key, &normalised).ok() &&
         normalised == sort_key;
}

Status ValidateExclusiveStart(std::string_view sort_key) {
  if (IsSortKey(sort_key)) return Status::OK();
  return Status::InvalidArgument(
      "The provided starting key is invalid: the sort key must be a LastEvaluatedKey "
      "(YYYY-MM-DDTHH:MM:SS.fffffffffZ)");
}

// What a page has read so far.
struct Tally {
  std::size_t count = 0;          // returned (after the filter)
  std::size_t scanned_count = 0;  // read
  std::size_t scanned_bytes = 0;  // their storage::ItemSize
  std::size_t page_bytes = 0;     // their stored key + value bytes, for max_page_bytes
};

bool Full(const QueryRequest& request, const Tally& tally) {
  return (request.limit != 0 && tally.scanned_count >= request.limit) ||
         (request.max_page_bytes != 0 && tally.page_bytes >= request.max_page_bytes);
}

// What one item added to a Tally, kept for each item a helper reads.
struct ItemCount {
  std::size_t scanned_bytes;
  std::size_t page_bytes;
  bool returned;
};

std::unique_ptr<storage::PartitionIterator> Open(const storage::Store& store, const QueryRequest& request,
                                                 std::string_view lower, std::string_view upper) {
  std::unique_ptr<storage::PartitionIterator> it = store.NewIterator(request.key.device_id, lower, upper);
  if (request.scan_forward) {
    it->SeekToFirst();
  } else {
    it->SeekToLast();
  }
  return it;
}

// The next item in the request's order.
void Advance(const QueryRequest& request, storage::PartitionIterator* it) {
  request.scan_forward ? it->Next() : it->Prev();
}

// What Query reports of a page.
void Report(const Tally& tally, QueryResult* result) {
  result->count = tally.count;
  result->scanned_count = tally.scanned_count;
  result->scanned_bytes = tally.scanned_bytes;
}

// Reads the iterator's item whole, counts it and hands it to `sink` when the filter keeps it.
// `key_prefix_bytes`: every stored key is the partition's prefix plus a sort key.
Status ReadItem(const QueryRequest& request, const storage::PartitionIterator& it, std::size_t key_prefix_bytes,
                std::vector<storage::AttributeView>* attributes, ItemSink* sink, Tally* tally, ItemCount* counted) {
  const std::string_view sort_key = it.sort_key();
  const std::string_view encoded = it.encoded_attributes();
  // Read whole here, so a damaged value is an error naming the item, not a half-rendered page.
  if (Status s = storage::ReadAttributes(encoded, attributes); !s.ok()) {
    return Status::Corruption("reading " + storage::PartitionKey(request.key.device_id) + " " +
                              std::string(sort_key) + ": " + s.message());
  }
  ItemCount item{storage::ItemSize(request.key.device_id, sort_key, *attributes),
                 key_prefix_bytes + sort_key.size() + encoded.size(),
                 !request.filter || Matches(*request.filter, *attributes)};
  ++tally->scanned_count;
  tally->scanned_bytes += item.scanned_bytes;
  tally->page_bytes += item.page_bytes;
  if (item.returned) {
    sink->Add(sort_key, encoded, *attributes);
    ++tally->count;
  }
  if (counted != nullptr) *counted = item;
  return Status::OK();
}

// A long page is read in two parts at once. After kProbeItems items the request's thread
// guesses from their spacing in time how far the page will reach, and an idle helper reads the
// last part of that stretch into a sink of its own, counting each item. When the request's
// thread arrives where the helper began, the helper's items are appended up to where the page
// would have ended had one thread read it all: the same items, counts and next key. Each part
// reads from its own iterator, so each sees every write acknowledged before the request began.
constexpr std::size_t kProbeItems = 64;
// Handing a part over costs a thread wake-up (a few microseconds): worth it only for more.
constexpr double kMinPartItems = 64;
// The helper opens an iterator of its own and seeks (~10 us), on a core whose caches are colder:
// it gets the smaller share. With 600-reading windows a 0.5 / 0.6 / 0.65 share for the request's
// thread answered in 245 / 230 / 240 us (bench/README.md, finding 28).
constexpr double kRequestThreadShare = 0.6;
// Room reserved for a part's items is capped: a guess from 64 items may be far off.
constexpr double kMaxReservedItems = 4096;

struct Split {
  std::string sort_key;            // where the helper's part begins; "" = read on one thread
  std::size_t expected_items = 0;  // in the helper's part, as guessed
};

Split SplitPoint(const QueryRequest& request, const SortKeyRange& range, std::string_view first_key,
                 std::string_view current_key, const Tally& tally) {
  const double now = storage::SortKeySeconds(current_key);
  const double spread = std::abs(now - storage::SortKeySeconds(first_key));
  if (spread <= 0) return {};
  const double per_second = static_cast<double>(tally.scanned_count - 1) / spread;
  double wanted = std::numeric_limits<double>::infinity();  // items the page can still take
  if (request.limit != 0) wanted = static_cast<double>(request.limit - tally.scanned_count);
  if (request.max_page_bytes != 0) {
    const double item_bytes = static_cast<double>(tally.page_bytes) / static_cast<double>(tally.scanned_count);
    wanted = std::min(wanted, static_cast<double>(request.max_page_bytes - tally.page_bytes) / item_bytes);
  }
  // Where the range ends, when that bound is a whole sort key (a begins_with bound is not).
  const std::string& end = request.scan_forward ? range.upper : range.lower;
  double reach = std::numeric_limits<double>::infinity();
  if (end.size() >= storage::kSortKeyLength && IsSortKey(end.substr(0, storage::kSortKeyLength))) {
    reach = std::abs(storage::SortKeySeconds(std::string_view(end).substr(0, storage::kSortKeyLength)) - now);
  }
  const double span = std::min(wanted / per_second, reach);
  const double part_items = span * (1 - kRequestThreadShare) * per_second;
  if (std::isinf(span) || part_items < kMinPartItems) return {};
  const double offset = span * kRequestThreadShare;
  std::string split = storage::SortKeyAtSeconds(request.scan_forward ? now + offset : now - offset);
  const bool inside = request.scan_forward
                          ? split > current_key && (range.upper.empty() || split < range.upper)
                          : split < current_key && (range.lower.empty() || split > range.lower);
  if (!inside) return {};
  return {std::move(split), static_cast<std::size_t>(std::min(part_items * 1.25, kMaxReservedItems))};
}

// The later part of a page and its helper: handed over by Start, then either taken back before
// the helper began it, or waited for. Always one or the other before the request returns, as
// the helper reads the request and the store.
class HelperPart {
 public:
  HelperPart() = default;
  HelperPart(const HelperPart&) = delete;
  HelperPart& operator=(const HelperPart&) = delete;
  ~HelperPart() { Abandon(); }

  bool active() const { return part_ != nullptr; }

  // Hands the later part of the page to an idle helper, if the page looks long enough and the
  // sink can be filled in parts.
  void Start(const storage::Store& store, const QueryRequest& request, const SortKeyRange& range,
             std::string_view first_key, std::string_view current_key, const Tally& tally, ItemSink* sink) {
    Split split = SplitPoint(request, range, first_key, current_key, tally);
    if (split.sort_key.empty()) return;
    auto part = std::make_shared<Part>();
    part->sink = sink->NewPart(split.expected_items);
    if (part->sink == nullptr) return;
    part->counts.reserve(split.expected_items);
    part->sort_keys.reserve(split.expected_items * storage::kSortKeyLength);
    part->start = tally;
    part->lower = request.scan_forward ? split.sort_key : range.lower;
    part->upper = request.scan_forward ? range.upper : split.sort_key;
    part->split = std::move(split.sort_key);
    const bool started = request.helpers->TryRun([part, &store, &request] {
      int queued = kQueued;
      if (!part->state.compare_exchange_strong(queued, kRunning)) return;  // taken back
      Read(store, request, part.get());
      part->state = kDone;
      part->state.notify_all();
    });
    if (started) part_ = std::move(part);
  }

  // Whether `sort_key` lies in the helper's part.
  bool Holds(std::string_view sort_key, bool scan_forward) const {
    return scan_forward ? sort_key >= part_->split : sort_key < part_->split;
  }

  // True when no helper had begun the part (it never will): the request reads on by itself.
  // Otherwise waits until the helper has read it.
  bool TakeBack() {
    int queued = kQueued;
    if (part_->state.compare_exchange_strong(queued, kTakenBack)) {
      part_.reset();
      return true;
    }
    for (int state = part_->state; state != kDone; state = part_->state) part_->state.wait(state);
    return false;
  }

  // The page ended before the part: stops the helper early and waits for it.
  void Abandon() {
    if (part_ == nullptr) return;
    part_->stop = true;
    if (!TakeBack()) part_.reset();
  }

  // After TakeBack returned false: the helper's items (with their counts) while the page has
  // room, then the result. Its status is the page's when the page ran into where it stopped.
  Status AppendTo(const QueryRequest& request, ItemSink* sink, Tally* tally, QueryResult* result) {
    const Part& part = *part_;
    std::size_t returned = 0;
    std::size_t i = 0;
    bool full = false;
    for (; i < part.counts.size() && !full; ++i) {
      tally->scanned_count += 1;
      tally->scanned_bytes += part.counts[i].scanned_bytes;
      tally->page_bytes += part.counts[i].page_bytes;
      returned += part.counts[i].returned ? 1 : 0;
      full = Full(request, *tally);
    }
    sink->AppendPart(part.sink.get(), returned);
    tally->count += returned;
    Report(*tally, result);
    if (full && (request.key_when_full || i < part.counts.size() || part.more)) {
      const std::size_t last = i - 1;
      result->last_evaluated_sort_key =
          part.sort_keys.substr(last * storage::kSortKeyLength, storage::kSortKeyLength);
    }
    Status status = i < part.counts.size() ? Status::OK() : part.status;
    part_.reset();
    return status;
  }

 private:
  enum State { kQueued, kRunning, kDone, kTakenBack };

  struct Part {
    std::atomic<int> state{kQueued};
    std::atomic<bool> stop{false};  // the page ended before this part
    std::string split, lower, upper;
    Tally start;  // the page's when handed over: the part is read until the page would be full
    std::unique_ptr<ItemSink> sink;
    std::vector<ItemCount> counts;  // one per item read
    std::string sort_keys;          // theirs, kSortKeyLength bytes each
    bool more = false;              // it stopped at a full page, and an item follows
    Status status;
  };

  // On the helper's thread.
  static void Read(const storage::Store& store, const QueryRequest& request, Part* part) {
    std::unique_ptr<storage::PartitionIterator> it = Open(store, request, part->lower, part->upper);
    const std::size_t key_prefix_bytes = storage::EncodeKey(request.key.device_id, "").size();
    std::vector<storage::AttributeView> attributes;
    Tally tally = part->start;
    for (; it->Valid() && !part->stop; Advance(request, it.get())) {
      ItemCount counted;
      part->status = ReadItem(request, *it, key_prefix_bytes, &attributes, part->sink.get(), &tally, &counted);
      if (!part->status.ok()) return;
      part->counts.push_back(counted);
      part->sort_keys.append(it->sort_key());
      if (Full(request, tally)) {
        Advance(request, it.get());  // peek
        part->more = it->Valid();
        break;
      }
    }
    part->status = it->status();
  }

  std::shared_ptr<Part> part_;
};

}  // namespace

Status Query(const storage::Store& store, const QueryRequest& request, QueryResult* result, ItemSink* sink) {
  *result = QueryResult();
  if (sink == nullptr) sink = &result->items;
  const KeyCondition& key = request.key;
  SortKeyRange range = RangeOf(key);
  if (!request.exclusive_start.empty()) {
    if (Status s = ValidateExclusiveStart(request.exclusive_start); !s.ok()) return s;
    ResumeAfter(request.exclusive_start, request.scan_forward, &range);
  }
  if (range.empty() || key.matches_nothing) return Status::OK();

  std::unique_ptr<storage::PartitionIterator> it = Open(store, request, range.lower, range.upper);
  const std::size_t key_prefix_bytes = storage::EncodeKey(key.device_id, "").size();
  std::vector<storage::AttributeView> attributes;  // of the current item, reused
  Tally tally;
  std::string first_key;  // of the page, for estimating where it ends
  HelperPart later;       // the part a helper reads, once handed over
  for (; it->Valid(); Advance(request, it.get())) {
    if (later.active() && later.Holds(it->sort_key(), request.scan_forward)) {
      // This thread has read its part. Unless no helper has begun the later one (then this
      // thread reads on alone), the page continues with what the helper read.
      if (!later.TakeBack()) return later.AppendTo(request, sink, &tally, result);
    }
    if (Status s = ReadItem(request, *it, key_prefix_bytes, &attributes, sink, &tally, nullptr); !s.ok()) return s;
    if (Full(request, tally)) {
      later.Abandon();
      std::string last_read(it->sort_key());
      if (!request.key_when_full) Advance(request, it.get());  // peek: a next key only when there is a next item
      if (request.key_when_full || it->Valid()) result->last_evaluated_sort_key = std::move(last_read);
      break;
    }
    if (tally.scanned_count == 1) first_key = it->sort_key();
    if (tally.scanned_count == kProbeItems && request.helpers != nullptr) {
      later.Start(store, request, range, first_key, it->sort_key(), tally, sink);
    }
  }
  later.Abandon();  // the range ended before the later part began: it is empty
  Report(tally, result);
  if (Status s = it->status(); !s.ok()) return s;
  return Status::OK();
}

Items::Item Items::operator[](std::size_t i) const {
  const Span& span = items_[i];
  const std::string_view item = std::string_view(chunks_[span.chunk]).substr(span.begin, span.size);
  return {item.substr(0, span.sort_key_size), item.substr(span.sort_key_size)};
}

Status Items::ToReading(std::size_t i, std::string_view device_id, storage::Reading* reading) const {
  const Item item = (*this)[i];
  reading->device_id = device_id;
  reading->sort_key = item.sort_key;
  return storage::DecodeAttributes(item.encoded_attributes, &reading->attributes);
}

void Items::Append(std::string_view sort_key, std::string_view encoded_attributes) {
  const std::size_t size = sort_key.size() + encoded_attributes.size();
  // Growing one buffer copied the page over and over: 6 % of a 600-item request.
  if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < size) {
    chunks_.emplace_back().reserve(std::max(kChunkBytes, size));
  }
  std::string& chunk = chunks_.back();
  items_.push_back({chunks_.size() - 1, chunk.size(), sort_key.size(), size});
  chunk.append(sort_key).append(encoded_attributes);
}

void Items::AppendPart(ItemSink* part, std::size_t n) {
  const auto& items = static_cast<const Items&>(*part);
  for (std::size_t i = 0; i < n; ++i) Append(items[i].sort_key, items[i].encoded_attributes);
}

}  // namespace readingsd::query
