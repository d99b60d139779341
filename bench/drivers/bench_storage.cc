// bench_storage: readingsd's fastest bulk path, storage::Store::Write in batches.
//
//   bench_storage --dir DIR --count N --devices D [--pad P] [--batch 1000] [--no-compact] [--sort-batch]
//                 [--rss-every K]
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
//
// --rss-every K is the storage layer's memory soak: readings are generated and written batch by
// batch instead of all up front (so the process holds only the store), and the process's VmRSS
// is printed every K readings ("rss readings=… mb=… memtable_mb=… block_cache_mb=…"), then its min /
// median / max from the first sample with the block cache 90 % full (and not before the second
// half of the run). No CompactAll.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <tuple>

#include "bench/drivers/common.h"
#include "storage/key.h"
#include "storage/reading.h"
#include "storage/store.h"

namespace {

double RssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  }
  return 0;
}

// The daemon's default store options at `dir`; throws what Open says.
std::unique_ptr<readingsd::storage::Store> OpenStore(const std::string& dir) {
  readingsd::storage::StoreOptions options;
  options.path = dir;
  std::unique_ptr<readingsd::storage::Store> store;
  if (auto s = readingsd::storage::Store::Open(options, &store); !s.ok()) throw std::runtime_error(s.ToString());
  return store;
}

template <typename Convert>
int MemorySoak(const std::string& dir, const readingsd::tools::GeneratorOptions& g, std::size_t batch,
               std::int64_t every, Convert convert) {
  using namespace readingsd;
  std::unique_ptr<storage::Store> store = OpenStore(dir);
  std::vector<storage::Reading> pending;
  std::uint64_t written = 0;
  auto write_pending = [&] {
    if (Status s = store->Write(pending); !s.ok()) throw std::runtime_error(s.ToString());
    written += pending.size();
    pending.clear();
  };
  tools::ReadingGenerator gen(g);
  tools::GeneratedMessage m;
  std::vector<double> samples;
  std::size_t cache_full_at = 0;  // first sample with the block cache 90 % full
  const auto t0 = std::chrono::steady_clock::now();
  while (gen.Next(&m)) {
    for (const auto& r : m.readings) {
      pending.push_back(convert(r));
      if (pending.size() < batch) continue;
      write_pending();
      if (written % static_cast<std::uint64_t>(every) < batch) {
        samples.push_back(RssMb());
        const storage::StoreStats st = store->Stats();
        if (cache_full_at == 0 && st.block_cache_bytes * 10 >= st.block_cache_capacity_bytes * 9) {
          cache_full_at = samples.size();
        }
        std::printf("rss readings=%llu mb=%.1f memtable_mb=%.1f block_cache_mb=%.1f\n",
                    static_cast<unsigned long long>(written), samples.back(), st.memtable_bytes / 1048576.0,
                    st.block_cache_bytes / 1048576.0);
        std::fflush(stdout);
      }
    }
  }
  if (!pending.empty()) write_pending();
  std::printf("readings=%llu seconds=%.1f\n", static_cast<unsigned long long>(g.count),
              bench::Seconds(std::chrono::steady_clock::now() - t0));
  // RSS grows until the block cache is full (it fills with index and filter blocks as files are
  // written), so it is judged from then on, and never on the first half.
  if (cache_full_at == 0) {
    std::printf("block cache never 90 %% full: RSS not judged, run longer\n");
    return 0;
  }
  std::vector<double> steady(samples.begin() + static_cast<std::ptrdiff_t>(std::max(cache_full_at - 1, samples.size() / 2)),
                             samples.end());
  std::sort(steady.begin(), steady.end());
  const double median = steady[steady.size() / 2];
  std::printf("rss_after_cache_full samples=%zu min=%.1f median=%.1f max=%.1f min/median=%.3f max/median=%.3f\n",
              steady.size(), steady.front(), median, steady.back(), steady.front() / median, steady.back() / median);
  return 0;
}

}  // namespace

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

    const std::string pad(g.payload_pad, 'x');
    // A generated reading as the ingest path stores it.
    auto stored = [&pad](const tools::GeneratedReading& r) {
      storage::Reading out;
      out.device_id = r.device_id;
      if (Status s = storage::NormalizeTimestamp(r.reading_ts, &out.sort_key); !s.ok()) {
        throw std::runtime_error(s.ToString());
      }
      out.attributes.push_back({"humidity", r.humidity});
      if (!pad.empty()) out.attributes.push_back({"pad", pad});
      out.attributes.push_back({"temperature", r.temperature});
      return out;
    };
    if (f.Has("rss-every")) return MemorySoak(f.Str("dir"), g, batch, f.Int("rss-every", 1000000), stored);

    std::vector<storage::Reading> readings;
    readings.reserve(g.count);
    {
      tools::ReadingGenerator gen(g);
      tools::GeneratedMessage m;
      while (gen.Next(&m)) {
        for (const auto& r : m.readings) readings.push_back(stored(r));
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

    std::unique_ptr<storage::Store> store = OpenStore(dir);
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
