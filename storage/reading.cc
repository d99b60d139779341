#include "storage/reading.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <set>

#include "storage/varint.h"

namespace readingsd::storage {
namespace {

constexpr char kFormatVersion = 2;
constexpr char kLegacyDoubleVersion = 1;  // numbers as 'n' + 8-byte double

using internal::GetBytes;
using internal::GetVarint;
using internal::PutVarint;

// nullptr and the attribute, or what is wrong with the encoding.
const char* ParseAttribute(std::string_view* in, char version, AttributeView* a) {
  if (!GetBytes(in, &a->name) || in->empty()) return "truncated attribute name";
  const char tag = in->front();
  in->remove_prefix(1);
  switch (tag) {
    case 'd': {
      std::string_view text;
      if (version == kLegacyDoubleVersion) return "unknown attribute type tag";
      if (!GetBytes(in, &text)) return "truncated number attribute";
      if (!IsCanonicalNumber(text)) return "malformed number attribute";
      a->value = NumberView::OfCanonical(text);
      return nullptr;
    }
    case 'n': {
      if (version != kLegacyDoubleVersion) return "unknown attribute type tag";
      if (in->size() < sizeof(double)) return "truncated number attribute";
      double d;
      std::memcpy(&d, in->data(), sizeof d);
      in->remove_prefix(sizeof d);
      a->value = NumberView::OfLegacyDouble(d);
      return nullptr;
    }
    case 's': {
      std::string_view bytes;
      if (!GetBytes(in, &bytes)) return "truncated string attribute";
      a->value = bytes;
      return nullptr;
    }
    case 't':
    case 'f':
      a->value = tag == 't';
      return nullptr;
    default:
      return "unknown attribute type tag";
  }
}

// Names plus values, as DynamoDB bills an item; one formula for Readings and stored values.
std::size_t KeyAttributesSize(std::string_view device_id, std::string_view sort_key) {
  return kDeviceIdAttribute.size() + device_id.size() + kReadingTsAttribute.size() + sort_key.size();
}

std::size_t ValueSize(const Number& n) { return NumberView(n).BilledSize(); }
std::size_t ValueSize(const NumberView& n) { return n.BilledSize(); }
std::size_t ValueSize(std::string_view s) { return s.size(); }
std::size_t ValueSize(bool) { return 1; }

template <typename Value>
std::size_t AttributeSize(std::string_view name, const Value& value) {
  return name.size() + std::visit([](const auto& v) { return ValueSize(v); }, value);
}

void Assign(const AttributeView& view, Attribute* attribute) {
  attribute->name.assign(view.name);
  if (const auto* bytes = std::get_if<std::string_view>(&view.value)) {
    attribute->value.emplace<std::string>(*bytes);
  } else if (const auto* n = std::get_if<NumberView>(&view.value)) {
    attribute->value = n->ToNumber();
  } else {
    attribute->value = std::get<bool>(view.value);
  }
}

static_assert(std::endian::native == std::endian::little, "the value encoding assumes little-endian hosts");

}  // namespace

Status ValidateAttributes(const std::vector<Attribute>& attributes) {
  // A reading has a handful of attributes: comparing each name with those before it costs less
  // than a set's node per name. Past kLinear the set keeps a large item from costing n².
  constexpr std::size_t kLinear = 16;
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const Attribute& a = attributes[i];
    if (a.name.empty()) return Status::InvalidArgument("attribute name is empty");
    if (a.name.size() > kMaxAttributeNameLength) {
      return Status::InvalidArgument("attribute name longer than " + std::to_string(kMaxAttributeNameLength) +
                                     " bytes");
    }
    if (a.name == kDeviceIdAttribute || a.name == kReadingTsAttribute) {
      return Status::InvalidArgument("attribute \"" + a.name + "\" is a key attribute");
    }
    const bool duplicate =
        attributes.size() <= kLinear
            ? std::any_of(attributes.begin(), attributes.begin() + static_cast<std::ptrdiff_t>(i),
                          [&a](const Attribute& before) { return before.name == a.name; })
            : !seen.insert(a.name).second;
    if (duplicate) return Status::InvalidArgument("duplicate attribute \"" + a.name + "\"");
  }
  return Status::OK();
}

std::size_t ItemSize(const Reading& reading) {
  std::size_t size = KeyAttributesSize(reading.device_id, reading.sort_key);
  for (const auto& a : reading.attributes) size += AttributeSize(a.name, a.value);
  return size;
}


