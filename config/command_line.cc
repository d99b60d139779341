#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "config/config.h"
#include "config/schema.h"

namespace readingsd::config {
namespace {

using internal::Key;
using internal::Kind;
using internal::Value;

Status FromText(std::string_view text, Kind kind, Value* value) {
  std::string why;
  const char* end = text.data() + text.size();
  switch (kind) {
    case Kind::kBool:
      if (text == "true" || text == "false") {
        value->emplace<bool>(text == "true");
        return Status::OK();
      }
      why = "must be true or false";
      break;
    case Kind::kInt: {
      int64_t i;
      auto [ptr, ec] = std::from_chars(text.data(), end, i);
      if (ec == std::errc() && ptr == end) {
        value->emplace<int64_t>(i);
        return Status::OK();
      }
      why = ec == std::errc::result_out_of_range ? "is out of range" : "must be an integer";
      break;
    }
    case Kind::kDouble: {
      double d;
      auto [ptr, ec] = std::from_chars(text.data(), end, d);
      if (ec == std::errc() && ptr == end) {
        value->emplace<double>(d);
        return Status::OK();
      }
      why = "must be a number";
      break;
    }
    case Kind::kString:
      value->emplace<std::string>(text);
      return Status::OK();
    case Kind::kList: {
      internal::List list;
      for (size_t start = 0; !text.empty();) {  // "" = the empty list
        size_t comma = text.find(',', start);
        list.emplace_back(text.substr(start, comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      value->emplace<internal::List>(std::move(list));
      return Status::OK();
    }
  }
  return Status::InvalidArgument(why + ", got " + internal::Quote(text));
}

// "mqtt.port" of "--mqtt.port=1"; nullopt unless the name starts with a config section, so that
// other options after a command stay that command's.
std::optional<std::string_view> ConfigFlagName(std::string_view arg) {
  if (!arg.starts_with("--")) return std::nullopt;
  std::string_view name = arg.substr(2);
  name = name.substr(0, name.find('='));
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || !internal::IsSection(name.substr(0, dot))) {
    return std::nullopt;
  }
  return name;
}

std::string DidYouMean(std::string_view name) {
  static constexpr std::string_view kOptions[] = {"config", "print-config", "help", "version"};
  std::string_view closest = internal::Closest(name, kOptions);
  return closest.empty() ? "" : " (did you mean --" + std::string(closest) + "?)";
}

struct Flag {
  const Key* key;
  std::string name;  // "--mqtt.port", where errors spanning keys point
  Value value;
};

}  // namespace

Status ParseCommandLine(int argc, const char* const* argv, Config* config, CommandLine* cmd) {
  static constexpr std::pair<std::string_view, Command> kCommands[] = {
      {"run", Command::kRun},
      {"serve", Command::kServe},
      {"query", Command::kQuery},
      {"devices", Command::kDevices},
      {"delete", Command::kDelete},
      {"import", Command::kImport},
      {"backup", Command::kBackup},
      {"verify", Command::kVerify},
      {"repair", Command::kRepair},
      {"check-config", Command::kCheckConfig},
  };
  CommandLine result;
  std::string_view command;  // as typed; "" = none
  bool print_config = false;
  bool verbatim = false;  // after "--" following the command
  std::vector<Flag> flags;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (verbatim) {
      result.args.emplace_back(arg);
      continue;
    }
    if (std::optional<std::string_view> name = ConfigFlagName(arg)) {
      std::string flag = "--" + std::string(*name);
      const Key* key = internal::FindKey(*name);
      if (!key) return Status::InvalidArgument(flag + ": unknown flag" + DidYouMean(*name));
      std::string_view text;
      if (size_t eq = arg.find('='); eq != std::string_view::npos) {
        text = arg.substr(eq + 1);
      } else if (key->kind == Kind::kBool) {
        bool next_is_bool = i + 1 < argc && (argv[i + 1] == std::string_view("true") ||
                                             argv[i + 1] == std::string_view("false"));
        text = next_is_bool ? argv[++i] : "true";
      } else if (i + 1 < argc) {
        text = argv[++i];
      } else {
        return Status::InvalidArgument(flag + ": needs a value");
      }
      Value value;
      Status parsed = FromText(text, key->kind, &value);
      std::string why = parsed.ok() ? key->check(value) : parsed.message();
      if (!why.empty()) return Status::InvalidArgument(flag + ": " + why);
      flags.push_back({key, std::move(flag), std::move(value)});
      continue;
    }
    if (!command.empty()) {
      if (arg == "--") {
        verbatim = true;
      } else {
        result.args.emplace_back(arg);
      }
      continue;
    }
    if (arg == "-h" || arg == "--help" || arg == "--version") {
      *cmd = CommandLine{arg == "--version" ? Command::kVersion : Command::kHelp, {}, {}};
      return Status::OK();
    }
    if (arg == "--print-config") {
      print_config = true;
      continue;
    }
    if (arg == "-c" || arg == "--config" || arg.starts_with("--config=")) {
      std::string_view path;
      if (arg.starts_with("--config=")) {
        path = arg.substr(9);
      } else if (i + 1 < argc) {
        path = argv[++i];
      }
      if (path.empty()) return Status::InvalidArgument("--config: needs a FILE");
      if (!result.config_path.empty()) return Status::InvalidArgument("--config: given twice");
      result.config_path = path;
      continue;
    }
    if (arg.starts_with('-')) {
      std::string hint = arg.starts_with("--") ? DidYouMean(arg.substr(2)) : "";
      return Status::InvalidArgument("unknown option " + std::string(arg) +
                                     (hint.empty() ? " (see --help)" : hint));
    }
    auto known = std::find_if(std::begin(kCommands), std::end(kCommands),
                              [arg](const auto& c) { return c.first == arg; });
    if (known == std::end(kCommands)) {
      return Status::InvalidArgument("unknown command \"" + std::string(arg) + "\" (see --help)");
    }
    command = arg;
    result.command = known->second;
  }

  if (print_config && !command.empty()) {
    return Status::InvalidArgument("--print-config: takes no command, got " + std::string(command));
  }
  if (print_config) result.command = Command::kPrintConfig;
  if (result.command == Command::kBackup && result.args.size() != 1) {
    return Status::InvalidArgument(
        "backup: needs exactly one argument, the directory to write the copy to");
  }
  if ((result.command == Command::kRun || result.command == Command::kServe || result.command == Command::kCheckConfig ||
       result.command == Command::kVerify) &&
      !result.args.empty()) {
    return Status::InvalidArgument(std::string(command) + ": unexpected argument \"" +
                                   result.args.front() + "\" (options go before the command)");
  }

  Config merged = *config;
  internal::Origins origins;
  if (!result.config_path.empty()) {
    std::string text;
    Status s = internal::ReadFile(result.config_path, internal::kMaxConfigBytes, &text);
    if (s.ok()) s = internal::LoadToml(text, result.config_path, &merged, &origins);
    if (!s.ok()) return s;
  }
  for (const Flag& flag : flags) {
    flag.key->set(&merged, flag.value);
    origins.push_back({flag.key->name, flag.name});
  }
  if (Status s = internal::Finish(&merged, origins, "command line"); !s.ok()) return s;
  *config = std::move(merged);
  *cmd = std::move(result);
  return Status::OK();
}

}  // namespace readingsd::config
