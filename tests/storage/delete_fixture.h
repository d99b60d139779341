// What tests/storage/delete_test.cc and its child (delete_child.cc) both open: a store with two
// indexes, so that a delete has entries to remove, and its readings.
#pragma once

#include <string>

#include "storage/key.h"
#include "storage/store.h"

namespace readingsd::storage::test {

inline StoreOptions DeleteTestOptions(std::string path) {
  StoreOptions options;
  options.path = std::move(path);
  options.delete_batch = 3;
  options.indexes = {IndexSpec{.name = "hot_by_hour", .sort_attribute = "temperature"},
                     IndexSpec{.name = "by_status", .partition = IndexPartition::kAttribute,
                               .partition_attribute = "status", .sort = IndexSort::kReadingTs}};
  return options;
}

// Reading `i` of `device`: one a second from 2026-06-23T08:00:00Z, temperature i, and every even
// one with status "alarm" (so some readings have an entry in by_status and some not).
inline Reading DeleteTestReading(const std::string& device, int i, double temperature) {
  std::string sort_key;
  SortKeyAtWholeSeconds(1782201600 + i, &sort_key);
  Reading r{device, sort_key, {{"temperature", temperature}}};
  if (i % 2 == 0) r.attributes.push_back({"status", std::string("alarm")});
  return r;
}

}  // namespace readingsd::storage::test
