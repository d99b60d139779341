// The one mapping from the user's settings (config/config.h, with the defaults a user reads in
// --help) to each library's options struct (with the defaults its tests rely on).
// tests/daemon/options_test.cc pins that the two sets of defaults agree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/router.h"
#include "base/text.h"
#include "cluster/forward.h"
#include "config/config.h"
#include "http/server.h"
#include "ingest/mqtt_ingest.h"
#include "ingest/nats_ingest.h"
#include "metrics/hotness.h"
#include "storage/store.h"

namespace readingsd::daemon {

// The store's options as [storage] sets them: what RunService opens.
storage::StoreOptions StoreOptionsFrom(const config::Config& config);
// Without the password, which RunService reads from mqtt.password_file. `window` is the
// plausible readingTs window.
ingest::MqttOptions IngestOptionsFrom(const config::MqttConfig& config, const config::IngestConfig& window);
// [nats], with [mqtt]'s payload limits (max_payload_bytes, max_batch) and [ingest]'s window.
ingest::NatsOptions NatsOptionsFrom(const config::Config& config);
// [cluster], with nats.partitions: the node map and its timeouts; nullopt without a node map.
std::optional<cluster::ForwardOptions> ForwardOptionsFrom(const config::Config& config);
metrics::HotnessOptions HotnessOptionsFrom(const config::MetricsConfig& config);
// `listen` is config.listen, parsed.
http::ServerOptions ServerOptionsFrom(const config::HttpConfig& config, const HostPort& listen);
// `tokens` are read from config.auth_token_file; `window` is the plausible readingTs window.
api::RouterOptions RouterOptionsFrom(const config::HttpConfig& config, const config::IngestConfig& window,
                                     std::vector<std::string> tokens);

}  // namespace readingsd::daemon
