// Internal to readingsd_config: the one table of settings. The TOML loader, the flags, ToToml and
// HelpText all walk Keys(), so a key added there is a key, a flag and a help line at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "config/config.h"

namespace readingsd::config::internal {

using List = std::vector<std::string>;
// A setting as read from TOML or a flag; integers of every width travel as int64_t (TOML's own).
using Value = std::variant<bool, int64_t, double, std::string, List>;
enum class Kind { kBool, kInt, kDouble, kString, kList };  // = index into Value

struct Key {
  std::string_view name;  // "section.key"
  std::string_view doc;
  Kind kind;
  std::function<Value(const Config&)> get;
  // Only with a value check() accepted.
  std::function<void(Config*, const Value&)> set;
  // "" when the value (of this key's kind) is acceptable, else why not: "must be 1..65535, got 0".
  std::function<std::string(const Value&)> check;
};

const std::vector<Key>& Keys();
const Key* FindKey(std::string_view name);
std::string_view SectionOf(std::string_view name);  // "mqtt" of "mqtt.port"
bool IsSection(std::string_view name);
// The section, key or `also` closest to a misspelt name, "" when none is close.
std::string_view Closest(std::string_view name, std::span<const std::string_view> also = {});

std::string Quote(std::string_view s);        // TOML basic string
std::string FormatValue(const Value& value);  // TOML literal
const char* KindName(Kind kind);              // as in help: STRING, INT, ...
bool ParseDuration(std::string_view text, std::chrono::seconds* out);

// Where the keys set so far came from ("file:line" or "--flag"), in the order they were set.
struct Origin {
  std::string_view key;
  std::string where;
};
using Origins = std::vector<Origin>;

// Applies TOML text over *config, appending to *origins in file order. Cross-key rules are left
// to Finish(). InvalidArgument on a syntax error or bad key; *config is then untouched.
Status LoadToml(std::string_view text, std::string_view source, Config* config, Origins* origins);
// Checks the rules that span keys, blaming the key set last (`fallback` when none was set),
// and fills derived fields. InvalidArgument when a rule fails.
Status Finish(Config* config, const Origins& origins, std::string_view fallback);
// Reads a whole file of at most max_bytes. IOError when it cannot be read, InvalidArgument when
// it is larger; *text is then unchanged.
constexpr size_t kMaxConfigBytes = 16 << 20;
Status ReadFile(const std::string& path, std::size_t max_bytes, std::string* text);

}  // namespace readingsd::config::internal
