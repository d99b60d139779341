#include <algorithm>
#include <boost/crc.hpp>
#include <cmath>
#include <set>
#include <variant>

#include "api/dynamodb/internal.h"
#include "query/index_query.h"
#include "storage/key.h"

namespace readingsd::api::dynamodb::internal {
namespace {

std::string Joined(std::span<const std::string_view> names) {
  std::string text;
  for (std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

}  // namespace

http::Response Respond(const Context& context, http::status status, const Json& body) {
  http::Response res{status, 11};
  res.set(http::field::content_type, "application/x-amz-json-1.0");
  res.set("x-amzn-RequestId", context.request_id);
  res.body() = DumpJson(body);
  boost::crc_32_type crc;
  crc.process_bytes(res.body().data(), res.body().size());
  res.set("x-amz-crc32", std::to_string(crc.checksum()));
  return res;
}

http::Response Ok(const Context& context, const Json& body) { return Respond(context, http::status::ok, body); }

http::Response ShareAnswer(std::string share) {
  http::Response res{http::status::ok, 11};
  res.set(http::field::content_type, "application/octet-stream");
  res.body() = std::move(share);
  return res;
}

http::Response ErrorFromStatus(const Context& context, const Status& s) {
  if (s.IsInvalidArgument()) return Error(context, http::status::bad_request, "ValidationException", s.message());
  if (s.IsNotFound()) return Error(context, http::status::bad_request, "ResourceNotFoundException", s.message());
  return Error(context, http::status::internal_server_error, "InternalServerError", s.ToString());
}

Status CheckTable(const Context& context, const std::optional<std::string>& table) {
  if (!table) {
    return Status::InvalidArgument(
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must "
        "not be null");
  }
  if (*table != context.table_name) return Status::NotFound("Requested resource not found");
  return Status::OK();
}

Status CheckMembers(const Json& request, std::string_view operation, std::initializer_list<std::string_view> accepted) {
  for (const auto& [name, value] : request.items()) {
    if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) continue;
    return Status::InvalidArgument(std::string(operation) + ": parameter " + name + " is not supported");
  }
  return Status::OK();
}

template <typename T>
Status Get(const Json& request, const char* name, std::optional<T>* out) {
  auto it = request.find(name);
  if (it == request.end() || it->is_null()) return Status::OK();
  bool typed;
  std::string_view type;
  if constexpr (std::is_same_v<T, std::string>) {
    typed = it->is_string(), type = "string";
  } else if constexpr (std::is_same_v<T, bool>) {
    typed = it->is_boolean(), type = "boolean";
  } else if constexpr (std::is_same_v<T, int64_t>) {
    typed = it->is_number_integer(), type = "integer";
  } else {
    static_assert(std::is_same_v<T, Json>);
    typed = it->is_object(), type = "map";
  }
  if (!typed) {
    return Status::InvalidArgument("1 validation error detected: Value at '" + std::string(name) +
                                   "' failed to satisfy constraint: Member must be a " + std::string(type));
  }
  *out = it->template get<T>();
  return Status::OK();
}
template Status Get(const Json&, const char*, std::optional<std::string>*);
template Status Get(const Json&, const char*, std::optional<bool>*);
template Status Get(const Json&, const char*, std::optional<int64_t>*);
template Status Get(const Json&, const char*, std::optional<Json>*);

void Constraints::Fail(std::string_view value, std::string_view member, std::string_view constraint) {
  // DynamoDB quotes a value, but not a missing one.
  const std::string shown = value == "null" ? "null" : "'" + std::string(value) + "'";
  failures_.push_back("Value " + shown + " at '" + std::string(member) +
                      "' failed to satisfy constraint: " + std::string(constraint));
}

void Constraints::AtLeast(const std::optional<int64_t>& value, std::string_view member, int64_t least) {
  if (value && *value < least) {
    Fail(std::to_string(*value), member, "Member must have value greater than or equal to " + std::to_string(least));
  }
}

void Constraints::AtMost(const std::optional<int64_t>& value, std::string_view member, int64_t most) {
  if (value && *value > most) {
    Fail(std::to_string(*value), member, "Member must have value less than or equal to " + std::to_string(most));
  }
}

void Constraints::OneOf(const std::optional<std::string>& value, std::string_view member,
                        std::span<const std::string_view> allowed) {
  if (!value || std::find(allowed.begin(), allowed.end(), *value) != allowed.end()) return;
  Fail(*value, member, "Member must satisfy enum value set: [" + Joined(allowed) + "]");
}

Status Constraints::status() const {
  if (failures_.empty()) return Status::OK();
  std::string message = std::to_string(failures_.size()) + " validation error" + (failures_.size() > 1 ? "s" : "") +
                        " detected: ";
  for (std::size_t i = 0; i < failures_.size(); ++i) message += (i ? "; " : "") + failures_[i];
  return Status::InvalidArgument(message);
}

Json Typed(std::string_view type, Json value) {
  Json av = Json::object();
  av[type] = std::move(value);
  return av;
}

Json ToAttributeValue(const storage::AttributeValue& value) {
  if (const auto* n = std::get_if<storage::Number>(&value)) return Typed("N", n->text);
  if (const std::string* s = std::get_if<std::string>(&value)) return Typed("S", *s);
  return Typed("BOOL", std::get<bool>(value));
}

Json ToAttributeValue(const storage::AttributeView& attribute) {
  if (const auto* n = std::get_if<storage::NumberView>(&attribute.value)) {
    std::string text;
    n->AppendTo(&text);
    return Typed("N", std::move(text));
  }
  if (const auto* s = std::get_if<std::string_view>(&attribute.value)) return Typed("S", std::string(*s));
  return Typed("BOOL", std::get<bool>(attribute.value));
}

Status FromAttributeValue(const Json& av, std::string_view where, storage::AttributeValue* out) {
  if (!av.is_object() || av.size() != 1) {
    return Status::InvalidArgument(
        std::string(where) + ": Supplied AttributeValue is empty, must contain exactly one of the supported datatypes");
  }
  const std::string& type = av.begin().key();
  const Json& value = av.begin().value();
  if (type == "S" && value.is_string()) {
    *out = value.get<std::string>();
  } else if (type == "BOOL" && value.is_boolean()) {
    *out = value.get<bool>();
  } else if (type == "N" && value.is_string()) {
    storage::Number number;
    if (Status s = storage::Number::Parse(value.get_ref<const std::string&>(), &number); !s.ok()) {
      return Status::InvalidArgument(std::string(where) + ": " + s.message());
    }
    *out = std::move(number);
  } else {
    return Status::InvalidArgument(std::string(where) + ": attribute value type " + type +
                                   " is not supported (readings hold S, N and BOOL values)");
  }
  return Status::OK();
}

Json KeyJson(std::string_view device_id, std::string_view sort_key) {
  Json key = Json::object();
  key[storage::kDeviceIdAttribute] = Typed("S", device_id);
  key[storage::kReadingTsAttribute] = Typed("S", sort_key);
  return key;
}

Status ParseKey(const Json& key, std::string_view what, std::string* device_id, std::string* timestamp) {
  const std::string prefix = what.empty() ? "" : std::string(what) + ": ";
  const Status mismatch = Status::InvalidArgument(prefix + "The provided key element does not match the schema");
  auto string_member = [&key](std::string_view name) -> const Json* {
    auto it = key.find(name);
    if (it == key.end() || !it->is_object() || it->size() != 1 || !it->contains("S") || !(*it)["S"].is_string()) {
      return nullptr;
    }
    return &(*it)["S"];
  };
  if (!key.is_object() || key.size() != 2) return mismatch;
  const Json* device = string_member(storage::kDeviceIdAttribute);
  const Json* ts = string_member(storage::kReadingTsAttribute);
  if (!device || !ts) return mismatch;
  *device_id = device->get<std::string>();
  *timestamp = ts->get<std::string>();
  const std::pair<const std::string*, std::string_view> members[] = {{device_id, storage::kDeviceIdAttribute},
                                                                     {timestamp, storage::kReadingTsAttribute}};
  for (const auto& [value, name] : members) {
    if (value->empty()) {
      return Status::InvalidArgument(prefix +
                                     "One or more parameter values are not valid. The AttributeValue for a key "
                                     "attribute cannot contain an empty string value. Key: " +
                                     std::string(name));
    }
  }
  return Status::OK();
}

bool StoredKey(std::string_view device_id, std::string_view timestamp, std::string* sort_key) {
  return storage::ValidateDeviceId(device_id).ok() && storage::NormalizeTimestamp(timestamp, sort_key).ok();
}

Json ItemJson(std::string_view device_id, std::string_view sort_key, std::span<const storage::AttributeView> attributes,
              const Projection& projection) {
  auto wanted = [&](std::string_view name) {
    return !projection || std::find(projection->begin(), projection->end(), name) != projection->end();
  };
  Json item = Json::object();
  if (wanted(storage::kDeviceIdAttribute)) item[storage::kDeviceIdAttribute] = Typed("S", device_id);
  if (wanted(storage::kReadingTsAttribute)) item[storage::kReadingTsAttribute] = Typed("S", sort_key);
  for (const storage::AttributeView& a : attributes) {
    if (wanted(a.name)) item[a.name] = ToAttributeValue(a);
  }
  return item;
}

Status ParseExpressionAttributes(const Json& request, Expressions* out) {
  std::optional<Json> names, values;
  if (Status s = Get(request, "ExpressionAttributeNames", &names); !s.ok()) return s;
  if (Status s = Get(request, "ExpressionAttributeValues", &values); !s.ok()) return s;
  if (names) {
    if (names->empty()) return Status::InvalidArgument("ExpressionAttributeNames must not be empty");
    for (const auto& [placeholder, name] : names->items()) {
      if (!name.is_string()) {
        return Status::InvalidArgument("ExpressionAttributeNames contains invalid value for key " + placeholder);
      }
      out->names[placeholder] = name.get<std::string>();
    }
  }
  if (values) {
    if (values->empty()) return Status::InvalidArgument("ExpressionAttributeValues must not be empty");
    for (const auto& [placeholder, av] : values->items()) {
      Status s = FromAttributeValue(av, "ExpressionAttributeValues contains invalid value for key " + placeholder,
                                    &out->values[placeholder]);
      if (!s.ok()) return s;
    }
  }
  return Status::OK();
}

Status CheckExpressionParameters(const Json& request, std::initializer_list<std::string_view> expressions,
                                 std::initializer_list<std::string_view> legacy) {
  auto present = [&request](std::string_view name) {
    auto it = request.find(name);
    return it != request.end() && !it->is_null();
  };
  std::vector<std::string_view> used_expressions, used_legacy;
  for (std::string_view name : expressions) {
    if (present(name)) used_expressions.push_back(name);
  }
  // KeyConditions may come with a FilterExpression or ProjectionExpression when there is no
  // KeyConditionExpression: the key has no expression form to mix with.
  const bool key_conditions_alone = present("KeyConditions") && !present("KeyConditionExpression");
  for (std::string_view name : legacy) {
    if (present(name) && !(name == "KeyConditions" && key_conditions_alone)) used_legacy.push_back(name);
  }
  if (!used_expressions.empty() && !used_legacy.empty()) {
    return Status::InvalidArgument(
        "Can not use both expression and non-expression parameters in the same request: Non-expression "
        "parameters: {" +
        Joined(used_legacy) + "} Expression parameters: {" + Joined(used_expressions) + "}");
  }
  if (present("ExpressionAttributeNames") && used_expressions.empty()) {
    return Status::InvalidArgument("ExpressionAttributeNames can only be specified when using expressions");
  }
  std::vector<std::string_view> value_expressions;  // those that can use a :value
  for (std::string_view name : expressions) {
    if (name != "ProjectionExpression") value_expressions.push_back(name);
  }
  if (present("ExpressionAttributeValues") && !value_expressions.empty() &&
      std::none_of(value_expressions.begin(), value_expressions.end(), present)) {
    std::string names;
    for (std::size_t i = 0; i < value_expressions.size(); ++i) {
      names += (i ? " and " : "") + std::string(value_expressions[i]);
    }
    return Status::InvalidArgument("ExpressionAttributeValues can only be specified when using expressions: " + names +
                                   (value_expressions.size() > 1 ? " are null" : " is null"));
  }
  return Status::OK();
}

Status ParseAttributesToGet(const Json& request, Projection* projection) {
  auto it = request.find("AttributesToGet");
  if (it == request.end() || it->is_null()) return Status::OK();
  if (!it->is_array()) {
    return Status::InvalidArgument(
        "1 validation error detected: Value at 'attributesToGet' failed to satisfy constraint: Member must be a "
        "list");
  }
  Constraints constraints;
  if (it->empty()) constraints.Fail("[]", "attributesToGet", "Member must have length greater than or equal to 1");
  if (it->size() > 255) {
    constraints.Fail("[…]", "attributesToGet", "Member must have length less than or equal to 255");
  }
  if (Status s = constraints.status(); !s.ok()) return s;
  projection->emplace();
  for (const Json& name : *it) {
    if (!name.is_string()) {
      return Status::InvalidArgument(
          "1 validation error detected: Value at 'attributesToGet' failed to satisfy constraint: Member must be a "
          "list of strings");
    }
    const std::string& text = name.get_ref<const std::string&>();
    if (std::find(projection->value().begin(), projection->value().end(), text) != projection->value().end()) {
      return Status::InvalidArgument(
          "One or more parameter values were invalid: Duplicate value in attribute name: " + text);
    }
    projection->value().push_back(text);
  }
  return Status::OK();
}

Capacity CapacityOf(const std::optional<std::string>& value) {
  if (value == "TOTAL") return Capacity::kTotal;
  if (value == "INDEXES") return Capacity::kIndexes;
  return Capacity::kNone;
}

double ReadUnits(std::size_t bytes, bool consistent) {
  const std::size_t units = std::max<std::size_t>(1, (bytes + 4095) / 4096);
  return consistent ? static_cast<double>(units) : static_cast<double>(units) / 2;
}

Json ConsumedCapacityJson(const Context& context, Capacity capacity, double units) {
  Json consumed = Json::object();
  consumed["TableName"] = context.table_name;
  consumed["CapacityUnits"] = units;
  if (capacity == Capacity::kIndexes) consumed["Table"] = Json::object({{"CapacityUnits", units}});
  return consumed;
}

Status ParseReadParameters(const Context& context, const Json& body, std::string_view filter_member,
                           bool key_attributes_in_filter, Constraints* constraints, Expressions* expressions,
                           ReadParameters* out) {
  std::optional<std::string> table, filter_text, projection_text, select, capacity, index, conditional;
  std::optional<int64_t> limit;
  std::optional<bool> consistent;
  std::optional<Json> legacy_filter;
  for (Status s : {Get(body, "TableName", &table), Get(body, "FilterExpression", &filter_text),
                   Get(body, "ProjectionExpression", &projection_text), Get(body, "Select", &select),
                   Get(body, "ReturnConsumedCapacity", &capacity), Get(body, "IndexName", &index),
                   Get(body, "ConditionalOperator", &conditional), Get(body, "Limit", &limit),
                   Get(body, "ConsistentRead", &consistent),
                   Get(body, std::string(filter_member).c_str(), &legacy_filter)}) {
    if (!s.ok()) return s;
  }
  constraints->OneOf(select, "select", kSelectValues);
  constraints->AtLeast(limit, "limit", 1);
  constraints->OneOf(conditional, "conditionalOperator", kConditionalOperators);
  constraints->OneOf(capacity, "returnConsumedCapacity", kCapacityValues);
  if (Status s = constraints->status(); !s.ok()) return s;
  if (Status s = CheckTable(context, table); !s.ok()) return s;
  const bool is_query = filter_member == "QueryFilter";
  if (index) {
    storage::IndexSpec spec;
    Status found = is_query ? query::FindIndex(context.read.store, *index, &spec)
                            : Status::InvalidArgument("The table does not have the specified index: " + *index);
    // An index being backfilled is there, but cannot answer yet (DynamoDB's "backfilling" refusal).
    if (found.code() == Status::Code::kUnavailable) {
      return Status::InvalidArgument("Cannot read from backfilling global secondary index: " + found.message());
    }
    if (!found.ok()) return found;
    out->index = std::move(spec);
    expressions->context.hash_key = out->index->PartitionName();
    expressions->context.range_key = out->index->SortName();
  }

  Status mixed = is_query ? CheckExpressionParameters(
                                body, {"ProjectionExpression", "FilterExpression", "KeyConditionExpression"},
                                {"AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"})
                          : CheckExpressionParameters(body, {"ProjectionExpression", "FilterExpression"},
                                                      {"AttributesToGet", "ScanFilter", "ConditionalOperator"});
  if (!mixed.ok()) return mixed;
  if (Status s = ParseExpressionAttributes(body, expressions); !s.ok()) return s;
  if (Status s = ParseAttributesToGet(body, &out->projection); !s.ok()) return s;

  if (filter_text) {
    if (key_attributes_in_filter) expressions->context.hash_key.clear(), expressions->context.range_key.clear();
    Status s = expr::ParseFilterExpression(*filter_text, expressions->context, &out->filter);
    expressions->context.hash_key = out->index ? out->index->PartitionName() : storage::kDeviceIdAttribute;
    expressions->context.range_key = out->index ? out->index->SortName() : storage::kReadingTsAttribute;
    if (!s.ok()) return s;
    out->expression_texts.push_back(*filter_text);
  } else if (legacy_filter) {
    if (Status s = ParseLegacyFilter(*legacy_filter, filter_member, conditional, &out->filter); !s.ok()) return s;
  }
  if (projection_text) {
    out->projection.emplace();
    if (Status s = expr::ParseProjectionExpression(*projection_text, expressions->context, &*out->projection);
        !s.ok()) {
      return s;
    }
    out->expression_texts.push_back(*projection_text);
  }

  const std::string_view projection_member = projection_text ? "ProjectionExpression" : "AttributesToGet";
  if (select == "COUNT") {
    if (out->projection) {
      return Status::InvalidArgument("One or more parameter values were invalid: Cannot specify the " +
                                     std::string(projection_member) + " when choosing to get only the COUNT");
    }
    out->count_only = true;
  } else if (select == "ALL_ATTRIBUTES" && out->projection) {
    return Status::InvalidArgument("One or more parameter values were invalid: Cannot specify the " +
                                   std::string(projection_member) + " when choosing to get ALL_ATTRIBUTES");
  } else if (select == "SPECIFIC_ATTRIBUTES" && !out->projection) {
    return Status::InvalidArgument(
        "One or more parameter values were invalid: Select SPECIFIC_ATTRIBUTES requires a ProjectionExpression or "
        "AttributesToGet");
  } else if (select == "ALL_PROJECTED_ATTRIBUTES" && !out->index) {
    return Status::InvalidArgument(
        "One or more parameter values were invalid: ALL_PROJECTED_ATTRIBUTES can be used only when Querying using "
        "an IndexName");
  }

  // DynamoDB may end a page early and does so at 1 MB; max_limit is one more such bound, so a
  // larger Limit only means a shorter page with a LastEvaluatedKey.
  const std::size_t max_limit = context.read.limits.max_limit;
  out->limit = limit ? std::min(static_cast<std::size_t>(*limit), max_limit) : max_limit;
  out->consistent = consistent.value_or(false);
  out->capacity = CapacityOf(capacity);
  return Status::OK();
}

Status CheckPlaceholdersUsed(const Expressions& expressions, const ReadParameters& read) {
  const std::vector<std::string_view> texts(read.expression_texts.begin(), read.expression_texts.end());
  return expr::CheckPlaceholdersUsed(expressions.context, texts);
}

}  // namespace readingsd::api::dynamodb::internal
