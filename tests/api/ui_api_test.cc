// GET /ui/: the page's embedded files, served without credentials (they hold no data) and with
// headers that forbid inline script and content sniffing; the API behind it keeps its auth.
#include <gtest/gtest.h>

#include "tests/api/served.h"

namespace readingsd::test {
namespace {

class UiTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    ServeOptions options;
    options.api.bearer_tokens = {"secret"};
    StartServer(options);
  }
};

TEST_F(UiTest, ServesThePageWithoutCredentialsAndWithStrictHeaders) {
  const HttpResult page = Get(port(), "/ui/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"app.js\""), std::string::npos);
  const std::string csp = page.Header("content-security-policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(page.Header("x-content-type-options"), "nosniff");
  EXPECT_EQ(Get(port(), "/ui/index.html").body, page.body);
}

TEST_F(UiTest, EmbedsTheScriptsAndDebiansDygraphs) {
  const HttpResult app = Get(port(), "/ui/app.js");
  ASSERT_EQ(app.status, 200);
  EXPECT_EQ(app.Header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_NE(app.body.find("textContent"), std::string::npos);
  const HttpResult chart = Get(port(), "/ui/dygraph.js");
  ASSERT_EQ(chart.status, 200);
  EXPECT_NE(chart.body.find("Dygraph"), std::string::npos);
  EXPECT_EQ(Get(port(), "/ui/style.css").Header("content-type"), "text/css; charset=utf-8");
}

TEST_F(UiTest, AnythingElseStillNeedsCredentials) {
  EXPECT_EQ(Get(port(), "/ui/secret.txt").status, 401);
  EXPECT_EQ(Get(port(), "/ui/../v1/devices").status, 401);
  EXPECT_EQ(Get(port(), "/v1/devices").status, 401);
  EXPECT_EQ(Get(port(), "/v1/devices", {{"Authorization", "Bearer secret"}}).status, 200);
}

}  // namespace
}  // namespace readingsd::test
