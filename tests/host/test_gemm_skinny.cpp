// Host tests of the skinny GEMM family (m or n at most 16): its problems, which kernel each op and
// orientation gets, the space's constraints, the default for every problem, adaptation and k
// splitting, and real NVRTC compiles of both kernels and the split reduction.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/gemm/skinny_rules.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/space.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

const DeviceLimits kH100 = DeviceLimits::for_arch(9, 0);

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GemmSkinny, ProblemsAreGemmProblemsWithASideOfAtMost16) {
  const Family& f = find_family("gemm_skinny");
  EXPECT_EQ(gemm_skinny_problem("f32", true, false, 1, 20, 30, 2).key(),
            gemm_problem("f32", true, false, 1, 20, 30, 2).key());
  EXPECT_NO_THROW(f.validate(gemm_skinny_problem("f32", false, false, 100000, 16, 5, 4)));
  EXPECT_NO_THROW(f.validate(gemm_skinny_problem("f64", true, true, 1, 1, 1, 1)));
  try {
    f.validate(gemm_skinny_problem("f32", false, false, 17, 17, 5, 4));
    FAIL() << "accepted a 17 x 17 C";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(contains(e.what(), "at most 16")) << e.what();
  }
  // The gemm family's checks of the axes hold here too.
  EXPECT_THROW(f.validate(gemm_skinny_problem("f64", false, false, 8, 1, 8, 4)), Error);
  EXPECT_THROW(f.validate(Problem::parse("gemm_skinny", "align=4;dtype=f32;k=8;m=8;n=1;op=nx")),
               Error);
  EXPECT_TRUE(gemm_is_skinny(16, 100000));
  EXPECT_TRUE(gemm_is_skinny(100000, 1));
  EXPECT_FALSE(gemm_is_skinny(17, 17));
}

// Which kernel a call gets: X is op(A) where n is the small side, op(B)^T where m is; the dot
// kernel where X is k-contiguous in memory, the axpy kernel where it is m-contiguous.
TEST(GemmSkinny, EachOpAndOrientationGetsTheKernelOfItsLayout) {
  const Family& f = find_family("gemm_skinny");
  struct Want {
    bool ta, tb, small_m;
    const char* kernel;
    const char* n_and_yk;  // template arguments after the type: N, Y k-contiguous
  };
  const Want wants[] = {
      {false, false, false, "skinny_axpy", "3, 1"},  // X = A (m-contig), Y = B (k-contig)
      {true, false, false, "skinny_dot", "3, 1"},    // X = A^T stored k-contiguous
      {false, true, false, "skinny_axpy", "3, 0"},   // Y = B^T: n-contiguous
      {true, true, false, "skinny_dot", "3, 0"},
      {false, false, true, "skinny_dot", "3, 0"},  // X = B^T: B's columns are k-contiguous
      {false, true, true, "skinny_axpy", "3, 0"},  // X = B (n x k stored): m-contiguous
      {true, false, true, "skinny_dot", "3, 1"},   // Y = A^T: A^T's columns k-contiguous
      {true, true, true, "skinny_axpy", "3, 1"},
  };
  for (const Want& w : wants) {
    const Problem p =
        gemm_skinny_problem("f32", w.ta, w.tb, w.small_m ? 3 : 5000, w.small_m ? 5000 : 3, 4096, 4);
    const auto names = f.name_expressions(f.default_config(p, kH100), p);
    ASSERT_FALSE(names.empty());
    EXPECT_TRUE(contains(names[0], std::string("ktune::") + w.kernel + "<float, " + w.n_and_yk))
        << p.key() << ": " << names[0];
  }
}

