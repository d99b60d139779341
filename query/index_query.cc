#include "query/index_query.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "storage/key.h"

namespace readingsd::query {
namespace {

// [lower, upper) of tails; "" = open. `kAfter` follows every tail that begins with a given
// value(sort): what comes after a value is a device id (printable ASCII).
constexpr char kAfter = '\xff';

struct TailRange {
  std::string lower, upper;
  bool empty() const { return !upper.empty() && lower >= upper; }
};

std::string Encoded(const storage::IndexValue& v) {
  std::string out;
  storage::AppendIndexValue(v, &out);
  return out;
}

// The least string above every string that begins with `prefix` ("" = none: open).
std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty() && prefix.back() == '\xff') prefix.pop_back();
  if (!prefix.empty()) ++prefix.back();
  return prefix;
}

TailRange RangeOf(const IndexSortCondition& c) {
  switch (c.op) {
    case SortKeyOp::kAll: return {};
    case SortKeyOp::kEq: return {Encoded(c.a), Encoded(c.a) + kAfter};
    case SortKeyOp::kLt: return {"", Encoded(c.a)};
    case SortKeyOp::kLe: return {"", Encoded(c.a) + kAfter};
    case SortKeyOp::kGt: return {Encoded(c.a) + kAfter, ""};
    case SortKeyOp::kGe: return {Encoded(c.a), ""};
    case SortKeyOp::kBetween: return {Encoded(c.a), Encoded(c.b) + kAfter};
    case SortKeyOp::kBeginsWith: {
      std::string prefix = Encoded(c.a);
      prefix.resize(prefix.size() - 2);  // the string's terminator
      std::string upper = PrefixSuccessor(prefix);
      return {std::move(prefix), std::move(upper)};
    }
  }
  return {};
}

bool SortIsNumber(const storage::IndexSpec& spec) { return spec.sort == storage::IndexSort::kNumber; }

Status CheckCondition(const storage::IndexSpec& spec, const IndexSortCondition& c) {
  if (c.op == SortKeyOp::kAll) return Status::OK();
  const bool number = SortIsNumber(spec);
  if (c.a.is_number != number || (c.op == SortKeyOp::kBetween && c.b.is_number != number)) {
    return Status::InvalidArgument(
        "One or more parameter values were invalid: Condition parameter type does not match schema type");
  }
  if (c.op == SortKeyOp::kBeginsWith && number) {
    return Status::InvalidArgument("Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
                                   "operator or function: begins_with, operand type: N");
  }
  if (c.op == SortKeyOp::kBetween && Encoded(c.a) > Encoded(c.b)) {
    return Status::InvalidArgument(
        "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to "
        "lower bound");
  }
  return Status::OK();
}

// The partitions one value stands for.
std::vector<std::string> PartitionsOf(const storage::IndexSpec& spec, const IndexQueryRequest& request,
                                      const std::string& value) {
  if (!request.all_shards || spec.shards == 1) return {value};
  std::vector<std::string> out;
  for (int i = 0; i < spec.shards; ++i) out.push_back(value + "#" + std::to_string(i));
  return out;
}

// The iterators of one value's partitions, merged: the current entry is the least (forward) or
// greatest (backward) tail among them (the first part's on a tie). Each part's tail is kept as a
// view until its iterator moves, so a step compares views instead of asking every iterator for
// its key again; a tournament over the parts makes a step log2(parts) comparisons, not parts - 1.
class Merged {
 public:
  Merged(const storage::Store& store, const storage::IndexSpec& spec, const IndexQueryRequest& request,
         const std::string& value, const TailRange& range)
      : request_(request) {
    for (std::string& partition : PartitionsOf(spec, request, value)) {
      auto it = store.NewIndexIterator(spec.name, partition, range.lower, range.upper);
      request.scan_forward ? it->SeekToFirst() : it->SeekToLast();
      const std::size_t prefix_size = storage::IndexPartitionPrefix(spec.name, partition).size();
      parts_.push_back({std::move(partition), prefix_size, std::move(it)});
      parts_.back().Settle(request);
    }
    while (leaves_ < parts_.size()) leaves_ *= 2;
    tree_.assign(2 * leaves_, kNone);
    for (std::size_t i = 0; i < parts_.size(); ++i) tree_[leaves_ + i] = i;
    for (std::size_t n = leaves_ - 1; n >= 1; --n) tree_[n] = Winner(tree_[2 * n], tree_[2 * n + 1]);
    Crown();
  }
  bool Valid() const { return current_ != nullptr; }
  const std::string& partition() const { return current_->partition; }
  // The stored key's bytes before the tail: the partition's prefix.
  std::size_t prefix_size() const { return current_->prefix_size; }
  std::string_view tail() const { return current_->tail; }
  std::string_view encoded_attributes() const { return current_->it->encoded_attributes(); }
  void Next() {
    request_.scan_forward ? current_->it->Next() : current_->it->Prev();
    current_->Settle(request_);
    for (std::size_t n = (leaves_ + static_cast<std::size_t>(current_ - parts_.data())) / 2; n >= 1; n /= 2) {
      tree_[n] = Winner(tree_[2 * n], tree_[2 * n + 1]);
    }
    Crown();
  }
  Status status() const {
    for (const Part& p : parts_) {
      if (Status s = p.it->status(); !s.ok()) return s;
    }
    return Status::OK();
  }
  // Counts the current entry, of `bytes`, in its partition's read (added to `reads` at its first).
  void CountRead(std::size_t bytes, std::vector<IndexPartitionRead>* reads) {
    if (current_->read == kNone) {
      current_->read = reads->size();
      reads->push_back({current_->partition});
    }
    IndexPartitionRead& read = (*reads)[current_->read];
    ++read.items;
    read.bytes += bytes;
  }

