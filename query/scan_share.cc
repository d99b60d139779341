#include "query/scan_share.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "query/share_wire.h"
#include "storage/key.h"

namespace readingsd::query {
namespace {

// A share (share_wire.h): per item its device id and sort key.
struct Entry : share_wire::EntryBase {
  std::string_view device_id, sort_key;
};

bool GetKeys(std::string_view* in, Entry* e) {
  return share_wire::GetString(in, &e->device_id) && share_wire::GetString(in, &e->sort_key);
}

}  // namespace

void ScanShareWriter::Append(const ScanItem& item, bool in_page) {
  items_.push_back(in_page ? 1 : 0);
  share_wire::PutString(item.device_id, &items_);
  share_wire::PutString(item.sort_key, &items_);
  share_wire::PutEntryEnd(in_page, item.encoded_attributes, item.page_bytes, item.item_bytes, &items_);
}

std::string ScanShareWriter::Finish(const ScanResult& result) && {
  return share_wire::Seal(result.last_evaluated_key.has_value(), items_);
}

Status MergeScanShares(const ScanRequest& request, std::span<const std::string> shares, ScanSink* sink,
                       ScanResult* result) {
  *result = ScanResult();
  std::vector<Entry> entries;
  std::vector<std::size_t> lasts;  // of the shares whose node has more
  if (!share_wire::DecodeShares(shares, GetKeys, &entries, &lasts)) {
    return Status::Corruption("a node's share of a Scan is not one");
  }
  // The table's key order (storage/key.h: the device id, a separator below any of its bytes, the
  // sort key): by device id bytewise, then sort key. No two nodes hold one device.
  const auto before = [](const Entry& a, const Entry& b) {
    return a.device_id != b.device_id ? a.device_id < b.device_id : a.sort_key < b.sort_key;
  };
  std::size_t page_bytes = 0;
  std::vector<storage::AttributeView> attributes;
  const auto count = [&](const Entry& e, bool, bool* full) {
    attributes.clear();
    if (e.in_page) {
      if (Status s = storage::ReadAttributes(e.encoded, &attributes); !s.ok()) return s;
    }
    const ScanItem item{e.device_id, e.sort_key, e.encoded, attributes, e.page_bytes, e.item_bytes};
    *full = CountScanItem(request, item, e.in_page, sink, result, &page_bytes);
    return Status::OK();
  };
  std::optional<Entry> cut;
  if (Status s = share_wire::MergeEntries(std::move(entries), lasts, before, count, &cut); !s.ok()) return s;
  if (cut) result->last_evaluated_key = ItemKey{std::string(cut->device_id), std::string(cut->sort_key)};
  return Status::OK();
}

}  // namespace readingsd::query
