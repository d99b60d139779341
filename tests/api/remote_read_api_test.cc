// POST /api/v1/read (Prometheus' remote read) over real HTTP on loopback, against a real RocksDB
// store, with requests built and answers read through the protocol's own messages and snappy.
#include <gtest/gtest.h>

#include <snappy.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/prometheus/prometheus.h"
#include "api/prometheus/remote_read.pb.h"
#include "storage/key.h"
#include "tests/api/served.h"

namespace readingsd::test {
namespace {

using api::prometheus::Matcher;
using api::prometheus::MatchType;
using api::prometheus::MetricNameOf;
namespace pb = readingsd::prompb;

// 2026-06-23T08:00:00Z, minute 0 of the fixture's a1 and a10.
constexpr int64_t kA1StartMs = 1782201600000;
constexpr int64_t kMinuteMs = 60000;

struct M {
  pb::LabelMatcher::Type type;
  std::string name, value;
};

std::string Compress(const std::string& raw) {
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

pb::Query MakeQuery(int64_t start_ms, int64_t end_ms, const std::vector<M>& matchers) {
  pb::Query query;
  query.set_start_timestamp_ms(start_ms);
  query.set_end_timestamp_ms(end_ms);
  for (const M& m : matchers) {
    pb::LabelMatcher* matcher = query.add_matchers();
    matcher->set_type(m.type);
    matcher->set_name(m.name);
    matcher->set_value(m.value);
  }
  return query;
}

// A series as "name{label=value,...}" with its samples.
struct SeriesText {
  std::string labels;
  std::vector<std::pair<int64_t, double>> samples;
};

std::string LabelsText(const pb::TimeSeries& series) {
  std::string name, rest;
  for (const pb::Label& label : series.labels()) {
    if (label.name() == "__name__") {
      name = label.value();
    } else {
      rest += (rest.empty() ? "" : ",") + label.name() + "=" + label.value();
    }
  }
  return name + "{" + rest + "}";
}

class RemoteReadApiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    // Names Prometheus would refuse, two that map to one metric name, and two readings in one
    // millisecond.
    ASSERT_TRUE(store_
                    ->Write(std::vector<storage::Reading>{
                        MakeReading("x9", "2026-06-23T08:00:00.000100000Z",
                                    {{"temp-c", 1.0}, {"temp_c", 3.0}, {"2nd", 2.0}}),
                        MakeReading("x9", "2026-06-23T08:00:00.000900000Z", {{"temp-c", 5.0}}),
                        MakeReading("far", "0000-01-01T00:00:00.000000000Z", {{"far", 1.0}}),
                        MakeReading("far", "9999-12-31T23:59:59.999999999Z", {{"far", 2.0}}),
                    })
                    .ok());
    StartServer();
  }

  HttpResult Send(const pb::ReadRequest& request) {
    return Post(port(), "/api/v1/read",
                {{"Content-Type", "application/x-protobuf"}, {"Content-Encoding", "snappy"}},
                Compress(request.SerializeAsString()));
  }

  // The series of one query's answer, by their labels' text.
  std::map<std::string, SeriesText> Read(int64_t start_ms, int64_t end_ms, const std::vector<M>& matchers) {
    pb::ReadRequest request;
    *request.add_queries() = MakeQuery(start_ms, end_ms, matchers);
    const HttpResult result = Send(request);
    EXPECT_EQ(result.status, 200) << result.body;
    EXPECT_EQ(result.Header("content-type"), "application/x-protobuf");
    EXPECT_EQ(result.Header("content-encoding"), "snappy");
    std::string raw;
    EXPECT_TRUE(snappy::Uncompress(result.body.data(), result.body.size(), &raw));
    pb::ReadResponse response;
    EXPECT_TRUE(response.ParseFromString(raw));
    std::map<std::string, SeriesText> out;
    if (response.results_size() != 1) {
      ADD_FAILURE() << "results: " << response.results_size();
      return out;
    }
    // Sorted as Prometheus sorts label sets: label by label, name then value.
    std::vector<std::pair<std::string, std::string>> previous;
    for (const pb::TimeSeries& series : response.results(0).timeseries()) {
      SeriesText text{LabelsText(series), {}};
      std::vector<std::pair<std::string, std::string>> labels;
      for (const pb::Label& label : series.labels()) labels.emplace_back(label.name(), label.value());
      EXPECT_TRUE(std::ranges::is_sorted(labels)) << text.labels;
      EXPECT_LT(previous, labels) << "series out of order or repeated: " << text.labels;
      previous = labels;
      for (const pb::Sample& sample : series.samples()) text.samples.emplace_back(sample.timestamp(), sample.value());
      out[text.labels] = text;
    }
    return out;
  }

