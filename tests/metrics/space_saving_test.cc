#include "metrics/space_saving.h"

#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

namespace readingsd::metrics {
namespace {

constexpr std::size_t kUpdates = 200'000;
constexpr std::size_t kKeys = 10'000;

struct Update {
  std::string key;
  std::uint64_t weight;
};

std::string KeyName(std::size_t i) { return "DEV#" + std::to_string(i); }

// Zipf(s = 1.1) over kKeys keys, weights 1..8: the skewed, weighted case.
std::vector<Update> ZipfStream() {
  std::vector<double> weights(kKeys);
  for (std::size_t i = 0; i < kKeys; ++i) weights[i] = 1.0 / std::pow(double(i + 1), 1.1);
  std::mt19937_64 rng(42);
  std::discrete_distribution<std::size_t> rank(weights.begin(), weights.end());
  std::uniform_int_distribution<std::uint64_t> weight(1, 8);
  std::vector<Update> stream;
  for (std::size_t i = 0; i < kUpdates; ++i) stream.push_back({KeyName(rank(rng)), weight(rng)});
  return stream;
}

std::vector<Update> UniformStream() {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::size_t> key(0, kKeys - 1);
  std::vector<Update> stream;
  for (std::size_t i = 0; i < kUpdates; ++i) stream.push_back({KeyName(key(rng)), 1});
  return stream;
}

// "DEV#hot" gets 60 % of the updates, the rest spread over kKeys keys.
std::vector<Update> SixtyPercentStream() {
  std::mt19937_64 rng(99);
  std::bernoulli_distribution hot(0.6);
  std::uniform_int_distribution<std::size_t> key(0, kKeys - 1);
  std::vector<Update> stream;
  for (std::size_t i = 0; i < kUpdates; ++i) {
    stream.push_back({hot(rng) ? std::string("DEV#hot") : KeyName(key(rng)), 1});
  }
  return stream;
}

std::unordered_map<std::string, std::uint64_t> ExactCounts(const std::vector<Update>& stream) {
  std::unordered_map<std::string, std::uint64_t> exact;
  for (const Update& u : stream) exact[u.key] += u.weight;
  return exact;
}

// The Space-Saving guarantees for `reported` (estimates of some keys) and `present` (whether a
// key is a candidate), with N total weight and m counters per sketch.
template <typename Present>
void ExpectGuarantees(const std::vector<SpaceSavingEntry>& reported,
                      const std::unordered_map<std::string, std::uint64_t>& exact,
                      std::uint64_t total, std::size_t counters, Present present) {
  const double bound = double(total) / double(counters);
  for (const SpaceSavingEntry& e : reported) {
    const auto it = exact.find(e.key);
    const std::uint64_t truth = it == exact.end() ? 0 : it->second;
    EXPECT_LE(truth, e.count) << e.key;
    EXPECT_LE(e.count, truth + e.error) << e.key;
    EXPECT_LE(double(e.error), bound) << e.key;
  }
  for (const auto& [key, truth] : exact) {
    if (double(truth) > bound) {
      EXPECT_TRUE(present(key)) << key << " true count " << truth;
    }
  }
}

void ExpectSortedByCount(const std::vector<SpaceSavingEntry>& entries) {
  for (std::size_t i = 1; i < entries.size(); ++i) {
    EXPECT_GE(entries[i - 1].count, entries[i].count);
  }
}

struct StreamCase {
  const char* name;
  std::vector<Update> (*make)();
};

void PrintTo(const StreamCase& stream, std::ostream* out) { *out << stream.name; }

class SpaceSavingStreamTest : public ::testing::TestWithParam<StreamCase> {};

TEST_P(SpaceSavingStreamTest, EstimatesStayWithinTheErrorBound) {
  const std::vector<Update> stream = GetParam().make();
  SpaceSaving sketch;
  for (const Update& u : stream) sketch.Add(u.key, u.weight);
  const auto exact = ExactCounts(stream);

  std::uint64_t total = 0;
  for (const auto& [key, count] : exact) total += count;
  EXPECT_EQ(sketch.total(), total);
  EXPECT_EQ(sketch.capacity(), 80u);

  ExpectGuarantees(sketch.entries(), exact, total, sketch.capacity(),
                   [&](const std::string& key) { return sketch.Find(key) != nullptr; });
  const auto top = sketch.TopK();
  ASSERT_EQ(top.size(), sketch.top_k());
  ExpectSortedByCount(top);
}

// The window combines per-slice sketches; the same guarantees must hold for the whole stream.
TEST_P(SpaceSavingStreamTest, CombinedSketchesKeepTheErrorBound) {
  const std::vector<Update> stream = GetParam().make();
  std::vector<SpaceSaving> slices(6);
  for (std::size_t i = 0; i < stream.size(); ++i) {
    slices[i * slices.size() / stream.size()].Add(stream[i].key, stream[i].weight);
  }
  std::vector<const SpaceSaving*> parts;
  std::uint64_t total = 0;
  for (const SpaceSaving& s : slices) {
    parts.push_back(&s);
    total += s.total();
  }
  const auto exact = ExactCounts(stream);

  const auto top = TopKAcross(parts, 80);
  ExpectSortedByCount(top);
  ExpectGuarantees(top, exact, total, slices[0].capacity(), [&](const std::string& key) {
    for (const SpaceSaving& s : slices) {
      if (s.Find(key) != nullptr) return true;
    }
    return false;
  });
  // EstimateAcross also bounds keys no slice monitors.
  ExpectGuarantees({EstimateAcross(parts, "DEV#never-written")}, exact, total,
                   slices[0].capacity(), [](const std::string&) { return true; });
}

INSTANTIATE_TEST_SUITE_P(Streams, SpaceSavingStreamTest,
                         ::testing::Values(StreamCase{"Zipf", &ZipfStream},
                                           StreamCase{"Uniform", &UniformStream},
                                           StreamCase{"SixtyPercent", &SixtyPercentStream}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SpaceSavingTest, DominantKeyIsReportedFirst) {
  SpaceSaving sketch;
  for (const Update& u : SixtyPercentStream()) sketch.Add(u.key, u.weight);
  const auto top = sketch.TopK();
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0].key, "DEV#hot");
  EXPECT_NEAR(double(top[0].count) / double(sketch.total()), 0.6, 0.01);
}

TEST(SpaceSavingTest, ExactWhileKeysFitInTheCounters) {
  SpaceSaving sketch(SpaceSavingOptions{2, 2});
  sketch.Add("a", 5);
  sketch.Add("b", 3);
  sketch.Add("a");
  sketch.Add("c", 0);  // zero weight is ignored
  EXPECT_EQ(sketch.max_unmonitored_count(), 0u);
  const auto top = sketch.TopK();
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].key, "a");
  EXPECT_EQ(top[0].count, 6u);
  EXPECT_EQ(top[0].error, 0u);
  EXPECT_EQ(top[1].key, "b");
  EXPECT_EQ(sketch.Estimate("c").count, 0u);
  EXPECT_EQ(sketch.total(), 9u);
}

TEST(SpaceSavingTest, NewKeyTakesOverTheSmallestCounter) {
  SpaceSaving sketch(SpaceSavingOptions{1, 2});
  sketch.Add("a", 10);
  sketch.Add("b", 2);
  sketch.Add("c", 1);  // evicts b: count 2 + 1, error 2
  EXPECT_EQ(sketch.Find("b"), nullptr);
  const SpaceSavingEntry c = sketch.Estimate("c");
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.error, 2u);
  EXPECT_EQ(sketch.max_unmonitored_count(), 3u);
  EXPECT_EQ(sketch.Estimate("b").count, 3u);

  sketch.Clear();
  EXPECT_EQ(sketch.total(), 0u);
  EXPECT_TRUE(sketch.entries().empty());
}

}  // namespace
}  // namespace readingsd::metrics
