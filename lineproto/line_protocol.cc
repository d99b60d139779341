#include "lineproto/line_protocol.h"

#include <charconv>

namespace readingsd::lineproto {
namespace {

constexpr std::string_view kNameEscapes = ",= ";

Status Error(std::size_t at, std::string_view what) {
  return Status::InvalidArgument("column " + std::to_string(at + 1) + ": " + std::string(what));
}

bool IsOneOf(char c, std::string_view set) {
  for (char s : set) {
    if (c == s) return true;
  }
  return false;
}

// The text from *at up to the first unescaped byte of `stops` (or the end) into *out (its
// capacity reused from point to point), with a backslash before a byte of `escapes` dropped; *at
// is left on the stop. Text without a backslash, nearly all of it, is copied in one piece.
void Token(std::string_view line, std::size_t* at, std::string_view stops, std::string_view escapes,
           std::string* out) {
  std::size_t i = *at;
  while (i < line.size() && line[i] != '\\' && !IsOneOf(line[i], stops)) ++i;
  out->assign(line.substr(*at, i - *at));
  for (; i < line.size() && !IsOneOf(line[i], stops); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && IsOneOf(line[i + 1], escapes)) ++i;
    out->push_back(line[i]);
  }
  *at = i;
}

void SkipSpaces(std::string_view line, std::size_t* at) {
  while (*at < line.size() && line[*at] == ' ') ++*at;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// [+-] (digits [. [digits]] | . digits) [(e|E) [+-] digits], as Go's ParseFloat reads a finite
// decimal (no inf, no NaN, no hex).
bool IsFloat(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  std::size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    return AllDigits(s.substr(i));
  }
  return i == s.size();
}

Status FieldValue(std::string_view line, std::size_t* at, Field* field) {
  const std::size_t start = *at;
  if (start < line.size() && line[start] == '"') {
    field->type = FieldType::kString;
    field->value.clear();
    std::size_t i = start + 1;
    for (; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) ++i;
      field->value.push_back(line[i]);
    }
    if (i == line.size()) return Error(start, "string field value has no closing quote");
    *at = i + 1;
    return Status::OK();
  }
  std::size_t end = start;
  while (end < line.size() && line[end] != ',' && line[end] != ' ') ++end;
  const std::string_view text = line.substr(start, end - start);
  *at = end;
  if (text.empty()) return Error(start, "missing field value");
  const char last = text.back();
  const std::string_view head = text.substr(0, text.size() - 1);
  if (last == 'i' && AllDigits(head.starts_with('-') || head.starts_with('+') ? head.substr(1) : head)) {
    field->type = FieldType::kInteger;
    field->value.assign(head.starts_with('+') ? head.substr(1) : head);
  } else if (last == 'u' && AllDigits(head)) {
    field->type = FieldType::kUnsigned;
    field->value.assign(head);
  } else if (text == "t" || text == "T" || text == "true" || text == "True" || text == "TRUE") {
    field->type = FieldType::kBoolean;
    field->value = "true";
  } else if (text == "f" || text == "F" || text == "false" || text == "False" || text == "FALSE") {
    field->type = FieldType::kBoolean;
    field->value = "false";
  } else if (IsFloat(text)) {
    field->type = FieldType::kFloat;
    field->value.assign(text);
  } else {
    return Error(start, "invalid field value \"" + std::string(text.substr(0, 40)) +
                            "\": expected a number, 42i, 42u, a \"string\" or a boolean");
  }
  return Status::OK();
}

}  // namespace

Status ParsePoint(std::string_view line, Point* out) {
  // The tags and fields of the point before keep their strings' room: `tags` and `fields` are
  // cut to this point's at the end.
  std::size_t tags = 0, fields = 0;
  out->timestamp.reset();
  std::size_t at = 0;
  Token(line, &at, ", ", ", ", &out->measurement);
  if (out->measurement.empty()) return Error(at, "missing measurement");
  while (at < line.size() && line[at] == ',') {
    ++at;
    if (tags == out->tags.size()) out->tags.emplace_back();
    auto& [key, value] = out->tags[tags++];
    const std::size_t key_at = at;
    Token(line, &at, ",= ", kNameEscapes, &key);
    if (key.empty()) return Error(key_at, "missing tag key");
    if (at == line.size() || line[at] != '=') return Error(at, "tag \"" + key + "\" has no '='");
    ++at;
    const std::size_t value_at = at;
    Token(line, &at, ",= ", kNameEscapes, &value);
    if (value.empty()) return Error(value_at, "tag \"" + key + "\" has no value");
    if (at < line.size() && line[at] == '=') return Error(at, "tag \"" + key + "\": unescaped '=' in its value");
  }
  out->tags.resize(tags);
  if (at == line.size()) return Error(at, "missing fields");
  SkipSpaces(line, &at);
  for (;;) {
    const std::size_t key_at = at;
    if (fields == out->fields.size()) out->fields.emplace_back();
    Field& field = out->fields[fields++];
    Token(line, &at, ",= ", kNameEscapes, &field.key);
    if (field.key.empty()) return Error(key_at, "missing field key");
    if (at == line.size() || line[at] != '=') return Error(at, "field \"" + field.key + "\" has no '='");
    ++at;
    if (Status s = FieldValue(line, &at, &field); !s.ok()) return s;
    if (at < line.size() && line[at] == ',') {
      ++at;
      continue;
    }
    break;
  }
  out->fields.resize(fields);
  SkipSpaces(line, &at);
  if (at == line.size()) return Status::OK();
  const std::size_t ts_at = at;
  std::size_t end = at;
  while (end < line.size() && line[end] != ' ') ++end;
  const std::string_view text = line.substr(at, end - at);
  int64_t ts = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), ts);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.starts_with('+')) {
    return Error(ts_at, "invalid timestamp \"" + std::string(text.substr(0, 40)) + "\": expected an integer");
  }
  out->timestamp = ts;
  at = end;
  SkipSpaces(line, &at);
  if (at != line.size()) return Error(at, "unexpected text after the timestamp");
  return Status::OK();
}

bool LineReader::Next(std::string_view* line, std::size_t* number) {
  while (!rest_.empty()) {
    const auto newline = rest_.find('\n');
    std::string_view text = rest_.substr(0, newline);
    rest_ = newline == std::string_view::npos ? std::string_view() : rest_.substr(newline + 1);
    ++number_;
    if (text.ends_with('\r')) text.remove_suffix(1);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    if (text.empty() || text.front() == '#') continue;
    *line = text;
    *number = number_;
    return true;
  }
  return false;
}

}  // namespace readingsd::lineproto
