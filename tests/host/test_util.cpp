// Host tests: size/shape parsing, problem keys, configuration strings, hashing.
#include <gtest/gtest.h>

#include <cmath>

#include "core/util.hpp"
#include "ktune/error.hpp"
#include "platform/problem.hpp"

namespace ktune {
namespace {

TEST(ParseSize, AcceptsPlainAndBinarySuffixes) {
  EXPECT_EQ(parse_size("0", "n"), 0u);
  EXPECT_EQ(parse_size("1023", "n"), 1023u);
  EXPECT_EQ(parse_size("4K", "n"), 4096u);
  EXPECT_EQ(parse_size("256M", "n"), 256ull << 20);
  EXPECT_EQ(parse_size("1G", "n"), 1ull << 30);
  EXPECT_EQ(parse_size("2T", "n"), 2ull << 40);
}

TEST(ParseSize, RejectsMalformedInputNamingTheArgument) {
  for (const char* bad : {"", "-1", "1e99", "1.5G", "12x", "G", " 1", "1 G", "18446744073709551616",
                          "99999999999T"}) {
    try {
      parse_size(bad, "--n");
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--n"), std::string::npos) << e.what();
    }
  }
}

TEST(ParseShape, ParsesAndRejects) {
  auto s = parse_shape("4096x128x1K", 3, "--shape");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], 4096u);
  EXPECT_EQ(s[1], 128u);
  EXPECT_EQ(s[2], 1024u);
  for (const char* bad : {"4096x", "4096x4096", "x1x1", "1x2x3x4", "-1x2x3", "axbxc"})
    EXPECT_THROW(parse_shape(bad, 3, "--shape"), Error) << bad;
}

TEST(ProblemKey, RoundTripsAndIsCanonical) {
  Problem p;
  p.family = "elementwise";
  p.attrs = {{"op", "copy"}, {"dtype", "f32"}};
  p.sizes = {{"n", 1025}, {"align", 4}};
  EXPECT_EQ(p.key(), "align=4;dtype=f32;n=1025;op=copy");
  Problem q = Problem::parse("elementwise", p.key());
  EXPECT_EQ(p, q);
  Problem r = Problem::parse("elementwise", "op=copy;n=1025;dtype=f32;align=4");  // any order
  EXPECT_EQ(r.key(), p.key());
}

TEST(ProblemKey, RejectsMalformedKeys) {
  for (const char* bad : {"", "n", "n=", "=3", "n=1;n=2", "a b=1"})
    EXPECT_THROW(Problem::parse("x", bad), Error) << bad;
}

TEST(ProblemDistance, LogScaleAndAttributeAware) {
  Problem a = Problem::parse("f", "op=copy;n=1023");
  Problem b = Problem::parse("f", "op=copy;n=4095");
  Problem c = Problem::parse("f", "op=add;n=1023");
  EXPECT_NEAR(problem_distance(a, b), 2.0, 1e-9);
  EXPECT_TRUE(std::isinf(problem_distance(a, c)));
  EXPECT_EQ(problem_distance(a, a), 0.0);
  // With a price per differing attribute: finite across ops, never across families or axes.
  EXPECT_NEAR(problem_distance(b, c, 2.0), 4.0, 1e-9);
  EXPECT_NEAR(problem_distance(a, b, 2.0), 2.0, 1e-9);
  EXPECT_TRUE(std::isinf(problem_distance(a, Problem::parse("g", "op=copy;n=1023"), 2.0)));
  EXPECT_TRUE(std::isinf(problem_distance(a, Problem::parse("f", "op=copy;m=1023"), 2.0)));
  EXPECT_TRUE(std::isinf(problem_distance(a, Problem::parse("f", "dtype=f32;n=1023"), 2.0)));
}

TEST(ConfigText, RoundTrips) {
  Config c{{"BLOCK", 256}, {"VEC", 4}, {"GRID", 0}};
  EXPECT_EQ(to_string(c), "BLOCK=256,GRID=0,VEC=4");
  EXPECT_EQ(parse_config(to_string(c)), c);
  EXPECT_THROW(parse_config("BLOCK"), Error);
  EXPECT_THROW(parse_config("BLOCK=x"), Error);
  EXPECT_THROW(parse_config("BLOCK=1,BLOCK=2"), Error);
}

TEST(Hasher, DistinguishesBoundariesAndIsStable) {
  EXPECT_NE(Hasher().add("ab").add("c").hex(), Hasher().add("a").add("bc").hex());
  EXPECT_EQ(Hasher().add("same").hex(), Hasher().add("same").hex());
  EXPECT_EQ(Hasher().add("x").hex().size(), 32u);
}

}  // namespace
}  // namespace ktune
