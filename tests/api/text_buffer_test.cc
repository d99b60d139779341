// TextBuffer (api/native/request.h), the append buffer of format=columns pages.
#include <gtest/gtest.h>

#include <string>

#include "api/native/request.h"

namespace readingsd::api::native {
namespace {

// Every way of appending, across many growths (from empty, by pieces larger than the buffer, after
// a reserve), keeps every byte appended before, as a std::string fed the same pieces does.
TEST(TextBufferTest, GrowingKeepsWhatWasAppended) {
  TextBuffer buffer;
  std::string want;
  EXPECT_EQ(buffer.view(), "");
  buffer.append("");
  EXPECT_EQ(buffer.size(), 0u);
  for (int i = 0; i < 2000; ++i) {
    const std::string piece(static_cast<std::size_t>(i % 7 == 0 ? 300 : i % 5), static_cast<char>('a' + i % 26));
    switch (i % 4) {
      case 0:
        buffer.append(piece);
        want += piece;
        break;
      case 1:
        buffer.push_back('#');
        want += '#';
        break;
      case 2:
        buffer.AppendQuotedItem(piece, i % 3 == 0);
        want += (i % 3 == 0 ? "" : ",") + ("\"" + piece + "\"");
        break;
      case 3: {  // room for more than is written: only the committed bytes count
        char* p = buffer.Room(piece.size() + 100);
        piece.copy(p, piece.size());
        buffer.Commit(p + piece.size());
        want += piece;
        break;
      }
    }
    if (i == 1000) buffer.reserve(buffer.size() + 100000);
    ASSERT_EQ(buffer.size(), want.size()) << i;
  }
  EXPECT_EQ(buffer.view(), want);
  buffer.reserve(0);  // never shrinks
  EXPECT_EQ(buffer.view(), want);
}

}  // namespace
}  // namespace readingsd::api::native
