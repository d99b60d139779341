// The node map's plain parts: a node's URL and the partition ranges a merged listing's parts
// carry (cluster/node_map.h).
#include "cluster/node_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace readingsd::cluster {
namespace {

TEST(NodeUrlTest, IsHttpHostAndPort) {
  std::string host, port;
  ASSERT_TRUE(ParseNodeUrl("http://10.0.0.2:8080", &host, &port).ok());
  EXPECT_EQ(host, "10.0.0.2");
  EXPECT_EQ(port, "8080");
  ASSERT_TRUE(ParseNodeUrl("http://[::1]:9/", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, "9");
  for (const char* bad : {"https://h:1", "h:1", "http://h", "http://h:0", "http://h:1/v1", "http://:1", ""}) {
    EXPECT_EQ(ParseNodeUrl(bad, &host, &port).message(),
              std::string("must be http://host:port (e.g. \"http://10.0.0.2:8080\"), got \"") + bad + "\"");
  }
}

TEST(PartitionRangesTest, RunsBecomeRangesAndReadBack) {
  EXPECT_EQ(PartitionRanges({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(PartitionRanges({5}), "5");
  std::vector<uint32_t> back;
  ASSERT_TRUE(ParsePartitionRanges("0-3,7,9-10", 16, &back).ok());
  EXPECT_EQ(back, (std::vector<uint32_t>{0, 1, 2, 3, 7, 9, 10}));
  EXPECT_FALSE(ParsePartitionRanges("", 16, &back).ok());  // no partition is not every partition
  EXPECT_FALSE(ParsePartitionRanges("0-16", 16, &back).ok());
  EXPECT_FALSE(ParsePartitionRanges("1,,2", 16, &back).ok());
}

TEST(NodeMapTest, OwnsAllOnlyWithEveryPartition) {
  NodeMap map{.partitions = 4, .nodes = {{"a", "h", "1", {0, 1, 2, 3}}, {"b", "h", "2", {2, 3}}}, .self = 0};
  EXPECT_TRUE(map.OwnsAll());
  EXPECT_TRUE(map.nodes[1].Owns(2));
  EXPECT_FALSE(map.nodes[1].Owns(1));
  map.self = 1;
  EXPECT_FALSE(map.OwnsAll());
}

}  // namespace
}  // namespace readingsd::cluster
