#include "query/scan.h"

#include <vector>

#include "storage/key.h"

namespace readingsd::query {
namespace {

Status WrongSegment(const ScanRequest& request) {
  return Status::InvalidArgument(
      "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with "
      "correct Segment. TotalSegments: " +
      std::to_string(request.total_segments) + " Segment: " + std::to_string(request.segment));
}

Status CheckRequest(const ScanRequest& request) {
  if (request.total_segments < 1 || request.total_segments > kMaxTotalSegments ||
      request.segment >= request.total_segments) {
    return Status::InvalidArgument("Segment must be less than TotalSegments, which is 1 to 1000000");
  }
  if (!request.exclusive_start) return Status::OK();
  const ItemKey& start = *request.exclusive_start;
  if (Status s = storage::ValidateDeviceId(start.device_id); !s.ok()) {
    return Status::InvalidArgument("The provided starting key is invalid: " + s.message());
  }
  std::string normalised;
  if (!storage::NormalizeTimestamp(start.sort_key, &normalised).ok() || normalised != start.sort_key) {
    return Status::InvalidArgument(
        "The provided starting key is invalid: the sort key must be a LastEvaluatedKey "
        "(YYYY-MM-DDTHH:MM:SS.fffffffffZ)");
  }
  if (SegmentOf(start.device_id, request.total_segments) != request.segment) return WrongSegment(request);
  return Status::OK();
}

}  // namespace

uint32_t SegmentOf(std::string_view device_id, uint32_t total_segments) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : device_id) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  // FNV-1a leaves the top bits nearly alike for ids that differ only at the end ("sensor-1",
  // "sensor-2"): MurmurHash3's finaliser mixes every bit into them.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ull;
  hash ^= hash >> 33;
  // The hash space [0, 2^64) in total_segments equal ranges.
  return static_cast<uint32_t>((static_cast<unsigned __int128>(hash) * total_segments) >> 64);
}

bool CountScanItem(const ScanRequest& request, const ScanItem& item, bool returned, ScanSink* sink, ScanResult* result,
                   std::size_t* page_bytes) {
  ++result->scanned_count;
  result->scanned_bytes += item.item_bytes;
  *page_bytes += item.page_bytes;
  if (returned) {
    sink->Add(item);
    ++result->count;
  } else {
    sink->Pass(item);
  }
  if ((request.limit == 0 || result->scanned_count < request.limit) &&
      (request.max_page_bytes == 0 || *page_bytes < request.max_page_bytes)) {
    return false;
  }
  result->last_evaluated_key = ItemKey{std::string(item.device_id), std::string(item.sort_key)};
  return true;
}

Status Scan(const storage::Store& store, const ScanRequest& request, ScanSink* sink, ScanResult* result) {
  *result = ScanResult();
  if (Status s = CheckRequest(request); !s.ok()) return s;

  std::unique_ptr<storage::TableIterator> it = store.NewTableIterator();
  if (request.exclusive_start) {
    it->Seek(request.exclusive_start->device_id, request.exclusive_start->sort_key + '\0');
  } else {
    it->SeekToFirst();
  }
  const std::string past_partition(1, storage::kSortKeyEnd);
  std::string device_id;  // of the partition being read
  std::vector<storage::AttributeView> attributes;  // of the current item (and its key attributes for the filter)
  std::size_t page_bytes = 0;
  while (it->Valid()) {
    if (it->device_id() != device_id) {
      device_id = it->device_id();
      if ((request.total_segments > 1 && SegmentOf(device_id, request.total_segments) != request.segment) ||
          (request.device_wanted && !request.device_wanted(device_id))) {
        it->Seek(device_id, past_partition);
        continue;
      }
    }
    const std::string_view sort_key = it->sort_key();
    const std::string_view encoded = it->encoded_attributes();
    if (Status s = storage::ReadAttributes(encoded, &attributes); !s.ok()) {
      return Status::Corruption("reading " + storage::PartitionKey(device_id) + " " + std::string(sort_key) + ": " +
                                s.message());
    }
    const std::size_t item_bytes = storage::ItemSize(device_id, sort_key, attributes);
    if (result->partitions.empty() || result->partitions.back().device_id != device_id) {
      result->partitions.push_back({device_id});
    }
    ++result->partitions.back().items;
    result->partitions.back().bytes += item_bytes;
    bool returned = true;
    if (request.filter) {
      const std::size_t own = attributes.size();
      attributes.push_back({storage::kDeviceIdAttribute, std::string_view(device_id)});
      attributes.push_back({storage::kReadingTsAttribute, sort_key});
      returned = Matches(*request.filter, attributes);
      attributes.resize(own);
    }
    const ScanItem item{device_id, sort_key, encoded, attributes,
                        storage::EncodeKey(device_id, "").size() + sort_key.size() + encoded.size(), item_bytes};
    if (CountScanItem(request, item, returned, sink, result, &page_bytes)) break;
    it->Next();
  }
  return it->status();
}

}  // namespace readingsd::query
