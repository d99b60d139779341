// Shared by the bench drivers: flag parsing and the benchmark's readings.
//
// Every scenario uses the readings of tools/reading_generator.h (the generator readingsd-publish
// publishes), so all systems in a run store exactly the same (device, timestamp, values) set:
// reading i -> device i % D, readingTs = start + (i / D) * step, temperature and humidity from
// the reading index, and a constant string "pad" of --pad bytes (readingsd-publish
// --payload-pad) that brings a JSON payload to ~120 B.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/reading_generator.h"

namespace bench {

// --name=value or --name value; a --name followed by another --flag (or nothing) is a switch
// with the value "" (it once took the next flag as its value: `--no-compact --rollup-seconds 0`
// left rollups on); positional arguments are kept in order.
class Flags {
 public:
  Flags(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (!a.starts_with("--")) {
        positional_.emplace_back(a);
        continue;
      }
      a.remove_prefix(2);
      if (auto eq = a.find('='); eq != std::string_view::npos) {
        values_[std::string(a.substr(0, eq))] = std::string(a.substr(eq + 1));
      } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
        values_[std::string(a)] = argv[++i];
      } else {
        values_[std::string(a)] = "";
      }
    }
  }
  std::string Str(const std::string& name, const std::string& def = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  std::int64_t Int(const std::string& name, std::int64_t def) const {
    auto it = values_.find(name);
    return it == values_.end() ? def : std::stoll(it->second);
  }
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The generator options every driver and readingsd-publish share.
inline readingsd::tools::GeneratorOptions GeneratorFrom(const Flags& f) {
  readingsd::tools::GeneratorOptions g;
  g.count = static_cast<std::uint64_t>(f.Int("count", 200000));
  g.devices = static_cast<int>(f.Int("devices", 10000));
  g.step_ms = f.Int("step-ms", 1000);
  g.payload_pad = static_cast<std::size_t>(f.Int("pad", 20));
  if (f.Has("start") && !readingsd::tools::ParseTimestamp(f.Str("start"), &g.start_ms)) {
    throw std::invalid_argument("--start must look like 2026-06-23T00:00:00Z");
  }
  return g;
}

// The generator's temperature and humidity of every reading of the devices `wanted` marks (all
// when it is empty): values[d][k] is device d's k-th reading, at start + k * step. Read back from
// the readings it generates, not from its formulas.
inline std::vector<std::vector<std::pair<double, double>>> ValuesByDevice(const readingsd::tools::GeneratorOptions& g,
                                                                          const std::vector<bool>& wanted = {}) {
  std::vector<std::vector<std::pair<double, double>>> values(static_cast<std::size_t>(g.devices));
  readingsd::tools::ReadingGenerator gen(g);
  readingsd::tools::GeneratedMessage m;
  while (gen.Next(&m)) {
    for (const auto& r : m.readings) {
      const auto d = static_cast<std::size_t>(std::strtol(r.device_id.c_str() + 3, nullptr, 10) - 1);  // "dev00001" is 0
      if (!wanted.empty() && !wanted.at(d)) continue;
      std::int64_t ms = 0;
      if (!readingsd::tools::ParseTimestamp(r.reading_ts, &ms)) throw std::runtime_error("bad timestamp " + r.reading_ts);
      auto& v = values.at(d);
      if ((ms - g.start_ms) / g.step_ms != static_cast<std::int64_t>(v.size())) {
        throw std::runtime_error("the generator's readings of " + r.device_id + " are not in time order");
      }
      v.emplace_back(r.temperature, r.humidity);
    }
  }
  return values;
}

inline double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace bench
