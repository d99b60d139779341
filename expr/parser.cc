#include "expr/parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <optional>
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
  return !operand.is_attribute && !operand.size && std::holds_alternative<bool>(operand.literal);
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

// DynamoDB's limit on the operands of IN, besides its subject.
constexpr std::size_t kMaxInOperands = 100;
// A document path has at most 32 levels (DynamoDB's nesting limit), its list indexes fit a
// signed 32-bit integer.
constexpr std::size_t kMaxPathLevels = 32;
constexpr std::uint64_t kMaxListIndex = 2147483647;

// DynamoDB's type names, as attribute_type() takes them, in the order its message lists them.
constexpr std::string_view kTypeNames[] = {"B", "NULL", "SS", "BOOL", "L", "BS", "N", "NS", "S", "M"};
// What DynamoDB names the type of an operand it cannot know before reading an item.
constexpr std::string_view kAnyType = "{NS,SS,L,BS,N,M,B,BOOL,NULL,S}";

// The condition functions and how many operands each takes.
struct Function {
  std::string_view name;
  std::size_t operands;
};
constexpr Function kFunctions[] = {{"attribute_exists", 1}, {"attribute_not_exists", 1},
                                   {"attribute_type", 2},   {"begins_with", 2},
                                   {"contains", 2},         {"size", 1}};

const Function* FindFunction(std::string_view name) {
  for (const Function& function : kFunctions) {
    if (function.name == name) return &function;
  }
  return nullptr;
}

// One step of a document path: a name (a.b) or a list index (a[0]).
struct PathElement {
  bool is_index = false;
  std::string name;
  std::uint64_t index = 0;
  bool operator==(const PathElement&) const = default;
};
using Path = std::vector<PathElement>;

// DynamoDB's rendering of a path in a message: [a, b, [0]].
std::string PathText(const Path& path) {
  std::string text = "[";
  for (const PathElement& element : path) {
    if (text.size() > 1) text += ", ";
    text += element.is_index ? "[" + std::to_string(element.index) + "]" : element.name;
  }
  return text + "]";
}

