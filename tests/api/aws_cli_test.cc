// The real AWS CLI against the DynamoDB-compatible endpoint: what users will actually run.
// Each `aws` start costs about a second, so the cases share few invocations.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/served.h"

extern char** environ;

namespace readingsd::test {
namespace {

using nlohmann::json;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
  json Json() const { return json::parse(out); }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Debian's awscli first (the one the project documents), then whatever `aws` is on PATH.
std::string FindAws() {
  if (::access("/usr/bin/aws", X_OK) == 0) return "/usr/bin/aws";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/aws").c_str(), X_OK) == 0) return dir + "/aws";
  }
  return "";
}

class AwsCliTest : public HttpServerTest {
 protected:
  void SetUp() override {
    aws_ = FindAws();
    if (aws_.empty()) GTEST_SKIP() << "the AWS CLI (aws) is not installed; scripts/setup installs it (awscli)";
    HttpServerTest::SetUp();
    StartServer();
    std::filesystem::create_directories(dir_.File("home"));
  }

  // `aws dynamodb <args> --endpoint-url http://127.0.0.1:<port> --output json` with dummy
  // credentials and no config of the machine's, so nothing but this server is ever asked.
  CliResult Aws(const std::vector<std::string>& args, const std::string& access_key_id = "dummy-key-id",
                uint16_t server_port = 0) {
    std::vector<std::string> argv = {aws_, "dynamodb"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* extra : {"--endpoint-url", "", "--output", "json"}) argv.emplace_back(extra);
    argv[argv.size() - 3] = "http://127.0.0.1:" + std::to_string(server_port ? server_port : port());

    const char* path = std::getenv("PATH");
    std::vector<std::string> env = {
        "PATH=" + std::string(path ? path : "/usr/bin:/bin"),
        "HOME=" + dir_.File("home"),
        "LANG=C.UTF-8",
        "AWS_ACCESS_KEY_ID=" + access_key_id,
        "AWS_SECRET_ACCESS_KEY=dummy-secret",
        "AWS_DEFAULT_REGION=us-east-1",
        "AWS_PAGER=",
        "AWS_EC2_METADATA_DISABLED=true",
        "AWS_CONFIG_FILE=" + dir_.File("no-config"),
        "AWS_SHARED_CREDENTIALS_FILE=" + dir_.File("no-credentials"),
        "AWS_MAX_ATTEMPTS=1",
    };
    std::vector<char*> c_argv, c_env;
    for (std::string& a : argv) c_argv.push_back(a.data());
    for (std::string& e : env) c_env.push_back(e.data());
    c_argv.push_back(nullptr);
    c_env.push_back(nullptr);

    const std::string out_path = dir_.File("aws.out"), err_path = dir_.File("aws.err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, aws_.c_str(), &actions, nullptr, c_argv.data(), c_env.data());
    posix_spawn_file_actions_destroy(&actions);
    CliResult result;
    if (spawned != 0) {
      ADD_FAILURE() << "cannot start " << aws_ << ": " << std::strerror(spawned);
      return result;
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "aws did not finish within 30 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = ReadFile(out_path);
    result.err = ReadFile(err_path);
    return result;
  }

  // A successful invocation's JSON output.
  json AwsJson(const std::vector<std::string>& args) {
    CliResult result = Aws(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.exit_code == 0 ? result.Json() : json::object();
  }

  static std::string Values(const std::string& device, const std::string& a, const std::string& b) {
    json values = {{":d", {{"S", device}}}, {":a", {{"S", a}}}};
    if (!b.empty()) values[":b"] = {{"S", b}};
    return values.dump();
  }

  static std::vector<std::string> SortKeys(const json& output) {
    std::vector<std::string> keys;
    for (const json& item : output["Items"]) keys.push_back(item["readingTs"]["S"]);
    return keys;
  }

  static std::vector<std::string> Minutes(int first, int last) {
    std::vector<std::string> keys;
    for (int i = first; first <= last ? i <= last : i >= last; i += first <= last ? 1 : -1) {
      keys.push_back(SampleSortKey(i));
    }
    return keys;
  }

  // Runs the query with --max-items and --starting-token until NextToken is absent.
  std::vector<std::string> AllPages(std::vector<std::string> args, int* invocations) {
    std::vector<std::string> keys;
    std::string token;
    for (*invocations = 0; *invocations < 10;) {
      std::vector<std::string> call = args;
      if (!token.empty()) call.insert(call.end(), {"--starting-token", token});
      json output = AwsJson(call);
      ++*invocations;
      for (const std::string& key : SortKeys(output)) keys.push_back(key);
      if (!output.contains("NextToken")) break;
      token = output["NextToken"];
    }
    return keys;
  }

  std::string aws_;
};

const std::vector<std::string> kBetween = {"query",
                                           "--table-name",
                                           "readings",
                                           "--key-condition-expression",
                                           "deviceId = :d AND readingTs BETWEEN :a AND :b",
                                           "--expression-attribute-values"};

std::vector<std::string> With(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

TEST_F(AwsCliTest, QueryBetweenReturnsExactlyTheStoredReadings) {
  json output = AwsJson(With(kBetween, {Values("a1", "2026-06-23T08:10:00Z", "2026-06-23T10:20:00+02:00")}));
  EXPECT_EQ(SortKeys(output), Minutes(10, 20));
  EXPECT_EQ(output["Count"], 11);
  EXPECT_EQ(output["Items"][0],
            json::parse(R"({"deviceId":{"S":"a1"},"readingTs":{"S":"2026-06-23T08:10:00.000000000Z"},
                            "temperature":{"N":"25"},"status":{"S":"ok"},"door":{"BOOL":false}})"));
}

TEST_F(AwsCliTest, BeginsWithAndNewestFirst) {
  json prefix = AwsJson({"query", "--table-name", "readings", "--key-condition-expression",
                         "deviceId = :d AND begins_with(readingTs, :a)", "--expression-attribute-values",
                         Values("a1", "2026-06-23T08:4", "")});
  EXPECT_EQ(SortKeys(prefix), Minutes(40, 49));

  // The whole partition, newest first; the CLI follows LastEvaluatedKey by itself.
  json newest = AwsJson({"query", "--table-name", "readings", "--key-condition-expression", "deviceId = :d",
                         "--expression-attribute-values", R"({":d":{"S":"a1"}})", "--no-scan-index-forward",
                         "--page-size", "25"});
  EXPECT_EQ(SortKeys(newest), Minutes(59, 0));
}

TEST_F(AwsCliTest, PagingWithMaxItemsAndStartingTokenReturnsEveryItemOnce) {
  const std::vector<std::string> query = With(
      kBetween,
      {Values("a1", "2026-06-23T08:00:00Z", "2026-06-23T08:19:00Z"), "--max-items", "8", "--page-size", "5"});
  int invocations = 0;
  EXPECT_EQ(AllPages(query, &invocations), Minutes(0, 19));
  EXPECT_EQ(invocations, 3);
  EXPECT_EQ(AllPages(With(query, {"--no-scan-index-forward"}), &invocations), Minutes(19, 0));
  EXPECT_EQ(invocations, 3);
}

TEST_F(AwsCliTest, GetItemDescribeTableAndListTables) {
  json item = AwsJson({"get-item", "--table-name", "readings", "--key",
                       R"({"deviceId":{"S":"b2"},"readingTs":{"S":"2026-06-24T00:00:00.000000000Z"}})"});
  EXPECT_EQ(item["Item"]["humidity"], json::parse(R"({"N":"40"})"));

  json table = AwsJson({"describe-table", "--table-name", "readings"})["Table"];
  EXPECT_EQ(table["TableName"], "readings");
  EXPECT_EQ(table["TableStatus"], "ACTIVE");
  EXPECT_EQ(table["KeySchema"][0]["AttributeName"], "deviceId");
  EXPECT_EQ(table["KeySchema"][1]["KeyType"], "RANGE");

  EXPECT_EQ(AwsJson({"list-tables"})["TableNames"], json::parse(R"(["readings"])"));
}

// `aws dynamodb scan` exports the table (the CLI follows LastEvaluatedKey itself), and the four
// segments of a parallel scan are that export, each item once.
TEST_F(AwsCliTest, ScanAndItsSegmentsReadEveryItemOnce) {
  auto keys_of = [](const json& output) {
    std::vector<std::string> keys;
    for (const json& item : output["Items"]) {
      keys.push_back(item["deviceId"]["S"].get<std::string>() + "/" + item["readingTs"]["S"].get<std::string>());
    }
    return keys;
  };
  json all = AwsJson({"scan", "--table-name", "readings", "--page-size", "9"});
  std::vector<std::string> keys = keys_of(all);
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(kA1Count + 3 + 1 + 3));
  EXPECT_EQ(all["Count"], keys.size());
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());

  std::vector<std::string> segmented;
  for (int segment = 0; segment < 4; ++segment) {
    json part = AwsJson({"scan", "--table-name", "readings", "--total-segments", "4", "--segment",
                         std::to_string(segment), "--page-size", "7"});
    for (const std::string& key : keys_of(part)) segmented.push_back(key);
  }
  std::sort(segmented.begin(), segmented.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(segmented, keys);

  json count = AwsJson({"scan", "--table-name", "readings", "--select", "COUNT", "--filter-expression",
                        "deviceId = :d", "--expression-attribute-values", R"({":d":{"S":"edge"}})",
                        "--return-consumed-capacity", "TOTAL"});
  EXPECT_EQ(count["Count"], 3);
  EXPECT_EQ(count["ConsumedCapacity"]["TableName"], "readings");
}

TEST_F(AwsCliTest, BatchGetItem) {
  json output = AwsJson({"batch-get-item", "--request-items",
                         R"({"readings":{"Keys":[{"deviceId":{"S":"b2"},"readingTs":{"S":"2026-06-24T00:00:00Z"}},
                                                 {"deviceId":{"S":"a10"},"readingTs":{"S":"2026-06-23T08:01:00Z"}}],
                                         "ProjectionExpression":"deviceId, humidity"}})"});
  EXPECT_EQ(output["Responses"]["readings"],
            json::parse(R"([{"deviceId":{"S":"b2"},"humidity":{"N":"40"}},{"deviceId":{"S":"a10"}}])"));
}

TEST_F(AwsCliTest, BadExpressionIsAValidationException) {
  CliResult result = Aws({"query", "--table-name", "readings", "--key-condition-expression",
                          "deviceId = :d AND readingTs BETWEEN :a", "--expression-attribute-values",
                          Values("a1", "2026-06-23T08:00:00Z", "")});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("ValidationException"), std::string::npos) << result.err;
}

// The fixture's readings under two declared indexes: a1 (60 readings at 08:MM, temperature
// 20 + 0.5 i, status ok/warn) and a10 (3 readings at 08:00..02, temperature 99).
class AwsCliIndexTest : public AwsCliTest {
 protected:
  void SetUp() override {
    indexes_ = HotAndStatusIndexes(2);
    AwsCliTest::SetUp();
  }

