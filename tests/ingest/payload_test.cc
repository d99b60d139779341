#include "ingest/payload.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "json/parse.h"

namespace readingsd::ingest {
namespace {

ParsedMessage Parse(std::string_view payload, std::string_view topic = "sensors/a1/readings",
                    PayloadOptions options = {}) {
  ParsedMessage out;
  ParsePayload(options, topic, payload, &out);
  return out;
}

RejectReason OnlyRejection(const ParsedMessage& m) {
  EXPECT_TRUE(m.readings.empty());
  EXPECT_EQ(m.rejections.size(), 1u);
  return m.rejections.empty() ? RejectReason::kMalformedJson : m.rejections[0].reason;
}

TEST(Payload, OneReadingWithAttributes) {
  auto m = Parse(R"({"deviceId":"a1","readingTs":"2026-06-23T10:00:00+02:00","temperature":21.5,
                     "count":3,"status":"ok","door":false,"gone":null})");
  ASSERT_EQ(m.readings.size(), 1u);
  ASSERT_TRUE(m.rejections.empty());
  const auto& r = m.readings[0];
  EXPECT_EQ(r.device_id, "a1");
  EXPECT_EQ(r.sort_key, "2026-06-23T08:00:00.000000000Z");
  ASSERT_EQ(r.attributes.size(), 4u);  // null is dropped
  EXPECT_EQ(r.attributes[0].name, "count");
  EXPECT_EQ(std::get<storage::Number>(r.attributes[0].value).text, "3");
  EXPECT_EQ(std::get<bool>(r.attributes[1].value), false);
  EXPECT_EQ(std::get<std::string>(r.attributes[2].value), "ok");
  EXPECT_EQ(std::get<storage::Number>(r.attributes[3].value).text, "21.5");
}

// Every digit of every number, in each reading of a batch: the parse keeps the text a double would round.
TEST(Payload, NumbersKeepTheirDigitsInEveryReadingOfABatch) {
  auto m = Parse(R"([{"deviceId":"a1","readingTs":"2026-06-23T08:00:00Z","f":0.1234567890123456789,"i":-42,
                      "u":18446744073709551615,"big":123456789012345678901234567890},
                     {"deviceId":"a1","readingTs":"2026-06-23T08:00:01Z","f":1.00000000000000000001,"e":-2.5E-3},
                     {"deviceId":"a1","readingTs":"2026-06-23T08:00:02Z","x":1e126}])");
  ASSERT_EQ(m.readings.size(), 2u);
  auto number = [&](std::size_t reading, std::size_t attribute) {
    return std::get<storage::Number>(m.readings[reading].attributes.at(attribute).value).text;
  };
  EXPECT_EQ(number(0, 0), "123456789012345678901234567890");  // "big": attributes in name order
  EXPECT_EQ(number(0, 1), "0.1234567890123456789");
  EXPECT_EQ(number(0, 2), "-42");
  EXPECT_EQ(number(0, 3), "18446744073709551615");
  EXPECT_EQ(number(1, 0), "-0.0025");
  EXPECT_EQ(number(1, 1), "1.00000000000000000001");
  ASSERT_EQ(m.rejections.size(), 1u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kInvalidAttribute);
  EXPECT_EQ(m.rejections[0].message,
            "attribute \"x\": Number overflow. Attempting to store a number with magnitude larger than supported range");
}

TEST(Payload, DeviceIdFromTopicOrPayload) {
  auto m = Parse(R"({"readingTs":"2026-06-23T08:00:00Z","t":1})", "sensors/dev-7/readings");
  ASSERT_EQ(m.readings.size(), 1u);
  EXPECT_EQ(m.readings[0].device_id, "dev-7");
  EXPECT_EQ(OnlyRejection(Parse(R"({"deviceId":"b2","readingTs":"2026-06-23T08:00:00Z"})")),
            RejectReason::kDeviceIdMismatch);
  PayloadOptions payload_only;
  payload_only.device_id_topic = "";
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T08:00:00Z"})", "x", payload_only)),
            RejectReason::kMissingDeviceId);
  EXPECT_EQ(Parse(R"({"deviceId":"b2","readingTs":"2026-06-23T08:00:00Z"})", "x", payload_only).readings.size(), 1u);
  EXPECT_EQ(DeviceIdFromTopic("sensors/{deviceId}/readings", "sensors/a/b/readings"), "");
  EXPECT_EQ(DeviceIdFromTopic("sensors/{deviceId}/readings", "sensors//readings"), "");
  EXPECT_EQ(DeviceIdFromTopic("{deviceId}", "abc"), "abc");
  EXPECT_EQ(DeviceIdFromTopic("site/x/{deviceId}", "site/x/abc"), "abc");
}