void EncodeAttributes(const std::vector<Attribute>& attributes, std::string* out) {
  out->clear();
  out->push_back(kFormatVersion);
  for (const auto& a : attributes) {
    PutVarint(out, a.name.size());
    out->append(a.name);
    if (const Number* n = std::get_if<Number>(&a.value)) {
      out->push_back('d');
      PutVarint(out, n->text.size());
      out->append(n->text);
    } else if (const std::string* s = std::get_if<std::string>(&a.value)) {
      out->push_back('s');
      PutVarint(out, s->size());
      out->append(*s);
    } else {
      out->push_back(std::get<bool>(a.value) ? 't' : 'f');
    }
  }
}

Status DecodeAttributes(std::string_view in, std::vector<Attribute>* out) {
  out->clear();
  // Validated and counted first, so the vector is allocated once: a query decodes every item it
  // reads, and growing 1 -> 2 -> 4 was a third of its instructions.
  AttributeView a;
  std::size_t count = 0;
  AttributeReader counter(in);
  while (counter.Next(&a)) ++count;
  if (Status s = counter.status(); !s.ok()) return s;
  out->reserve(count);
  for (AttributeReader reader(in); reader.Next(&a);) Assign(a, &out->emplace_back());
  return Status::OK();
}

std::vector<AttributeView> ViewsOf(const std::vector<Attribute>& attributes) {
  std::vector<AttributeView> views;
  views.reserve(attributes.size());
  for (const Attribute& a : attributes) {
    views.push_back({a.name, std::visit([](const auto& v) -> decltype(AttributeView::value) { return v; }, a.value)});
  }
  return views;
}

AttributeReader::AttributeReader(std::string_view encoded) : rest_(encoded) {
  if (rest_.empty() || (rest_.front() != kFormatVersion && rest_.front() != kLegacyDoubleVersion)) {
    error_ = "reading value has an unknown format version";
    rest_ = {};
  } else {
    version_ = rest_.front();
    rest_.remove_prefix(1);
  }
}

bool AttributeReader::Next(AttributeView* attribute) {
  if (rest_.empty()) return false;
  error_ = ParseAttribute(&rest_, version_, attribute);
  if (error_ != nullptr) rest_ = {};
  return error_ == nullptr;
}

Status AttributeReader::status() const { return error_ ? Status::Corruption(error_) : Status::OK(); }

Status ReadAttributes(std::string_view encoded, std::vector<AttributeView>* out) {
  out->clear();
  if (!encoded.empty() && encoded.front() == kFormatVersion) {
    // The common attribute read in place, without the general reader: a name and a value of less
    // than 128 bytes each (one-byte lengths) that are well-formed. Anything else, and what follows
    // it, is the general reader's, which also names what is wrong.
    const char* p = encoded.data() + 1;
    const char* const end = encoded.data() + encoded.size();
    while (p != end) {
      const auto name_size = static_cast<uint8_t>(*p);
      if (name_size >= 0x80 || end - p < 2 + name_size) break;
      const std::string_view name(p + 1, name_size);
      const char* at = p + 1 + name_size;
      const char tag = *at++;
      if (tag == 't' || tag == 'f') {
        out->push_back({name, tag == 't'});
        p = at;
        continue;
      }
      if ((tag != 'd' && tag != 's') || at == end) break;
      const auto size = static_cast<uint8_t>(*at);
      if (size >= 0x80 || end - at < 1 + size) break;
      const std::string_view bytes(at + 1, size);
      if (tag == 's') {
        out->push_back({name, bytes});
      } else if (IsCanonicalNumber(bytes)) {
        out->push_back({name, NumberView::OfCanonical(bytes)});
      } else {
        break;
      }
      p = at + 1 + size;
    }
    if (p == end) return Status::OK();
    encoded = std::string_view(p, static_cast<std::size_t>(end - p));
    AttributeView a;
    for (std::string_view rest = encoded; !rest.empty(); out->push_back(a)) {
      if (const char* error = ParseAttribute(&rest, kFormatVersion, &a)) return Status::Corruption(error);
    }
    return Status::OK();
  }
  AttributeReader reader(encoded);
  for (AttributeView a; reader.Next(&a);) out->push_back(a);
  return reader.status();
}

std::size_t ItemSize(std::string_view device_id, std::string_view sort_key,
                     std::span<const AttributeView> attributes) {
  std::size_t size = KeyAttributesSize(device_id, sort_key);
  for (const AttributeView& a : attributes) size += AttributeSize(a.name, a.value);
  return size;
}

}  // namespace readingsd::storage