TEST(GemmSkinny, ConstraintsHoldForEveryConfigOfTheSpace) {
  const Family& f = find_family("gemm_skinny");
  for (const Problem& p : {gemm_skinny_problem("f32", false, false, 8192, 1, 8192, 4),
                           gemm_skinny_problem("f32", true, false, 8192, 16, 8192, 4),
                           gemm_skinny_problem("f64", false, true, 1, 8192, 8192, 2),
                           gemm_skinny_problem("f32", false, false, 300, 5, 200000, 1),
                           gemm_skinny_problem("f64", false, false, 14, 895, 6362, 2)}) {
    SearchSpace s(f, p, kH100);
    ASSERT_GT(s.size(), 20u) << p.key();
    const bool f32 = p.attr("dtype") == "f32";
    const std::int64_t n = std::min(p.size("m"), p.size("n"));
    bool any_split = false;
    for (const Config& c : s.configs()) {
      EXPECT_LE(c.at("VEC"), p.size("align")) << to_string(c);
      EXPECT_LE(c.at("VEC") * (f32 ? 4 : 8), 16) << to_string(c);
      const auto names = f.name_expressions(c, p);
      // The tensor-core kernel (either layout of X): its sums in the mma fragments, f32's rows
      // in 16-row tiles, an m-contiguous X read a scalar at a time.
      EXPECT_EQ(contains(names[0], "skinny_dot_mma"), c.at("MMA") == 1) << names[0];
      if (c.at("MMA") == 1) {
        if (f32) {
          EXPECT_EQ(c.at("ROWS") % 2, 0) << to_string(c);
        }
        EXPECT_LE(c.at("VEC"), 2) << to_string(c);
        EXPECT_EQ(c.at("GROUPS"), 0) << to_string(c);
        EXPECT_EQ(c.at("KWARPS"), 1) << to_string(c);
        const std::string type = f32 ? "float" : "double";
        if (!contains(names[0], "<" + type + ", " + std::to_string(n) + ", 1,")) {
          EXPECT_EQ(c.at("VEC"), 1) << to_string(c);
        }
      } else if (contains(names[0], "skinny_dot")) {
        EXPECT_EQ(c.at("KWARPS"), 1) << to_string(c);
        const std::int64_t groups = c.at("GROUPS");
        // Staged (Y in shared memory, no Y in registers): twice the sums, a warp per row group.
        EXPECT_EQ(contains(names[0], "skinny_dot_staged"), groups > 0) << names[0];
        EXPECT_LE(c.at("ROWS") * n, (f32 ? 64 : 32) * (groups > 0 ? 2 : 1)) << to_string(c);
        if (groups > 0) {
          EXPECT_GE(c.at("THREADS") / groups, 32) << to_string(c);
        }
      } else {
        EXPECT_EQ(c.at("GROUPS"), 0) << to_string(c);
        EXPECT_EQ((c.at("THREADS") / 32) % c.at("KWARPS"), 0) << to_string(c);
        EXPECT_LE(c.at("ROWS") * c.at("VEC") * n, f32 ? 64 : 32) << to_string(c);
      }
      EXPECT_EQ(names.size(), c.at("SPLITK") > 1 ? 2u : 1u) << to_string(c);
      any_split |= c.at("SPLITK") > 1;
    }
    // A short side of 300 rows with k = 200000 leaves the GPU idle without splitting k; 8192 rows
    // of a matrix-vector product (X m-contiguous: 64 to 1024 rows a block) may split as well.
    if (p.size("k") == 200000) {
      EXPECT_TRUE(any_split) << p.key();
    }
  }
}

TEST(GemmSkinny, DefaultIsValidForEveryProblemAndSplitsLongK) {
  const Family& f = find_family("gemm_skinny");
  for (const char* dtype : {"f32", "f64"})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (std::int64_t small : {1, 3, 16})
          for (std::int64_t big : {1, 7, 129, 100000})
            for (std::int64_t k : {1, 63, 5000, 1 << 20})
              for (int align : {1, 2}) {
                for (bool small_m : {false, true}) {
                  const Problem p = gemm_skinny_problem(dtype, ta, tb, small_m ? small : big,
                                                        small_m ? big : small, k, align);
                  const Config c = f.default_config(p, kH100);
                  ASSERT_EQ(f.reject(c, p, kH100), "") << p.key() << " " << to_string(c);
                }
              }
  // 200 rows of k = 1M: the default splits k to give the GPU blocks enough.
  const Problem long_k = gemm_skinny_problem("f32", true, false, 200, 4, 1 << 20, 4);
  EXPECT_GT(f.default_config(long_k, kH100).at("SPLITK"), 1);
  // 33 rows of an m-contiguous X with k = 585357 (one block of rows): hundreds of splits.
  const Problem few_rows = gemm_skinny_problem("f64", false, true, 16, 33, 585357, 2);
  EXPECT_GE(f.default_config(few_rows, kH100).at("SPLITK"), 256)
      << to_string(f.default_config(few_rows, kH100));
  // 100000 rows: enough blocks without.
  const Problem tall = gemm_skinny_problem("f32", true, false, 100000, 4, 4096, 4);
  EXPECT_EQ(f.default_config(tall, kH100).at("SPLITK"), 1);
}

