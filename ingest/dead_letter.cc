#include "ingest/dead_letter.h"

#include <nlohmann/json.hpp>

namespace readingsd::ingest {

std::string DeadLetterBody(std::string_view topic, std::string_view payload, const Rejection& rejection) {
  nlohmann::json envelope = {{"reason", ReasonName(rejection.reason)},
                             {"message", rejection.message},
                             {"topic", topic}};
  if (!rejection.device_id.empty()) envelope["device"] = rejection.device_id;
  if (rejection.reading.empty()) {
    envelope["payload"] = payload.substr(0, kDeadLetterHeadBytes);
    envelope["payloadBytes"] = payload.size();
    envelope["truncated"] = payload.size() > kDeadLetterHeadBytes;
  } else {
    envelope["index"] = rejection.index;
  }
  std::string body = envelope.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!rejection.reading.empty()) {
    // The reading is JSON that parsed: in as it is, not as a string of JSON.
    body.pop_back();
    body.append(",\"reading\":").append(rejection.reading).push_back('}');
  }
  return body;
}

}  // namespace readingsd::ingest
