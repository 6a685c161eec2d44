// Host tests: GEMM argument checks (every invalid argument), problems, space and adaptation.
#include <gtest/gtest.h>

#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

float buf[16];
const void* P = buf;

void expect_invalid(const std::string& fragment, bool row_major, bool ta, bool tb, std::int64_t m,
                    std::int64_t n, std::int64_t k, const void* a, std::int64_t lda, const void* b,
                    std::int64_t ldb, const void* c, std::int64_t ldc, bool alpha_zero = false) {
  try {
    validate_gemm_args("sgemm", row_major, ta, tb, m, n, k, alpha_zero, a, lda, b, ldb, c, ldc);
    FAIL() << "accepted; expected an error naming " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sgemm"), std::string::npos) << e.what();
  }
}

TEST(GemmArgs, EveryInvalidArgumentIsNamed) {
  // Column-major: A is m x k (N) or k x m (T) as stored.
  expect_invalid("m must be >= 0", false, false, false, -1, 4, 4, P, 4, P, 4, P, 4);
  expect_invalid("n must be >= 0", false, false, false, 4, -1, 4, P, 4, P, 4, P, 4);
  expect_invalid("k must be >= 0", false, false, false, 4, 4, -1, P, 4, P, 4, P, 4);
  expect_invalid("m must be < 2^31", false, false, false, 1ll << 31, 4, 4, P, 1ll << 31, P, 4, P,
                 1ll << 31);
  expect_invalid("lda", false, false, false, 8, 4, 4, P, 7, P, 4, P, 8);  // lda < m
  expect_invalid("lda", false, true, false, 8, 4, 5, P, 4, P, 5, P, 8);   // op(A)=T: lda < k
  expect_invalid("ldb", false, false, false, 4, 4, 6, P, 4, P, 5, P, 4);  // ldb < k
  expect_invalid("ldb", false, false, true, 4, 6, 4, P, 4, P, 5, P, 4);   // op(B)=T: ldb < n
  expect_invalid("ldc", false, false, false, 9, 4, 4, P, 9, P, 4, P, 8);  // ldc < m
  expect_invalid("lda", false, false, false, 0, 4, 4, P, 0, P, 4, P, 1);  // lda >= max(1, .)
  expect_invalid("a is null", false, false, false, 4, 4, 4, nullptr, 4, P, 4, P, 4);
  expect_invalid("b is null", false, false, false, 4, 4, 4, P, 4, nullptr, 4, P, 4);
  expect_invalid("c is null", false, false, false, 4, 4, 4, P, 4, P, 4, nullptr, 4);
  // Row-major: A is m x k stored with lda >= k (N), B k x n with ldb >= n, C with ldc >= n.
  expect_invalid("lda", true, false, false, 4, 4, 6, P, 5, P, 4, P, 4);
  expect_invalid("ldb", true, false, false, 4, 6, 4, P, 4, P, 5, P, 6);
  expect_invalid("ldc", true, false, false, 4, 6, 4, P, 4, P, 6, P, 5);
}

TEST(GemmArgs, DegenerateCallsAreValid) {
  // m = 0 or n = 0: nothing to do, pointers unused. k = 0 or alpha = 0: A and B unused.
  EXPECT_NO_THROW(validate_gemm_args("sgemm", false, false, false, 0, 4, 4, false, nullptr, 1,
                                     nullptr, 4, nullptr, 1));
  EXPECT_NO_THROW(validate_gemm_args("sgemm", false, false, false, 4, 4, 0, false, nullptr, 4,
                                     nullptr, 1, P, 4));
  EXPECT_NO_THROW(validate_gemm_args("sgemm", false, false, false, 4, 4, 4, true, nullptr, 4,
                                     nullptr, 4, P, 4));
  EXPECT_NO_THROW(
      validate_gemm_args("sgemm", false, false, false, 3, 5, 7, false, P, 10, P, 10, P, 10));
}