// For logs: the device a rejection is about, when a valid id names it.
TEST(Payload, ARejectionNamesTheDeviceOfTheReadingOrTheTopic) {
  PayloadOptions payload_only;
  payload_only.device_id_topic = "";
  auto m = Parse(R"([{"deviceId":"p1","readingTs":"bad"},
                     {"readingTs":"bad"},
                     {"deviceId":"bad id","readingTs":"bad"},
                     {"deviceId":"p2","readingTs":"2026-06-23T08:00:00Z","m":[1]}])",
                 "sensors/t1/readings", payload_only);
  ASSERT_EQ(m.rejections.size(), 4u);
  EXPECT_EQ(m.rejections[0].device_id, "p1");
  EXPECT_EQ(m.rejections[1].device_id, "");  // no device id anywhere
  EXPECT_EQ(m.rejections[2].device_id, "");  // not a valid one
  EXPECT_EQ(m.rejections[3].device_id, "p2");  // known though rejected before it was read
  EXPECT_EQ(Parse(R"({"readingTs":"bad"})").rejections.at(0).device_id, "a1");  // the topic's
  EXPECT_EQ(Parse(R"({"deviceId":"b2","readingTs":"bad"})").rejections.at(0).device_id, "b2");
  EXPECT_EQ(Parse("{not json").rejections.at(0).device_id, "a1");  // a payload refused whole
  EXPECT_EQ(Parse("[]", "sensors/bad id/readings").rejections.at(0).device_id, "");
}

TEST(Payload, BatchElementsStandOrFallAlone) {
  auto m = Parse(R"([{"readingTs":"2026-06-23T08:00:00Z","t":1},
                     {"readingTs":"not a time","t":2},
                     {"readingTs":"2026-06-23T08:00:01Z","t":{"nested":true}},
                     7,
                     {"readingTs":"2026-06-23T08:00:02Z","t":3}])");
  ASSERT_EQ(m.readings.size(), 2u);
  ASSERT_EQ(m.rejections.size(), 3u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kInvalidTimestamp);
  EXPECT_EQ(m.rejections[1].reason, RejectReason::kInvalidAttribute);
  EXPECT_EQ(m.rejections[2].reason, RejectReason::kNotAnObject);
}

TEST(Payload, AReadingThatHoldsAKeyTwiceIsRejectedAlone) {
  for (const char* payload : {R"({"readingTs":"2026-06-23T08:00:00Z","t":1,"t":2})",
                              R"({"readingTs":"2026-06-23T08:00:00Z","readingTs":"2026-06-23T09:00:00Z"})",
                              R"({"deviceId":"a1","readingTs":"2026-06-23T08:00:00Z","deviceId":"a1"})",
                              R"({"t":1,"readingTs":"2026-06-23T08:00:00Z","\u0074":1})",  // escaped, still "t"
                              R"({"gone":null,"gone":null,"readingTs":"2026-06-23T08:00:00Z"})"}) {
    auto m = Parse(payload);
    EXPECT_EQ(OnlyRejection(m), RejectReason::kDuplicateKey) << payload;
  }
  EXPECT_EQ(Parse(R"({"t":1,"readingTs":"2026-06-23T08:00:00Z","t":2})").rejections.at(0).message,
            "key \"t\" appears more than once");
  // Many keys (compared sorted rather than pairwise): distinct ones pass, one given twice does not.
  std::string many = R"({"readingTs":"2026-06-23T08:00:00Z")";
  for (int i = 0; i < 40; ++i) many += ",\"a" + std::to_string(i) + "\":" + std::to_string(i);
  EXPECT_EQ(Parse(many + "}").readings.size(), 1u);
  EXPECT_EQ(Parse(many + R"(,"a17":0})").rejections.at(0).message, "key \"a17\" appears more than once");

  // In a batch only that reading falls; the same key in two readings, or twice in a nested
  // object (refused for being nested), is no duplicate of the reading's.
  auto m = Parse(R"([{"readingTs":"2026-06-23T08:00:00Z","t":1},
                     {"readingTs":"2026-06-23T08:00:01Z","t":2,"t":3},
                     [{"t":1,"t":1}],
                     {"readingTs":"2026-06-23T08:00:02Z","m":{"a":1,"a":2}},
                     {"readingTs":"2026-06-23T08:00:03Z","t":4},
                     {"readingTs":"2026-06-23T08:00:04Z","readingTs":"2026-06-23T08:00:05Z"}])");
  ASSERT_EQ(m.readings.size(), 2u);
  EXPECT_EQ(m.readings[0].sort_key, "2026-06-23T08:00:00.000000000Z");
  EXPECT_EQ(m.readings[1].sort_key, "2026-06-23T08:00:03.000000000Z");
  ASSERT_EQ(m.rejections.size(), 4u);
  EXPECT_EQ(m.rejections[0].reason, RejectReason::kDuplicateKey);
  EXPECT_EQ(m.rejections[1].reason, RejectReason::kNotAnObject);
  EXPECT_EQ(m.rejections[2].reason, RejectReason::kInvalidAttribute);
  EXPECT_EQ(m.rejections[3].reason, RejectReason::kDuplicateKey);
  EXPECT_EQ(m.rejections[3].message, "key \"readingTs\" appears more than once");
}

