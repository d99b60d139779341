#include "json/dump.h"

namespace readingsd {

std::string DumpJson(const OrderedJson& json) {
  return json.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace readingsd
