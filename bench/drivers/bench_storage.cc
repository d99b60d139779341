// bench_storage: readingsd's bulk write paths in process, in batches.
//
//   bench_storage --dir DIR --count N --devices D [--pad P] [--batch 1000] [--from readings|payloads]
//                 [--no-compact] [--sort-batch] [--rss-every K] [--index-shards S] [--rollup-seconds G]
//
// --from readings (the storage engine): every reading is generated and converted to a
// storage::Reading first (attributes as the ingest path stores them: parsed from the JSON
// object, so in name order: humidity, pad, temperature), then only the Write calls are timed.
// --from payloads (the ingest path without its broker): every reading is generated as the MQTT
// message readingsd-publish sends (topic and JSON payload, one reading each), all held in
// memory; the clock covers what readingsd's MQTT ingest does with each message it receives:
// ingest::ParsePayload with the daemon's payload options, then Store::Write once --batch
// readings are pending.
// Either way one WriteBatch of --batch readings per Write, with the daemon's default store
// options (no fsync, 64 MB memtable, 64 MB block cache). A reading is durable against a process
// crash and queryable once its Write returned. Then CompactAll (flush + full compaction) is timed
// separately so the caller can measure the directory. Last, every device's partition is read
// back and compared with the generator's readings: the count, each sort key and each value
// ("counted=N"; any difference exits 1). Prints key=value lines.
//
// --index-shards S declares one secondary index, hot_by_hour (partition readingHour, sort
// temperature, S shards: the README's), so every Write also writes each reading's index entry
// (and checks for a stale one); after the check of the readings, the index is read back too and
// must hold exactly one entry per reading ("index_entries=N").
//
// --rollup-seconds G keeps rollups of G-second granules (0: none) instead of the daemon's default,
// so a run can tell what rollups cost the write path apart from the rest (bench/registry_cost).
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
#include "ingest/payload.h"
#include "storage/index.h"
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

// --rollup-seconds when given, else the daemon's default.
int64_t RollupSeconds(const bench::Flags& f) {
  return f.Has("rollup-seconds") ? f.Int("rollup-seconds", 0) : readingsd::storage::StoreOptions().rollup_seconds;
}

// The daemon's default store options at `dir`, with `indexes` and `rollup_seconds`; throws what
// Open says.
std::unique_ptr<readingsd::storage::Store> OpenStore(const std::string& dir,
                                                     std::vector<readingsd::storage::IndexSpec> indexes = {},
                                                     int64_t rollup_seconds = readingsd::storage::StoreOptions().rollup_seconds) {
  readingsd::storage::StoreOptions options;
  options.path = dir;
  options.indexes = std::move(indexes);
  options.rollup_seconds = rollup_seconds;
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

// Reads every device's partition back and compares it with the generator's readings: the
// count, each sort key in order and each value. Prints the stored key and value sizes and
// "counted=N"; throws at the first difference.
void CountAndCheck(const readingsd::storage::Store& store, const readingsd::tools::GeneratorOptions& g) {
  using namespace readingsd;
  const auto values = bench::ValuesByDevice(g);
  std::vector<std::string> sort_keys;  // every device's k-th reading is at the same instant
  for (const auto& v : values) {
    while (sort_keys.size() < v.size()) {
      sort_keys.emplace_back();
      const std::int64_t ms = g.start_ms + static_cast<std::int64_t>(sort_keys.size() - 1) * g.step_ms;
      if (Status s = storage::NormalizeTimestamp(tools::FormatTimestamp(ms), &sort_keys.back()); !s.ok()) {
        throw std::runtime_error(s.ToString());
      }
    }
  }
  const std::string pad(g.payload_pad, 'x');
  std::uint64_t counted = 0;
  double key_bytes = 0, value_bytes = 0;
  std::vector<storage::AttributeView> attributes;
  for (int d = 0; d < g.devices; ++d) {
    const std::string device = tools::DeviceId(d);
    const auto& want = values[static_cast<std::size_t>(d)];
    auto fail = [&](std::size_t k, const std::string& what) {
      throw std::runtime_error("the store differs from the generator's readings: " + device + " reading " +
                               std::to_string(k) + ": " + what);
    };
    auto it = store.NewIterator(device, "", "");
    std::size_t k = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++k) {
      if (k >= want.size()) fail(k, "more readings than the " + std::to_string(want.size()) + " generated");
      if (it->sort_key() != sort_keys[k]) fail(k, "sort key " + std::string(it->sort_key()) + ", expected " + sort_keys[k]);
      if (Status s = storage::ReadAttributes(it->encoded_attributes(), &attributes); !s.ok()) fail(k, s.ToString());
      std::size_t matched = 0;
      for (const auto& a : attributes) {
        const auto* n = std::get_if<storage::NumberView>(&a.value);
        const std::string_view* text = std::get_if<std::string_view>(&a.value);
        if ((a.name == "temperature" && n && n->ToDouble() == want[k].first) ||
            (a.name == "humidity" && n && n->ToDouble() == want[k].second) ||
            (a.name == "pad" && text && *text == pad && !pad.empty())) {
          ++matched;
        } else {
          fail(k, "attribute " + std::string(a.name) + " is not the generator's");
        }
      }
      if (matched != (pad.empty() ? 2u : 3u)) fail(k, "attributes missing");
      key_bytes += static_cast<double>(storage::EncodeKey(device, it->sort_key()).size());
      value_bytes += static_cast<double>(it->encoded_attributes().size());
    }
    if (!it->status().ok()) fail(k, it->status().ToString());
    if (k != want.size()) fail(k, "the partition ends after " + std::to_string(k) + " of " + std::to_string(want.size()) + " readings");
    counted += k;
  }
  const double n = static_cast<double>(std::max<std::uint64_t>(counted, 1));
  std::printf("key_bytes=%.1f value_bytes=%.1f counted=%llu\n", key_bytes / n, value_bytes / n,
              static_cast<unsigned long long>(counted));
}