TEST(GemmSkinny, AdaptKeepsTheBlockAndSplitsForTheTarget) {
  const Family& f = find_family("gemm_skinny");
  // Tuned for a tall matrix-vector product (no split), asked for a short one with a long k.
  const Problem tuned = gemm_skinny_problem("f32", true, false, 100000, 1, 4096, 4);
  Config c = {{"THREADS", 256}, {"ROWS", 4},   {"VEC", 4},
              {"KWARPS", 1},    {"UNROLL", 2}, {"SPLITK", 1}};
  ASSERT_EQ(f.reject(c, tuned, kH100), "");
  const Problem target = gemm_skinny_problem("f32", true, false, 300, 1, 1 << 20, 4);
  const Config a = f.adapt(c, target, kH100);
  EXPECT_EQ(f.reject(a, target, kH100), "") << to_string(a);
  EXPECT_EQ(a.at("THREADS"), 256);
  EXPECT_EQ(a.at("ROWS"), 4);
  EXPECT_GT(a.at("SPLITK"), 1) << to_string(a);
  // An unaligned target narrows the loads; one with 16 columns fewer rows per block (registers).
  const Problem unaligned = gemm_skinny_problem("f32", true, false, 100000, 1, 4095, 1);
  EXPECT_EQ(f.adapt(c, unaligned, kH100).at("VEC"), 1);
  const Problem wide = gemm_skinny_problem("f32", true, false, 100000, 16, 4096, 4);
  const Config w = f.adapt(c, wide, kH100);
  EXPECT_EQ(f.reject(w, wide, kH100), "") << to_string(w);
  EXPECT_LE(w.at("ROWS") * 16, 64);
  // A winner of N = 8 with 8 rows a block (8 x 8 sums a thread) asked for N = 13: 4 rows, not a
  // refusal that left the lookup with a matrix-vector winner (13 x 1694 x 2112 ran at 0.25 x
  // cuBLAS on the H100 that way, d7b37fe).
  const Problem eight = gemm_skinny_problem("f32", false, false, 8, 4096, 4096, 4);
  Config r = {{"THREADS", 128}, {"ROWS", 8},   {"VEC", 1},
              {"KWARPS", 1},    {"UNROLL", 1}, {"SPLITK", 1}};
  ASSERT_EQ(f.reject(r, eight, kH100), "");
  const Problem thirteen = gemm_skinny_problem("f32", false, false, 13, 1694, 2112, 4);
  ASSERT_NE(f.reject(r, thirteen, kH100), "");
  const Config t = f.adapt(r, thirteen, kH100);
  EXPECT_EQ(f.reject(t, thirteen, kH100), "") << to_string(t);
  EXPECT_EQ(t.at("ROWS"), 4) << to_string(t);
  EXPECT_EQ(t.at("THREADS"), 128);
}

// k is split past the fewest splits that give 32 warps per SM where those leave the busiest SM
// over 1.4 x the average of blocks: the H200's winner of 1 x 4096 x 4096 nt (256 rows a block, 16
// blocks) adapted to 1 x 4251 x 6796 nt has 17 blocks of rows, whose 16 splits put 3 blocks on
// some SMs and 2.06 on average (0.75 x cuBLAS there, 0.96 with 64 splits). Where the fewest spread
// evenly (4096 rows), or leave the busiest SM 1.29 x the average (9808 x 1 x 6836 nn, 64 rows a
// block: 2 splits), they stay: more lost 11% there on the H200.
TEST(GemmSkinny, AdaptSplitsKToSpreadTheBlocksOverTheSMs) {
  const Family& f = find_family("gemm_skinny");
  const Config c = {{"THREADS", 512}, {"ROWS", 1},    {"VEC", 4},    {"KWARPS", 8},
                    {"UNROLL", 2},    {"SPLITK", 32}, {"GROUPS", 0}, {"MMA", 0}};
  const std::int64_t block = skinny::Rules::block_rows(c, false);  // 256 rows
  auto imbalance = [&](std::int64_t rows, std::int64_t k, std::int64_t split) {
    const double blocks =
        static_cast<double>((rows + block - 1) / block * skinny::k_parts(k, split, 4).splits);
    return std::ceil(blocks / kH100.sm_count) / (blocks / kH100.sm_count);
  };
  const Problem odd = gemm_skinny_problem("f32", false, true, 1, 4251, 6796, 4);
  const Config a = f.adapt(c, odd, kH100);
  EXPECT_EQ(f.reject(a, odd, kH100), "") << to_string(a);
  EXPECT_EQ(a.at("THREADS"), 512);
  EXPECT_EQ(a.at("KWARPS"), 8);
  EXPECT_GT(imbalance(4251, 6796, 16), 1.4);  // what the fewest splits gave
  EXPECT_GT(a.at("SPLITK"), 16) << to_string(a);
  EXPECT_LT(imbalance(4251, 6796, a.at("SPLITK")), 1.25) << to_string(a);
  const Problem even = gemm_skinny_problem("f32", false, true, 1, 4096, 4096, 4);
  EXPECT_EQ(f.adapt(c, even, kH100).at("SPLITK"), 32);
  EXPECT_LT(imbalance(4096, 4096, 32), 1.1);
  const Config narrow = {{"THREADS", 512}, {"ROWS", 1},   {"VEC", 1},    {"KWARPS", 8},
                         {"UNROLL", 4},    {"SPLITK", 1}, {"GROUPS", 0}, {"MMA", 0}};
  const Problem tall = gemm_skinny_problem("f32", false, false, 9808, 1, 6836, 4);
  const Config t = f.adapt(narrow, tall, kH100);
  EXPECT_EQ(f.reject(t, tall, kH100), "") << to_string(t);
  EXPECT_EQ(t.at("SPLITK"), 2) << to_string(t);
}

