// DynamoDB's reserved words: a bare attribute name in an expression must not be one of them
// (an #alias must be used instead), so the DynamoDB-compatible API rejects them the same way.
#pragma once

#include <string_view>

namespace readingsd::expr::internal {

// Case-insensitive, as in DynamoDB: "status", "Status" and "STATUS" are all reserved.
bool IsReservedWord(std::string_view word);

}  // namespace readingsd::expr::internal
