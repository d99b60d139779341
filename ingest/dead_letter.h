// The dead-letter envelope: what an ingest source publishes, for each rejected reading, to its
// dead-letter topic (MQTT) or subject (NATS), so an operator can see and replay what was refused.
#pragma once

#include <string>
#include <string_view>

#include "ingest/payload.h"

namespace readingsd::ingest {

// One JSON object: {"reason","message","topic","device"?, then either "index" and "reading" (a
// reading refused alone: the readings stored beside it do not come back) or "payload",
// "payloadBytes" and "truncated" (a payload refused whole: only its first kDeadLetterHeadBytes,
// so a 2 MB payload does not travel twice)}. `topic` is the MQTT topic or NATS subject.
std::string DeadLetterBody(std::string_view topic, std::string_view payload, const Rejection& rejection);

// Of a payload refused whole, the envelope carries this much: enough to recognise the sender
// and the format.
inline constexpr std::size_t kDeadLetterHeadBytes = 1024;

}  // namespace readingsd::ingest
