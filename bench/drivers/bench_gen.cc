// bench_gen: writes the benchmark's readings (see common.h) in a peer's bulk format, or the
// query workload, to stdout.
//
//   bench_gen vm      --count N --devices D [--pad P] [--chunk C]   VictoriaMetrics /api/v1/import JSON lines
//   bench_gen influx  ...                                           InfluxDB 1.x line protocol (precision=ms)
//   bench_gen pg      ...                                           CSV for COPY (device_id, ts, temperature, humidity, pad)
//   bench_gen between --count N --devices D --windows K --window-seconds S [--seed X] [--expect FILE]
//   bench_gen latest  --count N --devices D --windows K [--latest 10] [--seed X] [--expect FILE]
//
// Bulk formats come in chunks of --chunk readings (in generator order), separated by one empty
// line: the loaders send one chunk per request / COPY. VictoriaMetrics' native JSON-lines format
// carries one series per line, so within a chunk the readings are grouped by device (two series
// per device: temperature and humidity; VictoriaMetrics stores floats only, so "pad" is not sent).
//
// Query workloads are lines "<device> <from_iso> <to_iso> <from_ms> <to_ms>", both bounds
// inclusive and on reading timestamps: a between window holds exactly window-seconds / step
// readings, a latest line spans the device's last --latest readings.
//
// --expect FILE writes what each workload line must be answered with, one line per workload
// line, taken from the generator's own readings (bench_query checks every answer against it):
//   "<device> <from_ms> <step_ms> <count> <pad bytes> <temperature> <humidity> ..." with the
// count readings' values in time order (reading j is at from_ms + j * step_ms).
#include <charconv>
#include <cinttypes>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "bench/drivers/common.h"

