#include "expr/lexer.h"

#include <utility>

namespace readingsd::expr::internal {
namespace {

using query::CompareOp;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Bytes that end a word. ':' '#' '.' '-' '+' are word bytes: they occur inside placeholders,
// document paths, numbers and ISO-8601 timestamps.
bool EndsWord(char c) {
  switch (c) {
    case '(': case ')': case ',': case '[': case ']': case '=': case '<': case '>': case '!':
    case '"':
      return true;
    default:
      return IsSpace(c);
  }
}

// Reads the comparator starting at text[pos] (longest match); returns its length, 0 if none.
std::size_t MatchComparator(std::string_view text, std::size_t pos, CompareOp* op) {
  const std::string_view rest = text.substr(pos);
  if (rest.starts_with("<>") || rest.starts_with("!=")) { *op = CompareOp::kNe; return 2; }
  if (rest.starts_with("<=")) { *op = CompareOp::kLe; return 2; }
  if (rest.starts_with(">=")) { *op = CompareOp::kGe; return 2; }
  if (rest.starts_with("<")) { *op = CompareOp::kLt; return 1; }
  if (rest.starts_with(">")) { *op = CompareOp::kGt; return 1; }
  if (rest.starts_with("=")) { *op = CompareOp::kEq; return 1; }
  return 0;
}

// Lexes the string whose opening quote is at text[pos]. On error `token` becomes kInvalid.
void LexString(std::string_view text, std::size_t pos, Token* token) {
  std::size_t i = pos + 1;
  for (; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] != '\\') {
      token->unescaped.push_back(text[i]);
      continue;
    }
    if (i + 1 == text.size()) break;  // a trailing backslash: unterminated
    const char escaped = text[i + 1];
    if (escaped != '"' && escaped != '\\') {
      token->kind = Token::Kind::kInvalid;
      token->source = text.substr(i, 2);
      token->offset = i;
      token->problem = "invalid escape in string (only \\\" and \\\\ are allowed)";
      return;
    }
    token->unescaped.push_back(escaped);
    ++i;
  }
  if (i == text.size()) {
    token->kind = Token::Kind::kInvalid;
    token->source = text.substr(pos);
    token->problem = "unterminated string";
    return;
  }
  token->kind = Token::Kind::kString;
  token->source = text.substr(pos, i + 1 - pos);
}

Token::Kind PunctuationKind(char c) {
  switch (c) {
    case '(': return Token::Kind::kLeftParen;
    case ')': return Token::Kind::kRightParen;
    case ',': return Token::Kind::kComma;
    case '[': return Token::Kind::kLeftBracket;
    case ']': return Token::Kind::kRightBracket;
    default: return Token::Kind::kInvalid;
  }
}

}  // namespace

std::vector<Token> Tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t pos = 0;
  while (true) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    Token token;
    token.offset = pos;
    if (pos == text.size()) {
      tokens.push_back(std::move(token));  // kEnd
      return tokens;
    }
    const char c = text[pos];
    std::size_t length = 0;
    if (c == '"') {
      LexString(text, pos, &token);
      length = token.source.size();
    } else if ((length = MatchComparator(text, pos, &token.op)) > 0) {
      token.kind = Token::Kind::kComparator;
      token.source = text.substr(pos, length);
    } else if (EndsWord(c)) {
      // Punctuation; of the word-ending bytes only '!' can get here without a meaning.
      length = 1;
      token.kind = PunctuationKind(c);
      token.source = text.substr(pos, 1);
      if (token.kind == Token::Kind::kInvalid) token.problem = "lone '!' (not-equal is <> or !=)";
    } else {
      while (pos + length < text.size() && !EndsWord(text[pos + length])) ++length;
      token.kind = Token::Kind::kWord;
      token.source = text.substr(pos, length);
    }
    const bool invalid = token.kind == Token::Kind::kInvalid;
    tokens.push_back(std::move(token));
    if (invalid) {
      Token end;
      end.offset = text.size();
      tokens.push_back(std::move(end));
      return tokens;
    }
    pos += length;
  }
}

}  // namespace readingsd::expr::internal
