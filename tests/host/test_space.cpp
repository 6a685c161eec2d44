// Host tests: search space enumeration under constraints, and the strategies' determinism.
#include <gtest/gtest.h>

#include <set>

#include "ktune/error.hpp"
#include "templates/family.hpp"
#include "tuner/space.hpp"
#include "tuner/strategy.hpp"

namespace ktune {
namespace {

Problem ew(const std::string& key) { return Problem::parse("elementwise", key); }

TEST(SearchSpace, ElementwiseRespectsConstraints) {
  const Family& f = find_family("elementwise");
  DeviceLimits limits = DeviceLimits::for_arch(9, 0);
  SearchSpace f32(f, ew("align=16;dtype=f32;n=1024;op=copy"), limits);
  SearchSpace f64(f, ew("align=16;dtype=f64;n=1024;op=copy"), limits);
  EXPECT_EQ(f32.total(), 5u * 7 * 2 * 4 * 3 * 2);
  // GRID=0 with STRIDE=1 is redundant: 5 blocks * 4 unrolls * 3 vecs * 2 caches removed.
  EXPECT_EQ(f32.size(), f32.total() - 5 * 4 * 3 * 2);
  // f64 additionally loses VEC=4 (32-byte accesses).
  EXPECT_LT(f64.size(), f32.size());
  for (const auto& c : f64.configs()) EXPECT_LE(c.at("VEC") * 8, 16);
  for (const auto& c : f32.configs()) EXPECT_FALSE(c.at("GRID") == 0 && c.at("STRIDE") == 1);
  // Every configuration round-trips through its text.
  for (std::size_t i = 0; i < f32.size(); ++i) EXPECT_EQ(f32.index_of(to_string(f32.at(i))), i);
}

TEST(SearchSpace, DeviceLimitsPrune) {
  const Family& f = find_family("elementwise");
  DeviceLimits small = DeviceLimits::for_arch(9, 0);
  small.max_threads_per_block = 512;
  SearchSpace s(f, ew("align=16;dtype=f32;n=1024;op=copy"), small);
  for (const auto& c : s.configs()) EXPECT_LE(c.at("BLOCK"), 512);
}

TEST(Strategy, ExhaustiveVisitsEverythingOnceAndSkipsDone) {
  const Family& f = find_family("elementwise");
  SearchSpace s(f, ew("align=16;dtype=f32;n=1024;op=add"), DeviceLimits::for_arch(9, 0));
  std::vector<bool> done(s.size(), false);
  done[3] = done[10] = true;
  auto st = make_strategy("exhaustive", s, 1, done);
  std::set<std::size_t> seen;
  while (auto i = st->propose()) EXPECT_TRUE(seen.insert(*i).second);
  EXPECT_EQ(seen.size(), s.size() - 2);
  EXPECT_FALSE(seen.count(3));
  EXPECT_FALSE(seen.count(10));
}

TEST(Strategy, RandomIsDeterministicPerSeedAndAPermutation) {
  const Family& f = find_family("elementwise");
  SearchSpace s(f, ew("align=16;dtype=f32;n=1024;op=copy"), DeviceLimits::for_arch(9, 0));
  std::vector<bool> none(s.size(), false);
  auto order = [&](std::uint64_t seed) {
    auto st = make_strategy("random", s, seed, none);
    std::vector<std::size_t> out;
    while (auto i = st->propose()) out.push_back(*i);
    return out;
  };
  auto a = order(1), b = order(1), c = order(2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<std::size_t>(a.begin(), a.end()).size(), s.size());
  EXPECT_THROW(make_strategy("nonsense", s, 1, none), Error);
}

TEST(Family, ValidatesProblemsAndConfigs) {
  const Family& f = find_family("elementwise");
  EXPECT_THROW(find_family("fft"), Error);
  EXPECT_THROW(f.validate(ew("align=16;dtype=f16;n=1024;op=copy")), Error);
  EXPECT_THROW(f.validate(ew("align=4;dtype=f64;n=1024;op=copy")), Error);
  EXPECT_THROW(f.validate(ew("align=16;dtype=f32;n=1024;op=mul")), Error);
  EXPECT_NO_THROW(f.validate(ew("align=4;dtype=f32;n=0;op=complex_copy")));
  Problem p = ew("align=16;dtype=f32;n=1024;op=copy");
  Config c = f.default_config(p, DeviceLimits::for_arch(9, 0));
  EXPECT_NO_THROW(f.check_config(c));
  EXPECT_EQ(f.reject(c, p, DeviceLimits::for_arch(9, 0)), "");
  Config bad = c;
  bad["VEC"] = 3;
  EXPECT_THROW(f.check_config(bad), Error);
  bad = c;
  bad["EXTRA"] = 1;
  EXPECT_THROW(f.check_config(bad), Error);
  // The default is valid for every problem of the family.
  for (const auto& q : f.check_problems())
    EXPECT_EQ(f.reject(f.default_config(q, DeviceLimits::for_arch(9, 0)), q,
                       DeviceLimits::for_arch(9, 0)),
              "");
}

TEST(Family, TemplateHashIsStableAndCoversTheSource) {
  const Family& f = find_family("elementwise");
  EXPECT_EQ(f.template_hash(), f.template_hash());
  EXPECT_EQ(f.template_hash().size(), 16u);
  EXPECT_NE(template_source("elementwise.cuh").find("elementwise_kernel"), std::string::npos);
  EXPECT_NE(template_source("common.cuh").find("fill_random"), std::string::npos);
}

}  // namespace
}  // namespace ktune
