#include "query/index_share.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "storage/key.h"

namespace readingsd::query {
namespace {

// A share: one byte, 1 when the node has more entries after these; then per entry one byte (1:
// in the page), its value, partition, tail and (in the page only) encoded attributes, each a
// 32-bit length and its bytes, then its page and item bytes, 64 bits each; little-endian.
void PutNumber(uint64_t n, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(n >> (8 * i)));
}
void PutString(std::string_view s, std::string* out) {
  PutNumber(s.size(), 4, out);
  out->append(s);
}
bool GetNumber(std::string_view* in, int bytes, uint64_t* n) {
  if (in->size() < static_cast<std::size_t>(bytes)) return false;
  *n = 0;
  for (int i = 0; i < bytes; ++i) *n |= uint64_t{static_cast<unsigned char>((*in)[i])} << (8 * i);
  in->remove_prefix(bytes);
  return true;
}
bool GetString(std::string_view* in, std::string_view* s) {
  uint64_t size = 0;
  if (!GetNumber(in, 4, &size) || in->size() < size) return false;
  *s = in->substr(0, size);
  in->remove_prefix(size);
  return true;
}

struct Entry {
  std::size_t group = 0;  // its value's place in the request's values
  bool in_page = false;
  std::string_view value, partition, tail, encoded;
  uint64_t page_bytes = 0, item_bytes = 0;
};

// Appends the entries of `share` to `entries`; *last gets its last entry's place when the node has
// more after it.
bool DecodeShare(const IndexQueryRequest& request, std::string_view share, std::vector<Entry>* entries,
                 std::optional<std::size_t>* last) {
  uint64_t more = 0;
  if (!GetNumber(&share, 1, &more)) return false;
  while (!share.empty()) {
    Entry e;
    uint64_t in_page = 0;
    if (!GetNumber(&share, 1, &in_page) || !GetString(&share, &e.value) || !GetString(&share, &e.partition) ||
        !GetString(&share, &e.tail) || (in_page == 1 && !GetString(&share, &e.encoded)) ||
        !GetNumber(&share, 8, &e.page_bytes) || !GetNumber(&share, 8, &e.item_bytes)) {
      return false;
    }
    e.in_page = in_page == 1;
    const auto at = std::find(request.values.begin(), request.values.end(), e.value);
    if (at == request.values.end()) return false;
    e.group = static_cast<std::size_t>(at - request.values.begin());
    entries->push_back(e);
  }
  *last = more == 1 && !entries->empty() ? std::optional<std::size_t>(entries->size() - 1) : std::nullopt;
  return true;
}

}  // namespace

void IndexShareWriter::Append(const IndexItem& item, bool in_page) {
  entries_.push_back(in_page ? 1 : 0);
  PutString(item.value, &entries_);
  PutString(item.partition, &entries_);
  PutNumber(item.sort.size() + item.device_id.size() + 1 + item.sort_key.size(), 4, &entries_);
  entries_.append(item.sort).append(item.device_id).append(1, storage::kSeparator).append(item.sort_key);
  if (in_page) PutString(item.encoded_attributes, &entries_);
  PutNumber(item.page_bytes, 8, &entries_);
  PutNumber(item.item_bytes, 8, &entries_);
}

std::string IndexShareWriter::Finish(const IndexQueryResult& result) && {
  std::string out(1, result.last_evaluated ? 1 : 0);
  return out + entries_;
}

Status MergeIndexShares(const IndexQueryRequest& request, std::span<const std::string> shares, IndexItemSink* sink,
                        IndexQueryResult* result) {
  *result = IndexQueryResult();
  std::vector<Entry> entries;
  std::vector<std::size_t> lasts;  // of the shares whose node has more
  for (const std::string& share : shares) {
    std::optional<std::size_t> last;
    if (!DecodeShare(request, share, &entries, &last)) {
      return Status::Corruption("a node's share of index " + request.index + "'s query is not one");
    }
    if (last) lasts.push_back(*last);
  }
  // The page's order: value by value as given, each value's entries (every shard's, every
  // node's: no two hold one tail) by tail, as IndexQuery reads them.
  const auto before = [&request](const Entry& a, const Entry& b) {
    if (a.group != b.group) return a.group < b.group;
    return request.scan_forward ? a.tail < b.tail : a.tail > b.tail;
  };
  // A node with more has read nothing past its last entry: the page cannot go further (it ends
  // before there anyway when every node reads `limit` entries and max_page_bytes alike).
  std::optional<Entry> bound;
  for (std::size_t i : lasts) {
    if (!bound || before(entries[i], *bound)) bound = entries[i];
  }
  std::sort(entries.begin(), entries.end(), before);
  std::size_t page_bytes = 0;
  const Entry* last = nullptr;
  std::vector<storage::AttributeView> attributes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (bound && before(*bound, e)) break;
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
    last = &e;
    if (CountEntry(request, item, e.in_page, sink, result, &page_bytes)) {
      if (request.key_when_full || i + 1 < entries.size() || !lasts.empty()) {
        result->last_evaluated = IndexPosition{std::string(e.value), std::string(e.tail)};
      }
      return Status::OK();
    }
  }
  if (bound && last) result->last_evaluated = IndexPosition{std::string(last->value), std::string(last->tail)};
  return Status::OK();
}

}  // namespace readingsd::query