// Counts the entries of index `spec` (readingHour-partitioned) over the hours the generator's
// readings span, every shard; throws unless there is one per reading.
void CountIndex(const readingsd::storage::Store& store, const readingsd::storage::IndexSpec& spec,
                const readingsd::tools::GeneratorOptions& g) {
  using namespace readingsd;
  const std::int64_t last_ms = g.start_ms + (g.count - 1) / g.devices * g.step_ms;
  std::uint64_t entries = 0;
  for (std::int64_t hour_ms = g.start_ms / 3600000 * 3600000; hour_ms <= last_ms; hour_ms += 3600000) {
    std::string sort_key;
    if (Status s = storage::NormalizeTimestamp(tools::FormatTimestamp(hour_ms), &sort_key); !s.ok()) {
      throw std::runtime_error(s.ToString());
    }
    const std::string hour = storage::TimeBucket(spec.partition, sort_key);
    for (int shard = 0; shard < spec.shards; ++shard) {
      auto it = store.NewIndexIterator(spec.name, hour + "#" + std::to_string(shard), "", "");
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++entries;
      if (!it->status().ok()) throw std::runtime_error(it->status().ToString());
    }
  }
  std::printf("index_entries=%llu\n", static_cast<unsigned long long>(entries));
  if (entries != static_cast<std::uint64_t>(g.count)) {
    throw std::runtime_error("index " + spec.name + " holds " + std::to_string(entries) + " entries, expected " +
                             std::to_string(g.count));
  }
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

    std::vector<storage::IndexSpec> indexes;
    if (f.Has("index-shards")) {
      storage::IndexSpec spec;
      spec.name = "hot_by_hour";
      spec.partition = storage::IndexPartition::kReadingHour;
      spec.sort = storage::IndexSort::kNumber;
      spec.sort_attribute = "temperature";
      spec.shards = static_cast<int>(f.Int("index-shards", 8));
      if (Status s = storage::ValidateIndexSpec(spec); !s.ok()) throw std::invalid_argument(s.ToString());
      indexes.push_back(spec);
    }
    const std::string from = f.Str("from", "readings");
    std::unique_ptr<storage::Store> store;
    double write_s = 0;
    if (from == "readings") {
      std::vector<storage::Reading> readings;
      readings.reserve(g.count);
      {
        tools::ReadingGenerator gen(g);
        tools::GeneratedMessage m;
        while (gen.Next(&m)) {
          for (const auto& r : m.readings) readings.push_back(stored(r));
        }
      }
      store = OpenStore(dir, indexes, RollupSeconds(f));
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
          throw std::runtime_error(s.ToString());
        }
      }
      write_s = bench::Seconds(std::chrono::steady_clock::now() - t0);
    } else if (from == "payloads") {
      // The messages side by side in one buffer, as a network buffer holds them.
      std::string bytes;
      struct Message {
        std::size_t at, topic_size, payload_size;
      };
      std::vector<Message> messages;
      {
        tools::ReadingGenerator gen(g);
        tools::GeneratedMessage m;
        while (gen.Next(&m)) {
          messages.push_back({bytes.size(), m.topic.size(), m.payload.size()});
          bytes += m.topic;
          bytes += m.payload;
        }
      }
      store = OpenStore(dir, indexes, RollupSeconds(f));
      const ingest::PayloadOptions options;  // the daemon's defaults
      ingest::ParsedMessage parsed;
      std::vector<storage::Reading> pending;
      pending.reserve(batch);
      auto write_pending = [&] {
        if (Status s = store->Write(pending); !s.ok()) throw std::runtime_error(s.ToString());
        pending.clear();
      };
      const std::string_view all(bytes);
      const auto t0 = std::chrono::steady_clock::now();
      for (const Message& m : messages) {
        ingest::ParsePayload(options, all.substr(m.at, m.topic_size), all.substr(m.at + m.topic_size, m.payload_size),
                             &parsed);
        if (!parsed.rejections.empty()) throw std::runtime_error("a payload was rejected: " + parsed.rejections[0].message);
        for (auto& r : parsed.readings) pending.push_back(std::move(r));
        if (pending.size() >= batch) write_pending();
      }
      if (!pending.empty()) write_pending();
      write_s = bench::Seconds(std::chrono::steady_clock::now() - t0);
    } else {
      throw std::invalid_argument("--from must be readings or payloads");
    }
    std::printf("readings=%llu batch=%zu write_seconds=%.3f rate=%.0f\n", static_cast<unsigned long long>(g.count), batch,
                write_s, static_cast<double>(g.count) / write_s);
    std::fflush(stdout);
    if (!f.Has("no-compact")) {
      const auto t1 = std::chrono::steady_clock::now();
      if (Status s = store->CompactAll(); !s.ok()) throw std::runtime_error(s.ToString());
      storage::StoreStats st = store->Stats();
      std::printf("compact_seconds=%.3f sst_bytes=%llu estimated_keys=%llu\n",
                  bench::Seconds(std::chrono::steady_clock::now() - t1),
                  static_cast<unsigned long long>(st.sst_bytes), static_cast<unsigned long long>(st.estimated_keys));
    }
    CountAndCheck(*store, g);
    for (const storage::IndexSpec& spec : indexes) CountIndex(*store, spec, g);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_storage: " << e.what() << "\n";
    return 1;
  }
}
