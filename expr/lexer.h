// Tokens of both expression languages, the native API's ?filter= and DynamoDB's expressions: one
// lexer, so the two can never disagree about where a word or an operator ends.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "query/filter.h"

namespace readingsd::expr::internal {

struct Token {
  enum class Kind {
    // A run of bytes up to whitespace, punctuation or '"': attribute names, keywords, numbers,
    // bare strings, #name and :value placeholders, document paths such as a.b.
    kWord,
    kString,      // "..." with \" and \\ escapes; `unescaped` holds the contents
    kComparator,  // = <> != < <= > >=
    kLeftParen,
    kRightParen,
    kComma,
    kLeftBracket,   // [ and ] of a document path's list index, a[0]
    kRightBracket,
    kInvalid,  // an unterminated string, a bad escape, a lone '!': `problem` says which
    kEnd,
  };

  Kind kind = Kind::kEnd;
  std::size_t offset = 0;   // of the token's first byte in the expression
  std::string_view source;  // the token as written (a string with its quotes); empty for kEnd
  query::CompareOp op = query::CompareOp::kEq;  // kComparator
  std::string unescaped;          // kString
  std::string_view problem;       // kInvalid
};

// Always ends with one kEnd token. Lexing stops at the first kInvalid token, so that token, when
// present, is the one just before kEnd.
std::vector<Token> Tokenize(std::string_view expression);

}  // namespace readingsd::expr::internal
