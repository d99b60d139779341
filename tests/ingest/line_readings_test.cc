// Line protocol points as readings: the device template, attributes, precision, the shared checks.
#include "ingest/line_readings.h"

#include <gtest/gtest.h>

#include <chrono>

namespace readingsd::ingest {
namespace {

PayloadOptions Checks() {
  PayloadOptions o;
  o.now = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1782201600)); };  // 2026-06-23
  return o;
}

ParsedMessage Parse(std::string_view body, LineProtocolOptions options = {}, PayloadOptions checks = Checks()) {
  ParsedMessage m;
  ParseLineProtocol(checks, options, body, &m);
  return m;
}

const storage::Attribute* Find(const storage::Reading& r, std::string_view name) {
  for (const auto& a : r.attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(LineReadingsTest, DeviceTagFieldsAndOtherTags) {
  ParsedMessage m = Parse(
      "weather,device=ws-1,site=north temp=21.5,count=18446744073709551615u,n=-3i,s=\"x\",ok=t 1782201600000000001");
  ASSERT_TRUE(m.rejections.empty()) << m.rejections[0].message;
  ASSERT_EQ(m.readings.size(), 1u);
  const storage::Reading& r = m.readings[0];
  EXPECT_EQ(r.device_id, "ws-1");
  EXPECT_EQ(r.sort_key, "2026-06-23T08:00:00.000000001Z");
  EXPECT_EQ(std::get<storage::Number>(Find(r, "temp")->value).text, "21.5");
  EXPECT_EQ(std::get<storage::Number>(Find(r, "count")->value).text, "18446744073709551615");
  EXPECT_EQ(std::get<storage::Number>(Find(r, "n")->value).text, "-3");
  EXPECT_EQ(std::get<std::string>(Find(r, "s")->value), "x");
  EXPECT_EQ(std::get<bool>(Find(r, "ok")->value), true);
  EXPECT_EQ(std::get<std::string>(Find(r, "site")->value), "north");  // a tag the device does not use
  EXPECT_EQ(Find(r, "device"), nullptr);
}

TEST(LineReadingsTest, TemplateBuildsTheDeviceFromMeasurementAndTags) {
  LineProtocolOptions o;
  o.device_template = "{measurement}.{tag:site}.{tag:sensor}";
  ParsedMessage m = Parse("temp,site=north,sensor=s7,unit=C v=1 1782201600\n"
                          "temp,site=north v=2 1782201601\n"
                          "temp,site=no/rth,sensor=s7 v=3 1782201602\n",
                          {o.device_template, Precision::kSeconds});
  ASSERT_EQ(m.readings.size(), 1u);
  EXPECT_EQ(m.readings[0].device_id, "temp.north.s7");
  EXPECT_EQ(m.readings[0].sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(m.readings[0].attributes.size(), 2u);  // v and unit
  ASSERT_EQ(m.rejections.size(), 2u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kMissingDeviceId);
  EXPECT_EQ(m.rejections[0].index, 2u);
  EXPECT_EQ(m.rejections[1].reason, RejectReason::kInvalidDeviceId);  // the charset holds for built ids
  EXPECT_EQ(m.rejections[1].index, 3u);
  EXPECT_TRUE(ValidateDeviceTemplate("{tag:host}").ok());
  EXPECT_TRUE(ValidateDeviceTemplate("site-{tag:site}").ok());
  for (const char* bad : {"", "fixed", "{tag:}", "{field:x}", "{measurement", "tag}", "{measurement}}"}) {
    EXPECT_FALSE(ValidateDeviceTemplate(bad).ok()) << bad;
  }
}

TEST(LineReadingsTest, PrecisionScalesTheTimestamp) {
  const std::pair<Precision, const char*> cases[] = {
      {Precision::kNanoseconds, "1782201600123456789"},
      {Precision::kMicroseconds, "1782201600123456"},
      {Precision::kMilliseconds, "1782201600123"},
      {Precision::kSeconds, "1782201600"},
      {Precision::kMinutes, "29703360"},
      {Precision::kHours, "495056"},
  };
  const char* want[] = {"2026-06-23T08:00:00.123456789Z", "2026-06-23T08:00:00.123456000Z",
                        "2026-06-23T08:00:00.123000000Z", "2026-06-23T08:00:00.000000000Z",
                        "2026-06-23T08:00:00.000000000Z", "2026-06-23T08:00:00.000000000Z"};
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    ParsedMessage m = Parse(std::string("m,device=d v=1 ") + cases[i].second, {"{tag:device}", cases[i].first});
    ASSERT_EQ(m.readings.size(), 1u) << i;
    EXPECT_EQ(m.readings[0].sort_key, want[i]) << i;
  }
  Precision p;
  for (const char* name : {"", "n", "ns", "u", "us", "\xC2\xB5", "ms", "s", "m", "h"}) EXPECT_TRUE(ParsePrecision(name, &p)) << name;
  EXPECT_FALSE(ParsePrecision("x", &p));
  // Out of range once scaled: refused, not wrapped around.
  ParsedMessage m = Parse("m,device=d v=1 9223372036854775807", {"{tag:device}", Precision::kSeconds});
  ASSERT_EQ(m.rejections.size(), 1u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kInvalidTimestamp);
}

TEST(LineReadingsTest, NoTimestampIsTheServersClockOncePerBody) {
  ParsedMessage m = Parse("m,device=d a=1\nm,device=e b=2");
  ASSERT_EQ(m.readings.size(), 2u);
  EXPECT_EQ(m.readings[0].sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(m.readings[1].sort_key, m.readings[0].sort_key);
}

TEST(LineReadingsTest, LinesOfOneDeviceAndInstantAreOneReading) {
  ParsedMessage m = Parse("cpu,device=h1,host=h1x usage=5 1782201600000000000\n"
                          "mem,device=h1,host=h1x used=7i 1782201600000000000\n"
                          "disk,device=h1,host=other free=1 1782201600000000000\n");
  ASSERT_EQ(m.readings.size(), 1u);
  EXPECT_EQ(m.readings[0].attributes.size(), 3u);  // usage, host (equal, kept once), used
  ASSERT_EQ(m.rejections.size(), 1u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kDuplicateKey);
  EXPECT_EQ(m.rejections[0].index, 3u);
  EXPECT_EQ(m.readings[0].attributes.size(), 3u);  // the refused line left nothing behind
}

// Many devices, each instant's lines apart in the body: each device and instant is one reading,
// in the order of its first line, and no two others are taken for one.
TEST(LineReadingsTest, LinesOfOneDeviceAndInstantMergeAcrossABodyOfManyDevices) {
  std::string body;
  for (int part = 0; part < 2; ++part) {
    for (int d = 0; d < 500; ++d) {
      for (int t = 0; t < 2; ++t) {
        body += "m,device=d" + std::to_string(d) + (part == 0 ? " a=" : " b=") + std::to_string(d) + " " +
                std::to_string(1782201600 + t) + "\n";
      }
    }
  }
  PayloadOptions checks = Checks();
  checks.max_batch = 2000;
  ParsedMessage m = Parse(body, {.precision = Precision::kSeconds}, checks);
  EXPECT_TRUE(m.rejections.empty());
  ASSERT_EQ(m.readings.size(), 1000u);
  for (int d = 0; d < 500; ++d) {
    for (int t = 0; t < 2; ++t) {
      const storage::Reading& r = m.readings[static_cast<std::size_t>(2 * d + t)];
      EXPECT_EQ(r.device_id, "d" + std::to_string(d));
      EXPECT_EQ(r.sort_key, t == 0 ? "2026-06-23T08:00:00.000000000Z" : "2026-06-23T08:00:01.000000000Z");
      ASSERT_EQ(r.attributes.size(), 2u) << r.device_id;
      EXPECT_EQ(r.attributes[0].name, "a");
      EXPECT_EQ(r.attributes[1].name, "b");
    }
  }
}

// The template's tags are not attributes, wherever they stand among many.
TEST(LineReadingsTest, ATemplateTagPastTheSixtyFourthIsNotAnAttribute) {
  std::string line = "m";
  for (int i = 0; i < 70; ++i) line += ",t" + std::to_string(i) + "=v" + std::to_string(i);
  line += " f=1 1782201600000000000";
  ParsedMessage m = Parse(line, {.device_template = "{tag:t2}.{tag:t66}"});
  ASSERT_EQ(m.readings.size(), 1u) << (m.rejections.empty() ? "" : m.rejections[0].message);
  EXPECT_EQ(m.readings[0].device_id, "v2.v66");
  EXPECT_EQ(m.readings[0].attributes.size(), 69u);  // f and 68 tags
  EXPECT_EQ(Find(m.readings[0], "t2"), nullptr);
  EXPECT_EQ(Find(m.readings[0], "t66"), nullptr);
  ASSERT_NE(Find(m.readings[0], "t65"), nullptr);
  ASSERT_NE(Find(m.readings[0], "t67"), nullptr);
}

TEST(LineReadingsTest, EveryBadLineIsRefusedByLineNumberAndTheRestKept) {
  ParsedMessage m = Parse("# comment\n"
                          "m,device=d v=1 1782201600000000000\n"
                          "m,device=d v=hot 1782201600000000000\n"         // 3: malformed
                          "m,site=x v=1 1782201600000000000\n"             // 4: no device tag
                          "m,device=d v=1 946684799000000000\n"            // 5: before 2000
                          "m,device=d v=1 1882201600000000000\n"           // 6: years ahead
                          "m,device=d v=1,v=2 1782201601000000000\n"       // 7: field twice
                          "m,device=d readingTs=1 1782201602000000000\n"   // 8: a key attribute's name
                          "m,device=d v=1e999 1782201603000000000\n"       // 9: out of range
                          "m,device=d v=2 1782201604000000000\n");
  ASSERT_EQ(m.readings.size(), 2u);
  std::vector<std::pair<std::size_t, RejectReason>> got;
  for (const Rejection& r : m.rejections) got.emplace_back(r.index, r.reason);
  EXPECT_EQ(got, (std::vector<std::pair<std::size_t, RejectReason>>{
                     {3, RejectReason::kMalformedLine},
                     {4, RejectReason::kMissingDeviceId},
                     {5, RejectReason::kTimestampTooOld},
                     {6, RejectReason::kTimestampInFuture},
                     {7, RejectReason::kDuplicateKey},
                     {8, RejectReason::kInvalidAttribute},
                     {9, RejectReason::kInvalidAttribute},
                 }));
  EXPECT_EQ(m.rejections[2].device_id, "d");
}

TEST(LineReadingsTest, BodyBounds) {
  PayloadOptions small = Checks();
  small.max_batch = 2;
  ParsedMessage m = Parse("m,device=d v=1 1\nm,device=d v=1 2\nm,device=d v=1 3\n", {}, small);
  ASSERT_EQ(m.rejections.size(), 1u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kBatchTooLarge);
  EXPECT_TRUE(m.readings.empty());
  small.max_payload_bytes = 4;
  EXPECT_EQ(Parse("m,device=d v=1", {}, small).rejections.at(0).reason, RejectReason::kOversize);
  EXPECT_EQ(Parse("\n# only a comment\n").rejections.at(0).reason, RejectReason::kEmptyBatch);
}

}  // namespace
}  // namespace readingsd::ingest
