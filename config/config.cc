#include "config/config.h"

#include <fcntl.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <optional>
#include <system_error>
#include <utility>

#include "cluster/node_map.h"
#include "config/schema.h"

namespace readingsd::config {
namespace internal {
namespace {

// Bigger than any password or token: stops a mistaken /dev/zero from filling memory.
constexpr size_t kMaxSecretBytes = 64 << 10;

std::string TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// The TOML type each kind takes; a number also takes an integer ("limit = 1000").
Status FromNode(const toml::node& node, Kind kind, Value* value) {
  std::string why;
  switch (kind) {
    case Kind::kBool:
      if (std::optional<bool> b = node.value_exact<bool>()) {
        value->emplace<bool>(*b);
        return Status::OK();
      }
      why = "must be true or false";
      break;
    case Kind::kInt:
      if (std::optional<int64_t> i = node.value_exact<int64_t>()) {
        value->emplace<int64_t>(*i);
        return Status::OK();
      }
      why = "must be an integer";
      break;
    case Kind::kDouble:
      if (node.is_number()) {
        value->emplace<double>(node.is_integer() ? static_cast<double>(*node.value_exact<int64_t>())
                                                 : *node.value_exact<double>());
        return Status::OK();
      }
      why = "must be a number";
      break;
    case Kind::kString:
      if (std::optional<std::string> s = node.value_exact<std::string>()) {
        value->emplace<std::string>(std::move(*s));
        return Status::OK();
      }
      why = "must be a string";
      break;
    case Kind::kList:
      if (const toml::array* array = node.as_array()) {
        List list;
        for (const toml::node& element : *array) {
          std::optional<std::string> s = element.value_exact<std::string>();
          if (!s) {
            return Status::InvalidArgument("must be an array of strings, got " +
                                           TypeName(element) + " in it");
          }
          list.push_back(std::move(*s));
        }
        value->emplace<List>(std::move(list));
        return Status::OK();
      }
      why = "must be an array of strings";
      break;
  }
  return Status::InvalidArgument(why + ", got " + TypeName(node));
}

std::string DidYouMean(std::string_view name) {
  std::string_view closest = Closest(name);
  return closest.empty() ? "" : " (did you mean " + std::string(closest) + "?)";
}

// Breaks `text` into lines of at most `width` characters, each starting with `indent`.
std::string Wrap(std::string_view text, std::string_view indent, size_t width) {
  std::string out, line;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(' ', start), text.size());
    std::string_view word = text.substr(start, end - start);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += std::string(indent) + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
    start = end + 1;
  }
  return line.empty() ? out : out + std::string(indent) + line + "\n";
}

using Problems = std::vector<std::pair<uint32_t, std::string>>;
using Problem = std::function<void(const toml::source_region& at, std::string_view why)>;

// Calls `each` with every table of `node`, the [[name]] tables of the file, and how to report a
// problem in it: as (line, "<source>:<line>: <name>: <why>"). Anything else is one problem.
void ForEachTable(const toml::node& node, std::string_view source, std::string_view name, Problems* problems,
                  const std::function<void(const toml::table&, const Problem&)>& each) {
  const Problem problem = [&](const toml::source_region& at, std::string_view why) {
    problems->emplace_back(at.begin.line, std::string(source) + ":" + std::to_string(at.begin.line) + ": " +
                                              std::string(name) + ": " + std::string(why));
  };
  const toml::array* tables = node.as_array();
  if (tables == nullptr || !tables->is_array_of_tables()) {
    problem(node.source(), "must be [[" + std::string(name) + "]] tables, got " + TypeName(node));
    return;
  }
  for (const toml::node& element : *tables) each(*element.as_table(), problem);
}

// Reads the [[index]] tables into *indexes, each problem as (line, message).
void LoadIndexes(const toml::node& node, std::string_view source, std::vector<IndexConfig>* indexes,
                 Problems* problems) {
  ForEachTable(node, source, "index", problems, [&](const toml::table& table, const Problem& problem) {
    IndexConfig index;
    bool ok = true;
    for (const auto& [key, value] : table) {
      std::string* field = key == "name"        ? &index.name
                           : key == "partition" ? &index.partition
                           : key == "sort"      ? &index.sort
                           : key == "sort_type" ? &index.sort_type
                                                : nullptr;
      if (key == "shards") {
        std::optional<int64_t> shards = value.value_exact<int64_t>();
        if (!shards || *shards < 1 || *shards > storage::kMaxIndexShards) {
          problem(value.source(), "shards must be an integer 1.." + std::to_string(storage::kMaxIndexShards) +
                                      ", got " + (shards ? std::to_string(*shards) : TypeName(value)));
          ok = false;
        } else {
          index.shards = static_cast<int>(*shards);
        }
      } else if (field == nullptr) {
        problem(key.source(), "unknown key " + Quote(key.str()) + " (an index has name, partition, sort, sort_type, shards)");
        ok = false;
      } else if (std::optional<std::string> text = value.value_exact<std::string>()) {
        *field = std::move(*text);
      } else {
        problem(value.source(), std::string(key.str()) + " must be a string, got " + TypeName(value));
        ok = false;
      }
    }
    if (!ok) return;
    std::string why;
    if (index.name.empty() || index.partition.empty() || index.sort.empty()) {
      why = "needs name, partition and sort";
    } else if (index.sort_type != "number" && index.sort_type != "string") {
      why = "unknown attribute kind: sort_type must be \"number\" or \"string\", got " + Quote(index.sort_type);
    } else if (std::any_of(indexes->begin(), indexes->end(), [&](const IndexConfig& i) { return i.name == index.name; })) {
      why = "duplicate index name " + Quote(index.name);
    } else if (Status s = storage::ValidateIndexSpec(IndexSpecOf(index)); !s.ok()) {
      why = s.message();
    }
    if (why.empty()) {
      indexes->push_back(std::move(index));
    } else {
      problem(table.source(), Quote(index.name) + ": " + why);
    }
  });
}

// Reads the [[cluster.nodes]] tables into *nodes, each problem as (line, message). What spans
// keys (partitions against nats.partitions, cluster.node) is checked by Finish.
void LoadNodes(const toml::node& node, std::string_view source, std::vector<ClusterNodeConfig>* nodes,
               Problems* problems) {
  ForEachTable(node, source, "cluster.nodes", problems, [&](const toml::table& table, const Problem& problem) {
    ClusterNodeConfig entry;
    bool ok = true;
    for (const auto& [key, value] : table) {
      if (key == "partitions") {
        Value list;
        if (Status s = FromNode(value, Kind::kList, &list); !s.ok()) {
          problem(value.source(), "partitions " + s.message());
          ok = false;
        } else {
          entry.partitions = std::get<List>(std::move(list));
        }
      } else if (key == "name" || key == "url") {
        if (std::optional<std::string> text = value.value_exact<std::string>()) {
          (key == "name" ? entry.name : entry.url) = std::move(*text);
        } else {
          problem(value.source(), std::string(key.str()) + " must be a string, got " + TypeName(value));
          ok = false;
        }
      } else {
        problem(key.source(), "unknown key " + Quote(key.str()) + " (a node has name, url, partitions)");
        ok = false;
      }
    }
    if (!ok) return;
    std::string why, host, port;
    if (entry.name.empty() || entry.url.empty() || entry.partitions.empty()) {
      why = "a node needs name, url and partitions (e.g. name = \"node1\", url = \"http://10.0.0.1:8080\", "
            "partitions = [\"0-7\"])";
    } else if (!std::all_of(entry.name.begin(), entry.name.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
               })) {
      why = "name must be of a-z A-Z 0-9 _ -, got " + Quote(entry.name);
    } else if (Status s = cluster::ParseNodeUrl(entry.url, &host, &port); !s.ok()) {
      why = "url " + s.message();
    } else if (std::any_of(nodes->begin(), nodes->end(), [&](const ClusterNodeConfig& n) { return n.name == entry.name; })) {
      why = "duplicate node name " + Quote(entry.name);
    } else if (std::any_of(nodes->begin(), nodes->end(), [&](const ClusterNodeConfig& n) { return n.url == entry.url; })) {
      why = "two nodes have the url " + Quote(entry.url);
    }
    if (why.empty()) {
      nodes->push_back(std::move(entry));
    } else {
      problem(table.source(), (entry.name.empty() ? "" : "node " + Quote(entry.name) + ": ") + why);
    }
  });
}

}  // namespace

