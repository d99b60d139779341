#include "expr/parser.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <variant>

#include "base/text.h"
#include "expr/lexer.h"
#include "expr/reserved_words.h"
#include "storage/number.h"

namespace readingsd::expr::internal {
namespace {

using query::CompareOp;
using query::FilterExpr;
using query::Operand;

using TokenKind = Token::Kind;
using storage::AttributeValue;

// The parser recurses on parentheses and NOT; refusing deeper nesting keeps a hostile filter from
// exhausting the stack. No real filter comes close.
constexpr int kMaxNesting = 64;
// DynamoDB's limit on any expression. It also bounds AND / OR chains, which the parser builds
// iteratively but Matches and the tree's destructor walk recursively.
constexpr std::size_t kMaxExpressionBytes = 4096;

std::string_view OperatorText(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return "=";
    case CompareOp::kNe: return "<>";
    case CompareOp::kLt: return "<";
    case CompareOp::kLe: return "<=";
    case CompareOp::kGt: return ">";
    case CompareOp::kGe: return ">=";
  }
  return "?";
}

// DynamoDB's type names, as its error messages spell them.
std::string_view TypeName(const AttributeValue& value) {
  if (std::holds_alternative<storage::Number>(value)) return "N";
  if (std::holds_alternative<std::string>(value)) return "S";
  return "BOOL";
}

std::string LiteralText(const AttributeValue& value) {
  if (const auto* number = std::get_if<storage::Number>(&value)) return number->text;
  if (const std::string* string = std::get_if<std::string>(&value)) return *string;
  return std::get<bool>(value) ? "true" : "false";
}

// DynamoDB's rendering of a value in a message: {N:5}, {S:ok}, {BOOL:true}.
std::string Describe(const AttributeValue& value) {
  return "{" + std::string(TypeName(value)) + ":" + LiteralText(value) + "}";
}

bool IsBoolLiteral(const Operand& operand) {
  return !operand.is_attribute && std::holds_alternative<bool>(operand.literal);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The characters DynamoDB accepts in a bare attribute name and after '#' / ':'.
bool IsNameChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool IsIdentifier(std::string_view word) {
  return !word.empty() && !IsDigit(word[0]) && std::ranges::all_of(word, IsNameChar);
}

bool IsPlaceholder(std::string_view word) {
  return word.size() >= 2 && std::ranges::all_of(word.substr(1), IsNameChar);
}

// The placeholder's entry, or nullptr when `map` is absent or lacks it.
template <typename Map>
const typename Map::mapped_type* Find(const Map* map, std::string_view placeholder) {
  if (!map) return nullptr;
  const auto entry = map->find(std::string(placeholder));
  return entry == map->end() ? nullptr : &entry->second;
}

class Parser {
 public:
  Parser(std::string_view text, ExpressionKind kind, const ExpressionContext* context)
      : text_(text), tokens_(Tokenize(text)), kind_(kind), context_(context) {}

  Status ParseCondition(std::unique_ptr<FilterExpr>* condition) {
    if (Status s = CheckSize(); !s.ok()) return s;
    if (Status s = ParseDisjunction(0, condition); !s.ok()) return s;
    if (Peek().kind != TokenKind::kEnd) return SyntaxError(Peek(), "'and', 'or' or the end");
    return Status::OK();
  }

  Status ParseAttributeList(std::vector<std::string>* attributes) {
    if (Status s = CheckSize(); !s.ok()) return s;
    while (true) {
      const Token& at = Peek();
      Operand operand;
      if (Status s = ParseOperand(Role::kAttribute, &operand); !s.ok()) return s;
      if (std::ranges::find(*attributes, operand.attribute) != attributes->end()) {
        const std::string path = "[" + operand.attribute + "]";
        return Error(at, "Two document paths overlap with each other; must remove or rewrite one "
                         "of these paths; path one: " + path + ", path two: " + path);
      }
      attributes->push_back(std::move(operand.attribute));
      if (Peek().kind != TokenKind::kComma) break;
      Advance();
    }
    if (Peek().kind != TokenKind::kEnd) return SyntaxError(Peek(), "',' or the end");
    return Status::OK();
  }

 private:
  // kAttribute: a name only. kValue: a literal only (native). kEither: DynamoDB's operands,
  // where a name or a :value may stand on either side of an operator.
  enum class Role { kAttribute, kValue, kEither };

  bool native() const { return kind_ == ExpressionKind::kNativeFilter; }
  Role SubjectRole() const { return native() ? Role::kAttribute : Role::kEither; }
  Role ObjectRole() const { return native() ? Role::kValue : Role::kEither; }

  const Token& Peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void Advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool AtKeyword(std::string_view keyword) const {
    return Peek().kind == TokenKind::kWord && EqualsIgnoreCase(Peek().source, keyword);
  }
  static bool IsKeyword(const Token& token) {
    if (token.kind != TokenKind::kWord) return false;
    for (std::string_view keyword : {"and", "or", "not", "between", "in"}) {
      if (EqualsIgnoreCase(token.source, keyword)) return true;
    }
    return false;
  }

  Status CheckSize() const {
    if (text_.size() > kMaxExpressionBytes) {
      if (native()) {
        return Status::InvalidArgument("filter: longer than " + std::to_string(kMaxExpressionBytes) +
                                       " bytes");
      }
      return Error(Peek(), "Expression size has exceeded the maximum allowed size; expression size: " +
                               std::to_string(text_.size()));
    }
    if (Peek().kind != TokenKind::kEnd) return Status::OK();
    if (native()) return Status::InvalidArgument("filter: the filter is empty");
    return Error(Peek(), "The expression can not be empty;");
  }

  Status ParseDisjunction(int depth, std::unique_ptr<FilterExpr>* out) {
    if (Status s = ParseConjunction(depth, out); !s.ok()) return s;
    while (AtKeyword("or")) {
      Advance();
      std::unique_ptr<FilterExpr> right;
      if (Status s = ParseConjunction(depth, &right); !s.ok()) return s;
      *out = Combine(FilterExpr::Kind::kOr, std::move(*out), std::move(right));
    }
    return Status::OK();
  }

  Status ParseConjunction(int depth, std::unique_ptr<FilterExpr>* out) {
    if (Status s = ParseNegation(depth, out); !s.ok()) return s;
    while (AtKeyword("and")) {
      Advance();
      std::unique_ptr<FilterExpr> right;
      if (Status s = ParseNegation(depth, &right); !s.ok()) return s;
      *out = Combine(FilterExpr::Kind::kAnd, std::move(*out), std::move(right));
    }
    return Status::OK();
  }

  Status ParseNegation(int depth, std::unique_ptr<FilterExpr>* out) {
    if (!AtKeyword("not")) return ParsePrimary(depth, out);
    const Token& at = Peek();
    if (Status s = CheckNesting(at, depth + 1); !s.ok()) return s;
    Advance();
    auto negation = std::make_unique<FilterExpr>();
    negation->kind = FilterExpr::Kind::kNot;
    negation->children.emplace_back();
    if (Status s = ParseNegation(depth + 1, &negation->children.back()); !s.ok()) return s;
    *out = std::move(negation);
    return Status::OK();
  }

  Status ParsePrimary(int depth, std::unique_ptr<FilterExpr>* out) {
    const Token& at = Peek();
    if (at.kind == TokenKind::kLeftParen) {
      if (Status s = CheckNesting(at, depth + 1); !s.ok()) return s;
      Advance();
      if (Status s = ParseDisjunction(depth + 1, out); !s.ok()) return s;
      return Expect(TokenKind::kRightParen, "')'");
    }
    if (at.kind == TokenKind::kWord && !IsKeyword(at) && Peek(1).kind == TokenKind::kLeftParen) {
      return ParseFunction(out);
    }
    return ParseComparison(out);
  }

  // operand comparator operand | operand BETWEEN operand AND operand
  Status ParseComparison(std::unique_ptr<FilterExpr>* out) {
    auto condition = std::make_unique<FilterExpr>();
    condition->operands.resize(1);
    if (Status s = ParseOperand(SubjectRole(), &condition->operands[0]); !s.ok()) return s;
    const Token& at = Peek();
    if (at.kind == TokenKind::kComparator && (native() || at.source != "!=")) {
      Advance();
      condition->kind = FilterExpr::Kind::kCompare;
      condition->op = at.op;
      condition->operands.resize(2);
      if (Status s = ParseOperand(ObjectRole(), &condition->operands[1]); !s.ok()) return s;
      if (at.op != CompareOp::kEq && at.op != CompareOp::kNe) {
        for (const Operand& operand : condition->operands) {
          if (IsBoolLiteral(operand)) return IncorrectOperandType(at, OperatorText(at.op), operand);
        }
      }
    } else if (AtKeyword("between")) {
      Advance();
      condition->kind = FilterExpr::Kind::kBetween;
      condition->operands.resize(3);
      if (Status s = ParseOperand(ObjectRole(), &condition->operands[1]); !s.ok()) return s;
      if (!AtKeyword("and")) return SyntaxError(Peek(), "'and'");
      Advance();
      if (Status s = ParseOperand(ObjectRole(), &condition->operands[2]); !s.ok()) return s;
      if (Status s = CheckBetweenBounds(at, *condition); !s.ok()) return s;
    } else if (AtKeyword("in")) {
      return Unsupported(at, "IN", "the IN operator is not supported");
    } else {
      return SyntaxError(at, "a comparison operator");
    }
    *out = std::move(condition);
    return Status::OK();
  }

  Status CheckBetweenBounds(const Token& at, const FilterExpr& between) const {
    for (const Operand& operand : between.operands) {
      if (IsBoolLiteral(operand)) return IncorrectOperandType(at, "BETWEEN", operand);
    }
    const Operand& lower = between.operands[1];
    const Operand& upper = between.operands[2];
    // Key conditions compare the values only after timestamp normalisation (MakeKeyCondition):
    // "10:00+02:00" is before "09:00Z".
    if (lower.is_attribute || upper.is_attribute ||
        kind_ == ExpressionKind::kKeyConditionExpression) {
      return Status::OK();
    }
    const std::string bounds = "; lower bound operand: AttributeValue: " + Describe(lower.literal) +
                               ", upper bound operand: AttributeValue: " + Describe(upper.literal);
    if (lower.literal.index() != upper.literal.index()) {
      return Error(at, "The BETWEEN operator requires same data type for lower and upper bounds" +
                           bounds);
    }
    if (lower.literal > upper.literal) {
      return Error(at, "The BETWEEN operator requires upper bound to be greater than or equal to "
                       "lower bound" + bounds);
    }
    return Status::OK();
  }

  // begins_with(operand, operand) | attribute_exists(attribute) | attribute_not_exists(attribute)
  Status ParseFunction(std::unique_ptr<FilterExpr>* out) {
    const Token& name = Peek();
    auto condition = std::make_unique<FilterExpr>();
    if (name.source == "begins_with") {
      condition->kind = FilterExpr::Kind::kBeginsWith;
      condition->operands.resize(2);
    } else if (name.source == "attribute_exists" || name.source == "attribute_not_exists") {
      condition->kind = name.source == "attribute_exists" ? FilterExpr::Kind::kAttributeExists
                                                          : FilterExpr::Kind::kAttributeNotExists;
      condition->operands.resize(1);
    } else if (name.source == "contains" || name.source == "size" ||
               name.source == "attribute_type") {
      return Unsupported(name, name.source,
                         "the function " + std::string(name.source) + " is not supported");
    } else if (native()) {
      return Error(name, "unknown function '" + std::string(name.source) + "'");
    } else {
      return Error(name, "Invalid function name; function: " + std::string(name.source));
    }
    Advance();  // the name
    Advance();  // '('
    const Role first_role =
        condition->kind == FilterExpr::Kind::kBeginsWith ? SubjectRole() : Role::kAttribute;
    if (Status s = ParseOperand(first_role, &condition->operands[0]); !s.ok()) return s;
    if (condition->kind == FilterExpr::Kind::kBeginsWith) {
      if (Status s = Expect(TokenKind::kComma, "','"); !s.ok()) return s;
      if (Status s = ParseOperand(ObjectRole(), &condition->operands[1]); !s.ok()) return s;
      for (const Operand& operand : condition->operands) {
        if (!operand.is_attribute && !std::holds_alternative<std::string>(operand.literal)) {
          return IncorrectOperandType(name, "begins_with", operand);
        }
      }
    }
    if (Status s = Expect(TokenKind::kRightParen, "')'"); !s.ok()) return s;
    *out = std::move(condition);
    return Status::OK();
  }

  Status ParseOperand(Role role, Operand* operand) {
    return native() ? ParseNativeOperand(role, operand) : ParseDynamoDbOperand(role, operand);
  }

  // An attribute is any word that is not a keyword or a literal; a value is a "string", a
  // number, true / false, or else a bare word taken as a string.
  Status ParseNativeOperand(Role role, Operand* operand) {
    const Token& at = Peek();
    if (role == Role::kAttribute) {
      if (at.kind != TokenKind::kWord || IsKeyword(at) || storage::IsNumberText(at.source) ||
          at.source == "true" || at.source == "false") {
        return SyntaxError(at, "an attribute name");
      }
      if (Status s = CheckNotKeyAttribute(at, at.source); !s.ok()) return s;
      operand->is_attribute = true;
      operand->attribute = std::string(at.source);
    } else if (at.kind == TokenKind::kString) {
      operand->literal = at.unescaped;
    } else if (at.kind != TokenKind::kWord || IsKeyword(at)) {
      return SyntaxError(at, "a value");
    } else if (at.source == "true" || at.source == "false") {
      operand->literal = at.source == "true";
    } else if (storage::IsNumberText(at.source)) {
      storage::Number number;
      if (Status s = storage::Number::Parse(at.source, &number); !s.ok()) return Error(at, s.message());
      operand->literal = std::move(number);
    } else {
      operand->literal = std::string(at.source);
    }
    Advance();
    return Status::OK();
  }

  // A bare name, a #name or a :value. Literals are a syntax error, as in DynamoDB.
  Status ParseDynamoDbOperand(Role role, Operand* operand) {
    const Token& at = Peek();
    const std::string_view word = at.source;
    if (at.kind != TokenKind::kWord || IsKeyword(at) || IsDigit(word[0])) {
      return SyntaxError(at, "an operand");
    }
    if (word.find('.') != std::string_view::npos || Peek(1).kind == TokenKind::kLeftBracket) {
      return Error(at, "document paths (a.b, a[0]) are not supported: reading attributes are "
                       "scalar");
    }
    if (word[0] == ':') {
      if (role == Role::kAttribute || !IsPlaceholder(word)) return SyntaxError(at, "an attribute");
      const AttributeValue* value = Find(context_->values, word);
      if (!value) {
        return Error(at, "An expression attribute value used in expression is not defined; "
                         "attribute value: " + std::string(word));
      }
      operand->literal = *value;
      Advance();
      return Status::OK();
    }
    std::string name;
    if (word[0] == '#') {
      if (!IsPlaceholder(word)) return SyntaxError(at, "an operand");
      const std::string* alias = Find(context_->names, word);
      if (!alias) {
        return Error(at, "An expression attribute name used in the document path is not "
                         "defined; attribute name: " + std::string(word));
      }
      name = *alias;
    } else if (!IsIdentifier(word)) {
      return SyntaxError(at, "an operand");
    } else if (IsReservedWord(word)) {
      return Error(at, "Attribute name is a reserved keyword; reserved keyword: " +
                           std::string(word));
    } else {
      name = std::string(word);
    }
    if (Status s = CheckNotKeyAttribute(at, name); !s.ok()) return s;
    operand->is_attribute = true;
    operand->attribute = std::move(name);
    Advance();
    return Status::OK();
  }

  // A filter on a key attribute would silently do the key condition's job after the read; DynamoDB
  // refuses it, and so do both filter syntaxes here.
  Status CheckNotKeyAttribute(const Token& at, std::string_view name) const {
    std::string_view hash_key = storage::kDeviceIdAttribute;
    std::string_view range_key = storage::kReadingTsAttribute;
    if (kind_ == ExpressionKind::kFilterExpression) {
      hash_key = context_->hash_key;
      range_key = context_->range_key;
    } else if (kind_ != ExpressionKind::kNativeFilter) {
      return Status::OK();
    }
    if (name != hash_key && name != range_key) return Status::OK();
    if (native()) {
      return Error(at, "'" + std::string(name) + "' is a key attribute; filters can only use "
                       "non-key attributes (select readings by time with the key condition)");
    }
    return Status::InvalidArgument(
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: " +
        std::string(name));
  }

  Status CheckNesting(const Token& at, int depth) const {
    if (depth <= kMaxNesting) return Status::OK();
    return Error(at, "parentheses and NOT nest deeper than " + std::to_string(kMaxNesting));
  }

  Status Expect(TokenKind kind, std::string_view what) {
    if (Peek().kind != kind) return SyntaxError(Peek(), what);
    Advance();
    return Status::OK();
  }

  static std::unique_ptr<FilterExpr> Combine(FilterExpr::Kind kind,
                                             std::unique_ptr<FilterExpr> left,
                                             std::unique_ptr<FilterExpr> right) {
    auto combined = std::make_unique<FilterExpr>();
    combined->kind = kind;
    combined->children.push_back(std::move(left));
    combined->children.push_back(std::move(right));
    return combined;
  }

  std::string_view ExpressionName() const {
    switch (kind_) {
      case ExpressionKind::kKeyConditionExpression: return "KeyConditionExpression";
      case ExpressionKind::kProjectionExpression: return "ProjectionExpression";
      case ExpressionKind::kNativeFilter:
      case ExpressionKind::kFilterExpression: break;
    }
    return "FilterExpression";
  }

  // Native: "filter: <message> at offset N". DynamoDB: "Invalid <Name>: <message>".
  Status Error(const Token& at, std::string_view message) const {
    if (native()) {
      return Status::InvalidArgument("filter: " + std::string(message) + " at offset " +
                                     std::to_string(at.offset));
    }
    return Status::InvalidArgument("Invalid " + std::string(ExpressionName()) + ": " +
                                   std::string(message));
  }

  // Native: "expected <what> after '<previous token>'". DynamoDB: its own form, naming the token
  // and the text around it.
  Status SyntaxError(const Token& at, std::string_view expected) const {
    const std::size_t index = static_cast<std::size_t>(&at - tokens_.data());
    const Token* previous = index > 0 ? &tokens_[index - 1] : nullptr;
    if (native()) {
      if (at.kind == TokenKind::kInvalid) return Error(at, at.problem);
      std::string message = "expected " + std::string(expected);
      if (previous) message += " after '" + std::string(previous->source) + "'";
      return Error(at, message);
    }
    // "near" spans the previous, this and the next token, like DynamoDB's.
    const Token& last = at.kind != TokenKind::kEnd ? tokens_[index + 1] : previous ? *previous : at;
    const std::size_t near_begin = previous ? previous->offset : at.offset;
    const std::size_t near_end = last.offset + last.source.size();
    const std::string token = at.kind == TokenKind::kEnd ? "<EOF>" : std::string(at.source);
    return Error(at, "Syntax error; token: \"" + token + "\", near: \"" +
                         std::string(text_.substr(near_begin, near_end - near_begin)) + "\"");
  }

  // In a key condition DynamoDB names the operator; in a filter we say it is not supported.
  Status Unsupported(const Token& at, std::string_view operator_name,
                     std::string_view explanation) const {
    if (kind_ == ExpressionKind::kKeyConditionExpression) {
      return Error(at, "Invalid operator used in KeyConditionExpression: " +
                           std::string(operator_name));
    }
    return Error(at, explanation);
  }

  Status IncorrectOperandType(const Token& at, std::string_view operator_name,
                              const Operand& operand) const {
    if (native()) {
      return Error(at, "'" + std::string(operator_name) + "' cannot take the " +
                           (std::holds_alternative<bool>(operand.literal) ? "boolean " : "number ") +
                           LiteralText(operand.literal));
    }
    return Error(at, "Incorrect operand type for operator or function; operator or function: " +
                         std::string(operator_name) +
                         ", operand type: " + std::string(TypeName(operand.literal)));
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  ExpressionKind kind_;
  const ExpressionContext* context_;
};

}  // namespace

Status ParseCondition(std::string_view text, ExpressionKind kind, const ExpressionContext* context,
                      std::unique_ptr<FilterExpr>* condition) {
  return Parser(text, kind, context).ParseCondition(condition);
}

Status ParseAttributeList(std::string_view text, const ExpressionContext& context,
                          std::vector<std::string>* attributes) {
  attributes->clear();
  return Parser(text, ExpressionKind::kProjectionExpression, &context).ParseAttributeList(attributes);
}

}  // namespace readingsd::expr::internal
