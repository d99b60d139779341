// DumpJson: the one way readingsd writes a JSON value it built (API responses).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace readingsd {

// Responses keep their members in insertion order: deviceId and readingTs come first.
using OrderedJson = nlohmann::ordered_json;

// Never throws: bytes that are not UTF-8 (echoed user input) are replaced, not an exception.
std::string DumpJson(const OrderedJson& json);

}  // namespace readingsd