Status LoadToml(std::string_view text, std::string_view source, Config* config, Origins* origins) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    return Status::InvalidArgument(std::string(source) + ":" + std::to_string(at.line) + ":" +
                                   std::to_string(at.column) + ": " + std::string(e.description()));
  }
  auto where = [source](uint32_t line) { return std::string(source) + ":" + std::to_string(line); };

  // toml++ iterates tables in key order; both lists are sorted back into file order.
  struct Setting {
    uint32_t line;
    const Key* key;
    Value value;
  };
  std::vector<Setting> settings;
  std::vector<std::pair<uint32_t, std::string>> problems;
  auto problem = [&](const toml::source_region& at, std::string_view name, std::string_view why) {
    problems.emplace_back(
        at.begin.line, where(at.begin.line) + ": " + std::string(name) + ": " + std::string(why));
  };

  std::optional<std::vector<IndexConfig>> indexes;
  std::optional<std::vector<ClusterNodeConfig>> nodes;
  uint32_t nodes_line = 0;
  for (const auto& [section_key, section_node] : root) {
    std::string_view section = section_key.str();
    if (section == "index") {
      LoadIndexes(section_node, source, &indexes.emplace(), &problems);
      continue;
    }
    if (!IsSection(section)) {
      problem(section_key.source(), section,
              (section_node.is_table() ? "unknown section" : "unknown key") + DidYouMean(section));
      continue;
    }
    const toml::table* table = section_node.as_table();
    if (!table) {
      problem(section_node.source(), section, "must be a table, got " + TypeName(section_node));
      continue;
    }
    for (const auto& [name_key, node] : *table) {
      std::string name = std::string(section) + "." + std::string(name_key.str());
      if (name == "cluster.nodes") {
        nodes_line = node.source().begin.line;
        LoadNodes(node, source, &nodes.emplace(), &problems);
        continue;
      }
      const Key* key = FindKey(name);
      if (!key) {
        problem(name_key.source(), name, "unknown key" + DidYouMean(name));
        continue;
      }
      Value value;
      Status parsed = FromNode(node, key->kind, &value);
      if (std::string why = parsed.ok() ? key->check(value) : parsed.message(); why.empty()) {
        settings.push_back({node.source().begin.line, key, std::move(value)});
      } else {
        problem(node.source(), name, why);
      }
    }
  }

  if (!problems.empty()) {
    std::stable_sort(problems.begin(), problems.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string all;
    for (const auto& [line, message] : problems) all += (all.empty() ? "" : "\n") + message;
    return Status::InvalidArgument(std::move(all));
  }
  std::stable_sort(settings.begin(), settings.end(),
                   [](const Setting& a, const Setting& b) { return a.line < b.line; });
  for (const Setting& s : settings) {
    s.key->set(config, s.value);
    origins->push_back({s.key->name, where(s.line)});
  }
  if (indexes) config->indexes = std::move(*indexes);
  if (nodes) {
    config->cluster.nodes = std::move(*nodes);
    origins->push_back({"cluster.nodes", where(nodes_line)});
  }
  return Status::OK();
}

