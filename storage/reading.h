// A reading: its key (device id + sort key) and its attributes, plus their compact value encoding.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "storage/number.h"

namespace readingsd::storage {

// Numbers are exact decimals (storage/number.h), as DynamoDB's N.
using AttributeValue = std::variant<Number, std::string, bool>;

struct Attribute {
  std::string name;
  AttributeValue value;
};

struct Reading {
  std::string device_id;
  std::string sort_key;  // normalised, see storage/key.h
  std::vector<Attribute> attributes;
};

inline constexpr std::size_t kMaxAttributeNameLength = 255;
// The key attributes, as named in payloads and in the DynamoDB-compatible API.
inline constexpr std::string_view kDeviceIdAttribute = "deviceId";
inline constexpr std::string_view kReadingTsAttribute = "readingTs";

// Attribute names: 1..255 bytes, unique within a reading, not a key attribute name.
Status ValidateAttributes(const std::vector<Attribute>& attributes);

// An item's size as DynamoDB bills it (names plus values, key attributes included; a number
// takes one byte per two significant digits plus one): the basis of read and write units.
std::size_t ItemSize(const Reading& reading);

// Value encoding: a version byte, then per attribute: varint name length, name, type tag and
// value. Version 2 (written): 'd' + varint length + a number's canonical text | 's' + varint
// length + bytes | 't' | 'f'. Version 1 (read only, written before numbers were exact): 'n' +
// 8-byte little-endian double in place of 'd'.
void EncodeAttributes(const std::vector<Attribute>& attributes, std::string* out);
Status DecodeAttributes(std::string_view encoded, std::vector<Attribute>* out);

// An attribute read in place: views into the encoded value, valid as long as it is.
struct AttributeView {
  std::string_view name;
  std::variant<NumberView, std::string_view, bool> value;
};

// Reads an encoded value's attributes one by one without copying them, so a page is rendered
// from the stored bytes instead of from Readings built only to be printed.
class AttributeReader {
 public:
  // `encoded` must outlive the reader; a wrong version byte is reported by Next / status.
  explicit AttributeReader(std::string_view encoded);
  // false at the end of the value or at the first malformed attribute (then status() says so).
  bool Next(AttributeView* attribute);
  Status status() const;

 private:
  std::string_view rest_;
  char version_ = 0;
  const char* error_ = nullptr;
};

// Reads a whole encoded value into `out` (cleared), or Corruption at its first malformed byte:
// a value is checked once and then rendered from these views, never parsed twice.
Status ReadAttributes(std::string_view encoded, std::vector<AttributeView>* out);
// Views of owned attributes, as ReadAttributes gives them of their encoding.
std::vector<AttributeView> ViewsOf(const std::vector<Attribute>& attributes);
// ItemSize of a stored item, from its attributes as read.
std::size_t ItemSize(std::string_view device_id, std::string_view sort_key,
                     std::span<const AttributeView> attributes);

}  // namespace readingsd::storage