  // The series' label texts only, over all time.
  std::set<std::string> Names(const std::vector<M>& matchers) {
    std::set<std::string> names;
    for (const auto& [labels, series] : Read(INT64_MIN, INT64_MAX, matchers)) names.insert(labels);
    return names;
  }

  // A refusal with `status` whose text begins with `prefix`.
  void ExpectRefused(const HttpResult& result, int status, const std::string& prefix) {
    EXPECT_EQ(result.status, status) << result.body;
    EXPECT_EQ(result.Header("content-type"), "text/plain; charset=utf-8");
    EXPECT_EQ(result.body.rfind(prefix, 0), 0u) << result.body;
  }
};

constexpr auto EQ = pb::LabelMatcher::EQ;
constexpr auto NEQ = pb::LabelMatcher::NEQ;
constexpr auto RE = pb::LabelMatcher::RE;
constexpr auto NRE = pb::LabelMatcher::NRE;

TEST_F(RemoteReadApiTest, OneDevicesAttributeIsOneSeriesOfItsReadings) {
  const auto series = Read(kA1StartMs, kA1StartMs + 59 * kMinuteMs, {{EQ, "__name__", "temperature"}, {EQ, "device", "a1"}});
  ASSERT_EQ(series.size(), 1u);
  const SeriesText& a1 = series.at("temperature{device=a1}");
  ASSERT_EQ(a1.samples.size(), 60u);
  for (int i = 0; i < 60; ++i) {
    EXPECT_EQ(a1.samples[i].first, kA1StartMs + i * kMinuteMs);
    EXPECT_EQ(a1.samples[i].second, 20 + 0.5 * i);
  }
}

// [start, end] in milliseconds, both inclusive, is the sort-key range read.
TEST_F(RemoteReadApiTest, TimeRangeIsInclusiveMilliseconds) {
  const int64_t minute5 = kA1StartMs + 5 * kMinuteMs;
  auto series = Read(minute5, minute5, {{EQ, "__name__", "temperature"}, {EQ, "device", "a1"}});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series.begin()->second.samples, (std::vector<std::pair<int64_t, double>>{{minute5, 22.5}}));
  series = Read(minute5 - kMinuteMs + 1, minute5 + kMinuteMs - 1, {{EQ, "__name__", "temperature"}, {EQ, "device", "a1"}});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series.begin()->second.samples.size(), 1u);
  EXPECT_TRUE(Read(minute5 + 1, minute5 + kMinuteMs - 1, {{EQ, "__name__", "temperature"}}).empty());
}

// Prometheus' milliseconds reach far beyond years 0000-9999: such a range is clamped to the
// sort keys', yet answers no sample outside it (found by fuzz_remote_read_request).
TEST_F(RemoteReadApiTest, RangesBeyondTheSortKeysHoldNothingOutside) {
  const std::vector<M> far = {{EQ, "__name__", "far"}};
  EXPECT_EQ(Read(INT64_MIN, INT64_MAX, far).begin()->second.samples.size(), 2u);
  EXPECT_TRUE(Read(INT64_MAX - 1, INT64_MAX, far).empty());
  EXPECT_TRUE(Read(INT64_MIN, INT64_MIN + 1, far).empty());
  const int64_t last = storage::SortKeyMillis("9999-12-31T23:59:59.999999999Z");
  EXPECT_EQ(Read(last, INT64_MAX, far).begin()->second.samples,
            (std::vector<std::pair<int64_t, double>>{{last, 2}}));
  EXPECT_TRUE(Read(last + 1, INT64_MAX, far).empty());
}