 private:
  static constexpr std::size_t kNone = ~std::size_t{0};
  struct Part {
    std::string partition;
    std::size_t prefix_size;
    std::unique_ptr<storage::PartitionIterator> it;
    bool valid = false;
    std::string_view tail;  // while valid: the iterator's key after the prefix
    std::size_t read = kNone;  // its place in the query's partitions_read, once it has one

    // Onto the next entry of a wanted device (IndexQueryRequest::device_wanted), from here on.
    void Settle(const IndexQueryRequest& request) {
      for (;;) {
        valid = it->Valid();
        if (!valid) return;
        tail = it->sort_key();
        std::string_view device_id, sort_key;
        // A bad key is the query's to report: it stops here.
        if (!request.device_wanted || !SplitIndexTail(tail, nullptr, &device_id, &sort_key) ||
            request.device_wanted(device_id)) {
          return;
        }
        request.scan_forward ? it->Next() : it->Prev();
      }
    }
  };
  // The part (or kNone) whose entry comes first of parts a and b's, a (the left) on a tie.
  std::size_t Winner(std::size_t a, std::size_t b) const {
    if (a == kNone || !parts_[a].valid) return b;
    if (b == kNone || !parts_[b].valid) return a;
    const std::string_view ta = parts_[a].tail, tb = parts_[b].tail;
    return (request_.scan_forward ? tb < ta : tb > ta) ? b : a;
  }
  void Crown() {
    const std::size_t root = tree_[1];
    current_ = root == kNone || !parts_[root].valid ? nullptr : &parts_[root];
  }

  const IndexQueryRequest& request_;
  std::vector<Part> parts_;
  // A winner tree: leaves at leaves_ .. leaves_ + parts - 1 (kNone past the parts), each inner
  // node n the winner of 2n and 2n + 1, the root at 1.
  std::size_t leaves_ = 1;
  std::vector<std::size_t> tree_;
  Part* current_ = nullptr;
};

// The range of value number `g`: narrowed past the start position in its own value.
TailRange GroupRange(const IndexQueryRequest& request, std::size_t g, std::size_t start_group, TailRange range) {
  if (!request.exclusive_start || g != start_group) return range;
  const std::string& tail = request.exclusive_start->tail;
  if (request.scan_forward) {
    std::string after = tail + '\0';
    if (after > range.lower) range.lower = std::move(after);
  } else if (range.upper.empty() || tail < range.upper) {
    range.upper = tail;
  }
  return range;
}

}  // namespace

bool CountEntry(const IndexQueryRequest& request, const IndexItem& item, bool in_page, IndexItemSink* sink,
                IndexQueryResult* result, std::size_t* page_bytes) {
  ++result->scanned_count;
  result->scanned_bytes += item.item_bytes;
  *page_bytes += item.page_bytes;
  if (in_page) {
    sink->Add(item);
    ++result->count;
  } else {
    sink->Pass(item);
  }
  return (request.limit != 0 && result->scanned_count >= request.limit) ||
         (request.max_page_bytes != 0 && *page_bytes >= request.max_page_bytes);
}

