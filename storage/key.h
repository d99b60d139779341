// The whole on-disk key format of readingsd, in one place.
//
//   key        = "DEV#" deviceId SEP sortKey
//   SEP        = '\0'            never allowed in a device id, so no two partitions share a prefix:
//                                "DEV#a1\0..." and "DEV#a10\0..." are disjoint ranges.
//   deviceId   = 1..128 bytes of [A-Za-z0-9._:-]   (anything else is rejected, never escaped)
//   sortKey    = YYYY-MM-DDTHH:MM:SS.fffffffffZ     30 bytes, UTC, always 9 fractional digits
//
// Because the sort key is fixed width, zero padded and UTC, RocksDB's bytewise order of keys in
// one partition *is* time order; nanosecond precision means no accepted input is ever truncated
// into a collision with a neighbour.
//
// Index entries (declared secondary indexes, storage/index.h) are keys of their own, written in
// the reading's WriteBatch, with a copy of its value (projection ALL):
//
//   indexKey   = "IDX#" indexName SEP value(partition) value(sort) deviceId SEP sortKey
//   indexName  = 3..255 bytes of [A-Za-z0-9_.-]   (as DynamoDB's index names; no SEP)
//   value      = an order-preserving, self-delimiting encoding of a string or an exact number:
//     string   = 0x06 bytes' 0x00 0x01      each 0x00 byte of the string written as 0x00 0xFF,
//                                           so bytewise order of strings is kept and the
//                                           terminator (0x00 0x01) sorts below any continuation
//     number   = 0x03                                          zero
//              | 0x04 exp digitPairs 0x01                      positive
//              | 0x02 ~exp ~digitPairs 0xFE                    negative (every byte inverted)
//     exp      = one byte, 130 + the power of ten of the most significant digit (-130..125)
//     digitPairs = the significant digits (no trailing zeros), two per byte as 2 + 10a + b
//                  (2..101; an odd last digit is paired with 0)
//   A partition value with shards is "value#n" (n = 0..shards-1), a string like any other.
//
// Within "IDX#" indexName SEP value(partition) (one index partition) bytewise order is the sort
// value's order (numbers numerically, strings by UTF-8 bytes), then the base key's: the base key
// at the end makes each entry unique, and its fixed-width sort key lets retention read the
// reading's time from the last kSortKeyLength bytes.
//
// Non-reading keys (store metadata) start with "META#" and so never fall inside a partition.
//
// The device registry (storage/registry.h) keeps one record per device beside the readings:
//
//   registry key   = "REG#" deviceId                sorts after every "DEV#" and "META#" key
//   registry value = 'r' readings first last horizon latest
//     readings     = 8-byte little-endian count of the device's readings at or after `horizon`
//     first, last  = 1-byte length (0 or 30) + sort key: its oldest and newest counted reading
//     horizon      = 1-byte length (0 or 30) + sort key: the retention cutoff of the last sweep
//                    ("" = none); readings older than it are not counted
//     latest       = the rest: the encoded attributes (storage/reading.h) of reading `last`
//   "META#registry" = "v1"   the registry is complete (written after it was built from the
//                            readings of a store that had none)
//   "META#fold"    = "dirty" | "clean"   "dirty": written since the last persist, so the registry
//                    and rollup records may lag the readings (kept in memory for writes in time
//                    order); a writable open recovers them from the readings. "clean" or absent:
//                    every record is exact (docs/device-registry.md "After a crash")
//
// Rollups (storage/rollup.h, docs/native-api.md "Rollups") summarise each device's readings per
// granule of G seconds (storage.rollup_seconds), so an aggregate reads one record per granule:
//
//   rollup key     = "ROL#" deviceId SEP granule    sorts after every "REG#" key
//   granule        = the sort key of the granule's first instant (a multiple of G seconds
//                    since 1970), or "" for the device's floor record, which sorts first
//   floor value    = 'f' + 8-byte little-endian two's complement seconds: granules from this
//                    one on have a record for every granule holding a reading; no floor
//                    record = no granule of the device is summarised
//   rollup value   = 'r' flags readings attribute*       (storage/rollup.h reads it)
//     flags        = 1 byte: bit 0 = stale (the granule must be read from its readings)
//     readings     = varint: the granule's readings
//     attribute    = varint length + name, varint length + body: count, numeric count
//                    (varints), sum (1 byte n + n 8-byte doubles: exact partial sums), then when
//                    the numeric count is above 0 min and max (each the 8-byte double nearest
//                    it, then varint length + canonical number), then first and last (sort key
//                    + value, the value as in storage/reading.h: 'd' varint length + number |
//                    's' varint length + bytes | 't' | 'f'); a stale record has no attribute
//   "META#rollups" = "v2 " G in decimal   the record format and the granule every rollup record
//                    was kept with. Format 1 ('u' records, min and max without their doubles)
//                    was G alone: an open that finds another value removes every record.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace readingsd::storage {