// A clock stopped at 2026-06-23T12:00:00Z.
std::chrono::system_clock::time_point Noon() {
  return std::chrono::sys_days{std::chrono::year{2026} / 6 / 23} + std::chrono::hours(12);
}

TEST(Payload, ReadingsOutsideThePlausibleWindowAreRejectedAlone) {
  PayloadOptions options;
  options.now = Noon;  // max_future is a day: the latest accepted is 2026-06-24T12:00:00Z
  auto m = Parse(R"([{"readingTs":"1970-01-01T00:00:00Z","t":1},
                     {"readingTs":"0000-01-01T00:00:00Z","t":2},
                     {"readingTs":"1999-12-31T23:59:59.999999999Z","t":3},
                     {"readingTs":"2000-01-01T00:00:00Z","t":4},
                     {"readingTs":"2026-06-24T13:59:59+02:00","t":5},
                     {"readingTs":"2026-06-24T12:00:01Z","t":6},
                     {"readingTs":"9999-12-31T23:59:59Z","t":7},
                     {"readingTs":"2026-06-23T12:00:00Z","t":8}])",
                 "sensors/a1/readings", options);
  ASSERT_EQ(m.readings.size(), 3u);
  EXPECT_EQ(m.readings[0].sort_key, "2000-01-01T00:00:00.000000000Z");
  EXPECT_EQ(m.readings[1].sort_key, "2026-06-24T11:59:59.000000000Z");
  EXPECT_EQ(m.readings[2].sort_key, "2026-06-23T12:00:00.000000000Z");
  ASSERT_EQ(m.rejections.size(), 5u);
  for (int i : {0, 1, 2}) EXPECT_EQ(m.rejections[i].reason, RejectReason::kTimestampTooOld) << i;
  for (int i : {3, 4}) EXPECT_EQ(m.rejections[i].reason, RejectReason::kTimestampInFuture) << i;
  EXPECT_EQ(m.rejections[0].message,
            "readingTs 1970-01-01T00:00:00Z is before 2000-01-01T00:00:00.000000000Z (ingest.min_timestamp): is the "
            "device's clock set?");
  EXPECT_EQ(m.rejections[3].message,
            "readingTs 2026-06-24T12:00:01Z is after 2026-06-24T12:00:00.000000000Z, now plus ingest.max_future");

  // The window follows the clock, and its bounds are settings.
  options.now = [] { return Noon() + std::chrono::hours(24 * 365); };
  EXPECT_EQ(Parse(R"({"readingTs":"2026-06-24T12:00:01Z"})", "sensors/a1/readings", options).readings.size(), 1u);
  options.now = Noon;
  options.max_future = std::chrono::seconds(60);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T12:01:01Z"})", "sensors/a1/readings", options)),
            RejectReason::kTimestampInFuture);
  options.min_sort_key = "2026-06-23T11:00:00.000000000Z";
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T10:59:59Z"})", "sensors/a1/readings", options)),
            RejectReason::kTimestampTooOld);
  options.min_sort_key = "";
  options.max_future = std::chrono::seconds(0);  // both bounds off
  EXPECT_EQ(Parse(R"([{"readingTs":"0000-01-01T00:00:00Z"},{"readingTs":"9999-12-31T23:59:59Z"}])",
                  "sensors/a1/readings", options)
                .readings.size(),
            2u);
}

