// The line protocol grammar, with the examples of InfluxDB's own line protocol reference.
#include "lineproto/line_protocol.h"

#include <gtest/gtest.h>

namespace readingsd::lineproto {
namespace {

Point Parsed(std::string_view line) {
  Point p;
  Status s = ParsePoint(line, &p);
  EXPECT_TRUE(s.ok()) << line << ": " << s.message();
  return p;
}

std::string ErrorOf(std::string_view line) {
  Point p;
  Status s = ParsePoint(line, &p);
  EXPECT_FALSE(s.ok()) << line;
  return s.message();
}

TEST(LineProtocolTest, MeasurementTagsFieldsAndTimestamp) {
  Point p = Parsed("weather,location=us-midwest,season=summer temperature=82,humidity=71.5 1465839830100400200");
  EXPECT_EQ(p.measurement, "weather");
  ASSERT_EQ(p.tags.size(), 2u);
  EXPECT_EQ(p.tags[0], (std::pair<std::string, std::string>{"location", "us-midwest"}));
  EXPECT_EQ(p.tags[1].second, "summer");
  ASSERT_EQ(p.fields.size(), 2u);
  EXPECT_EQ(p.fields[0].key, "temperature");
  EXPECT_EQ(p.fields[0].type, FieldType::kFloat);
  EXPECT_EQ(p.fields[0].value, "82");
  EXPECT_EQ(p.fields[1].value, "71.5");
  ASSERT_TRUE(p.timestamp.has_value());
  EXPECT_EQ(*p.timestamp, 1465839830100400200);
  EXPECT_FALSE(Parsed("weather temperature=82").timestamp.has_value());
  EXPECT_EQ(*Parsed("m v=1 -1000").timestamp, -1000);
}

TEST(LineProtocolTest, EveryFieldType) {
  Point p = Parsed(R"(m f=-1.5e3,i=-42i,u=42u,s="a \"quoted\" \\ string, with = signs",t=t,T=TRUE,f2=False,b=true)");
  ASSERT_EQ(p.fields.size(), 8u);
  EXPECT_EQ(p.fields[0].type, FieldType::kFloat);
  EXPECT_EQ(p.fields[0].value, "-1.5e3");
  EXPECT_EQ(p.fields[1].type, FieldType::kInteger);
  EXPECT_EQ(p.fields[1].value, "-42");
  EXPECT_EQ(p.fields[2].type, FieldType::kUnsigned);
  EXPECT_EQ(p.fields[2].value, "42");
  EXPECT_EQ(p.fields[3].type, FieldType::kString);
  EXPECT_EQ(p.fields[3].value, R"(a "quoted" \ string, with = signs)");
  for (int i : {4, 5, 7}) EXPECT_EQ(p.fields[i].value, "true") << i;
  EXPECT_EQ(p.fields[6].value, "false");
  EXPECT_EQ(p.fields[6].type, FieldType::kBoolean);
  // Exact: the text is kept as written, never through a double.
  EXPECT_EQ(Parsed("m v=18446744073709551615u").fields[0].value, "18446744073709551615");
  EXPECT_EQ(Parsed("m v=0.1000000000000000055511151231257827").fields[0].value,
            "0.1000000000000000055511151231257827");
}

TEST(LineProtocolTest, Escapes) {
  Point p = Parsed(R"(my\ weather\,x,loc\ ation=us\,mid\=west temp\=er\ ature=1,path="C:\\dir\n" 1)");
  EXPECT_EQ(p.measurement, "my weather,x");
  EXPECT_EQ(p.tags[0].first, "loc ation");
  EXPECT_EQ(p.tags[0].second, "us,mid=west");
  EXPECT_EQ(p.fields[0].key, "temp=er ature");
  EXPECT_EQ(p.fields[1].value, R"(C:\dir\n)");  // only \" and \\ are escapes in a string
  EXPECT_EQ(Parsed(R"(m\=x v=1)").measurement, R"(m\=x)");  // '=' needs no escape in a measurement
}

// A Point parsed into again keeps nothing of the line before, longer or shorter, escaped or not.
TEST(LineProtocolTest, APointParsedIntoAgainHoldsOnlyTheNewLine) {
  Point p;
  ASSERT_TRUE(ParsePoint(R"(long\ measurement,a=1,b=2,c=3 x=1,y="a long string value here",z=true 5)", &p).ok());
  ASSERT_TRUE(ParsePoint("m,t=v\\,w f=2i", &p).ok());
  EXPECT_EQ(p.measurement, "m");
  ASSERT_EQ(p.tags.size(), 1u);
  EXPECT_EQ(p.tags[0], (std::pair<std::string, std::string>{"t", "v,w"}));
  ASSERT_EQ(p.fields.size(), 1u);
  EXPECT_EQ(p.fields[0].key, "f");
  EXPECT_EQ(p.fields[0].type, FieldType::kInteger);
  EXPECT_EQ(p.fields[0].value, "2");
  EXPECT_FALSE(p.timestamp.has_value());
  ASSERT_FALSE(ParsePoint("m,a=1,b=2 bad", &p).ok());  // a failed parse leaves it unspecified...
  ASSERT_TRUE(ParsePoint("n a=1,b=2,c=3 7", &p).ok());  // ...and the next one whole
  EXPECT_EQ(p.measurement, "n");
  EXPECT_TRUE(p.tags.empty());
  ASSERT_EQ(p.fields.size(), 3u);
  EXPECT_EQ(p.fields[2].key, "c");
  EXPECT_EQ(*p.timestamp, 7);
}

TEST(LineProtocolTest, MalformedLinesSayWhere) {
  EXPECT_EQ(ErrorOf("weather"), "column 8: missing fields");
  EXPECT_EQ(ErrorOf("weather,location temperature=1"), "column 17: tag \"location\" has no '='");
  EXPECT_EQ(ErrorOf("weather,location= temperature=1"), "column 18: tag \"location\" has no value");
  EXPECT_EQ(ErrorOf("weather temperature"), "column 20: field \"temperature\" has no '='");
  EXPECT_EQ(ErrorOf("weather temperature="), "column 21: missing field value");
  EXPECT_NE(ErrorOf("weather temperature=hot").find("invalid field value \"hot\""), std::string::npos);
  EXPECT_NE(ErrorOf("weather t=1 12:00").find("invalid timestamp"), std::string::npos);
  EXPECT_NE(ErrorOf("weather t=1 99999999999999999999").find("invalid timestamp"), std::string::npos);
  EXPECT_NE(ErrorOf("weather t=1 1 2").find("after the timestamp"), std::string::npos);
  EXPECT_NE(ErrorOf(R"(weather s="open)").find("no closing quote"), std::string::npos);
  for (const char* bad : {",t=1 v=1", " v=1", "m v=inf", "m v=NaN", "m v=1.2.3", "m v=1e", "m v=--1", "m v=1x",
                          "m v=12i3", "m v=-1u", "m v=1,", "m ,v=1", "m v=1 +5"}) {
    Point p;
    EXPECT_FALSE(ParsePoint(bad, &p).ok()) << bad;
  }
}

TEST(LineProtocolTest, LineReaderSkipsBlankAndCommentLinesAndCountsEveryLine) {
  LineReader reader("# DML\n\nm v=1\r\n  m v=2\n\t# indented comment\nm v=3");
  std::string_view line;
  std::size_t number = 0;
  std::vector<std::pair<std::size_t, std::string>> got;
  while (reader.Next(&line, &number)) got.emplace_back(number, std::string(line));
  EXPECT_EQ(got, (std::vector<std::pair<std::size_t, std::string>>{{3, "m v=1"}, {4, "m v=2"}, {6, "m v=3"}}));
}

}  // namespace
}  // namespace readingsd::lineproto
