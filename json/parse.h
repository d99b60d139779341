// ParseJson: the one way readingsd parses JSON it is sent (DynamoDB request bodies, MQTT
// payloads), with the nesting depth bounded while parsing.
//
// nlohmann's parser is iterative, but copying, comparing and dumping a value recurse once per
// level: a request 90,000 levels deep (540 KB) overflowed the stack of the thread that copied
// it. So no deeper value than kMaxJsonDepth is ever built; whatever walks a parsed value may
// recurse at most that deep.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace readingsd {

// The outermost object or array is level 1, so {"a":[1]} is 2 deep. DynamoDB items nest at most
// 32 levels, two JSON levels each ({"M":{…}}, {"L":[…]}), and its deepest requests (a
// BatchWriteItem's items) wrap them in 6 more: about 70.
inline constexpr int kMaxJsonDepth = 100;

enum class JsonParseError {
  kNone,
  kMalformed,  // not one JSON value (syntax, invalid UTF-8, trailing bytes)
  kTooDeep,    // objects and arrays nest deeper than kMaxJsonDepth
};

// Told each step of a parse as it is read, beside the value being built: for what the value
// cannot show. nlohmann keeps the last of an object's equal keys, so a key given twice is seen
// only here. Value() is a string, number, boolean or null; a container past kMaxJsonDepth is not
// told. After a failed parse, what it was told is a prefix of the text.
class JsonParseObserver {
 public:
  virtual ~JsonParseObserver() = default;
  virtual void Value() {}
  // After Value() for a number that is not an integer of 64 bits: its text as written, which the
  // double in the value may have rounded.
  virtual void NumberText(const std::string& /*text*/) {}
  virtual void StartObject() {}
  virtual void Key(const std::string& /*key*/) {}
  virtual void EndObject() {}
  virtual void StartArray() {}
  virtual void EndArray() {}
};

// Parses all of `text` into *out, a nlohmann::json or nlohmann::ordered_json; *out is untouched
// unless kNone is returned. Parsing stops at the first object or array past kMaxJsonDepth.
// `observer`, when given, is told every step of the same single pass. Thread-safe (no shared
// state).
template <typename BasicJson>
JsonParseError ParseJson(std::string_view text, BasicJson* out, JsonParseObserver* observer = nullptr);

}  // namespace readingsd
