#include "ingest/nats_util.h"

#include <mutex>

namespace readingsd::ingest {

void OpenNatsLibrary() {
  static std::once_flag lib_init;
  std::call_once(lib_init, [] { nats_Open(-1); });
}

std::string NatsWhy(natsStatus s, jsErrCode js_error) {
  std::string why = natsStatus_GetText(s);
  if (js_error != 0) why += " (JetStream error " + std::to_string(js_error) + ")";
  if (const char* last = nats_GetLastError(nullptr); last != nullptr && *last != '\0') why += ": " + std::string(last);
  return why;
}

natsStatus MakeNatsOptions(const std::vector<std::string>& servers, const std::string& name,
                           std::chrono::milliseconds reconnect_wait, natsConnectionHandler on_connected,
                           void* closure, natsOptions** out) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s != NATS_OK) return s;
  std::vector<const char*> urls;
  for (const std::string& server : servers) urls.push_back(server.c_str());
  s = natsOptions_SetServers(opts, urls.data(), static_cast<int>(urls.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts, name.c_str());
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);  // a node keeps trying forever
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, reconnect_wait.count());
  if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, closure);
  if (s != NATS_OK) {
    natsOptions_Destroy(opts);
    return s;
  }
  *out = opts;
  return NATS_OK;
}

}  // namespace readingsd::ingest
