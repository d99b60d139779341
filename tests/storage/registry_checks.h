// Checks shared by the storage tests of the device registry.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "storage/store.h"

namespace readingsd::storage::test {

// The store lists exactly the devices of `truth`, each with its count, first and last sort key
// and latest reading (as each device's partition holds them).
inline void ExpectListingIs(const Store& store, const std::map<std::string, DeviceSummary>& truth) {
  std::vector<DeviceSummary> listed;
  ASSERT_TRUE(store.ListDevices("", "", 1000, &listed).ok());
  ASSERT_EQ(listed.size(), truth.size());
  for (const DeviceSummary& d : listed) {
    SCOPED_TRACE(d.device_id);
    auto t = truth.find(d.device_id);
    ASSERT_NE(t, truth.end());
    EXPECT_EQ(d.readings, t->second.readings);
    EXPECT_EQ(d.first_sort_key, t->second.first_sort_key);
    EXPECT_EQ(d.last_sort_key, t->second.last_sort_key);
    EXPECT_EQ(d.latest, t->second.latest);
  }
}

}  // namespace readingsd::storage::test
