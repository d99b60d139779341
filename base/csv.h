// CSV fields as RFC 4180 writes them: the readings API's format=csv and `readingsd query --csv`.
#pragma once

#include <string>
#include <string_view>

namespace readingsd {

// Appends `text` as one field: as it is, or quoted with its quotes doubled when it holds a comma,
// a quote or a line break.
void AppendCsvField(std::string_view text, std::string* out);

}  // namespace readingsd
