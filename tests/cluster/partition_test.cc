// PartitionOf is FNV-1a 32 modulo P (that it is NATS' own mapping, nats_test checks against a
// real nats-server), and the partition lists a node's config names.
#include "cluster/partition.h"

#include <gtest/gtest.h>

namespace readingsd::cluster {
namespace {

TEST(PartitionOfTest, IsFnv1a32ModuloTheCount) {
  // FNV-1a 32-bit reference values (Go's hash/fnv New32a gives the same).
  constexpr uint32_t kMax = 0xffffffffu;
  EXPECT_EQ(PartitionOf("", kMax), 0x811c9dc5u % kMax);
  EXPECT_EQ(PartitionOf("a", kMax), 0xe40c292cu % kMax);
  EXPECT_EQ(PartitionOf("foobar", kMax), 0xbf9cf968u % kMax);
  EXPECT_EQ(PartitionOf("foobar", 16), 0xbf9cf968u % 16);
  EXPECT_EQ(PartitionOf("anything", 1), 0u);
}

TEST(ParsePartitionListTest, ReadsEntriesAndRanges) {
  std::vector<uint32_t> owned;
  ASSERT_TRUE(ParsePartitionList({"5", "0-2", "2-3"}, 8, &owned).ok());
  EXPECT_EQ(owned, (std::vector<uint32_t>{0, 1, 2, 3, 5}));
  ASSERT_TRUE(ParsePartitionList({}, 3, &owned).ok());
  EXPECT_EQ(owned, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(ParsePartitionListTest, RefusesWhatIsNotAPartition) {
  std::vector<uint32_t> owned;
  for (const char* bad : {"8", "3-1", "", "-1", "1-", "a", "1-9", "0x1", " 1"}) {
    Status s = ParsePartitionList({bad}, 8, &owned);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find(std::string("\"") + bad + "\""), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace readingsd::cluster