TEST(GemmProblem, ValidatesAndRejects) {
  const Family& f = find_family("gemm");
  EXPECT_NO_THROW(f.validate(gemm_problem("f32", false, true, 1, 2, 3, 4)));
  EXPECT_THROW(f.validate(gemm_problem("f64", false, false, 8, 8, 8, 4)), Error);  // 32-byte loads
  EXPECT_THROW(f.validate(gemm_problem("f16", false, false, 8, 8, 8, 1)), Error);
  EXPECT_THROW(f.validate(gemm_problem("f32", false, false, 0, 8, 8, 1)), Error);
  EXPECT_THROW(f.validate(Problem::parse("gemm", "align=4;dtype=f32;k=8;m=8;n=8;op=nx")), Error);
  EXPECT_EQ(gemm_problem("f32", true, false, 10, 20, 30, 2).key(),
            "align=2;dtype=f32;k=30;m=10;n=20;op=tn");
}

TEST(GemmSpace, ConstraintsHoldForEveryConfig) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  for (const Problem& p : {gemm_problem("f32", false, false, 4096, 4096, 4096, 4),
                           gemm_problem("f64", true, false, 1000, 1000, 1000, 1),
                           gemm_problem("f32", false, false, 64, 64, 262144, 4)}) {
    SearchSpace s(f, p, lim);
    ASSERT_GT(s.size(), 50u) << p.key();
    bool any_split = false, any_minb = false, any_kcontig = false;
    for (const auto& c : s.configs()) {
      const std::int64_t threads = (c.at("BM") / c.at("WM")) * (c.at("BN") / c.at("WN")) * 32;
      EXPECT_TRUE(threads == 128 || threads == 256);
      EXPECT_LE(c.at("VEC"), p.size("align"));
      // Shared memory per stage: BK x (BM + PAD), or BM x (BK + PAD) for A kept k-contiguous
      // (KCONTIG, op T); the same for B (op N).
      const bool ta = p.attr("op")[0] == 't', tb = p.attr("op")[1] == 't';
      const std::int64_t kc = c.at("KCONTIG"), bk = c.at("BK"), pad = c.at("PAD");
      const std::int64_t a = kc && ta ? c.at("BM") * (bk + pad) : bk * (c.at("BM") + pad);
      const std::int64_t b = kc && !tb ? c.at("BN") * (bk + pad) : bk * (c.at("BN") + pad);
      EXPECT_LE(c.at("STAGES") * (a + b) * (p.attr("dtype") == "f32" ? 4 : 8),
                lim.smem_per_block_optin);
      if (kc) {
        // Only where an operand is k-contiguous in memory, on the FMA units, in whole vectors.
        EXPECT_TRUE(ta || !tb) << to_string(c);
        EXPECT_EQ(c.at("MMA"), 0) << to_string(c);
        EXPECT_EQ(c.at("PREFETCH"), 0) << to_string(c);
        EXPECT_LE(kc * (p.attr("dtype") == "f32" ? 4 : 8), 16) << to_string(c);
        EXPECT_EQ(bk % kc, 0) << to_string(c);
        any_kcontig = true;
      }
      if (c.at("MINB") > 1) {
        // A register cap below 255 that the accumulators fit under, and room for MINB blocks.
        const std::int64_t cap = lim.regs_per_sm / (c.at("MINB") * threads) / 8 * 8;
        EXPECT_LT(cap, 255) << to_string(c);
        EXPECT_GE(cap,
                  (c.at("TM") * c.at("TN") * c.at("WNITER") *
                   (c.at("WM") * c.at("WN") / (32 * c.at("TM") * c.at("TN") * c.at("WNITER")))) *
                      (p.attr("dtype") == "f32" ? 1 : 2))
            << to_string(c);
        EXPECT_LE(c.at("MINB") * threads, lim.max_threads_per_sm) << to_string(c);
        any_minb = true;
      }
      if (c.at("SPLITK") > 1) {
        any_split = true;
        // Split-K only where the m x n tiles leave SMs idle.
        const std::int64_t tiles = ((p.size("m") + c.at("BM") - 1) / c.at("BM")) *
                                   ((p.size("n") + c.at("BN") - 1) / c.at("BN"));
        EXPECT_LT(tiles, lim.sm_count) << to_string(c);
      }
    }
    EXPECT_TRUE(any_minb) << p.key();
    EXPECT_TRUE(any_kcontig) << p.key();  // nn and tn: B, and A and B, are k-contiguous
    if (p.size("m") == 64) {
      EXPECT_TRUE(any_split);
    }
    if (p.size("m") == 4096) {
      EXPECT_FALSE(any_split);
    }
  }
}

