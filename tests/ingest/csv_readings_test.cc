// CSV records as readings: RFC 4180 quoting, the header, cell types, line numbers, the checks.
#include "ingest/csv_readings.h"

#include <gtest/gtest.h>

namespace readingsd::ingest {
namespace {

PayloadOptions Checks() {
  PayloadOptions o;
  o.now = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1782201600)); };
  return o;
}

ParsedMessage Parse(std::string_view csv, Precision precision = Precision::kSeconds) {
  CsvColumns columns;
  std::size_t lines = 0;
  Status s = ParseCsvHeader(&csv, &columns, &lines);
  EXPECT_TRUE(s.ok()) << s.message();
  ParsedMessage m;
  ParseCsvRecords(Checks(), precision, columns, csv, 1 + lines, &m);
  return m;
}

TEST(CsvReadingsTest, CellsBecomeTypedAttributes) {
  ParsedMessage m = Parse("device,time,t,n,s,q,b,e\n"
                          "d1,2026-06-23T08:00:00Z,21.5,18446744073709551615,text,\"42\",true,\n");
  ASSERT_EQ(m.readings.size(), 1u) << m.rejections.at(0).message;
  const storage::Reading& r = m.readings[0];
  EXPECT_EQ(r.device_id, "d1");
  EXPECT_EQ(r.sort_key, "2026-06-23T08:00:00.000000000Z");
  ASSERT_EQ(r.attributes.size(), 5u);  // e is empty: absent
  EXPECT_EQ(std::get<storage::Number>(r.attributes[0].value).text, "21.5");
  EXPECT_EQ(std::get<storage::Number>(r.attributes[1].value).text, "18446744073709551615");
  EXPECT_EQ(std::get<std::string>(r.attributes[2].value), "text");
  EXPECT_EQ(std::get<std::string>(r.attributes[3].value), "42");  // quoted: a string
  EXPECT_EQ(std::get<bool>(r.attributes[4].value), true);
}

TEST(CsvReadingsTest, QuotingAndLineNumbers) {
  ParsedMessage m = Parse("deviceId,readingTs,note\r\n"
                          "d1,1782201600,\"a, \"\"b\"\"\r\nc\"\r\n"
                          "\n"
                          "d1,later,x\n"
                          "d1,1782201601\n"
                          "d1,1782201602,\"x\"y\n"
                          "d1,1782201603,mid\"quote\n");
  ASSERT_EQ(m.readings.size(), 2u);
  EXPECT_EQ(std::get<std::string>(m.readings[0].attributes[0].value), "a, \"b\"\r\nc");
  EXPECT_EQ(std::get<std::string>(m.readings[1].attributes[0].value), "mid\"quote");  // the rest is read on
  ASSERT_EQ(m.rejections.size(), 3u);
  EXPECT_EQ(m.rejections[0].index, 5u);  // the quoted line end counts
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kInvalidTimestamp);
  EXPECT_EQ(m.rejections[1].index, 6u);
  EXPECT_EQ(m.rejections[1].reason, RejectReason::kMalformedLine);
  EXPECT_EQ(m.rejections[2].index, 7u);
  EXPECT_EQ(m.rejections[2].reason, RejectReason::kMalformedLine);
}

// Quoted fields read in runs between quotes: quotes doubled at either end, an empty quoted
// field, a line end inside, and a quote never closed, which refuses the rest.
TEST(CsvReadingsTest, QuotedFieldsEdgesAndAnUnclosedQuote) {
  ParsedMessage m = Parse("deviceId,readingTs,a,b\n"
                          "d1,1782201600,\"\"\"x\"\"\",\"\"\n"
                          "d1,1782201601,\"two\nlines\",plain\n"
                          "d1,1782201602,\"never closed,x\n"
                          "d1,1782201603,y,z\n");
  ASSERT_EQ(m.readings.size(), 2u);
  EXPECT_EQ(std::get<std::string>(m.readings[0].attributes[0].value), "\"x\"");
  EXPECT_EQ(std::get<std::string>(m.readings[0].attributes[1].value), "");  // quoted: kept, though empty
  EXPECT_EQ(std::get<std::string>(m.readings[1].attributes[0].value), "two\nlines");
  EXPECT_EQ(std::get<std::string>(m.readings[1].attributes[1].value), "plain");
  ASSERT_EQ(m.rejections.size(), 1u);
  EXPECT_EQ(m.rejections[0].index, 5u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kMalformedLine);
}

TEST(CsvReadingsTest, TheSameChecksAsEveryWayIn) {
  ParsedMessage m = Parse("device,time,v\n"
                          ",1782201600,1\n"
                          "bad id,1782201600,1\n"
                          "d,,1\n"
                          "d,946684799,1\n"
                          "d,1882201600,1\n"
                          "d,1782201600,1e999\n");
  std::vector<RejectReason> got;
  for (const Rejection& r : m.rejections) got.push_back(r.reason);
  EXPECT_EQ(got, (std::vector<RejectReason>{RejectReason::kMissingDeviceId, RejectReason::kInvalidDeviceId,
                                            RejectReason::kMissingTimestamp, RejectReason::kTimestampTooOld,
                                            RejectReason::kTimestampInFuture, RejectReason::kInvalidAttribute}));
  EXPECT_TRUE(m.readings.empty());
}

TEST(CsvReadingsTest, HeaderRules) {
  for (const char* bad : {"time,v\n", "device,v\n", "device,time,device\n", "device,,time\n", "device,time,v,v\n",
                          "deviceId,device,time\n", "\"device,time\n"}) {
    std::string_view csv = bad;
    CsvColumns columns;
    std::size_t lines = 0;
    EXPECT_FALSE(ParseCsvHeader(&csv, &columns, &lines).ok()) << bad;
  }
}

TEST(CsvReadingsTest, WholeRecordsCutsOnlyOutsideQuotes) {
  EXPECT_EQ(WholeRecords("a,b\nc,\"d\ne", false), 4u);
  EXPECT_EQ(WholeRecords("a,b\nc,\"d\ne\"\nf", false), 12u);
  EXPECT_EQ(WholeRecords("a,b", false), 0u);
  EXPECT_EQ(WholeRecords("a,b", true), 3u);
  EXPECT_EQ(WholeRecords("a,b\"c\nd,\"e", false), 6u);  // a quote inside a field opens nothing
}

}  // namespace
}  // namespace readingsd::ingest