TEST(Payload, EveryRejectReason) {
  PayloadOptions small;
  small.max_payload_bytes = 10;
  small.max_batch = 2;
  EXPECT_EQ(OnlyRejection(Parse(std::string(11, ' '), "sensors/a1/readings", small)), RejectReason::kOversize);
  EXPECT_EQ(OnlyRejection(Parse("{\"readingTs\":")), RejectReason::kMalformedJson);
  EXPECT_EQ(OnlyRejection(Parse("\xff\xfe")), RejectReason::kMalformedJson);
  EXPECT_EQ(OnlyRejection(Parse("\"text\"")), RejectReason::kNotAnObject);
  EXPECT_EQ(OnlyRejection(Parse("[]")), RejectReason::kEmptyBatch);
  EXPECT_EQ(OnlyRejection(Parse("[{},{},{}]", "sensors/a1/readings", {.max_batch = 2})),
            RejectReason::kBatchTooLarge);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T08:00:00Z"})", "sensors/a#1/readings")),
            RejectReason::kInvalidDeviceId);
  EXPECT_EQ(OnlyRejection(Parse(R"({"deviceId":5,"readingTs":"2026-06-23T08:00:00Z"})")),
            RejectReason::kInvalidDeviceId);
  EXPECT_EQ(OnlyRejection(Parse(R"({"t":1})")), RejectReason::kMissingTimestamp);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":true})")), RejectReason::kInvalidTimestamp);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-02-30T00:00:00Z"})")), RejectReason::kInvalidTimestamp);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T08:00:00Z","l":[1]})")),
            RejectReason::kInvalidAttribute);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T08:00:00Z","":1})")),
            RejectReason::kInvalidAttribute);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"2026-06-23T08:00:00Z","t":1,"t":1})")),
            RejectReason::kDuplicateKey);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"1970-01-01T00:00:00Z"})")), RejectReason::kTimestampTooOld);
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":"9999-01-01T00:00:00Z"})")), RejectReason::kTimestampInFuture);
  for (RejectReason r : kAllRejectReasons) EXPECT_NE(ReasonName(r), "unknown");
}

TEST(Payload, EpochNumbersAreTimestampsInTheUnitTheirDigitsTell) {
  // 2026-06-23T08:00:00Z in seconds, milliseconds, microseconds and nanoseconds, and fractions.
  const std::string want = "2026-06-23T08:00:00.000000000Z";
  for (const char* ts : {"1782201600", "1782201600000", "1782201600000000", "1782201600000000000"}) {
    auto m = Parse(std::string(R"({"readingTs":)") + ts + R"(,"t":1})");
    ASSERT_EQ(m.readings.size(), 1u) << ts << ": " << (m.rejections.empty() ? "" : m.rejections[0].message);
    EXPECT_EQ(m.readings[0].sort_key, want) << ts;
  }
  auto fractions = Parse(R"([{"readingTs":1782201600.123456789},{"readingTs":1782201600123.5},
                             {"readingTs":1782201600123456.789},{"readingTs":1782201600.5}])");
  ASSERT_EQ(fractions.readings.size(), 4u);
  EXPECT_EQ(fractions.readings[0].sort_key, "2026-06-23T08:00:00.123456789Z");
  EXPECT_EQ(fractions.readings[1].sort_key, "2026-06-23T08:00:00.123500000Z");
  EXPECT_EQ(fractions.readings[2].sort_key, "2026-06-23T08:00:00.123456789Z");
  EXPECT_EQ(fractions.readings[3].sort_key, "2026-06-23T08:00:00.500000000Z");
  // The same instant as a string and as a number is one key: a redelivery in the other form
  // overwrites, it does not duplicate.
  EXPECT_EQ(Parse(R"({"readingTs":"2026-06-23T10:00:00+02:00"})").readings.at(0).sort_key, want);

  // Ambiguous or malformed numbers are refused, each saying why.
  auto message = [](const std::string& ts) {
    auto m = Parse(R"({"readingTs":)" + ts + "}");
    EXPECT_EQ(OnlyRejection(m), RejectReason::kInvalidTimestamp) << ts;
    return m.rejections.empty() ? std::string() : m.rejections[0].message;
  };
  EXPECT_EQ(message("17822016"),
            "epoch timestamp 17822016 has 8 digits, so its unit is ambiguous: seconds, milliseconds, "
            "microseconds and nanoseconds since 1970 have 9-11, 12-14, 15-17 and 18-20 digits (from 1973 on)");
  EXPECT_NE(message("178220160000000000000").find("has 21 digits"), std::string::npos);
  EXPECT_NE(message("-1782201600").find("must be plain digits"), std::string::npos);
  EXPECT_NE(message("1.7822016e9").find("must be plain digits"), std::string::npos);
  EXPECT_NE(message("1782201600000000.1234").find("finer than a nanosecond"), std::string::npos);
  EXPECT_NE(message("99999999999999999999").find("after 2262"), std::string::npos);
  // In range but implausible, as for a string: the window applies.
  EXPECT_EQ(OnlyRejection(Parse(R"({"readingTs":200000000})")), RejectReason::kTimestampTooOld);  // 1976
}

