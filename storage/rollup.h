// Rollups: per device, a summary of each granule of G seconds (storage.rollup_seconds) of its
// readings, kept by Store::Write (storage/rollups.h), so that an
// aggregate reads one record per granule instead of every reading (query/aggregate.h). The
// record format is in storage/key.h; this is what a reader of records needs.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "storage/number.h"

namespace readingsd::storage {

// The exact sum of doubles, as non-overlapping partials (Shewchuk; Python's math.fsum): Value()
// is the double nearest the true sum in whatever order the values were added, so a granule's sum
// kept at write time and the same readings summed at query time agree to the bit. A sum that
// leaves the range of a double (only values stored as doubles before numbers were exact can) is
// ±inf or NaN.
class ExactSum {
 public:
  void Add(double x);
  void Add(const ExactSum& other);
  // Adds the partials of an encoded sum (RollupAttributeView::sum); false when it is malformed.
  bool AddEncoded(std::string_view encoded);
  double Value() const;
  void Clear() { partials_.clear(); }
  // 1 byte n + n 8-byte doubles, as storage/key.h's rollup value holds it.
  void AppendTo(std::string* out) const;

 private:
  // Increasing magnitude, non-overlapping. Sums of readings' decimals mostly need two or three,
  // so they live in place: an aggregate keeps one sum per bucket and attribute.
  boost::container::small_vector<double, 4> partials_;
};

// One attribute of a rollup record, read in place: views into the record.
struct RollupAttributeView {
  std::string_view name;
  uint64_t count = 0;          // readings of the granule that have it, of any type
  uint64_t numeric_count = 0;  // of those, the numbers and booleans (booleans as 0 / 1)
  std::string_view sum;        // encoded; ExactSum::AddEncoded
  // When numeric_count > 0: each number and the double nearest it (NumberView::ToDouble), which
  // orders it against others without reading its text unless their doubles are equal.
  NumberView min, max;
  double min_value = 0, max_value = 0;
  // The granule's first and last reading that has it: sort key and value.
  std::string_view first_key, last_key;
  std::variant<NumberView, std::string_view, bool> first, last;
};

struct RollupView {
  bool stale = false;  // the summary no longer holds: the granule must be read from its readings
  uint64_t readings = 0;
  std::vector<RollupAttributeView> attributes;  // none when stale
};

// Reads an encoded record into `view` (its attributes cleared first, their room reused), or
// Corruption at its first malformed byte. With `only`, the attributes not named in it are
// passed over unread: an aggregate of one attribute checks no other's numbers. Without
// `first_last`, each attribute's first and last (and their keys) are passed over and left
// empty: an aggregate that asks for neither reads none of their values.
Status ReadRollup(std::string_view encoded, RollupView* view, std::span<const std::string> only = {},
                  bool first_last = true);

// A floor record's granule start (seconds since 1970), or Corruption.
Status ReadRollupFloor(std::string_view encoded, int64_t* seconds);

}  // namespace readingsd::storage
