// What the NATS source and publisher share of the C client (ingest/ internal).
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <string>
#include <vector>

namespace readingsd::ingest {

// Opens the library once per process, whichever of them comes first.
void OpenNatsLibrary();

// A status in words, with the JetStream error code and the library's last error when there are.
std::string NatsWhy(natsStatus s, jsErrCode js_error = static_cast<jsErrCode>(0));

// Options for a connection to `servers` named `name` that reconnects forever, every
// `reconnect_wait`, and is made in the background when no server is up yet (`on_connected`,
// with `closure`, is told when it is). *out is the caller's to destroy; nothing on failure.
natsStatus MakeNatsOptions(const std::vector<std::string>& servers, const std::string& name,
                           std::chrono::milliseconds reconnect_wait, natsConnectionHandler on_connected,
                           void* closure, natsOptions** out);

}  // namespace readingsd::ingest