// A staged winner (Y in shared memory for row groups) moved to other problems: kept where the
// target's X is k-contiguous, with fewer groups for few rows and fewer packets a thread where
// more columns outgrow the shared memory; an m-contiguous X reads Y through L1 (GROUPS = 0).
TEST(GemmSkinny, AdaptKeepsOrDropsTheStagedY) {
  const Family& f = find_family("gemm_skinny");
  const Problem eight = gemm_skinny_problem("f64", false, false, 8, 4096, 4096, 2);  // dot, N 8
  const Config c = {{"THREADS", 256}, {"ROWS", 2},   {"VEC", 2},   {"KWARPS", 1},
                    {"UNROLL", 2},    {"SPLITK", 1}, {"GROUPS", 2}};
  ASSERT_EQ(f.reject(c, eight, kH100), "");
  const Problem sixteen = gemm_skinny_problem("f64", false, false, 16, 4096, 4096, 2);
  ASSERT_NE(f.reject(c, sixteen, kH100), "");  // 16 x 257 x 2 doubles of Y: over 48 KiB
  const Config wide = f.adapt(c, sixteen, kH100);
  EXPECT_EQ(f.reject(wide, sixteen, kH100), "") << to_string(wide);
  EXPECT_EQ(wide.at("GROUPS"), 2) << to_string(wide);
  EXPECT_EQ(wide.at("UNROLL"), 1) << to_string(wide);
  const Problem few = gemm_skinny_problem("f64", false, false, 8, 3, 4096, 2);  // 3 rows
  const Config f3 = f.adapt(c, few, kH100);
  EXPECT_EQ(f.reject(f3, few, kH100), "") << to_string(f3);
  EXPECT_LE(f3.at("ROWS") * f3.at("GROUPS"), 4) << to_string(f3);
  const Problem axpy = gemm_skinny_problem("f64", false, true, 8, 4096, 4096, 2);  // X = B
  const Config a = f.adapt(c, axpy, kH100);
  EXPECT_EQ(f.reject(a, axpy, kH100), "") << to_string(a);
  EXPECT_EQ(a.at("GROUPS"), 0);
  // A tensor-core winner (f64, one group of 8 rows a warp) asked for f32: the 3xTF32 kernel, its
  // rows in a 16-row tile; on an sm_75, which has neither, the FMA kernel of the same block.
  const Config m = {{"THREADS", 128}, {"ROWS", 1},   {"VEC", 2},    {"KWARPS", 1},
                    {"UNROLL", 2},    {"SPLITK", 1}, {"GROUPS", 0}, {"MMA", 1}};
  ASSERT_EQ(f.reject(m, eight, kH100), "");
  const Problem single = gemm_skinny_problem("f32", false, false, 8, 4096, 4096, 4);
  EXPECT_NE(f.reject(m, single, kH100), "");  // f32 takes ROWS in pairs
  const Config s = f.adapt(m, single, kH100);
  EXPECT_EQ(f.reject(s, single, kH100), "") << to_string(s);
  EXPECT_EQ(s.at("MMA"), 1) << to_string(s);
  EXPECT_EQ(s.at("ROWS"), 2) << to_string(s);
  EXPECT_EQ(s.at("THREADS"), 128) << to_string(s);
  DeviceLimits turing = kH100;
  turing.cc_major = 7, turing.cc_minor = 5;
  const Config old = f.adapt(m, single, turing);
  EXPECT_EQ(f.reject(old, single, turing), "") << to_string(old);
  EXPECT_EQ(old.at("MMA"), 0) << to_string(old);
  EXPECT_EQ(old.at("ROWS"), 1) << to_string(old);
}