inline constexpr std::string_view kPartitionPrefix = "DEV#";
inline constexpr char kSeparator = '\0';
inline constexpr std::size_t kMaxDeviceIdLength = 128;
inline constexpr std::size_t kSortKeyLength = 30;
// Greater than every byte a sort key may contain: the exclusive end of a whole partition.
inline constexpr char kSortKeyEnd = '\x7f';

// OK when `id` is a legal device id; otherwise InvalidArgument naming the offending byte.
Status ValidateDeviceId(std::string_view id);

// Parses an ISO-8601 timestamp and writes its normalised sort key.
// Accepted: YYYY-MM-DDTHH:MM:SS, then optionally '.' and 1-9 fractional digits, then 'Z' or an
// offset +hh:mm / -hh:mm / +hh / -hh. The instant must fall within years 0000-9999 UTC.
// Rejected with a message: anything else (lower-case t/z, missing zone, 10+ fraction digits,
// impossible dates such as 2026-02-30, leap second 60).
Status NormalizeTimestamp(std::string_view iso8601, std::string* sort_key);

// Parses a range bound a person typed and writes the sort key of its instant. Accepted: any
// timestamp NormalizeTimestamp accepts, or one cut short after the day, the hour or the minute
// (YYYY-MM-DD, YYYY-MM-DDTHH, YYYY-MM-DDTHH:MM), which stands for its first instant: people
// type dates. A shortened bound is UTC, as sort keys and begins_with prefixes are, unless a zone
// follows it as it would a timestamp ("2026-06-23T10+02"); a full timestamp still needs its
// zone. Only for bounds: a reading stamped with a date alone is refused.
Status NormalizeBound(std::string_view bound, std::string* sort_key);

// A sort key's instant as seconds since 1970 (to about a microsecond), and the sort key of such
// an instant (clamped to years 0000-9999): for estimating where in a range readings lie, never
// for keys that are stored.
double SortKeySeconds(std::string_view sort_key);  // `sort_key` as NormalizeTimestamp writes it
std::string SortKeyAtSeconds(double seconds);

// Whole seconds since 1970, exactly, for aligning sort keys to steps (aggregate buckets): the
// second a sort key falls in (its fraction dropped), and the sort key that begins second
// `seconds` (false when that is outside years 0000-9999).
int64_t SortKeyWholeSeconds(std::string_view sort_key);  // `sort_key` as NormalizeTimestamp writes it
bool SortKeyAtWholeSeconds(int64_t seconds, std::string* sort_key);
// The multiple of `step` (> 0) at or before `seconds`, rounding toward minus infinity (a second
// before 1970 lies in the step that begins before it): a bucket's or a rollup granule's start.
int64_t FloorToMultiple(int64_t seconds, int64_t step);
// Milliseconds since 1970, exactly, for Prometheus' sample timestamps: the millisecond a sort key
// falls in (the rest of its fraction dropped), and the sort key of the first (`last` false) or
// the last (`last` true) nanosecond of millisecond `ms`, clamped to years 0000-9999 (so any int64,
// as Prometheus sends for an unbounded range, gives a bound).
int64_t SortKeyMillis(std::string_view sort_key);  // `sort_key` as NormalizeTimestamp writes it
std::string SortKeyAtMillis(int64_t ms, bool last);
// Second `seconds` as YYYY-MM-DDTHH:MM:SSZ, the short form a bucket start is shown in; clamped
// to years 0000-9999 like SortKeyAtSeconds (a step aligned to 1970 may begin a bucket before
// year 0000, and its readings are all at or after it).
std::string WholeSecondsTimestamp(int64_t seconds);
void AppendWholeSecondsTimestamp(int64_t seconds, std::string* out);  // the same, at the end of `out`

