// Which devices exist, for the remote read's device matchers: the one place api/prometheus/
// enumerates devices.
#pragma once

#include <functional>
#include <string_view>

#include "base/status.h"
#include "storage/store.h"

namespace readingsd::api::prometheus {

// Calls `visit` with the id of every device that has a reading and whose id lies in
// [lower, upper] (bytewise; an empty `upper` bounds nothing), in id order, until it returns
// false. Reads the device registry (Store::ListDevices), not the partitions. Thread-safe.
Status ForEachDevice(const storage::Store& store, std::string_view lower, std::string_view upper,
                     const std::function<bool(std::string_view device_id)>& visit);

}  // namespace readingsd::api::prometheus
