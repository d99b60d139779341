#include "query/index_share.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "query/share_wire.h"
#include "storage/key.h"

namespace readingsd::query {
namespace {

// A share (share_wire.h): per entry its value, partition and tail.
struct Entry : share_wire::EntryBase {
  std::size_t group = 0;  // its value's place in the request's values
  std::string_view value, partition, tail;
};

}  // namespace

void IndexShareWriter::Append(const IndexItem& item, bool in_page) {
  entries_.push_back(in_page ? 1 : 0);
  share_wire::PutString(item.value, &entries_);
  share_wire::PutString(item.partition, &entries_);
  share_wire::PutNumber(item.sort.size() + item.device_id.size() + 1 + item.sort_key.size(), 4, &entries_);
  entries_.append(item.sort).append(item.device_id).append(1, storage::kSeparator).append(item.sort_key);
  share_wire::PutEntryEnd(in_page, item.encoded_attributes, item.page_bytes, item.item_bytes, &entries_);
}

std::string IndexShareWriter::Finish(const IndexQueryResult& result) && {
  return share_wire::Seal(result.last_evaluated.has_value(), entries_);
}

Status MergeIndexShares(const IndexQueryRequest& request, std::span<const std::string> shares, IndexItemSink* sink,
                        IndexQueryResult* result) {
  *result = IndexQueryResult();
  std::vector<Entry> entries;
  std::vector<std::size_t> lasts;  // of the shares whose node has more
  // An entry's keys; its value must be one of the request's.
  const auto keys = [&request](std::string_view* in, Entry* e) {
    if (!share_wire::GetString(in, &e->value) || !share_wire::GetString(in, &e->partition) ||
        !share_wire::GetString(in, &e->tail)) {
      return false;
    }
    const auto at = std::find(request.values.begin(), request.values.end(), e->value);
    e->group = static_cast<std::size_t>(at - request.values.begin());
    return at != request.values.end();
  };
  if (!share_wire::DecodeShares(shares, keys, &entries, &lasts)) {
    return Status::Corruption("a node's share of index " + request.index + "'s query is not one");
  }
  // The page's order: value by value as given, each value's entries (every shard's, every
  // node's: no two hold one tail) by tail, as IndexQuery reads them.
  const auto before = [&request](const Entry& a, const Entry& b) {
    if (a.group != b.group) return a.group < b.group;
    return request.scan_forward ? a.tail < b.tail : a.tail > b.tail;
  };
  std::size_t page_bytes = 0;
  std::vector<storage::AttributeView> attributes;
  const auto count = [&](const Entry& e, bool followed, bool* full) {
    std::string_view device_id, sort_key;
    if (!SplitIndexTail(e.tail, nullptr, &device_id, &sort_key)) {
      return Status::Corruption("a node's share of index " + request.index + "'s query holds a bad key");
    }
    attributes.clear();
    if (e.in_page) {
      if (Status s = storage::ReadAttributes(e.encoded, &attributes); !s.ok()) return s;
    }
    const IndexItem item{e.value,    e.partition, e.tail.substr(0, e.tail.size() - device_id.size() - 1 - sort_key.size()),
                         device_id,  sort_key,    e.encoded,
                         attributes, e.page_bytes, e.item_bytes};
    *full = CountEntry(request, item, e.in_page, sink, result, &page_bytes);
    if (*full && (request.key_when_full || followed)) {
      result->last_evaluated = IndexPosition{std::string(e.value), std::string(e.tail)};
    }
    return Status::OK();
  };
  std::optional<Entry> cut;
  if (Status s = share_wire::MergeEntries(std::move(entries), lasts, before, count, &cut); !s.ok()) return s;
  if (cut) result->last_evaluated = IndexPosition{std::string(cut->value), std::string(cut->tail)};
  return Status::OK();
}

}  // namespace readingsd::query
