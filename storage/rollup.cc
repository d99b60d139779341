#include "storage/rollup.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "storage/key.h"
#include "storage/varint.h"

namespace readingsd::storage {
namespace {

using internal::GetBytes;
using internal::GetDouble;
using internal::GetVarint;

// 'u' was the format before each min and max kept its double (META#rollups "G" then).
constexpr char kRecordTag = 'r';
constexpr char kFloorTag = 'f';

bool GetNumber(std::string_view* in, NumberView* n) {
  std::string_view text;
  if (!GetBytes(in, &text) || !IsCanonicalNumber(text)) return false;
  *n = NumberView::OfCanonical(text);
  return true;
}

// A number's double, then its canonical text.
bool GetDoubleAndNumber(std::string_view* in, double* value, NumberView* n) {
  return GetDouble(in, value) && GetNumber(in, n);
}

// A sort key and a value: 'd' number | 's' bytes | 't' | 'f'.
bool GetKeptValue(std::string_view* in, std::string_view* sort_key,
                  std::variant<NumberView, std::string_view, bool>* value) {
  if (in->size() < kSortKeyLength + 1) return false;
  *sort_key = in->substr(0, kSortKeyLength);
  const char tag = (*in)[kSortKeyLength];
  in->remove_prefix(kSortKeyLength + 1);
  switch (tag) {
    case 'd': {
      NumberView n;
      if (!GetNumber(in, &n)) return false;
      *value = n;
      return true;
    }
    case 's': {
      std::string_view bytes;
      if (!GetBytes(in, &bytes)) return false;
      *value = bytes;
      return true;
    }
    case 't':
    case 'f':
      *value = tag == 't';
      return true;
    default:
      return false;
  }
}

bool ParseAttribute(std::string_view body, bool first_last, RollupAttributeView* a) {
  if (!GetVarint(&body, &a->count) || !GetVarint(&body, &a->numeric_count) || body.empty()) return false;
  const std::size_t sum_bytes = 1 + 8 * static_cast<unsigned char>(body.front());
  if (body.size() < sum_bytes) return false;
  a->sum = body.substr(0, sum_bytes);
  body.remove_prefix(sum_bytes);
  if (a->numeric_count > 0 &&
      (!GetDoubleAndNumber(&body, &a->min_value, &a->min) || !GetDoubleAndNumber(&body, &a->max_value, &a->max))) {
    return false;
  }
  if (!first_last) return true;
  return GetKeptValue(&body, &a->first_key, &a->first) && GetKeptValue(&body, &a->last_key, &a->last) &&
         body.empty();
}

}  // namespace

void ExactSum::Add(double x) {
  // Once out of a double's range the sum stays there (inf or NaN): partials no longer mean anything.
  if (!partials_.empty() && !std::isfinite(partials_.back())) {
    partials_.back() += x;
    return;
  }
  std::size_t kept = 0;
  for (double y : partials_) {
    if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
    const double hi = x + y;
    const double lo = y - (hi - x);
    if (lo != 0) partials_[kept++] = lo;
    x = hi;
  }
  partials_.resize(kept);
  if (!std::isfinite(x)) partials_.clear();
  partials_.push_back(x);
}

void ExactSum::Add(const ExactSum& other) {
  for (double p : other.partials_) Add(p);
}

bool ExactSum::AddEncoded(std::string_view encoded) {
  if (encoded.empty() || encoded.size() != 1 + 8 * static_cast<std::size_t>(static_cast<unsigned char>(encoded[0]))) {
    return false;
  }
  encoded.remove_prefix(1);
  for (double p; GetDouble(&encoded, &p);) Add(p);
  return true;
}

// The partials added from the largest down, rounded once: math.fsum's final step, including its
// correction for a result exactly halfway between two doubles.
double ExactSum::Value() const {
  std::size_t n = partials_.size();
  if (n == 0) return 0;
  double hi = partials_[--n];
  double lo = 0;
  while (n > 0) {
    const double x = hi;
    const double y = partials_[--n];
    hi = x + y;
    lo = y - (hi - x);
    if (lo != 0) break;
  }
  if (n > 0 && ((lo < 0 && partials_[n - 1] < 0) || (lo > 0 && partials_[n - 1] > 0))) {
    const double y = lo * 2;
    const double x = hi + y;
    if (y == x - hi) hi = x;
  }
  return hi;
}

void ExactSum::AppendTo(std::string* out) const {
  out->push_back(static_cast<char>(partials_.size()));
  for (double p : partials_) internal::PutDouble(out, p);
}

Status ReadRollup(std::string_view in, RollupView* view, std::span<const std::string> only, bool first_last) {
  auto bad = [] { return Status::Corruption("a rollup record does not decode"); };
  view->attributes.clear();
  if (in.size() < 2 || in[0] != kRecordTag) return bad();
  view->stale = (in[1] & 1) != 0;
  in.remove_prefix(2);
  if (!GetVarint(&in, &view->readings)) return bad();
  while (!in.empty()) {
    std::string_view name, body;
    if (!GetBytes(&in, &name) || !GetBytes(&in, &body)) return bad();
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    RollupAttributeView& a = view->attributes.emplace_back();
    a.name = name;
    if (!ParseAttribute(body, first_last, &a)) return bad();
  }
  return Status::OK();
}

Status ReadRollupFloor(std::string_view in, int64_t* seconds) {
  if (in.size() != 9 || in[0] != kFloorTag) return Status::Corruption("a rollup floor record does not decode");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in[1 + i])} << (8 * i);
  *seconds = static_cast<int64_t>(v);
  return Status::OK();
}

}  // namespace readingsd::storage