// The type DynamoDB knows an operand to have before it reads an item: a :value's own, N for
// size(); none for an attribute.
std::optional<std::string_view> StaticType(const Operand& operand) {
  if (operand.size) return "N";
  if (operand.is_attribute) return std::nullopt;
  return TypeName(operand.literal);
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

  // Paths that overlap (a and a.b, or a twice) or conflict (a.b and a[0]) are refused, as
  // DynamoDB refuses them. Only whole top-level attributes select anything: below a scalar
  // there is nothing, so a longer path adds no name (but a key attribute's is an error).
  Status ParseAttributeList(std::vector<std::string>* attributes) {
    if (Status s = CheckSize(); !s.ok()) return s;
    std::vector<Path> paths;
    std::string overlap, conflict;
    while (true) {
      Path path;
      if (Status s = ParsePath(&path); !s.ok()) return s;
      for (const Path& earlier : paths) {
        if (overlap.empty()) CompareProjected(earlier, path, &overlap, &conflict);
      }
      paths.push_back(std::move(path));
      if (Peek().kind != TokenKind::kComma) break;
      Advance();
    }
    if (Peek().kind != TokenKind::kEnd) return SyntaxError(Peek(), "',' or the end");
    if (!overlap.empty()) return Error(Peek(), overlap);
    if (!conflict.empty()) return Error(Peek(), conflict);
    for (const Path& path : paths) {
      if (path.size() == 1) {
        attributes->push_back(path[0].name);
      } else if (IsKeyAttribute(path[0].name)) {
        return Status::InvalidArgument(
            "Key attributes must be scalars; list random access '[]' and map lookup '.' are not "
            "allowed: Key: " + path[0].name);
      }
    }
    return Status::OK();
  }

 private:
  // kAttribute: a name only. kValue: a literal only (native). kSubject: a name or size(name)
  // (native). kEither: DynamoDB's operands, where a path, a :value or size() may stand on either
  // side of an operator.
  enum class Role { kAttribute, kValue, kSubject, kEither };

  bool native() const { return kind_ == ExpressionKind::kNativeFilter; }
  Role SubjectRole() const { return native() ? Role::kSubject : Role::kEither; }
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
  // A function call starts here: a name directly followed by '('.
  bool AtCall() const {
    const Token& at = Peek();
    return at.kind == TokenKind::kWord && !IsKeyword(at) && Peek(1).kind == TokenKind::kLeftParen &&
           (native() || IsIdentifier(at.source));
  }
  bool AtOperator() const {
    return Peek().kind == TokenKind::kComparator || AtKeyword("between") || AtKeyword("in");
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
    // size() is a value, compared like any operand; the other functions are conditions.
    if (AtCall() && at.source != "size") return ParseFunction(out);
    return ParseComparison(out);
  }

  // operand comparator operand | operand BETWEEN operand AND operand
  // | operand IN '(' operand { ',' operand } ')'
  Status ParseComparison(std::unique_ptr<FilterExpr>* out) {
    auto condition = std::make_unique<FilterExpr>();
    condition->operands.resize(1);
    const Token& first = Peek();
    Path subject;
    if (Status s = ParseOperand(SubjectRole(), &condition->operands[0], &subject); !s.ok()) return s;
    const Token& at = Peek();
    if (at.kind == TokenKind::kComparator && (native() || at.source != "!=")) {
      Advance();
      condition->kind = FilterExpr::Kind::kCompare;
      condition->op = at.op;
      condition->operands.resize(2);
      Path object;
      if (Status s = ParseOperand(ObjectRole(), &condition->operands[1], &object); !s.ok()) return s;
      if (Status s = CheckDistinct(at, OperatorText(at.op), subject, object); !s.ok()) return s;
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
      if (Status s = ParseInList(subject, condition.get()); !s.ok()) return s;
    } else if (!native() && condition->operands[0].size) {
      return MisusedFunction(first);  // size(a) is no condition by itself
    } else {
      return SyntaxError(at, "a comparison operator");
    }
    *out = std::move(condition);
    return Status::OK();
  }

  // IN '(' operand { ',' operand } ')', after the subject: true when the subject equals one.
  Status ParseInList(const Path& subject, FilterExpr* condition) {
    const Token& in = Peek();
    Advance();
    if (Status s = Expect(TokenKind::kLeftParen, "'('"); !s.ok()) return s;
    condition->kind = FilterExpr::Kind::kIn;
    while (true) {
      Operand operand;
      Path path;
      if (Status s = ParseOperand(ObjectRole(), &operand, &path); !s.ok()) return s;
      if (Status s = CheckDistinct(in, "IN", subject, path); !s.ok()) return s;
      condition->operands.push_back(std::move(operand));
      if (Peek().kind != TokenKind::kComma) break;
      Advance();
    }
    if (Status s = Expect(TokenKind::kRightParen, "')'"); !s.ok()) return s;
    const std::size_t count = condition->operands.size() - 1;
    if (count <= kMaxInOperands) return Status::OK();
    if (native()) {
      return Error(in, "IN takes at most " + std::to_string(kMaxInOperands) + " values, not " +
                           std::to_string(count));
    }
    return Error(in, "The IN operator is provided with too many operands; number of operands: " +
                         std::to_string(count));
  }

  Status CheckBetweenBounds(const Token& at, const FilterExpr& between) const {
    for (const Operand& operand : between.operands) {
      if (IsBoolLiteral(operand)) return IncorrectOperandType(at, "BETWEEN", operand);
    }
    const Operand& lower = between.operands[1];
    const Operand& upper = between.operands[2];
    // Key conditions compare the values only after timestamp normalisation (MakeKeyCondition):
    // "10:00+02:00" is before "09:00Z".
    if (lower.is_attribute || upper.is_attribute || lower.size || upper.size ||
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

  // begins_with(a, b) | contains(a, b) | attribute_type(a, type) | attribute_exists(path)
  // | attribute_not_exists(path)
  Status ParseFunction(std::unique_ptr<FilterExpr>* out) {
    const Token& name = Peek();
    const Function* function = FindFunction(name.source);
    if (!function) return UnknownFunction(name);
    auto condition = std::make_unique<FilterExpr>();
    if (name.source == "begins_with") {
      condition->kind = FilterExpr::Kind::kBeginsWith;
    } else if (name.source == "contains") {
      condition->kind = FilterExpr::Kind::kContains;
    } else if (name.source == "attribute_type") {
      condition->kind = FilterExpr::Kind::kAttributeType;
    } else {
      condition->kind = name.source == "attribute_exists" ? FilterExpr::Kind::kAttributeExists
                                                          : FilterExpr::Kind::kAttributeNotExists;
    }
    std::vector<Path> paths;
    if (Status s = ParseArguments(*function, &condition->operands, &paths); !s.ok()) return s;
    std::vector<Operand>& operands = condition->operands;
    if (operands.size() == 2) {
      if (Status s = CheckDistinct(name, name.source, paths[0], paths[1]); !s.ok()) return s;
    }
    switch (condition->kind) {
      case FilterExpr::Kind::kAttributeExists:
      case FilterExpr::Kind::kAttributeNotExists:
        if (!operands[0].is_attribute || operands[0].size) {
          return Error(name, "Operator or function requires a document path; operator or "
                             "function: " + std::string(name.source));
        }
        break;
      case FilterExpr::Kind::kBeginsWith:
        for (const Operand& operand : operands) {
          const std::optional<std::string_view> type = StaticType(operand);
          if (type && *type != "S") return IncorrectOperandType(name, name.source, operand);
        }
        break;
      case FilterExpr::Kind::kAttributeType:
        if (Status s = CheckTypeName(name, operands[1]); !s.ok()) return s;
        break;
      default:
        break;
    }
    // A condition function's result is no value to compare.
    if (!native() && AtOperator()) return MisusedFunction(name);
    *out = std::move(condition);
    return Status::OK();
  }

  // attribute_type's second operand: a string literal naming one of DynamoDB's types.
  Status CheckTypeName(const Token& at, const Operand& type) const {
    const std::string* name = type.size ? nullptr : std::get_if<std::string>(&type.literal);
    if (type.is_attribute || !name) return IncorrectOperandType(at, "attribute_type", type);
    if (std::find(std::begin(kTypeNames), std::end(kTypeNames), *name) != std::end(kTypeNames)) {
      return Status::OK();
    }
    if (native()) {
      return Error(at, "unknown attribute type '" + *name +
                           "' (the types are S, N, BOOL, NULL, B, SS, NS, BS, L and M)");
    }
    return Error(at, "Invalid attribute type name found; type: " + *name +
                         ", valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}");
  }

  // '(' operand { ',' operand } ')' after a function's name (the current token), which must
  // take as many. In DynamoDB any operand may be an argument, size() of something included
  // (but not inside size() itself, whose result has no size); natively the first is an
  // attribute and the others are values. `paths` gets each argument's path (empty if none).
  Status ParseArguments(const Function& function, std::vector<Operand>* args,
                        std::vector<Path>* paths) {
    const Token& name = Peek();
    Advance();  // the name
    Advance();  // '('
    while (true) {
      if (!native() && function.name == "size" && AtCall()) {
        const Token& inner = Peek();
        if (!FindFunction(inner.source)) return UnknownFunction(inner);
        if (inner.source != "size") return MisusedFunction(inner);
        return Error(name, "Incorrect operand type for operator or function; operator or "
                           "function: size, operand type: N");
      }
      args->emplace_back();
      paths->emplace_back();
      const Role role = args->size() == 1 ? Role::kAttribute : Role::kValue;
      if (Status s = ParseOperand(native() ? role : Role::kEither, &args->back(), &paths->back());
          !s.ok()) {
        return s;
      }
      if (Peek().kind != TokenKind::kComma) break;
      Advance();
    }
    if (Status s = Expect(TokenKind::kRightParen, "')'"); !s.ok()) return s;
    if (args->size() == function.operands) return Status::OK();
    if (native()) {
      return Error(name, "'" + std::string(function.name) + "' takes " +
                             std::to_string(function.operands) + (function.operands == 1 ? " operand" : " operands") +
                             ", not " + std::to_string(args->size()));
    }
    return Error(name, "Incorrect number of operands for operator or function; operator or "
                       "function: " + std::string(function.name) +
                       ", number of operands: " + std::to_string(args->size()));
  }

  // size(operand) as an operand, at its name.
  Status ParseSize(Operand* operand) {
    const Token& name = Peek();
    std::vector<Operand> args;
    std::vector<Path> paths;
    if (Status s = ParseArguments(*FindFunction("size"), &args, &paths); !s.ok()) return s;
    const std::optional<std::string_view> type = StaticType(args[0]);
    if (type && *type != "S") return IncorrectOperandType(name, "size", args[0]);
    *operand = std::move(args[0]);
    operand->size = true;
    return Status::OK();
  }

  // `path`, when given, gets the operand's document path if it is one, else is cleared.
  Status ParseOperand(Role role, Operand* operand, Path* path = nullptr) {
    Path ignored;
    if (!path) path = &ignored;
    path->clear();
    return native() ? ParseNativeOperand(role, operand) : ParseDynamoDbOperand(operand, path);
  }

  // An attribute is any word that is not a keyword or a literal; a value is a "string", a
  // number, true / false, or else a bare word taken as a string.
  Status ParseNativeOperand(Role role, Operand* operand) {
    const Token& at = Peek();
    if (role == Role::kSubject && at.source == "size" && AtCall()) return ParseSize(operand);
    if (role == Role::kAttribute || role == Role::kSubject) {
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

  // A document path, a :value or size(...). Literals are a syntax error, as in DynamoDB.
  Status ParseDynamoDbOperand(Operand* operand, Path* path) {
    const Token& at = Peek();
    if (at.kind != TokenKind::kWord || IsKeyword(at)) return SyntaxError(at, "an operand");
    const std::string_view word = at.source;
    if (AtCall()) {
      if (!FindFunction(word)) return UnknownFunction(at);
      if (word != "size") return MisusedFunction(at);
      return ParseSize(operand);
    }
    if (word[0] == ':') {
      if (!IsPlaceholder(word)) return SyntaxError(at, "an operand");
      const AttributeValue* value = Find(context_->values, word);
      if (!value) {
        return Error(at, "An expression attribute value used in expression is not defined; "
                         "attribute value: " + std::string(word));
      }
      operand->literal = *value;
      Advance();
      return Status::OK();
    }
    if (Status s = ParsePath(path); !s.ok()) return s;
    if (Status s = CheckNotKeyAttribute(at, (*path)[0].name); !s.ok()) return s;
    operand->is_attribute = true;
    operand->attribute = (*path)[0].name;
    operand->nested = path->size() > 1;
    return Status::OK();
  }

  // name { '.' name | '[' digits ']' }, where a name is an identifier or a #placeholder (whose
  // value is one name, dots and all). The lexer keeps '.' inside words, so "a.b.c" arrives as
  // one word and is split here; spaces around '.' and inside brackets are allowed, as DynamoDB
  // allows them.
  Status ParsePath(Path* path) {
    path->clear();
    bool want_name = true;  // at the start and after a '.'
    while (true) {
      const Token& at = Peek();
      if (at.kind == TokenKind::kWord && !IsKeyword(at) && (want_name || at.source[0] == '.')) {
        std::string_view word = at.source;
        const bool continued = !want_name;  // ".b" (or a lone ".") goes on from the path so far
        if (continued) word.remove_prefix(1);
        want_name = word.empty();
        for (std::size_t start = 0; !word.empty();) {
          const std::size_t dot = word.find('.', start);
          const std::string_view name = word.substr(start, dot == std::string_view::npos ? dot : dot - start);
          if (name.empty()) {
            // Only a trailing '.' may leave a name to the next word: "a. b".
            if (dot != std::string_view::npos || start == 0) return SyntaxError(at, "an operand");
            want_name = true;
            break;
          }
          if (Status s = AppendName(at, name, path); !s.ok()) return s;
          if (dot == std::string_view::npos) break;
          start = dot + 1;
        }
        Advance();
        continue;
      }
      if (want_name) return SyntaxError(at, "an operand");
      if (at.kind != TokenKind::kLeftBracket) break;
      Advance();
      const Token& index = Peek();
      if (index.kind != TokenKind::kWord || !std::ranges::all_of(index.source, IsDigit)) {
        return SyntaxError(index, "a list index");
      }
      const std::string_view digits = index.source;
      const std::size_t significant = digits.find_first_not_of('0');
      PathElement element;
      element.is_index = true;
      if (significant != std::string_view::npos) {
        if (digits.size() - significant > 10) return ListIndexOutOfRange(index);
        for (const char c : digits.substr(significant)) element.index = element.index * 10 + (c - '0');
        if (element.index > kMaxListIndex) return ListIndexOutOfRange(index);
      }
      path->push_back(std::move(element));
      Advance();
      if (Status s = Expect(TokenKind::kRightBracket, "']'"); !s.ok()) return s;
    }
    if (path->size() > kMaxPathLevels) {
      return Error(Peek(), "The document path has too many nesting levels; nesting levels: " +
                               std::to_string(path->size()));
    }
    return Status::OK();
  }

  Status ListIndexOutOfRange(const Token& index) const {
    return Error(index, "List index is not within the allowable range; index: [" +
                            std::string(index.source) + "]");
  }

  // One name of a path, as written in the word `at`.
  Status AppendName(const Token& at, std::string_view name, Path* path) const {
    PathElement element;
    if (name[0] == '#') {
      if (!IsPlaceholder(name)) return SyntaxError(at, "an operand");
      const std::string* alias = Find(context_->names, name);
      if (!alias) {
        return Error(at, "An expression attribute name used in the document path is not "
                         "defined; attribute name: " + std::string(name));
      }
      element.name = *alias;
    } else if (!IsIdentifier(name)) {
      return SyntaxError(at, "an operand");
    } else if (IsReservedWord(name)) {
      return Error(at, "Attribute name is a reserved keyword; reserved keyword: " + std::string(name));
    } else {
      element.name = std::string(name);
    }
    path->push_back(std::move(element));
    return Status::OK();
  }

  bool IsKeyAttribute(std::string_view name) const {
    return name == context_->hash_key || name == context_->range_key;
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

  // DynamoDB refuses an operator or function whose first operand is also a later one: a = a.
  Status CheckDistinct(const Token& at, std::string_view operator_name, const Path& first,
                       const Path& other) const {
    if (native() || first.empty() || first != other) return Status::OK();
    return Error(at, "The first operand must be distinct from the remaining operands for this "
                     "operator or function; operator: " + std::string(operator_name) +
                     ", first operand: " + PathText(first));
  }

  // Two paths of one projection, `earlier` listed first: one containing the other overlaps; one
  // naming a map key where the other has a list index conflicts. Keeps the first of each.
  static void CompareProjected(const Path& earlier, const Path& path, std::string* overlap,
                               std::string* conflict) {
    const std::string paths = "; must remove or rewrite one of these paths; path one: " +
                              PathText(earlier) + ", path two: " + PathText(path);
    for (std::size_t i = 0; i < earlier.size() && i < path.size(); ++i) {
      if (earlier[i].is_index != path[i].is_index) {
        if (conflict->empty()) *conflict = "Two document paths conflict with each other" + paths;
        return;
      }
      if (earlier[i] != path[i]) return;
    }
    *overlap = "Two document paths overlap with each other" + paths;
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

  Status UnknownFunction(const Token& name) const {
    if (native()) return Error(name, "unknown function '" + std::string(name.source) + "'");
    return Error(name, "Invalid function name; function: " + std::string(name.source));
  }

  // A condition function used as a value (contains(a, :b) = :c), or size() as a condition.
  Status MisusedFunction(const Token& name) const {
    return Error(name, "The function is not allowed to be used this way in an expression; "
                       "function: " + std::string(name.source));
  }

  Status IncorrectOperandType(const Token& at, std::string_view operator_name,
                              const Operand& operand) const {
    if (native()) {
      const std::string_view type = TypeName(operand.literal);
      return Error(at, "'" + std::string(operator_name) + "' cannot take the " +
                           (type == "BOOL" ? "boolean " : type == "N" ? "number " : "string ") +
                           LiteralText(operand.literal));
    }
    return Error(at, "Incorrect operand type for operator or function; operator or function: " +
                         std::string(operator_name) +
                         ", operand type: " + std::string(StaticType(operand).value_or(kAnyType)));
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