  static std::vector<std::string> Temperatures(const json& output) {
    std::vector<std::string> out;
    for (const json& item : output["Items"]) out.push_back(item["temperature"]["N"]);
    return out;
  }
};

const std::vector<std::string> kHot = {"query", "--table-name", "readings", "--index-name", "hot_by_hour",
                                       "--key-condition-expression", "readingHour = :h AND temperature > :t",
                                       "--expression-attribute-values"};

TEST_F(AwsCliIndexTest, QueryAThresholdAcrossTheFleetInOneHour) {
  json output = AwsJson(With(kHot, {R"({":h":{"S":"2026-06-23T08"},":t":{"N":"45"}})"}));
  // a1 from minute 51 (45.5) to 59 (49.5), then a10's three 99s: every shard, merged in order.
  EXPECT_EQ(Temperatures(output), (std::vector<std::string>{"45.5", "46", "46.5", "47", "47.5", "48", "48.5", "49",
                                                            "49.5", "99", "99", "99"}));
  EXPECT_EQ(output["Count"], 12);
  EXPECT_EQ(output["Items"][0]["deviceId"]["S"], "a1");
  EXPECT_EQ(output["Items"][0]["readingTs"]["S"], SampleSortKey(51));
  // readingHour is no stored attribute: the item carries the index partition it was found in.
  EXPECT_TRUE(output["Items"][0]["readingHour"]["S"].get<std::string>().starts_with("2026-06-23T08#"));

  // The CLI follows LastEvaluatedKey by itself: pages of 5, highest first.
  json paged = AwsJson(With(kHot, {R"({":h":{"S":"2026-06-23T08"},":t":{"N":"45"}})", "--page-size", "5",
                                   "--no-scan-index-forward"}));
  std::vector<std::string> descending = Temperatures(output);
  std::reverse(descending.begin(), descending.end());
  EXPECT_EQ(Temperatures(paged), descending);

  // One shard, named with its suffix as DynamoDB would read it: the two shards are the whole.
  std::size_t in_shards = 0;
  for (const char* shard : {"2026-06-23T08#0", "2026-06-23T08#1"}) {
    json one = AwsJson(With(kHot, {json{{":h", {{"S", shard}}}, {":t", {{"N", "45"}}}}.dump()}));
    for (const json& item : one["Items"]) EXPECT_EQ(item["readingHour"]["S"], shard);
    in_shards += one["Items"].size();
  }
  EXPECT_EQ(in_shards, 12u);
}

TEST_F(AwsCliIndexTest, AStringPartitionSortedByTimeAndDescribeTable) {
  json warn = AwsJson({"query", "--table-name", "readings", "--index-name", "by_status", "--key-condition-expression",
                       "#s = :s AND readingTs BETWEEN :a AND :b", "--expression-attribute-names", R"({"#s":"status"})",
                       "--expression-attribute-values",
                       R"({":s":{"S":"warn"},":a":{"S":"2026-06-23T08:10:00Z"},":b":{"S":"2026-06-23T08:20:00Z"}})"});
  EXPECT_EQ(SortKeys(warn), (std::vector<std::string>{SampleSortKey(11), SampleSortKey(13), SampleSortKey(15),
                                                      SampleSortKey(17), SampleSortKey(19)}));

  json table = AwsJson({"describe-table", "--table-name", "readings"})["Table"];
  ASSERT_EQ(table["GlobalSecondaryIndexes"].size(), 2u);
  const json& hot = table["GlobalSecondaryIndexes"][0];
  EXPECT_EQ(hot["IndexName"], "hot_by_hour");
  EXPECT_EQ(hot["IndexStatus"], "ACTIVE");
  EXPECT_EQ(hot["KeySchema"], json::parse(R"([{"AttributeName":"readingHour","KeyType":"HASH"},
                                               {"AttributeName":"temperature","KeyType":"RANGE"}])"));
  EXPECT_EQ(hot["Projection"]["ProjectionType"], "ALL");
  bool temperature_is_n = false;
  for (const json& d : table["AttributeDefinitions"]) {
    temperature_is_n |= d["AttributeName"] == "temperature" && d["AttributeType"] == "N";
  }
  EXPECT_TRUE(temperature_is_n);
}

TEST_F(AwsCliIndexTest, UnknownIndexAndNonKeyAttributeAreValidationExceptions) {
  CliResult unknown = Aws({"query", "--table-name", "readings", "--index-name", "nope", "--key-condition-expression",
                           "readingHour = :h", "--expression-attribute-values", R"({":h":{"S":"2026-06-23T08"}})"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("ValidationException"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("The table does not have the specified index: nope"), std::string::npos) << unknown.err;

  CliResult non_key = Aws({"query", "--table-name", "readings", "--index-name", "hot_by_hour",
                           "--key-condition-expression", "readingHour = :h AND humidity > :t",
                           "--expression-attribute-values", R"({":h":{"S":"2026-06-23T08"},":t":{"N":"1"}})"});
  EXPECT_NE(non_key.exit_code, 0);
  EXPECT_NE(non_key.err.find("ValidationException"), std::string::npos) << non_key.err;
  EXPECT_NE(non_key.err.find("Query key condition not supported"), std::string::npos) << non_key.err;

  CliResult no_partition = Aws({"query", "--table-name", "readings", "--index-name", "hot_by_hour",
                                "--key-condition-expression", "deviceId = :d", "--expression-attribute-values",
                                R"({":d":{"S":"a1"}})"});
  EXPECT_NE(no_partition.err.find("Query condition missed key schema element: readingHour"), std::string::npos)
      << no_partition.err;
}

TEST_F(AwsCliTest, WithBearerTokensTheAccessKeyIdIsTheToken) {
  ServeOptions options;
  options.server.port = 0;
  options.api.bearer_tokens = {"reader-token"};
  Served guarded;
  ASSERT_TRUE(Serve(store_.get(), options, {}, &guarded).ok());
  CliResult allowed = Aws({"list-tables"}, "reader-token", guarded.server->port());
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  CliResult denied = Aws({"list-tables"}, "someone-else", guarded.server->port());
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.err.find("UnrecognizedClientException"), std::string::npos) << denied.err;
}

}  // namespace
}  // namespace readingsd::test