TEST_F(RemoteReadApiTest, BooleansAreZeroOrOneAndStringsAreNoSeries) {
  const auto series = Read(kA1StartMs, kA1StartMs + 5 * kMinuteMs, {{EQ, "device", "a1"}});
  EXPECT_EQ(series.size(), 2u);
  ASSERT_TRUE(series.contains("door{device=a1}"));
  std::vector<double> door;
  for (const auto& [ms, value] : series.at("door{device=a1}").samples) door.push_back(value);
  EXPECT_EQ(door, (std::vector<double>{1, 0, 0, 1, 0, 0}));
  EXPECT_FALSE(series.contains("status{device=a1}"));
}

// Regexes are anchored at both ends, as Prometheus anchors them: a1 is not a10.
TEST_F(RemoteReadApiTest, EveryMatcherTypeOnDeviceAndName) {
  const M temperature{EQ, "__name__", "temperature"};
  EXPECT_EQ(Names({temperature, {EQ, "device", "a1"}}), (std::set<std::string>{"temperature{device=a1}"}));
  EXPECT_EQ(Names({temperature, {RE, "device", "a1"}}), (std::set<std::string>{"temperature{device=a1}"}));
  EXPECT_EQ(Names({temperature, {RE, "device", "a1.*"}}),
            (std::set<std::string>{"temperature{device=a1}", "temperature{device=a10}"}));
  EXPECT_EQ(Names({temperature, {RE, "device", "(a|b)1|a10"}}),
            (std::set<std::string>{"temperature{device=a1}", "temperature{device=a10}"}));
  EXPECT_EQ(Names({temperature, {NEQ, "device", "a1"}}), (std::set<std::string>{"temperature{device=a10}"}));
  EXPECT_EQ(Names({temperature, {NRE, "device", "a1.+"}}), (std::set<std::string>{"temperature{device=a1}"}));
  EXPECT_EQ(Names({{RE, "__name__", "temperature|humidity"}, {NRE, "device", "a1"}}),
            (std::set<std::string>{"humidity{device=b2}", "temperature{device=a10}"}));
  EXPECT_EQ(Names({{NEQ, "__name__", "temperature"}, {RE, "device", "[ab].*"}}),
            (std::set<std::string>{"door{device=a1}", "humidity{device=b2}"}));
  EXPECT_EQ(Names({{NRE, "__name__", "temp.*|door|humidity|v"}, {NRE, "device", "x9|far"}}), std::set<std::string>{});
  EXPECT_TRUE(Names({temperature, {EQ, "device", "nosuch"}}).empty());
  EXPECT_TRUE(Names({temperature, {EQ, "device", "not a device id"}}).empty());
  EXPECT_TRUE(Names({temperature, {RE, "device", ""}}).empty());
}

// A label no series has is "" to a matcher, as in Prometheus.
TEST_F(RemoteReadApiTest, AbsentLabelsMatchAsEmpty) {
  EXPECT_EQ(Names({{EQ, "__name__", "humidity"}, {EQ, "job", ""}}), (std::set<std::string>{"humidity{device=b2}"}));
  EXPECT_TRUE(Names({{EQ, "__name__", "humidity"}, {EQ, "job", "readingsd"}}).empty());
  EXPECT_EQ(Names({{EQ, "__name__", "humidity"}, {NRE, "job", ".+"}}), (std::set<std::string>{"humidity{device=b2}"}));
}