TEST(GemmSpace, KcontigOnlyWhereAnOperandIsKContiguousInMemory) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  Config c = f.default_config(gemm_problem("f32", false, false, 4096, 4096, 4096, 4), lim);
  c["PREFETCH"] = 0, c["PAD"] = 4, c["VEC"] = 4;
  for (std::int64_t kc : {2, 4}) {
    c["KCONTIG"] = kc;
    // nn: B, tn: A and B, tt: A are k-contiguous; nt has none.
    EXPECT_EQ(f.reject(c, gemm_problem("f32", false, false, 4096, 4096, 4096, 4), lim), "");
    EXPECT_EQ(f.reject(c, gemm_problem("f32", true, false, 4096, 4096, 4096, 4), lim), "");
    EXPECT_EQ(f.reject(c, gemm_problem("f32", true, true, 4096, 4096, 4096, 4), lim), "");
    EXPECT_NE(
        f.reject(c, gemm_problem("f32", false, true, 4096, 4096, 4096, 4), lim).find("KCONTIG"),
        std::string::npos);
  }
  // 4 doubles are 32 bytes, more than one shared-memory load moves.
  Config d = c;
  d["KCONTIG"] = 4, d["VEC"] = 2;
  EXPECT_NE(
      f.reject(d, gemm_problem("f64", false, false, 4096, 4096, 4096, 2), lim).find("KCONTIG"),
      std::string::npos);
  d["KCONTIG"] = 2;
  EXPECT_EQ(f.reject(d, gemm_problem("f64", false, false, 4096, 4096, 4096, 2), lim), "");
  d["PREFETCH"] = 1;
  EXPECT_NE(
      f.reject(d, gemm_problem("f64", false, false, 4096, 4096, 4096, 2), lim).find("PREFETCH"),
      std::string::npos);
  SearchSpace nt(f, gemm_problem("f32", false, true, 4096, 4096, 4096, 4), lim);
  for (const auto& x : nt.configs()) EXPECT_EQ(x.at("KCONTIG"), 0) << to_string(x);
}

TEST(GemmSpace, DefaultIsValidForEveryProblemAndAdaptNarrowsVectors) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  for (const char* dtype : {"f32", "f64"})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (std::int64_t m : {1, 7, 129, 4096})
          for (int align : {1, 2}) {
            Problem p = gemm_problem(dtype, ta, tb, m, 33, 1000, align);
            EXPECT_EQ(f.reject(f.default_config(p, lim), p, lim), "") << p.key();
          }
  Problem aligned = gemm_problem("f32", false, false, 4096, 4096, 4096, 4);
  SearchSpace s(f, aligned, lim);
  Config wide;
  for (const auto& c : s.configs())
    if (c.at("VEC") == 4) wide = c;
  ASSERT_FALSE(wide.empty());
  Problem unaligned = gemm_problem("f32", false, false, 4095, 4095, 4095, 1);
  EXPECT_NE(f.reject(wide, unaligned, lim), "");
  Config adapted = f.adapt(wide, unaligned, lim);
  EXPECT_EQ(adapted.at("VEC"), 1);
  EXPECT_EQ(f.reject(adapted, unaligned, lim), "");
}

TEST(GemmSuite, MatchesTheIssue) {
  auto suite = gemm_suite();
  EXPECT_EQ(suite.size(), 14u);
  int four_ops = 0;
  for (const auto& s : suite) four_ops += s.m == 4096 && s.n == 4096 && s.k == 4096;
  EXPECT_EQ(four_ops, 4);
}

}  // namespace
}  // namespace ktune