namespace {

using readingsd::tools::DeviceId;
using readingsd::tools::FormatTimestamp;
using readingsd::tools::GeneratedMessage;
using readingsd::tools::GeneratedReading;
using readingsd::tools::GeneratorOptions;
using readingsd::tools::ReadingGenerator;

std::uint64_t SplitMix(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Sample {
  std::int64_t ts_ms;
  double temperature, humidity;
};

void Out(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

std::string Num(double v) {
  char b[32];
  int n = std::snprintf(b, sizeof(b), "%.1f", v);
  return std::string(b, static_cast<std::size_t>(n));
}

// Runs the generator and hands each chunk of readings to `emit`.
template <typename Emit>
void Chunks(const GeneratorOptions& g, std::uint64_t chunk, Emit emit) {
  ReadingGenerator gen(g);
  GeneratedMessage m;
  std::vector<GeneratedReading> buf;
  while (gen.Next(&m)) {
    for (auto& r : m.readings) buf.push_back(std::move(r));
    if (buf.size() >= chunk) {
      emit(buf);
      buf.clear();
    }
  }
  if (!buf.empty()) emit(buf);
}

std::int64_t Ms(const std::string& iso) {
  std::int64_t ms = 0;
  if (!readingsd::tools::ParseTimestamp(iso, &ms)) throw std::runtime_error("bad timestamp " + iso);
  return ms;
}

int Bulk(const std::string& format, const bench::Flags& f) {
  GeneratorOptions g = bench::GeneratorFrom(f);
  const std::string pad(g.payload_pad, 'x');
  const auto chunk = static_cast<std::uint64_t>(f.Int("chunk", 10000));
  bool first = true;
  Chunks(g, chunk, [&](const std::vector<GeneratedReading>& rs) {
    std::string s;
    if (!first) s += '\n';
    first = false;
    if (format == "vm") {
      std::map<std::string, std::vector<Sample>> by_device;
      for (const auto& r : rs) by_device[r.device_id].push_back({Ms(r.reading_ts), r.temperature, r.humidity});
      for (const auto& [device, samples] : by_device) {
        for (int field = 0; field < 2; ++field) {
          s += R"({"metric":{"__name__":")";
          s += field == 0 ? "temperature" : "humidity";
          s += R"(","device":")" + device + R"("},"values":[)";
          for (std::size_t i = 0; i < samples.size(); ++i) {
            if (i) s += ',';
            s += Num(field == 0 ? samples[i].temperature : samples[i].humidity);
          }
          s += R"(],"timestamps":[)";
          for (std::size_t i = 0; i < samples.size(); ++i) {
            if (i) s += ',';
            s += std::to_string(samples[i].ts_ms);
          }
          s += "]}\n";
        }
      }
    } else if (format == "influx") {
      for (const auto& r : rs) {
        s += "readings,device=" + r.device_id + " humidity=" + Num(r.humidity) + ",pad=\"" + pad +
             "\",temperature=" + Num(r.temperature) + " " + std::to_string(Ms(r.reading_ts)) + "\n";
      }
    } else {  // pg
      for (const auto& r : rs) {
        s += r.device_id + "," + r.reading_ts + "," + Num(r.temperature) + "," + Num(r.humidity) + "," + pad + "\n";
      }
    }
    Out(s);
  });
  return 0;
}

struct WorkloadLine {
  int device;
  std::int64_t first, count;  // the device's readings first .. first + count - 1
};

// The values the generator gave each reading of the devices `lines` ask for, written as
// described in the header.
void WriteExpected(const GeneratorOptions& g, const std::vector<WorkloadLine>& lines, const std::string& path) {
  std::vector<bool> wanted(static_cast<std::size_t>(g.devices));
  for (const auto& l : lines) wanted[static_cast<std::size_t>(l.device)] = true;
  const auto values = bench::ValuesByDevice(g, wanted);
  std::ofstream out(path);
  char num[32];
  auto put = [&](double x) {
    out << ' ' << std::string_view(num, static_cast<std::size_t>(std::to_chars(num, num + sizeof(num), x).ptr - num));
  };
  for (const auto& l : lines) {
    const auto& v = values[static_cast<std::size_t>(l.device)];
    out << DeviceId(l.device) << ' ' << g.start_ms + l.first * g.step_ms << ' ' << g.step_ms << ' ' << l.count << ' '
        << g.payload_pad;
    for (std::int64_t k = l.first; k < l.first + l.count; ++k) {
      put(v.at(static_cast<std::size_t>(k)).first);
      put(v.at(static_cast<std::size_t>(k)).second);
    }
    out << '\n';
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

int Workload(const std::string& kind, const bench::Flags& f) {
  GeneratorOptions g = bench::GeneratorFrom(f);
  const auto windows = f.Int("windows", 1000);
  const std::int64_t span_readings =
      kind == "latest" ? f.Int("latest", 10) : f.Int("window-seconds", 600) * 1000 / g.step_ms;
  std::uint64_t rng = static_cast<std::uint64_t>(f.Int("seed", 7));
  const auto devices = static_cast<std::uint64_t>(g.devices);
  std::vector<WorkloadLine> lines;
  for (std::int64_t w = 0; w < windows; ++w) {
    const std::uint64_t d = SplitMix(&rng) % devices;
    // Device d holds readings k = 0 .. n-1 at start + k * step.
    const auto n = static_cast<std::int64_t>(g.count / devices + (d < g.count % devices ? 1 : 0));
    if (n == 0) throw std::runtime_error("a device has no readings: lower --devices");
    const std::int64_t len = std::min(span_readings, n);
    if (len < span_readings && w == 0) std::cerr << "bench_gen: devices hold only " << n << " readings\n";
    const std::int64_t k0 = kind == "latest" ? n - len : static_cast<std::int64_t>(SplitMix(&rng) % static_cast<std::uint64_t>(n - len + 1));
    const std::int64_t from = g.start_ms + k0 * g.step_ms, to = g.start_ms + (k0 + len - 1) * g.step_ms;
    std::printf("%s %s %s %" PRId64 " %" PRId64 "\n", DeviceId(static_cast<int>(d)).c_str(),
                FormatTimestamp(from).c_str(), FormatTimestamp(to).c_str(), from, to);
    lines.push_back({static_cast<int>(d), k0, len});
  }
  if (f.Has("expect")) WriteExpected(g, lines, f.Str("expect"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bench::Flags f(argc, argv);
    if (f.positional().empty()) {
      std::cerr << "usage: bench_gen vm|influx|pg|between|latest [--count N --devices D ...]\n";
      return 2;
    }
    const std::string what = f.positional()[0];
    if (what == "vm" || what == "influx" || what == "pg") return Bulk(what, f);
    if (what == "between" || what == "latest") return Workload(what, f);
    std::cerr << "bench_gen: unknown output " << what << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_gen: " << e.what() << "\n";
    return 1;
  }
}