Status FindIndex(const storage::Store& store, std::string_view name, storage::IndexSpec* spec) {
  for (const storage::IndexStatus& index : store.Indexes()) {
    if (index.spec.name != name) continue;
    if (!index.active) {
      return Status::Unavailable("index " + std::string(name) + " is still being built (" +
                          std::to_string(static_cast<int>(index.built * 100)) + " %)");
    }
    *spec = index.spec;
    return Status::OK();
  }
  return Status::InvalidArgument("The table does not have the specified index: " + std::string(name));
}

std::string IndexTail(const storage::IndexValue& sort, std::string_view device_id, std::string_view sort_key) {
  std::string tail = Encoded(sort);
  tail += device_id;
  tail += storage::kSeparator;
  tail += sort_key;
  return tail;
}

bool SplitIndexTail(std::string_view tail, storage::IndexValue* sort, std::string_view* device_id,
                    std::string_view* sort_key) {
  if (!storage::ReadIndexValue(&tail, sort)) return false;
  // The sort key is the last kSortKeyLength bytes; a device id holds no SEP, so the one before
  // the sort key is the first.
  if (tail.size() <= storage::kSortKeyLength || tail[tail.size() - storage::kSortKeyLength - 1] != storage::kSeparator) {
    return false;
  }
  *device_id = tail.substr(0, tail.size() - storage::kSortKeyLength - 1);
  *sort_key = tail.substr(tail.size() - storage::kSortKeyLength);
  return storage::ValidateDeviceId(*device_id).ok();
}

Status IndexQuery(const storage::Store& store, const IndexQueryRequest& request, IndexItemSink* sink,
                  IndexQueryResult* result) {
  *result = IndexQueryResult();
  storage::IndexSpec spec;
  if (Status s = FindIndex(store, request.index, &spec); !s.ok()) return s;
  if (Status s = CheckCondition(spec, request.sort); !s.ok()) return s;
  const TailRange range = RangeOf(request.sort);
  std::size_t start_group = 0;
  if (request.exclusive_start) {
    auto at = std::find(request.values.begin(), request.values.end(), request.exclusive_start->value);
    storage::IndexValue sort;
    std::string_view device_id, sort_key;
    if (at == request.values.end() || !SplitIndexTail(request.exclusive_start->tail, &sort, &device_id, &sort_key) ||
        sort.is_number != SortIsNumber(spec)) {
      return Status::InvalidArgument("The provided starting key is invalid: it is not a LastEvaluatedKey of this query");
    }
    start_group = static_cast<std::size_t>(at - request.values.begin());
  }

  std::size_t page_bytes = 0;
  std::vector<storage::AttributeView> attributes;
  for (std::size_t g = start_group; g < request.values.size(); ++g) {
    const TailRange group_range = GroupRange(request, g, start_group, range);
    if (group_range.empty()) continue;
    Merged merged(store, spec, request, request.values[g], group_range);
    for (; merged.Valid(); merged.Next()) {
      const std::string_view tail = merged.tail();
      const std::string_view encoded = merged.encoded_attributes();
      std::string_view device_id, sort_key;
      if (!SplitIndexTail(tail, nullptr, &device_id, &sort_key)) {
        return Status::Corruption("index " + spec.name + " partition " + merged.partition() + " holds a bad key");
      }
      const std::string_view sort = tail.substr(0, tail.size() - device_id.size() - 1 - sort_key.size());
      if (Status s = storage::ReadAttributes(encoded, &attributes); !s.ok()) {
        return Status::Corruption("reading " + storage::PartitionKey(device_id) + " " + std::string(sort_key) +
                                  " in index " + spec.name + ": " + s.message());
      }
      const IndexItem item{request.values[g], merged.partition(), sort, device_id, sort_key, encoded, attributes,
                           merged.prefix_size() + tail.size() + encoded.size(),
                           storage::ItemSize(device_id, sort_key, attributes)};
      merged.CountRead(item.item_bytes, &result->partitions_read);
      const bool in_window = (request.readings_from.empty() || sort_key >= request.readings_from) &&
                             (request.readings_to.empty() || sort_key <= request.readings_to);
      if (!CountEntry(request, item, in_window && (!request.filter || Matches(*request.filter, attributes)), sink,
                      result, &page_bytes)) {
        continue;
      }
      IndexPosition last{request.values[g], std::string(tail)};
      bool more = request.key_when_full;
      if (!more) {  // peek: a next key only when an item follows, in this value or a later one
        merged.Next();
        more = merged.Valid();
        for (std::size_t h = g + 1; !more && h < request.values.size(); ++h) {
          more = Merged(store, spec, request, request.values[h], range).Valid();
        }
      }
      if (more) result->last_evaluated = std::move(last);
      return merged.status();
    }
    if (Status s = merged.status(); !s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace readingsd::query
