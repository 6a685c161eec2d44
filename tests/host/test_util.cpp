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

// key_distance reads the distance off a key's text for the lookup: exactly problem_distance of the
// parsed key (the same double: the lookup's ranking of ties follows it), and nothing where
// Problem::parse would throw.
TEST(ProblemDistance, KeyDistanceIsTheParsedKeysDistance) {
  const Problem gemm = Problem::parse("gemm", "align=4;dtype=f32;k=777;m=3000;n=1234;op=nn");
  const char* keys[] = {
      "align=4;dtype=f32;k=777;m=3000;n=1234;op=nn",  // itself
      "align=4;dtype=f32;k=1024;m=4096;n=8;op=tn",    // another op
      "align=2;dtype=f64;k=1;m=0;n=-5;op=tt",  // every attribute differs; sizes at 0 and below
      "op=nn;n=1234;m=3000;k=777;dtype=f32;align=4",      // another order of the same parts
      " align = 4 ;dtype=f32;k=777;m=3000;n=1234;op=nn",  // blanks around names and values
      "align=4;dtype=f32;k=777;m=3000;op=nn",             // a size fewer
      "align=4;dtype=f32;k=777;m=3000;n=1234;op=nn;x=1",  // a size more
      "align=4;dtype=f32;k=777;m=3000;n=1234;q=nn",       // another attribute's name
      "align=4;dtype=f32;k=777;m=3000;n=1234;op=7",       // op a number: a size, not an attribute
  };
  for (const char* key : keys) {
    const auto d = key_distance(gemm, "gemm", key, 2.0);
    ASSERT_TRUE(d.has_value()) << key;
    const double want = problem_distance(gemm, Problem::parse("gemm", key), 2.0);
    EXPECT_TRUE(*d == want || (std::isinf(*d) && std::isinf(want)))
        << key << ": " << *d << " " << want;
  }
  EXPECT_TRUE(std::isinf(*key_distance(gemm, "other", keys[0], 2.0)));  // another family
  EXPECT_EQ(*key_distance(gemm, "gemm", keys[0], 2.0), 0.0);
  EXPECT_EQ(*key_distance(gemm, "gemm", keys[1], 2.0),
            2.0 + std::fabs(std::log2(1.0 + 777) - std::log2(1.0 + 1024)) +
                std::fabs(std::log2(1.0 + 3000) - std::log2(1.0 + 4096)) +
                std::fabs(std::log2(1.0 + 1234) - std::log2(1.0 + 8)));
  // Keys Problem::parse refuses.
  for (const char* bad : {"", "  ", "align", "align=;m=1", "a b=1", "m=1;m=2", "m=1;;n=2",
                          "m=99999999999999999999", "m=1;n=2;"}) {
    EXPECT_THROW(Problem::parse("gemm", bad), Error) << bad;
    EXPECT_FALSE(key_distance(gemm, "gemm", bad, 2.0).has_value()) << bad;
  }
}

TEST(ConfigText, RoundTrips) {
  Config c{{"BLOCK", 256}, {"VEC", 4}, {"GRID", 0}};
  EXPECT_EQ(to_string(c), "BLOCK=256,GRID=0,VEC=4");
  EXPECT_EQ(parse_config(to_string(c)), c);
  EXPECT_THROW(parse_config("BLOCK"), Error);
  EXPECT_THROW(parse_config("BLOCK=x"), Error);
  EXPECT_THROW(parse_config("BLOCK=1,BLOCK=2"), Error);
  // Text a person wrote, names out of order and spaced: the same configuration, in name order; a
  // name given twice is refused before the first name out of order and after it.
  EXPECT_EQ(parse_config("VEC=4, BLOCK=256,GRID = 0"), c);
  EXPECT_EQ(to_string(parse_config("VEC=4,GRID=0,BLOCK=256")), "BLOCK=256,GRID=0,VEC=4");
  EXPECT_THROW(parse_config("BLOCK=1,GRID=2,GRID=3"), Error);
  EXPECT_THROW(parse_config("BLOCK=1,VEC=2,GRID=3,VEC=4"), Error);
  EXPECT_THROW(parse_config("VEC=1,BLOCK=x"), Error);
  EXPECT_THROW(parse_config("BLOCK=1,GRID\xc3\xa9=2"), Error);  // names are ASCII
  // The one-scan reading of to_string's text and the part-by-part one agree on the edges.
  EXPECT_EQ(parse_config("A=-3,B=007,C_1=0"), (Config{{"A", -3}, {"B", 7}, {"C_1", 0}}));
  EXPECT_EQ(parse_config("A=1 ,B=2"), (Config{{"A", 1}, {"B", 2}}));
  for (const char* bad : {"A=1,", "A=", "A=+1", "A=1x,B=2", "A=1,,B=2", "=1", "A=1,B=2=3",
                          "A=99999999999999999999", "A=1;B=2"})
    EXPECT_THROW(parse_config(bad), Error) << bad;
}

TEST(Hasher, DistinguishesBoundariesAndIsStable) {
  EXPECT_NE(Hasher().add("ab").add("c").hex(), Hasher().add("a").add("bc").hex());
  EXPECT_EQ(Hasher().add("same").hex(), Hasher().add("same").hex());
  EXPECT_EQ(Hasher().add("x").hex().size(), 32u);
}

}  // namespace
}  // namespace ktune
