#include "api/prometheus/devices.h"

#include <string>
#include <vector>

#include "storage/key.h"

namespace readingsd::api::prometheus {
namespace {

constexpr std::size_t kPage = 1000;

// ListDevices' `after` is exclusive: a string above every valid id below `lower` and below
// `lower` itself. Ids are at most kMaxDeviceIdLength bytes, each below 0x7f.
std::string JustBelow(std::string_view lower) {
  if (lower.empty()) return "";
  std::string after(lower.substr(0, lower.size() - 1));
  if (lower.back() != '\0') {
    after.push_back(static_cast<char>(lower.back() - 1));
    after.append(storage::kMaxDeviceIdLength, '\x7f');
  }
  return after;
}

}  // namespace

Status ForEachDevice(const storage::Store& store, std::string_view lower, std::string_view upper,
                     const std::function<bool(std::string_view device_id)>& visit) {
  std::string after = JustBelow(lower);
  std::vector<storage::DeviceSummary> page;
  do {
    page.clear();
    if (Status s = store.ListDevices("", after, kPage, &page); !s.ok()) return s;
    for (const storage::DeviceSummary& device : page) {
      if (device.device_id < lower) continue;
      if (!upper.empty() && device.device_id > upper) return Status::OK();
      if (!visit(device.device_id)) return Status::OK();
    }
    if (!page.empty()) after = page.back().device_id;
  } while (page.size() == kPage);
  return Status::OK();
}

}  // namespace readingsd::api::prometheus
