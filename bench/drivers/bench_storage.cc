// bench_storage: readingsd's fastest bulk path, storage::Store::Write in batches.
//
//   bench_storage --dir DIR --count N --devices D [--pad P] [--batch 1000] [--no-compact] [--sort-batch]
//
// Every reading is generated and converted to a storage::Reading first (attributes as the
// ingest path stores them: parsed from the JSON object, so in name order: humidity, pad,
// temperature), then only the Write calls are timed: one WriteBatch of --batch readings each,
// with the daemon's default store options (no fsync, 64 MB memtable, 64 MB block cache). A
// reading is durable against a process crash and queryable once its Write returned. Then
// CompactAll (flush + full compaction) is timed separately so the caller can measure the
// directory. Prints key=value lines.
//
// --sort-batch is an experiment, not what readingsd does: each batch is sorted by key (inside the
// clock) before Write, to show what key order is worth to RocksDB's memtable inserts.
#include <algorithm>
#include <iostream>
#include <tuple>

#include "bench/drivers/common.h"
#include "storage/key.h"
#include "storage/reading.h"
#include "storage/store.h"

int main(int argc, char** argv) {
  using namespace readingsd;
  try {
    bench::Flags f(argc, argv);
    const std::string dir = f.Str("dir");
    if (dir.empty()) {
      std::cerr << "usage: bench_storage --dir DIR --count N --devices D [--pad P] [--batch B]\n";
      return 2;
    }
    tools::GeneratorOptions g = bench::GeneratorFrom(f);
    const auto batch = static_cast<std::size_t>(f.Int("batch", 1000));

    std::vector<storage::Reading> readings;
    readings.reserve(g.count);
    {
      tools::ReadingGenerator gen(g);
      tools::GeneratedMessage m;
      const std::string pad(g.payload_pad, 'x');
      while (gen.Next(&m)) {
        for (const auto& r : m.readings) {
          storage::Reading out;
          out.device_id = r.device_id;
          if (Status s = storage::NormalizeTimestamp(r.reading_ts, &out.sort_key); !s.ok()) {
            std::cerr << "bench_storage: " << s.ToString() << "\n";
            return 1;
          }
          out.attributes.push_back({"humidity", r.humidity});
          if (!pad.empty()) out.attributes.push_back({"pad", pad});
          out.attributes.push_back({"temperature", r.temperature});
          readings.push_back(std::move(out));
        }
      }
    }

    {  // the logical size of what is stored, for db_bench's --key_size / --value_size
      double key_bytes = 0, value_bytes = 0;
      std::string value;
      for (const auto& r : readings) {
        key_bytes += static_cast<double>(storage::EncodeKey(r.device_id, r.sort_key).size());
        storage::EncodeAttributes(r.attributes, &value);
        value_bytes += static_cast<double>(value.size());
      }
      const double n = static_cast<double>(readings.size());
      std::printf("key_bytes=%.1f value_bytes=%.1f\n", key_bytes / n, value_bytes / n);
    }

    storage::StoreOptions options;
    options.path = dir;
    std::unique_ptr<storage::Store> store;
    if (Status s = storage::Store::Open(options, &store); !s.ok()) {
      std::cerr << "bench_storage: " << s.ToString() << "\n";
      return 1;
    }
    const bool sort_batch = f.Has("sort-batch");
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < readings.size(); i += batch) {
      const std::size_t n = std::min(batch, readings.size() - i);
      if (sort_batch) {
        std::sort(readings.begin() + static_cast<std::ptrdiff_t>(i), readings.begin() + static_cast<std::ptrdiff_t>(i + n),
                  [](const storage::Reading& a, const storage::Reading& b) {
                    return std::tie(a.device_id, a.sort_key) < std::tie(b.device_id, b.sort_key);
                  });
      }
      if (Status s = store->Write(std::span<const storage::Reading>(readings.data() + i, n)); !s.ok()) {
        std::cerr << "bench_storage: " << s.ToString() << "\n";
        return 1;
      }
    }
    const double write_s = bench::Seconds(std::chrono::steady_clock::now() - t0);
    std::printf("readings=%zu batch=%zu write_seconds=%.3f rate=%.0f\n", readings.size(), batch, write_s,
                static_cast<double>(readings.size()) / write_s);
    std::fflush(stdout);
    if (!f.Has("no-compact")) {
      const auto t1 = std::chrono::steady_clock::now();
      if (Status s = store->CompactAll(); !s.ok()) {
        std::cerr << "bench_storage: " << s.ToString() << "\n";
        return 1;
      }
      storage::StoreStats st = store->Stats();
      std::printf("compact_seconds=%.3f sst_bytes=%llu estimated_keys=%llu\n",
                  bench::Seconds(std::chrono::steady_clock::now() - t1),
                  static_cast<unsigned long long>(st.sst_bytes), static_cast<unsigned long long>(st.estimated_keys));
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_storage: " << e.what() << "\n";
    return 1;
  }
}
