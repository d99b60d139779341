#include "api/prometheus/devices.h"

#include <memory>
#include <string>

#include "storage/key.h"

namespace readingsd::api::prometheus {

Status ForEachDevice(const storage::Store& store, std::string_view lower, std::string_view upper,
                     const std::function<bool(std::string_view device_id)>& visit) {
  std::unique_ptr<storage::TableIterator> it = store.NewTableIterator();
  std::string device_id;
  for (it->Seek(lower, ""); it->Valid(); it->Seek(device_id, std::string_view(&storage::kSortKeyEnd, 1))) {
    device_id = it->device_id();
    if (!upper.empty() && device_id > upper) break;
    if (!visit(device_id)) break;
  }
  return it->status();
}

}  // namespace readingsd::api::prometheus