// A re-tune after the template changed starts from the problem's own shipped winner as it was
// measured: adapting it would re-split k (SPLITK 1 -> 2 for 4096 rows of 2 a block on 132 SMs),
// a configuration never measured; the H200's re-tune of the skinny grid lost 31.4 us winners to
// 44.6 us ones that way. Another problem's winner is still adapted.
TEST(GemmSkinny, ReTuneSeedIsTheProblemsOwnWinnerAsMeasured) {
  const Family& f = find_family("gemm_skinny");
  const Problem p = gemm_skinny_problem("f32", true, false, 4096, 12, 4096, 4);
  ResultRecord r;
  r.problem = p.key();
  r.config = "KWARPS=1,ROWS=2,SPLITK=1,THREADS=64,UNROLL=2,VEC=2";  // no GROUPS, no MMA
  const Config as_measured = f.normalize(parse_config(r.config));
  ASSERT_EQ(f.reject(as_measured, p, kH100), "");
  ASSERT_NE(f.adapt(as_measured, p, kH100), as_measured);  // what the seed used to be
  EXPECT_EQ(seed_config(f, r, p, kH100), as_measured);
  EXPECT_EQ(as_measured.at("GROUPS"), 0);
  EXPECT_EQ(as_measured.at("MMA"), 0);
  const Problem other = gemm_skinny_problem("f32", true, false, 300, 12, 1 << 20, 4);
  EXPECT_EQ(seed_config(f, r, other, kH100), f.adapt(as_measured, other, kH100));
}

// Real NVRTC: both kernels of every op and orientation with a split (and its reduction), sm_90.
TEST(GemmSkinny, KernelsCompileWithNvrtc) {
  const Family& f = find_family("gemm_skinny");
  for (bool small_m : {false, true})
    for (bool ta : {false, true}) {
      const Problem p =
          gemm_skinny_problem("f64", ta, !ta, small_m ? 5 : 200, small_m ? 200 : 5, 300000, 2);
      const Config c = f.default_config(p, kH100);
      ASSERT_GT(c.at("SPLITK"), 1) << p.key();  // 200 rows, 300000 deep: split
      CompileResult r;
      ASSERT_NO_THROW(r = compile(f.compile_request(c, p, "sm_90"))) << p.key();
      ASSERT_EQ(r.lowered_names.size(), 2u);
      EXPECT_FALSE(r.resources[0].spills()) << p.key();
      EXPECT_EQ(f.reject_compiled(c, p, kH100, r.resources[0]), "") << p.key();
    }
  // The staged dot kernel, Y n- and k-contiguous, split and not, f32 and f64, 14 columns: every
  // one compiles without spilling, and the shared memory is what the rules counted.
  for (const char* dtype : {"f32", "f64"})
    for (bool ta : {false, true})
      for (std::int64_t split : {1, 4}) {
        const bool f32 = std::string(dtype) == "f32";
        const Problem p = gemm_skinny_problem(dtype, ta, false, 14, 895, 6362, f32 ? 4 : 2);
        const Config c = {{"THREADS", 256}, {"ROWS", 2},       {"VEC", f32 ? 4 : 2}, {"KWARPS", 1},
                          {"UNROLL", 1},    {"SPLITK", split}, {"GROUPS", 2}};
        ASSERT_EQ(f.reject(c, p, kH100), "") << p.key();
        CompileResult r;
        ASSERT_NO_THROW(r = compile(f.compile_request(c, p, "sm_90"))) << p.key();
        ASSERT_EQ(r.lowered_names.size(), split > 1 ? 2u : 1u);
        EXPECT_TRUE(contains(r.lowered_names[0], "skinny_dot_staged")) << r.lowered_names[0];
        EXPECT_FALSE(r.resources[0].spills()) << p.key();
        // Y's chunk (14 columns of 128 packets and one of padding) and the warps' sums.
        const int bytes = f32 ? 4 : 8;
        EXPECT_EQ(r.resources[0].smem_static, 14 * 129 * (f32 ? 4 : 2) * bytes + 8 * 2 * 14 * bytes)
            << p.key();
        // The tensor-core kernel of the same shape (f32: 3xTF32): no shared memory, no spill.
        Config m = c;
        m["GROUPS"] = 0, m["MMA"] = 1, m["ROWS"] = 4, m["UNROLL"] = 2, m["VEC"] = 2;
        ASSERT_EQ(f.reject(m, p, kH100), "") << p.key();
        ASSERT_NO_THROW(r = compile(f.compile_request(m, p, "sm_90"))) << p.key();
        EXPECT_TRUE(contains(r.lowered_names[0], "skinny_dot_mma")) << r.lowered_names[0];
        EXPECT_FALSE(r.resources[0].spills()) << p.key();
        EXPECT_EQ(r.resources[0].smem_static, 0) << p.key();
      }
}

}  // namespace
}  // namespace ktune
