// TextBuffer (api/native/request.h), the append buffer of format=columns pages, and Columns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// CopyText and SameText take their short texts as words: every length, every differing byte.
TEST(TextBufferTest, ShortTextsCopiedAndComparedWhole) {
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string text(n, 'a');
    for (std::size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + i % 26);
    std::string out(n + 8, '#');
    EXPECT_EQ(CopyText(text, out.data()), out.data() + n) << n;
    EXPECT_EQ(out, text + std::string(8, '#')) << n;
    EXPECT_TRUE(SameText(text, std::string(text))) << n;
    EXPECT_FALSE(SameText(text, text + "a")) << n;
    for (std::size_t i = 0; i < n; ++i) {
      std::string other = text;
      other[i] = 'Z';
      EXPECT_FALSE(SameText(text, other)) << n << " " << i;
    }
  }
}

// A string value is written as it is when no byte of it needs escaping, and escaped otherwise,
// whatever its length and wherever the byte that needs it: the page is JSON holding the values.
TEST(TextBufferTest, ColumnsEscapeExactlyTheStringsThatNeedIt) {
  const std::vector<char> bad{'"', '\\', '\x01', '\x1f', '\n', '\x80', '\xc3'};
  for (std::size_t n = 0; n <= 40; ++n) {
    std::vector<std::string> values{std::string(n, 'x')};
    for (std::size_t i = 0; i < n; ++i) {
      for (char c : bad) {
        std::string v(n, 'x');
        v[i] = c;
        if (c == '\xc3') v[i] = i + 1 < n ? (v[i + 1] = '\xa9', '\xc3') : '\x7f';  // é, or DEL at the end
        values.push_back(v);
      }
    }
    Columns columns(false, values.size());
    std::vector<storage::AttributeView> row(1);
    for (const std::string& v : values) {
      row[0] = {"s", std::string_view(v)};
      columns.AddRow(row);
    }
    std::string body = "{";
    columns.AppendTo(&body);
    body += "}";
    const nlohmann::json page = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(page.is_discarded()) << n << ": " << body;
    ASSERT_EQ(page["columns"]["s"].size(), values.size()) << n;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i].find('\x80') != std::string::npos) continue;  // not UTF-8: replaced, not kept
      EXPECT_EQ(page["columns"]["s"][i].get<std::string>(), values[i]) << n << " " << i;
    }
    const std::string plain = "\"" + std::string(n, 'x') + "\"";
    EXPECT_EQ(body.substr(std::string("{\"columns\":{\"s\":[").size(), plain.size()), plain) << n;
  }
}

// Room reserved for the rows expected changes nothing in what is rendered: columns that appear
// late, rows that lack a column, more rows than expected.
TEST(TextBufferTest, ColumnsReservedRenderTheSame) {
  const std::string pad(20, 'p');
  auto render = [&](Columns columns) {
    for (int i = 0; i < 3000; ++i) {
      std::vector<storage::AttributeView> row;
      row.push_back({"temperature", storage::NumberView::OfCanonical(i % 2 ? "39.9" : "-0.125")});
      if (i % 3 != 0) row.push_back({"pad", std::string_view(pad)});
      if (i >= 1000) row.push_back({"late", i % 2 == 0});
      columns.AddRow(row);
    }
    std::string body;
    columns.AppendTo(&body);
    return body;
  };
  const std::string want = render(Columns());
  EXPECT_EQ(render(Columns(false, 10)), want);
  EXPECT_EQ(render(Columns(false, 3000)), want);
  EXPECT_EQ(render(Columns(false, 10000)), want);
}

}  // namespace
}  // namespace readingsd::api::native
