#include "query/query.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "storage/key.h"

namespace readingsd::query {
namespace {

// [lower, upper) in sort-key byte order; an empty bound is the partition's own start / end.
struct SortKeyRange {
  std::string lower;
  std::string upper;

  bool empty() const { return !lower.empty() && !upper.empty() && lower >= upper; }
};

// The least byte string greater than `key`. Sort keys are fixed width, so no other sort key
// begins with `key`: as an exclusive upper bound key + '\0' admits `key`, as a lower bound it
// excludes exactly `key`.
std::string Successor(std::string_view key) {
  std::string next(key);
  next.push_back('\0');
  return next;
}

// The smallest string greater than every string beginning with `prefix`. A sort-key prefix holds
// only ASCII digits and "-T:.Z", so incrementing its last byte never overflows. An empty prefix
// has no bound ("" = end of partition).
std::string PrefixSuccessor(std::string_view prefix) {
  std::string next(prefix);
  if (!next.empty()) ++next.back();
  return next;
}

SortKeyRange RangeOf(const KeyCondition& key) {
  switch (key.op) {
    case SortKeyOp::kAll: return {};
    case SortKeyOp::kEq: return {key.a, Successor(key.a)};
    case SortKeyOp::kLt: return {"", key.a};
    case SortKeyOp::kLe: return {"", Successor(key.a)};
    case SortKeyOp::kGt: return {Successor(key.a), ""};
    case SortKeyOp::kGe: return {key.a, ""};
    case SortKeyOp::kBetween: return {key.a, Successor(key.b)};
    case SortKeyOp::kBeginsWith: return {key.a, PrefixSuccessor(key.a)};
  }
  return {};
}

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

Status ValidateExclusiveStart(std::string_view sort_key) {
  std::string normalised;
  if (sort_key.size() == storage::kSortKeyLength &&
      storage::NormalizeTimestamp(sort_key, &normalised).ok() && normalised == sort_key) {
    return Status::OK();
  }
  return Status::InvalidArgument(
      "The provided starting key is invalid: the sort key must be a LastEvaluatedKey "
      "(YYYY-MM-DDTHH:MM:SS.fffffffffZ)");
}

}  // namespace

Status MakeKeyCondition(std::string_view device_id, SortKeyOp op, std::string_view a,
                        std::string_view b, KeyCondition* condition) {
  if (Status s = storage::ValidateDeviceId(device_id); !s.ok()) return s;
  const bool uses_a = op != SortKeyOp::kAll;
  const bool uses_b = op == SortKeyOp::kBetween;
  // A value the operator ignores is a caller's mistake, not something to drop silently.
  if (!uses_a && !a.empty()) {
    return Status::InvalidArgument("a query of the whole partition takes no sort key value");
  }
  if (!uses_b && !b.empty()) return Status::InvalidArgument("only BETWEEN takes an upper bound");

  KeyCondition result;
  result.device_id = std::string(device_id);
  result.op = op;
  if (op == SortKeyOp::kBeginsWith) {
    if (Status s = storage::ValidateSortKeyPrefix(a); !s.ok()) return s;
    result.a = std::string(a);
  } else if (uses_a) {
    if (Status s = storage::NormalizeTimestamp(a, &result.a); !s.ok()) return s;
  }
  if (uses_b) {
    if (Status s = storage::NormalizeTimestamp(b, &result.b); !s.ok()) return s;
    if (result.a > result.b) {
      return Status::InvalidArgument(
          "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be "
          "greater than or equal to lower bound; lower bound operand: AttributeValue: {S:" +
          result.a + "}, upper bound operand: AttributeValue: {S:" + result.b + "}");
    }
  }
  *condition = std::move(result);
  return Status::OK();
}

Status Query(const storage::Store& store, const QueryRequest& request, QueryResult* result, ItemSink* sink) {
  *result = QueryResult();
  if (sink == nullptr) sink = &result->items;
  const KeyCondition& key = request.key;
  SortKeyRange range = RangeOf(key);
  if (!request.exclusive_start.empty()) {
    if (Status s = ValidateExclusiveStart(request.exclusive_start); !s.ok()) return s;
    ResumeAfter(request.exclusive_start, request.scan_forward, &range);
  }
  if (range.empty()) return Status::OK();

  std::unique_ptr<storage::PartitionIterator> it =
      store.NewIterator(key.device_id, range.lower, range.upper);
  if (request.scan_forward) {
    it->SeekToFirst();
  } else {
    it->SeekToLast();
  }
  auto advance = [&] { request.scan_forward ? it->Next() : it->Prev(); };

  // Every stored key is this prefix plus a sort key; its size counts towards max_page_bytes.
  const std::size_t key_prefix_bytes = storage::EncodeKey(key.device_id, "").size();
  std::size_t page_bytes = 0;
  std::vector<storage::AttributeView> attributes;  // of the current item, reused
  for (; it->Valid(); advance()) {
    const std::string_view sort_key = it->sort_key();
    const std::string_view encoded = it->encoded_attributes();
    // Read whole here, so a damaged value is an error naming the item, not a half-rendered page.
    Status s = storage::ReadAttributes(encoded, &attributes);
    if (!s.ok()) {
      return Status::Corruption("reading " + storage::PartitionKey(key.device_id) + " " + std::string(sort_key) +
                                ": " + s.message());
    }
    ++result->scanned_count;
    result->scanned_bytes += storage::ItemSize(key.device_id, sort_key, attributes);
    page_bytes += key_prefix_bytes + sort_key.size() + encoded.size();
    if (!request.filter || Matches(*request.filter, attributes)) {
      sink->Add(sort_key, encoded, attributes);
      ++result->count;
    }
    const bool page_full = (request.limit != 0 && result->scanned_count >= request.limit) ||
                           (request.max_page_bytes != 0 && page_bytes >= request.max_page_bytes);
    if (page_full) {
      std::string last_read(it->sort_key());
      advance();  // peek: a next key only when there is a next item
      if (it->Valid()) result->last_evaluated_sort_key = std::move(last_read);
      break;
    }
  }
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

}  // namespace readingsd::query