TEST(Payload, TheTimestampAndDeviceIdFieldsAreConfigurable) {
  PayloadOptions options;
  options.timestamp_fields = {"readingTs", "ts", "time"};
  options.device_id_fields = {"deviceId", "device"};
  auto m = Parse(R"([{"device":"d1","ts":1782201600000,"t":1},{"time":"2026-06-23T08:00:01Z","t":2},
                     {"deviceId":"a1","readingTs":"2026-06-23T08:00:02Z"}])",
                 "sensors/a1/readings", options);
  // d1 differs from the topic's a1.
  ASSERT_EQ(m.readings.size(), 2u);
  EXPECT_EQ(m.readings[0].device_id, "a1");
  EXPECT_EQ(m.readings[0].sort_key, "2026-06-23T08:00:01.000000000Z");
  ASSERT_EQ(m.readings[0].attributes.size(), 1u);  // the timestamp field is the key, not an attribute
  EXPECT_EQ(m.rejections.at(0).reason, RejectReason::kDeviceIdMismatch);
  EXPECT_EQ(m.rejections.at(0).message, "device \"d1\" differs from \"a1\" that the topic or path names");

  auto payload_only = options;
  payload_only.device_id_topic = "";
  auto named = Parse(R"({"device":"d1","ts":1782201600000,"t":1})", "x", payload_only);
  ASSERT_EQ(named.readings.size(), 1u);
  EXPECT_EQ(named.readings[0].device_id, "d1");
  EXPECT_EQ(named.readings[0].sort_key, "2026-06-23T08:00:00.000000000Z");

  // Two fields of one list in one reading: refused, naming both (in the parsed object's key order).
  auto two = Parse(R"({"ts":1782201600,"time":1782201601})", "sensors/a1/readings", options);
  EXPECT_EQ(OnlyRejection(two), RejectReason::kInvalidTimestamp);
  EXPECT_EQ(two.rejections.at(0).message, "both \"time\" and \"ts\" hold a timestamp; send one");
  auto both_ids = Parse(R"({"device":"a1","deviceId":"a1","ts":1782201600})", "sensors/a1/readings", options);
  EXPECT_EQ(OnlyRejection(both_ids), RejectReason::kInvalidDeviceId);
  // None: the message lists the fields.
  auto none = Parse(R"({"t":1})", "x", payload_only);
  ASSERT_EQ(none.rejections.size(), 1u);
  EXPECT_EQ(none.rejections[0].message, "no deviceId or device in the payload, the topic or the path");
  auto no_ts = Parse(R"({"t":1})", "sensors/a1/readings", options);
  EXPECT_EQ(no_ts.rejections.at(0).message, "no readingTs, ts or time");
  // A field outside the lists is an attribute like any other; one of the key names is refused.
  options.timestamp_fields = {"ts"};
  EXPECT_EQ(OnlyRejection(Parse(R"({"ts":1782201600,"readingTs":"2026-06-23T08:00:00Z"})", "sensors/a1/readings",
                                options)),
            RejectReason::kInvalidAttribute);
}

// `levels` nested objects {"a":{"a":…1…}} as the attribute "m" of an otherwise valid reading, so
// the reading sits at level 1 and "m" is 1 + levels deep.
std::string ReadingNesting(int levels) {
  std::string payload = R"({"readingTs":"2026-06-23T08:00:00Z","m":)";
  for (int i = 0; i < levels; ++i) payload += R"({"a":)";
  payload += "1";
  payload.append(levels, '}');
  return payload + "}";
}

TEST(Payload, NestingPastTheJsonLimitIsMalformedAndNeverBuilt) {
  const std::string deep = ReadingNesting(40000);  // 240 KB, under the default 256 KB cap
  ASSERT_LE(deep.size(), PayloadOptions{}.max_payload_bytes);
  auto m = Parse(deep);
  EXPECT_EQ(OnlyRejection(m), RejectReason::kMalformedJson);
  EXPECT_EQ(m.rejections.at(0).message, "payload nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  EXPECT_EQ(OnlyRejection(Parse(std::string(100000, '[') + std::string(100000, ']'))),
            RejectReason::kMalformedJson);

  // At the limit the payload is parsed and refused for what it holds; one level more is not parsed.
  EXPECT_EQ(OnlyRejection(Parse(ReadingNesting(kMaxJsonDepth - 1))), RejectReason::kInvalidAttribute);
  EXPECT_EQ(OnlyRejection(Parse(ReadingNesting(kMaxJsonDepth))), RejectReason::kMalformedJson);
}

}  // namespace
}  // namespace readingsd::ingest
