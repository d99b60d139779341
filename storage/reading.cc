#include "storage/reading.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <set>

namespace readingsd::storage {
namespace {

constexpr char kFormatVersion = 1;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool GetBytes(std::string_view* in, std::string_view* out) {
  uint64_t n;
  if (!GetVarint(in, &n) || n > in->size()) return false;
  *out = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

// One encoded attribute as views into the value: the payload is the 8 number bytes, the string's
// bytes, or empty for a boolean.
struct EncodedAttribute {
  std::string_view name;
  char tag = 0;
  std::string_view payload;
};

// nullptr and the attribute, or what is wrong with the encoding.
const char* NextAttribute(std::string_view* in, EncodedAttribute* a) {
  if (!GetBytes(in, &a->name) || in->empty()) return "truncated attribute name";
  a->tag = in->front();
  in->remove_prefix(1);
  switch (a->tag) {
    case 'n':
      if (in->size() < sizeof(double)) return "truncated number attribute";
      a->payload = in->substr(0, sizeof(double));
      in->remove_prefix(sizeof(double));
      return nullptr;
    case 's':
      return GetBytes(in, &a->payload) ? nullptr : "truncated string attribute";
    case 't':
    case 'f':
      a->payload = {};
      return nullptr;
    default:
      return "unknown attribute type tag";
  }
}

static_assert(std::endian::native == std::endian::little, "the value encoding assumes little-endian hosts");

}  // namespace

Status ValidateAttributes(const std::vector<Attribute>& attributes) {
  std::set<std::string_view> seen;
  for (const auto& a : attributes) {
    if (a.name.empty()) return Status::InvalidArgument("attribute name is empty");
    if (a.name.size() > kMaxAttributeNameLength) {
      return Status::InvalidArgument("attribute name longer than " + std::to_string(kMaxAttributeNameLength) +
                                     " bytes");
    }
    if (a.name == kDeviceIdAttribute || a.name == kReadingTsAttribute) {
      return Status::InvalidArgument("attribute \"" + a.name + "\" is a key attribute");
    }
    if (!seen.insert(a.name).second) return Status::InvalidArgument("duplicate attribute \"" + a.name + "\"");
  }
  return Status::OK();
}

std::size_t ItemSize(const Reading& reading) {
  std::size_t size = kDeviceIdAttribute.size() + reading.device_id.size() + kReadingTsAttribute.size() +
                     reading.sort_key.size();
  for (const auto& a : reading.attributes) {
    size += a.name.size();
    if (const std::string* s = std::get_if<std::string>(&a.value)) {
      size += s->size();
    } else {
      size += std::holds_alternative<double>(a.value) ? sizeof(double) : 1;
    }
  }
  return size;
}

void EncodeAttributes(const std::vector<Attribute>& attributes, std::string* out) {
  out->clear();
  out->push_back(kFormatVersion);
  for (const auto& a : attributes) {
    PutVarint(out, a.name.size());
    out->append(a.name);
    if (const double* d = std::get_if<double>(&a.value)) {
      out->push_back('n');
      char bytes[sizeof(double)];
      std::memcpy(bytes, d, sizeof bytes);
      out->append(bytes, sizeof bytes);
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
  if (in.empty() || in.front() != kFormatVersion) {
    return Status::Corruption("reading value has an unknown format version");
  }
  in.remove_prefix(1);
  // Validated and counted first, so the vector is allocated once: a query decodes every item it
  // reads, and growing 1 -> 2 -> 4 was a third of its instructions.
  EncodedAttribute a;
  std::size_t count = 0;
  for (std::string_view rest = in; !rest.empty(); ++count) {
    if (const char* error = NextAttribute(&rest, &a)) return Status::Corruption(error);
  }
  out->reserve(count);
  while (!in.empty()) {
    NextAttribute(&in, &a);
    Attribute& decoded = out->emplace_back();
    decoded.name.assign(a.name);
    if (a.tag == 'n') {
      double d;
      std::memcpy(&d, a.payload.data(), sizeof d);
      decoded.value = d;
    } else if (a.tag == 's') {
      decoded.value.emplace<std::string>(a.payload);
    } else {
      decoded.value = a.tag == 't';
    }
  }
  return Status::OK();
}

}  // namespace readingsd::storage
