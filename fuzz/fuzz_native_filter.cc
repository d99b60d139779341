// ParseNativeFilter (the native API's ?filter=) on arbitrary text, then Matches against a few
// fixed readings. Properties: no crash, no UB, no exception; an accepted filter is at most 4096
// bytes, has the tree shape Matches relies on, nests at most 64 NOTs / parentheses deep (the
// tree may be deeper through AND / OR chains, but only as deep as the text is long), and
// NOT (filter) matches exactly the readings filter does not; a rejected one is InvalidArgument
// with a "filter: " message.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "expr/expr.h"
#include "fuzz/filter_checks.h"
#include "fuzz/fuzz_util.h"
#include "query/filter.h"

using namespace readingsd;
using readingsd::fuzz::AsView;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text = AsView(data, size);
  std::unique_ptr<query::FilterExpr> filter;
  const Status s = expr::ParseNativeFilter(text, &filter);
  if (!s.ok()) {
    FUZZ_CHECK(s.IsInvalidArgument());
    FUZZ_CHECK(s.message().starts_with("filter: "));
    return 0;
  }
  FUZZ_CHECK(filter != nullptr);
  FUZZ_CHECK(text.size() <= 4096);
  const std::size_t depth = fuzz::CheckFilterShape(*filter);
  FUZZ_CHECK(depth <= text.size());

  // The same text wrapped in NOT ( ... ) is the complement (when it still fits).
  std::unique_ptr<query::FilterExpr> negated;
  const std::string wrapped = "not (" + std::string(text) + ")";
  const bool have_negation = expr::ParseNativeFilter(wrapped, &negated).ok();
  for (const storage::Reading& reading : fuzz::SampleReadings()) {
    const std::vector<storage::AttributeView> attributes = storage::ViewsOf(reading.attributes);
    const bool match = query::Matches(*filter, attributes);
    if (have_negation) FUZZ_CHECK(query::Matches(*negated, attributes) == !match);
  }
  return 0;
}