Status ReadFile(const std::string& path, size_t max_bytes, std::string* text) {
  auto unreadable = [&path] {
    return Status::IOError("cannot read " + path + ": " + std::generic_category().message(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unreadable();
  std::string data;
  char buf[4096];
  Status status;
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = unreadable();
      break;
    }
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      status =
          Status::InvalidArgument(path + ": larger than " + std::to_string(max_bytes) + " bytes");
      break;
    }
  }
  ::close(fd);
  if (status.ok()) *text = std::move(data);
  return status;
}

}  // namespace internal

storage::IndexSpec IndexSpecOf(const IndexConfig& index) {
  storage::IndexSpec spec;
  spec.name = index.name;
  if (index.partition == storage::kReadingHourAttribute) {
    spec.partition = storage::IndexPartition::kReadingHour;
  } else if (index.partition == storage::kReadingDayAttribute) {
    spec.partition = storage::IndexPartition::kReadingDay;
  } else {
    spec.partition = storage::IndexPartition::kAttribute;
    spec.partition_attribute = index.partition;
  }
  if (index.sort == storage::kReadingTsAttribute) {
    spec.sort = storage::IndexSort::kReadingTs;
  } else {
    spec.sort = index.sort_type == "string" ? storage::IndexSort::kString : storage::IndexSort::kNumber;
    spec.sort_attribute = index.sort;
  }
  spec.shards = index.shards;
  return spec;
}

