// Prometheus' remote read protocol, so that a stock Prometheus (and Grafana's built-in
// Prometheus data source behind it) answers PromQL over readingsd's readings:
//
//   POST /api/v1/read   body: a snappy-compressed (block format) protobuf ReadRequest
//                       (remote_read.proto); answer: a snappy-compressed ReadResponse with raw
//                       samples (response type SAMPLES). A request that accepts only
//                       STREAMED_XOR_CHUNKS is refused with 400, as the protocol allows.
//
// The readings as series: every attribute holding a number or a boolean (as 0 or 1) is a sample
// of the series named by the attribute (MetricNameOf) with the label device="<device id>"; an
// attribute whose name Prometheus would refuse also gets attribute="<its name>". Strings are
// left out. A sample's timestamp is its reading's millisecond (the rest of the fraction
// dropped); of two readings in one millisecond the later one's value is kept. The matchers =,
// !=, =~ and !~ (RE2, anchored at both ends as Prometheus anchors them) work on every label, a
// label a series lacks being "", and the query's [start, end] milliseconds are the sort-key range
// read. Errors are text/plain, as Prometheus shows them: 400 for a malformed request (snappy,
// protobuf, a regex, a cap below), 413 for one that decompresses past max_request_bytes, 405 for
// a method other than POST.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/handler.h"
#include "query/query.h"

namespace re2 {
class RE2;
}

namespace readingsd::api::prometheus {

// What one remote read request may ask for and be answered with.
struct RemoteReadLimits {
  std::size_t max_request_bytes = 1u << 20;  // the request once decompressed
  std::size_t max_queries = 16;              // queries in one request
  std::size_t max_matchers = 64;             // matchers in one query
  // Caps on the answer, across the request's queries; past one, 400 naming it. Readings read
  // counts those without a matching attribute too, since each is read.
  std::size_t max_series = 10000;
  std::size_t max_samples = 1000000;
  std::size_t max_scanned = 2000000;  // readings read

  bool operator==(const RemoteReadLimits&) const = default;
};

// The metric name of an attribute: the name itself when Prometheus accepts it as one
// ([a-zA-Z_:][a-zA-Z0-9_:]*); otherwise every other byte becomes '_' and a leading digit is
// preceded by '_' ("temp-c" and "temp.c" are both temp_c, "2nd" is _2nd). `renamed` tells the
// two apart: a renamed attribute's series carry attribute="<its name>", so no two series merge.
std::string MetricNameOf(std::string_view attribute, bool* renamed);

enum class MatchType { kEqual, kNotEqual, kRegex, kNotRegex };

// A label matcher, its regex compiled once. Thread-safe (const).
class Matcher {
 public:
  // InvalidArgument naming the matcher when `value` is not a regex RE2 compiles.
  static Status Make(MatchType type, std::string name, std::string value, Matcher* out);

  // Whether a series whose label `name` has `value` ("" when it has none) is selected.
  bool Matches(std::string_view value) const;
  // Device ids in [*lower, *upper] (bytewise) hold every match of an =~ or = matcher; false when
  // the matcher does not bound them (!=, !~, or a regex that may match anything).
  bool Bounds(std::string* lower, std::string* upper) const;

  MatchType type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }

 private:
  MatchType type_ = MatchType::kEqual;
  std::string name_, value_;
  std::shared_ptr<const re2::RE2> regex_;  // for kRegex and kNotRegex
};

// One query of a request: samples in [start_ms, end_ms] of the series all matchers select.
struct SeriesQuery {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::vector<Matcher> matchers;
};

// Decodes a request body: snappy, protobuf, then each query's matchers compiled. OK, or
// InvalidArgument saying what is wrong, with *too_large set when it is the decompressed size
// (never more than max_request_bytes is decompressed). A request accepting only response types
// other than SAMPLES is InvalidArgument too.
Status DecodeReadRequest(std::string_view body, const RemoteReadLimits& limits, std::vector<SeriesQuery>* queries,
                         bool* too_large);

struct Context {
  const query::ReadContext& read;
  const RemoteReadLimits& limits;
};

// Thread-safe: it keeps nothing between calls. `endpoint` is set to "prometheus.read". With
// partitions=…&partition_count=… on the target (cluster::PartitionSet), only the series of those
// partitions' devices: a node's share of a read merged across nodes.
http::Response HandleRequest(const Context& context, const http::Request& request, std::string_view* endpoint);

// The answer to a read from the shares several nodes answered for it (cluster::Forwarder), each
// of other devices: per query the union of their series, sorted by labels as one node sorts them.
// The series and samples caps apply to the union; max_scanned to each node's share (it bounds
// what one node reads).
http::Response Merge(const Context& context, std::span<const std::string> shares);

}  // namespace readingsd::api::prometheus