// The sort key of instant `t`, to the nanosecond: the retention cutoff. Every system_clock
// instant (int64 nanoseconds, years 1677-2262) is one a sort key can hold.
std::string SortKeyAt(std::chrono::system_clock::time_point t);

// The sort key one nanosecond after (step +1) or before (step -1) a normalised `sort_key`: an
// exclusive bound made inclusive. False when that falls outside years 0000-9999. `out` may be
// the string `sort_key` views.
bool AdjacentSortKey(std::string_view sort_key, int step, std::string* out);

// OK when `prefix` can begin some sort key (for begins_with): "2026-06-23", "2026-06-23T08".
Status ValidateSortKeyPrefix(std::string_view prefix);

// "DEV#" + id.  The partition key a user sees (and the Prometheus label).
std::string PartitionKey(std::string_view device_id);

// "DEV#" + id + SEP + sort_key.  `sort_key` may also be a prefix or kSortKeyEnd for bounds.
std::string EncodeKey(std::string_view device_id, std::string_view sort_key);
// The same into `out`, whose capacity is reused: the write path encodes every reading's key.
void EncodeKey(std::string_view device_id, std::string_view sort_key, std::string* out);

// Splits a reading key; false for keys that are not reading keys.
bool DecodeKey(std::string_view key, std::string_view* device_id, std::string_view* sort_key);

inline constexpr std::string_view kRegistryPrefix = "REG#";
// "REG#" + id, and back (false for keys that are not registry keys).
std::string RegistryKey(std::string_view device_id);
bool DecodeRegistryKey(std::string_view key, std::string_view* device_id);

inline constexpr std::string_view kRollupPrefix = "ROL#";
// OK when `seconds` may be a store's rollup granule: 0 (no rollups) or a divisor of a day, so
// that every granule begins on a sort key and the usual steps (1m, 5m, 1h, 1d) are multiples of it.
Status ValidateRollupSeconds(int64_t seconds);
// "ROL#" + id + SEP + granule ("" for the floor record), and back (false for other keys).
std::string RollupKey(std::string_view device_id, std::string_view granule);
bool DecodeRollupKey(std::string_view key, std::string_view* device_id, std::string_view* granule);

inline constexpr std::string_view kIndexPrefix = "IDX#";

// A key attribute value of an index: a string or an exact number (canonical, storage/number.h).
struct IndexValue {
  bool is_number = false;
  std::string text;  // the string, or the number's canonical text

  auto operator<=>(const IndexValue&) const = default;  // not the index order; for containers
};

// Appends value(v) of the format above. A number must be canonical and in DynamoDB's range.
void AppendIndexValue(const IndexValue& v, std::string* out);
// Reads one value(...) from the front of *in and removes it; false when it is not one. With
// `v` null it only passes over it (its form checked, a number's range not), reading no text:
// what a reader of index entries does that wants only what follows the value.
bool ReadIndexValue(std::string_view* in, IndexValue* v);

// "IDX#" name SEP value(partition): the prefix of every entry of one index partition.
std::string IndexPartitionPrefix(std::string_view index_name, std::string_view partition);
// "IDX#" name SEP: the prefix of every entry of one index.
std::string IndexPrefix(std::string_view index_name);
// A whole index entry's key.
std::string EncodeIndexKey(std::string_view index_name, std::string_view partition, const IndexValue& sort,
                           std::string_view device_id, std::string_view sort_key);

struct IndexKey {
  std::string_view index_name;
  std::string partition;
  IndexValue sort;
  std::string_view device_id;
  std::string_view sort_key;
};
// Splits an index entry's key (views into `key`); false for anything else.
bool DecodeIndexKey(std::string_view key, IndexKey* out);

}  // namespace readingsd::storage