Status ParseToml(std::string_view text, std::string_view source_name, Config* out) {
  Config merged = *out;
  internal::Origins origins;
  Status status = internal::LoadToml(text, source_name, &merged, &origins);
  if (status.ok()) status = internal::Finish(&merged, origins, source_name);
  if (status.ok()) *out = std::move(merged);
  return status;
}

std::string ToToml(const Config& config) {
  std::string out;
  std::string_view section;
  for (const internal::Key& key : internal::Keys()) {
    if (std::string_view s = internal::SectionOf(key.name); s != section) {
      out += (out.empty() ? "[" : "\n[") + std::string(s) + "]\n";
      section = s;
    }
    out += std::string(key.name.substr(section.size() + 1)) + " = " +
           internal::FormatValue(key.get(config)) + "\n";
  }
  for (const IndexConfig& index : config.indexes) {
    out += "\n[[index]]\nname = " + internal::Quote(index.name) + "\npartition = " + internal::Quote(index.partition) +
           "\nsort = " + internal::Quote(index.sort) + "\nsort_type = " + internal::Quote(index.sort_type) +
           "\nshards = " + std::to_string(index.shards) + "\n";
  }
  for (const ClusterNodeConfig& node : config.cluster.nodes) {
    out += "\n[[cluster.nodes]]\nname = " + internal::Quote(node.name) + "\nurl = " + internal::Quote(node.url) +
           "\npartitions = " + internal::FormatValue(node.partitions) + "\n";
  }
  return out;
}

