// What the shares of a request merged across nodes have in common (index_share.h, scan_share.h):
// their wire form's numbers and strings, and the merge of their entries into the single-node page.
// Internal to the query library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace readingsd::query::share_wire {

// Little-endian numbers of `bytes` bytes; strings as a 32-bit length and their bytes.
inline void PutNumber(uint64_t n, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(n >> (8 * i)));
}
inline void PutString(std::string_view s, std::string* out) {
  PutNumber(s.size(), 4, out);
  out->append(s);
}
inline bool GetNumber(std::string_view* in, int bytes, uint64_t* n) {
  if (in->size() < static_cast<std::size_t>(bytes)) return false;
  *n = 0;
  for (int i = 0; i < bytes; ++i) *n |= uint64_t{static_cast<unsigned char>((*in)[i])} << (8 * i);
  in->remove_prefix(bytes);
  return true;
}
inline bool GetString(std::string_view* in, std::string_view* s) {
  uint64_t size = 0;
  if (!GetNumber(in, 4, &size) || in->size() < size) return false;
  *s = in->substr(0, size);
  in->remove_prefix(size);
  return true;
}

// A share: one byte, 1 when the node has more entries after these; then per entry one byte (1:
// in the page), its keys (the share's own), then EntryBase: its encoded attributes (in the page
// only) and its page and item bytes, 64 bits each.
struct EntryBase {
  bool in_page = false;
  std::string_view encoded;  // the item's attributes, in the page only
  uint64_t page_bytes = 0, item_bytes = 0;
};

// An entry's part after its keys.
inline void PutEntryEnd(bool in_page, std::string_view encoded, uint64_t page_bytes, uint64_t item_bytes,
                        std::string* out) {
  if (in_page) PutString(encoded, out);
  PutNumber(page_bytes, 8, out);
  PutNumber(item_bytes, 8, out);
}

// The share of `entries` (each written as above), `more` when the node has more after them.
inline std::string Seal(bool more, std::string_view entries) { return std::string(1, more ? 1 : 0).append(entries); }

// Appends every share's entries to `entries` (`keys(&in, &entry)` reads one entry's keys) and to
// `lasts` the places of the last entries of the shares whose node has more; false when a share
// is not one.
template <class Entry, class Keys>
bool DecodeShares(std::span<const std::string> shares, Keys keys, std::vector<Entry>* entries,
                  std::vector<std::size_t>* lasts) {
  for (std::string_view share : shares) {
    uint64_t more = 0;
    if (!GetNumber(&share, 1, &more)) return false;
    const std::size_t first = entries->size();
    while (!share.empty()) {
      Entry e;
      uint64_t in_page = 0;
      if (!GetNumber(&share, 1, &in_page) || !keys(&share, &e) || (in_page == 1 && !GetString(&share, &e.encoded)) ||
          !GetNumber(&share, 8, &e.page_bytes) || !GetNumber(&share, 8, &e.item_bytes)) {
        return false;
      }
      e.in_page = in_page == 1;
      entries->push_back(e);
    }
    if (more == 1 && entries->size() > first) lasts->push_back(entries->size() - 1);
  }
  return true;
}

// Walks every share's `entries` in the page's order (`before`: no two nodes hold one entry) to
// where the single-node page ends. `lasts`: the places of the last entries of the shares whose
// node has more. `count(entry, followed, &full)` counts one entry (`followed`: whether an entry may
// come after it) and sets `full` when the page is full after it. A node with more has read
// nothing past its last entry, so the walk stops there (the page ends before anyway, as every
// node reads `limit` entries and max_page_bytes alike); *cut then gets the last entry counted:
// the page's last evaluated key.
template <class Entry, class Before, class Count>
Status MergeEntries(std::vector<Entry> entries, std::span<const std::size_t> lasts, Before before, Count count,
                    std::optional<Entry>* cut) {
  cut->reset();
  std::optional<Entry> bound;
  for (std::size_t i : lasts) {
    if (!bound || before(entries[i], *bound)) bound = entries[i];
  }
  std::sort(entries.begin(), entries.end(), before);
  const Entry* last = nullptr;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (bound && before(*bound, entries[i])) break;
    bool full = false;
    if (Status s = count(entries[i], i + 1 < entries.size() || !lasts.empty(), &full); !s.ok()) return s;
    if (full) return Status::OK();
    last = &entries[i];
  }
  if (bound && last) *cut = *last;
  return Status::OK();
}

}  // namespace readingsd::query::share_wire
