#include "json/parse.h"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace readingsd {
namespace {

// The SAX handler behind nlohmann's own parse(), refusing to open a container past
// kMaxJsonDepth: sax_parse stops at the first event that returns false, so nothing deeper is
// built and the rest of the input is not read.
template <typename BasicJson>
class DepthLimitedBuilder {
 public:
  using number_integer_t = typename BasicJson::number_integer_t;
  using number_unsigned_t = typename BasicJson::number_unsigned_t;
  using number_float_t = typename BasicJson::number_float_t;
  using string_t = typename BasicJson::string_t;
  using binary_t = typename BasicJson::binary_t;

  DepthLimitedBuilder(BasicJson& root, JsonParseObserver* observer)
      : dom_(root, /*allow_exceptions=*/false), observer_(observer) {}

  bool too_deep() const { return too_deep_; }

  bool null() { return Scalar() && dom_.null(); }
  bool boolean(bool value) { return Scalar() && dom_.boolean(value); }
  bool number_integer(number_integer_t value) { return Scalar() && dom_.number_integer(value); }
  bool number_unsigned(number_unsigned_t value) { return Scalar() && dom_.number_unsigned(value); }
  bool number_float(number_float_t value, const string_t& text) {
    Scalar();
    if (observer_ != nullptr) observer_->NumberText(text);
    return dom_.number_float(value, text);
  }
  bool string(string_t& value) { return Scalar() && dom_.string(value); }
  bool binary(binary_t& value) { return Scalar() && dom_.binary(value); }
  bool key(string_t& value) {
    if (observer_ != nullptr) observer_->Key(value);
    return dom_.key(value);
  }
  bool start_object(std::size_t size) {
    if (!Enter()) return false;
    if (observer_ != nullptr) observer_->StartObject();
    return dom_.start_object(size);
  }
  bool end_object() {
    --depth_;
    if (observer_ != nullptr) observer_->EndObject();
    return dom_.end_object();
  }
  bool start_array(std::size_t size) {
    if (!Enter()) return false;
    if (observer_ != nullptr) observer_->StartArray();
    return dom_.start_array(size);
  }
  bool end_array() {
    --depth_;
    if (observer_ != nullptr) observer_->EndArray();
    return dom_.end_array();
  }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& e) {
    return dom_.parse_error(position, last_token, e);
  }

 private:
  bool Scalar() {
    if (observer_ != nullptr) observer_->Value();
    return true;
  }

  bool Enter() {
    if (depth_ == kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
    ++depth_;
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<BasicJson> dom_;
  JsonParseObserver* observer_;  // may be null
  int depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

template <typename BasicJson>
JsonParseError ParseJson(std::string_view text, BasicJson* out, JsonParseObserver* observer) {
  BasicJson value;
  DepthLimitedBuilder<BasicJson> builder(value, observer);
  const bool parsed = BasicJson::sax_parse(text, &builder, BasicJson::input_format_t::json, /*strict=*/true);
  if (builder.too_deep()) return JsonParseError::kTooDeep;
  if (!parsed) return JsonParseError::kMalformed;
  *out = std::move(value);
  return JsonParseError::kNone;
}

template JsonParseError ParseJson(std::string_view, nlohmann::json*, JsonParseObserver*);
template JsonParseError ParseJson(std::string_view, nlohmann::ordered_json*, JsonParseObserver*);

}  // namespace readingsd