// Names Prometheus would refuse are mapped, and keep their own name in attribute=, so that
// temp-c and temp_c stay two series; the later of two readings in one millisecond wins.
TEST_F(RemoteReadApiTest, RenamedAttributesKeepTheirNameAsALabel) {
  const auto series = Read(INT64_MIN, INT64_MAX, {{EQ, "device", "x9"}});
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series.at("_2nd{attribute=2nd,device=x9}").samples, (std::vector<std::pair<int64_t, double>>{{kA1StartMs, 2}}));
  EXPECT_EQ(series.at("temp_c{attribute=temp-c,device=x9}").samples,
            (std::vector<std::pair<int64_t, double>>{{kA1StartMs, 5}}));
  EXPECT_EQ(series.at("temp_c{device=x9}").samples, (std::vector<std::pair<int64_t, double>>{{kA1StartMs, 3}}));
  EXPECT_EQ(Names({{EQ, "__name__", "temp_c"}, {EQ, "attribute", "temp-c"}}),
            (std::set<std::string>{"temp_c{attribute=temp-c,device=x9}"}));
  EXPECT_EQ(Names({{EQ, "__name__", "temp_c"}, {EQ, "attribute", ""}}), (std::set<std::string>{"temp_c{device=x9}"}));
}

TEST_F(RemoteReadApiTest, QueriesAreAnsweredInOrder) {
  pb::ReadRequest request;
  *request.add_queries() = MakeQuery(INT64_MIN, INT64_MAX, {{EQ, "__name__", "humidity"}});
  *request.add_queries() = MakeQuery(INT64_MIN, INT64_MAX, {{EQ, "__name__", "v"}});
  request.add_accepted_response_types(pb::ReadRequest::STREAMED_XOR_CHUNKS);
  request.add_accepted_response_types(pb::ReadRequest::SAMPLES);
  const HttpResult result = Send(request);
  ASSERT_EQ(result.status, 200) << result.body;
  std::string raw;
  ASSERT_TRUE(snappy::Uncompress(result.body.data(), result.body.size(), &raw));
  pb::ReadResponse response;
  ASSERT_TRUE(response.ParseFromString(raw));
  ASSERT_EQ(response.results_size(), 2);
  ASSERT_EQ(response.results(0).timeseries_size(), 1);
  EXPECT_EQ(LabelsText(response.results(0).timeseries(0)), "humidity{device=b2}");
  ASSERT_EQ(response.results(1).timeseries_size(), 1);
  EXPECT_EQ(LabelsText(response.results(1).timeseries(0)), "v{device=edge}");
  // Two of edge's three readings are in one millisecond.
  EXPECT_EQ(response.results(1).timeseries(0).samples_size(), 2);
}

TEST_F(RemoteReadApiTest, CapsAreA400NamingThem) {
  pb::ReadRequest request;
  *request.add_queries() = MakeQuery(INT64_MIN, INT64_MAX, {{RE, "__name__", ".+"}});
  ServeOptions options;
  options.api.remote_read.max_samples = 60;
  StartServer(options);
  ExpectRefused(Send(request), 400, "max samples: the request selects more than 60 samples");
  options.api.remote_read = {};
  options.api.remote_read.max_series = 3;
  StartServer(options);
  ExpectRefused(Send(request), 400, "max series: the request selects more than 3 series");
  options.api.remote_read = {};
  options.api.remote_read.max_scanned = 62;
  StartServer(options);
  ExpectRefused(Send(request), 400, "max scan: the request reads more than 62 readings");
  // Just within every cap: 60 + 3 readings of a1 and a10 (a1 first), 2 * 60 + 3 samples, 3 series.
  options.api.remote_read = {.max_series = 3, .max_samples = 123, .max_scanned = 63};
  StartServer(options);
  pb::ReadRequest within;
  *within.add_queries() = MakeQuery(INT64_MIN, INT64_MAX, {{RE, "device", "a.*"}});
  EXPECT_EQ(Send(within).status, 200);
  options.api.remote_read.max_queries = 1;
  StartServer(options);
  *within.add_queries() = within.queries(0);
  ExpectRefused(Send(within), 400, "max queries: more than 1 queries");
}

