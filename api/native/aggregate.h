// GET /v1/devices/{id}/aggregate: downsampling, the readings of a window folded into buckets of
// a fixed step (query/aggregate.h does the folding).
//
//   from|after, to|before   the window, both sides required (an aggregate reads a bounded window)
//   step                    bucket width: a whole number of s, m, h or d (at most 10000d); buckets
//                           begin at multiples of it after 1970-01-01T00:00:00Z, in UTC
//   fn                      avg,min,max,count,sum,first,last (default avg,min,max,count)
//   attributes              the attributes to aggregate, required, at most 16
//   format                  rows (default) or columns: the buckets transposed, one array per
//                           field (aggregate.cc RenderColumns)
//
// Answer: {"deviceId":…,"step":"5m","buckets":[{"start":"2026-06-23T08:00:00Z","count":30,
// "temperature":{"avg":22.5,"min":20.5,"max":24.5,"count":30}},…],"scannedCount":N}. A bucket
// without readings is left out, and so is an attribute from a bucket none of whose readings has
// it; a bucket's count is its readings, an attribute's count those that have it. avg and sum are
// computed in doubles; min, max, first and last are the stored numbers, exactly. A boolean
// aggregates as 0 or 1 (first and last stay true/false); a string only counts and is kept as
// first and last, so avg, sum, min and max are over numbers and booleans and left out where an
// attribute holds only strings. An attribute named start or count would clash with the bucket's
// own fields and is refused. Caps (query::ReadLimits): the buckets the window spans
// ("max buckets") and the readings read ("max scan"); past either, 400 naming it.
#pragma once

#include <string>

#include "api/native/native.h"
#include "api/native/request.h"

namespace readingsd::api::native {

// Thread-safe: it keeps nothing between calls. `device_id` has been validated.
http::Response Aggregate(const Context& context, const std::string& device_id, const Params& params);

}  // namespace readingsd::api::native
