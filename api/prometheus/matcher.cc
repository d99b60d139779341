// Series names and label matchers: what the remote read selects by.
#include <re2/re2.h>

#include <utility>

#include "api/prometheus/prometheus.h"

namespace readingsd::api::prometheus {
namespace {

bool IsNameByte(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string MetricNameOf(std::string_view attribute, bool* renamed) {
  std::string name;
  name.reserve(attribute.size() + 1);
  if (!attribute.empty() && attribute[0] >= '0' && attribute[0] <= '9') name.push_back('_');
  for (char c : attribute) name.push_back(IsNameByte(c, name.empty()) ? c : '_');
  *renamed = name != attribute;
  return name;
}

Status Matcher::Make(MatchType type, std::string name, std::string value, Matcher* out) {
  out->type_ = type;
  out->name_ = std::move(name);
  out->value_ = std::move(value);
  out->regex_.reset();
  if (type != MatchType::kRegex && type != MatchType::kNotRegex) return Status::OK();
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);  // a request holds up to max_matchers of them
  // Anchored as Prometheus anchors its regexes; the leading ^ also lets Bounds see a prefix.
  auto regex = std::make_shared<const RE2>("^(?:" + out->value_ + ")$", options);
  if (!regex->ok()) {
    return Status::InvalidArgument("matcher " + out->name_ + (type == MatchType::kRegex ? "=~" : "!~") + "\"" +
                                   out->value_ + "\": " + regex->error());
  }
  out->regex_ = std::move(regex);
  return Status::OK();
}

bool Matcher::Matches(std::string_view value) const {
  switch (type_) {
    case MatchType::kEqual: return value == value_;
    case MatchType::kNotEqual: return value != value_;
    case MatchType::kRegex: return RE2::PartialMatch(value, *regex_);
    case MatchType::kNotRegex: return !RE2::PartialMatch(value, *regex_);
  }
  return false;
}

bool Matcher::Bounds(std::string* lower, std::string* upper) const {
  switch (type_) {
    case MatchType::kEqual:
      *lower = *upper = value_;
      return true;
    case MatchType::kRegex:
      // Device ids are at most 128 bytes; a longer bound is only looser.
      return regex_->PossibleMatchRange(lower, upper, 128) && !upper->empty();
    default: return false;
  }
}

}  // namespace readingsd::api::prometheus