TEST_F(RemoteReadApiTest, MalformedRequestsAre400AndTheServerStillAnswers) {
  const std::string valid = pb::ReadRequest().SerializeAsString();
  ExpectRefused(Post(port(), "/api/v1/read", {}, "plain text, not snappy"), 400, "the body is not");
  ExpectRefused(Post(port(), "/api/v1/read", {}, ""), 400, "the body is not snappy-compressed");
  ExpectRefused(Post(port(), "/api/v1/read", {}, Compress("\x0a\x05" "abc")), 400,
                "the body is not a protobuf ReadRequest");
  std::string truncated = Compress(std::string(1000, 'a'));
  truncated.resize(truncated.size() / 2);
  ExpectRefused(Post(port(), "/api/v1/read", {}, truncated), 400, "the body is not valid snappy-compressed data");
  ExpectRefused(Post(port(), "/api/v1/read", {}, Compress(std::string(2u << 20, '\0'))), 413,
                "the request decompresses to 2097152 bytes");

  pb::ReadRequest chunks_only;
  chunks_only.add_accepted_response_types(pb::ReadRequest::STREAMED_XOR_CHUNKS);
  ExpectRefused(Send(chunks_only), 400, "only the SAMPLES response type is served");
  pb::ReadRequest bad_regex;
  *bad_regex.add_queries() = MakeQuery(0, 1, {{RE, "device", "a(1"}});
  ExpectRefused(Send(bad_regex), 400, "matcher device=~\"a(1\": missing )");
  pb::ReadRequest backwards;
  *backwards.add_queries() = MakeQuery(2, 1, {});
  ExpectRefused(Send(backwards), 400, "a query's start_timestamp_ms is after");
  pb::ReadRequest bad_type;
  *bad_type.add_queries() = MakeQuery(0, 1, {{static_cast<pb::LabelMatcher::Type>(7), "device", "a1"}});
  ExpectRefused(Send(bad_type), 400, "a matcher's type is 7");

  const HttpResult get = Get(port(), "/api/v1/read");
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(get.Header("allow"), "POST");
  EXPECT_EQ(Read(kA1StartMs, kA1StartMs, {{EQ, "device", "a1"}}).size(), 2u);
}

TEST(MetricNameOf, KeepsValidNamesAndMapsTheRest) {
  bool renamed = true;
  EXPECT_EQ(MetricNameOf("temperature", &renamed), "temperature");
  EXPECT_FALSE(renamed);
  EXPECT_EQ(MetricNameOf("ns:rate_5m", &renamed), "ns:rate_5m");
  EXPECT_FALSE(renamed);
  EXPECT_EQ(MetricNameOf("temp-c", &renamed), "temp_c");
  EXPECT_TRUE(renamed);
  EXPECT_EQ(MetricNameOf("2nd", &renamed), "_2nd");
  EXPECT_TRUE(renamed);
  EXPECT_EQ(MetricNameOf("t\xc3\xa9 x", &renamed), "t___x");
  EXPECT_TRUE(renamed);
}

// Bounds never leave out an id the matcher selects.
TEST(MatcherBounds, HoldEveryMatch) {
  const std::vector<std::string> ids = {"a", "a1", "a10", "a1b2", "a1b3", "a2", "b1", "dev00001", "dev00010", "z"};
  for (const std::string re : {"a1.*", "a1b[23]", "(a|b)1", "dev0+1", "a1|z", "(?i)A1B2", "a.", ".*1", "a1b2"}) {
    Matcher matcher;
    ASSERT_TRUE(Matcher::Make(MatchType::kRegex, "device", re, &matcher).ok()) << re;
    std::string lower, upper;
    if (!matcher.Bounds(&lower, &upper)) continue;
    for (const std::string& id : ids) {
      if (matcher.Matches(id)) {
        EXPECT_TRUE(lower <= id && id <= upper) << re << " selects " << id << " outside [" << lower << ", " << upper << "]";
      }
    }
  }
  Matcher not_equal;
  ASSERT_TRUE(Matcher::Make(MatchType::kNotEqual, "device", "a1", &not_equal).ok());
  std::string lower, upper;
  EXPECT_FALSE(not_equal.Bounds(&lower, &upper));
}

}  // namespace
}  // namespace readingsd::test