std::string HelpText() {
  std::string out =
      "Usage: readingsd [OPTIONS] [run]\n"
      "       readingsd [OPTIONS] serve\n"
      "       readingsd [OPTIONS] query [QUERY OPTIONS]\n"
      "       readingsd [OPTIONS] devices [--prefix P] [--limit N] [--all] [--json]\n"
      "       readingsd [OPTIONS] delete --device ID (RANGE | --all)\n"
      "       readingsd [OPTIONS] import [IMPORT OPTIONS] FILE...\n"
      "       readingsd [OPTIONS] backup DIR\n"
      "       readingsd [OPTIONS] verify\n"
      "       readingsd [OPTIONS] repair [--yes] [--copy-to DIR]\n"
      "       readingsd [OPTIONS] check-config\n"
      "\n"
      "Commands:\n"
      "  run            ingest readings from MQTT and serve the HTTP API (the default)\n"
      "  serve          serve the HTTP API over the store opened read-only, with no\n"
      "                 ingest: for a backup or a copy, beside a running daemon\n"
      "  query          query the store; its options follow it (readingsd query --help)\n"
      "  devices        every device with its reading count and latest reading, as a table\n"
      "  delete         delete a device's readings in a range, or all of them, through the\n"
      "                 running daemon (readingsd delete --help)\n"
      "  import FILE... readings from CSV, JSON lines or line protocol files (- = stdin) into the\n"
      "                 store, or through the running daemon that holds it (readingsd import --help)\n"
      "  backup DIR     write a consistent copy of the store to the new directory DIR\n"
      "  verify         check the store and every block of it against its checksum\n"
      "  repair         report what repairing a store readingsd refuses would drop;\n"
      "                 with --yes, keep a copy of the data dir and repair it\n"
      "  check-config   validate the configuration and exit\n"
      "\n"
      "Options (before the command):\n"
      "  -c, --config FILE  read settings from the TOML file FILE (without it: the defaults)\n"
      "  --print-config     print the effective configuration as TOML and exit\n"
      "  -h, --help         print this help and exit\n"
      "  --version          print the version and exit\n"
      "\n"
      "Settings. Each is a key of the config file and a flag, --section.key=VALUE or\n"
      "--section.key VALUE, that overrides the file and may also follow the command.\n"
      "LIST values are comma-separated; a bare BOOL flag means true.\n";
  std::string_view section;
  const Config defaults;
  for (const internal::Key& key : internal::Keys()) {
    if (std::string_view s = internal::SectionOf(key.name); s != section) {
      out += "\n[" + std::string(s) + "]\n";
      section = s;
    }
    out += "  --" + std::string(key.name) + "=" + internal::KindName(key.kind) + "  (default " +
           internal::FormatValue(key.get(defaults)) + ")\n";
    out += internal::Wrap(key.doc, "        ", 80);
  }
  out +=
      "\n[[index]] (config file only, one table per secondary index; see README)\n"
      "  name = \"hot_by_hour\"      3..255 of a-z A-Z 0-9 _ - .\n"
      "  partition = \"readingHour\" readingHour, readingDay or a string attribute\n"
      "  sort = \"temperature\"      a number or string attribute, or readingTs\n"
      "  sort_type = \"number\"      \"number\" (default) or \"string\"\n"
      "  shards = 1                 1..256: partition values \"v#0\" .. \"v#n-1\"\n"
      "\n[[cluster.nodes]] (config file only, one table per node of the node map; docs/cluster.md)\n"
      "  name = \"node1\"            a-z A-Z 0-9 _ -; cluster.node names this node's\n"
      "  url = \"http://10.0.0.1:8080\"  its HTTP API, where other nodes forward requests\n"
      "  partitions = [\"0-7\"]      the partitions it owns (\"N\" or \"N-M\" entries)\n";
  return out;
}

Status ReadSecretFile(const std::string& path, std::string* secret) {
  std::string text;
  if (Status s = internal::ReadFile(path, internal::kMaxSecretBytes, &text); !s.ok()) return s;
  if (text.ends_with("\r\n")) {
    text.resize(text.size() - 2);
  } else if (text.ends_with('\n')) {
    text.pop_back();
  }
  if (text.empty()) return Status::InvalidArgument(path + ": is empty");
  *secret = std::move(text);
  return Status::OK();
}

Status ReadTokenFile(const std::string& path, std::vector<std::string>* tokens) {
  std::string text;
  if (Status s = internal::ReadFile(path, internal::kMaxSecretBytes, &text); !s.ok()) return s;
  std::vector<std::string> found;
  std::string_view rest = text;
  for (int line = 1; !rest.empty(); ++line) {
    std::string_view token = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(token.size() + 1, rest.size()));
    constexpr std::string_view kBlank = " \t\r";  // \r: the CR of a CRLF line end
    token.remove_prefix(std::min(token.find_first_not_of(kBlank), token.size()));
    token.remove_suffix(token.size() - (token.find_last_not_of(kBlank) + 1));
    if (token.empty() || token.starts_with('#')) continue;
    // Visible ASCII only, as RFC 6750's b64token: what a client can type into a header. This
    // also catches a byte-order mark an editor put before the first token.
    if (!std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < '\x7f'; })) {
      return Status::InvalidArgument(
          path + ":" + std::to_string(line) +
          ": a token must be printable ASCII without spaces (an Authorization header could not "
          "carry it)");
    }
    found.emplace_back(token);
  }
  if (found.empty()) {
    return Status::InvalidArgument(
        path + ": no token in it (one per line; lines starting with # are comments)");
  }
  *tokens = std::move(found);
  return Status::OK();
}

}  // namespace readingsd::config
