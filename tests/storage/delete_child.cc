// The process delete_test kills mid-delete: opens the store at argv[1] (DeleteTestOptions, with
// argv[3] readings per batch), deletes every reading of device argv[2], and once argv[4] batches
// are written prints "paused" and waits to be killed, inside DeleteReadings.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/storage/delete_fixture.h"

int main(int argc, char** argv) {
  using namespace readingsd::storage;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DIR DEVICE BATCH PAUSE_AFTER\n", argv[0]);
    return 2;
  }
  StoreOptions options = test::DeleteTestOptions(argv[1]);
  options.delete_batch = std::stoul(argv[3]);
  const unsigned long pause_after = std::stoul(argv[4]);
  std::unique_ptr<Store> store;
  if (readingsd::Status s = Store::Open(options, &store); !s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
    return 1;
  }
  unsigned long batches = 0;
  uint64_t deleted = 0;
  readingsd::Status s = store->DeleteReadings(argv[2], "", "", [&](uint64_t) {
    if (++batches < pause_after) return;
    std::printf("paused\n");
    std::fflush(stdout);
    for (;;) pause();
  }, &deleted);
  std::fprintf(stderr, "the delete ended before the kill: %s\n", s.ToString().c_str());
  return 1;
}
