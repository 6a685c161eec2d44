// Host tests: GEMM argument checks (every invalid argument), problems, space and adaptation, and
// the any-shape benchmark's random shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
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
    bool any_split = false, any_minb = false, any_kcontig = false, any_smallest = false;
    for (const auto& c : s.configs()) {
      const std::int64_t threads = (c.at("BM") / c.at("WM")) * (c.at("BN") / c.at("WN")) * 32;
      // Two warps and warp tiles of 16 only in the smallest block tiles, and those only where
      // 64 x 64 tiles would not fill the GPU four times over.
      const bool smallest = c.at("BM") * c.at("BN") <= 2048;
      EXPECT_TRUE(threads == 128 || threads == 256 || (threads == 64 && smallest)) << to_string(c);
      if (!smallest) {
        EXPECT_TRUE(c.at("WM") >= 32 && c.at("WN") >= 32) << to_string(c);
      }
      if (smallest) {
        EXPECT_LT((p.size("m") + 63) / 64 * ((p.size("n") + 63) / 64), 4 * lim.sm_count);
        any_smallest = true;
      }
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
        // Split-K only where the m x n tiles number fewer than four waves of the SMs: on 4096^2,
        // only tiles of 128 x 256 or larger (512 tiles) split.
        const std::int64_t tiles = ((p.size("m") + c.at("BM") - 1) / c.at("BM")) *
                                   ((p.size("n") + c.at("BN") - 1) / c.at("BN"));
        EXPECT_LT(tiles, 4 * lim.sm_count) << to_string(c);
        if (p.size("m") == 4096) {
          EXPECT_GE(c.at("BM") * c.at("BN"), 128 * 256) << to_string(c);
        }
      }
    }
    EXPECT_TRUE(any_minb) << p.key();
    EXPECT_TRUE(any_kcontig) << p.key();  // nn and tn: B, and A and B, are k-contiguous
    if (p.size("m") == 64) {
      EXPECT_TRUE(any_split);
    }
    // 1000^2 is 256 tiles of 64 x 64 (under four waves of 132 SMs), 4096^2 is 4096.
    EXPECT_EQ(any_smallest, p.size("m") != 4096) << p.key();
  }
}

// The block tiles of 48, 96 and 192 rows or columns (warp tiles of 48, WNITER 3) that the space
// holds for short sides, FMA and tensor-core, each compiled with real NVRTC for sm_90 on one code
// path: every one compiles, and most stay out of local memory (the tuner refuses a
// kernel that spills, as it refuses the power-of-two tiles that do: 64 x 128 with scalar loads).
// ("CheckCompiles": scripts/test.sh leaves it out of the sanitizer build's run.)
TEST(GemmSpace, CheckCompilesTilesBetweenPowersOfTwoForSm90) {
  const Family& gemm = find_family("gemm");
  const DeviceLimits limits = DeviceLimits::for_arch(9, 0);
  auto odd = [](std::int64_t v) { return !std::has_single_bit(static_cast<std::uint64_t>(v)); };
  std::size_t kernels = 0, clean = 0;
  for (const Problem& p : {gemm_problem("f32", true, true, 130, 118, 540415, 4),
                           gemm_problem("f32", false, false, 136, 130, 3000, 4),
                           gemm_problem("f64", true, true, 136, 5446, 1172, 2),
                           gemm_problem("f64", true, true, 346, 130, 122735, 2)}) {
    // Each tile shape on one code path: a cp.async pipeline of 3 stages, the fragments
    // prefetched on the FMA units (the toggles of Family::check_configs would be some 1700
    // kernels here).
    std::vector<Config> checked;
    for (const auto& c : SearchSpace(gemm, p, limits).configs())
      if ((odd(c.at("BM")) || odd(c.at("BN"))) && c.at("STAGES") == 3 && c.at("MINB") == 1 &&
          c.at("KCONTIG") == 0 && c.at("UNROLL") == 0 && c.at("PAD") == 4 &&
          c.at("PREFETCH") == (c.at("MMA") ? 0 : 3) && c.at("SWIZZLE") == 1)
        checked.push_back(c);
    ASSERT_FALSE(checked.empty()) << p.key();
    // One kernel per block and warp tile, thread tile and unit: the widest vector, then BK 8.
    std::map<std::vector<std::int64_t>, const Config*> by_shape;
    for (const auto& c : checked) {
      const Config*& at = by_shape[{c.at("BM"), c.at("BN"), c.at("WM"), c.at("WN"), c.at("TM"),
                                    c.at("MMA")}];
      if (!at || std::pair(c.at("VEC"), -c.at("BK")) > std::pair(at->at("VEC"), -at->at("BK")))
        at = &c;
    }
    std::map<std::string, const Config*> by_kernel;
    for (const auto& [shape, c] : by_shape) by_kernel[gemm.name_expressions(*c, p).front()] = c;
    std::vector<std::string> names;
    std::size_t problem_clean = 0;
    for (const auto& [name, c] : by_kernel) names.push_back(name);
    const std::size_t batch = 24;
    for (std::size_t i = 0; i < names.size(); i += batch) {
      CompileRequest r = gemm.compile_request(*by_kernel.at(names[i]), p, "sm_90");
      r.name_expressions.assign(names.begin() + i,
                                names.begin() + std::min(names.size(), i + batch));
      CompileResult out;
      ASSERT_NO_THROW(out = compile(r)) << p.key() << " " << r.name_expressions.front();
      for (std::size_t j = 0; j < out.resources.size(); ++j) {
        ++kernels;
        const bool in_registers = local_memory_reason(out.resources[j]).empty();
        clean += in_registers;
        problem_clean += in_registers;
        if (!in_registers)
          std::printf("[ info ] %s: %s\n", r.name_expressions[j].c_str(),
                      local_memory_reason(out.resources[j]).c_str());
      }
    }
    EXPECT_GT(problem_clean, 0u) << p.key();
  }
  EXPECT_GT(kernels, 20u);
  EXPECT_GE(2 * clean, kernels);
  std::printf("[ info ] %zu kernels of tiles between powers of two, %zu without local memory\n",
              kernels, clean);
}

TEST(GemmSpace, KcontigOnlyWhereAnOperandIsKContiguousInMemory) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  Config c = f.default_config(gemm_problem("f32", false, true, 4096, 4096, 4096, 4), lim);
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

// The default, the lookup's last step, splits a long k over few tiles (unsplit, 24 x 26 x 63819
// ran 160 times slower than cuBLAS on the H100), and leaves a problem of many tiles unsplit.
TEST(GemmSpace, DefaultSplitsALongKOverFewTiles) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  for (bool ta : {false, true})
    for (std::int64_t k : {63819, 1 << 20}) {
      const Problem p = gemm_problem("f32", ta, !ta, 24, 26, k, 4);
      const Config c = f.default_config(p, lim);
      EXPECT_EQ(f.reject(c, p, lim), "") << p.key();
      EXPECT_GE(c.at("SPLITK"), 32) << p.key();
    }
  const Problem square = gemm_problem("f64", false, false, 4096, 4096, 4096, 2);
  EXPECT_EQ(f.default_config(square, lim).at("SPLITK"), 1);
}

// Whole k-tiles per split: 63819 in 128 splits of 504 leaves the last one empty, 5000 in 64 of 80
// the last one too. Such counts are valid (the launch runs the splits that are not empty): the
// 24 x 26 x 63819 C, one tile, reaches 256 splits.
TEST(GemmSpace, ASplitThatRoundingLeavesAFewSplitsShortIsValid) {
  const Family& f = find_family("gemm");
  const DeviceLimits lim = DeviceLimits::for_arch(9, 0);
  Config c = f.default_config(gemm_problem("f32", false, true, 4096, 4096, 4096, 4), lim);
  for (auto [m, n, k, split] : {std::array<std::int64_t, 4>{24, 26, 63819, 128},
                                std::array<std::int64_t, 4>{24, 26, 63819, 256},
                                std::array<std::int64_t, 4>{200, 150, 5000, 64}}) {
    const Problem p = gemm_problem("f32", false, true, m, n, k, 4);
    c["SPLITK"] = split;
    EXPECT_EQ(f.reject(c, p, lim), "") << p.key() << " SPLITK=" << split;
  }
  EXPECT_EQ(f.default_config(gemm_problem("f32", false, true, 24, 26, 63819, 4), lim).at("SPLITK"),
            256);
}

TEST(GemmSuite, MatchesTheIssue) {
  auto suite = gemm_suite();
  EXPECT_EQ(suite.size(), 14u);
  int four_ops = 0;
  for (const auto& s : suite) four_ops += s.m == 4096 && s.n == 4096 && s.k == 4096;
  EXPECT_EQ(four_ops, 4);
}

// The preset grid covers what issue 23 asks of it, every shape a valid problem of the family the
// runtime sends it to, within an H100's memory with the verified workload's reference.
TEST(GemmGrid, CoversTheSpaceTheIssueAsksFor) {
  const auto grid = gemm_grid();
  std::map<std::string, std::set<std::string>> ops;  // kind -> ops
  std::int64_t square_lo = 1 << 30, square_hi = 0, small_k_lo = 1 << 30, small_k_hi = 0,
               huge_k_hi = 0, short_side_lo = 1 << 30, short_side_hi = 0;
  int odd = 0;
  std::set<std::string> keys;
  for (const auto& g : grid) {
    const GemmShape& s = g.shape;
    const std::string kind = g.kind;
    const std::string op = std::string(s.trans_a ? "t" : "n") + (s.trans_b ? "t" : "n");
    ops[kind].insert(op);
    const std::int64_t short_side = std::min(s.m, s.n);
    EXPECT_EQ(kind == "skinny", gemm_is_skinny(s.m, s.n)) << s.m << "x" << s.n << "x" << s.k;
    if (kind == "square") {
      EXPECT_TRUE(s.m == s.n && s.n == s.k);
      square_lo = std::min(square_lo, s.m);
      square_hi = std::max(square_hi, s.m);
    }
    if (kind == "small-k") {
      small_k_lo = std::min(small_k_lo, s.k);
      small_k_hi = std::max(small_k_hi, s.k);
    }
    if (kind == "huge-k") {
      EXPECT_GE(s.k, 32768);
      huge_k_hi = std::max(huge_k_hi, s.k);
    }
    if (kind == "skinny") {
      short_side_lo = std::min(short_side_lo, short_side);
      short_side_hi = std::max(short_side_hi, short_side);
    }
    odd += s.m % 2 || s.n % 2 || s.k % 2 || s.m % 64 || s.n % 64;
    for (const char* dtype : {"f32", "f64"}) {
      const int bytes = std::string(dtype) == "f32" ? 4 : 8;
      const Problem p =
          gemm_call_problem(dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, bytes == 4 ? 4 : 2);
      EXPECT_EQ(p.family, kind == "skinny" ? "gemm_skinny" : "gemm") << p.key();
      EXPECT_NO_THROW(find_family(p.family).validate(p)) << p.key();
      EXPECT_TRUE(keys.insert(p.family + " " + p.key()).second) << "twice: " << p.key();
      // A, B and C, and the reference (two doubles per element of C), within 16 GiB.
      const double need = double(bytes) * (s.m * s.k + s.k * s.n + s.m * s.n) + 16.0 * s.m * s.n;
      EXPECT_LE(need, 16.0 * (1 << 30)) << p.key();
    }
  }
  for (const char* kind : {"square", "general", "tall-wide", "small-k", "huge-k", "skinny"})
    EXPECT_TRUE(ops.count(kind)) << kind;
  // The squares with the suite's: 256 to 16384.
  EXPECT_EQ(square_lo, 256);
  EXPECT_EQ(square_hi, 16384);
  EXPECT_EQ(small_k_lo, 16);
  EXPECT_EQ(small_k_hi, 200);  // and the suite's 4096 x 4096 x 256
  EXPECT_EQ(huge_k_hi, 1 << 20);
  EXPECT_EQ(short_side_lo, 1);
  EXPECT_GE(short_side_hi, 8);
  EXPECT_GE(odd, 10);
  // Every op in each part of the space that has more than one shape per op.
  for (const char* kind : {"general", "small-k", "huge-k", "skinny"})
    EXPECT_EQ(ops[kind].size(), 4u) << kind;
  // `--grid small`: the tiled shapes whose space holds the smallest tiles, on a GPU of 132 SMs
  // (H100, H200) 51 of them (35, the seven huge-k shapes of one side 120 to 900, and nine of the
  // fourteen shapes added where the presets stage's tails were on seeds 20262923-24), in every
  // tiled part of the grid.
  std::set<std::string> small_kinds;
  int small = 0;
  for (const auto& g : grid)
    if (std::string(g.kind) != "skinny" && gemm_smallest_tiles_apply(g.shape.m, g.shape.n, 132))
      ++small, small_kinds.insert(g.kind);
  EXPECT_EQ(small, 51);
  EXPECT_EQ(small_kinds,
            (std::set<std::string>{"square", "general", "tall-wide", "small-k", "huge-k"}));
  EXPECT_TRUE(gemm_smallest_tiles_apply(1000, 1000, 132));   // 256 tiles of 64 x 64
  EXPECT_FALSE(gemm_smallest_tiles_apply(4096, 4096, 132));  // 4096
  EXPECT_FALSE(gemm_smallest_tiles_apply(1408, 1536, 132));  // 22 x 24 = 528, four waves
  EXPECT_TRUE(gemm_smallest_tiles_apply(1408, 1472, 132));   // 22 x 23 = 506
  // `--grid CLASS`: every kind of the grid is a class of its own, `tiled` (and `small`, narrowed
  // on the GPU) every kind but skinny, `all` everything.
  std::map<std::string, int> by_kind;
  for (const auto& g : grid) ++by_kind[g.kind];
  for (const char* grid_class : kGemmGridClasses) {
    int taken = 0;
    for (const auto& g : grid) taken += gemm_grid_class_takes(grid_class, g.kind);
    const std::string c = grid_class;
    const int expected = c == "all"                     ? int(grid.size())
                         : c == "tiled" || c == "small" ? int(grid.size()) - by_kind["skinny"]
                                                        : by_kind[c];
    EXPECT_EQ(taken, expected) << c;
    EXPECT_GT(taken, 0) << c;
  }
  for (const auto& [kind, count] : by_kind)
    EXPECT_NE(std::find(std::begin(kGemmGridClasses), std::end(kGemmGridClasses), kind),
              std::end(kGemmGridClasses))
        << kind << " is no --grid class";
  EXPECT_EQ(by_kind["huge-k"], 19);
  EXPECT_FALSE(gemm_grid_class_takes("huge-k", "small-k"));
  EXPECT_FALSE(gemm_grid_class_takes("squares", "square"));
  // None of the suite's shapes again: their presets come from the suite.
  for (const auto& s : gemm_suite())
    for (const auto& g : grid)
      EXPECT_FALSE(g.shape.m == s.m && g.shape.n == s.n && g.shape.k == s.k &&
                   g.shape.trans_a == s.trans_a && g.shape.trans_b == s.trans_b);
}

// The documented distribution (docs/GEMM.md, "Random shapes for the any-shape benchmark"),
// written out again here, so that a change to the draw fails these tests.
struct Range {
  std::int64_t lo, hi;
  bool holds(std::int64_t v) const { return v >= lo && v <= hi; }
};
const std::map<std::string, double> kClassShare = {
    {"general", 0.50}, {"skinny", 0.15}, {"matvec", 0.05}, {"huge-k", 0.15}, {"small-k", 0.15}};

std::string describe(const RandomGemmShape& r) {
  return r.kind + " " + std::to_string(r.shape.m) + "x" + std::to_string(r.shape.n) + "x" +
         std::to_string(r.shape.k) + (r.capped ? " capped" : "");
}

// Each dimension in its class's range (the memory cap never takes one below it).
void expect_in_class_ranges(const RandomGemmShape& r) {
  const GemmShape& s = r.shape;
  const Range general{64, 16384}, skinny_small{1, 16}, wide{256, 16384}, matvec{1024, 16384},
      huge_k{32768, 1048576}, huge_k_mn{16, 1024}, small_k{16, 256};
  if (r.kind == "general") {
    EXPECT_TRUE(general.holds(s.m) && general.holds(s.n) && general.holds(s.k)) << describe(r);
  } else if (r.kind == "skinny") {
    EXPECT_TRUE((skinny_small.holds(s.m) && wide.holds(s.n)) ||
                (skinny_small.holds(s.n) && wide.holds(s.m)))
        << describe(r);
    EXPECT_TRUE(wide.holds(s.k)) << describe(r);
  } else if (r.kind == "matvec") {
    EXPECT_TRUE((s.m == 1 && matvec.holds(s.n)) || (s.n == 1 && matvec.holds(s.m))) << describe(r);
    EXPECT_TRUE(matvec.holds(s.k)) << describe(r);
  } else if (r.kind == "huge-k") {
    EXPECT_TRUE(huge_k_mn.holds(s.m) && huge_k_mn.holds(s.n) && huge_k.holds(s.k)) << describe(r);
  } else if (r.kind == "small-k") {
    EXPECT_TRUE(wide.holds(s.m) && wide.holds(s.n) && small_k.holds(s.k)) << describe(r);
  } else {
    ADD_FAILURE() << "unknown class " << describe(r);
  }
}

bool same(const std::vector<RandomGemmShape>& a, const std::vector<RandomGemmShape>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const GemmShape &x = a[i].shape, &y = b[i].shape;
    if (x.m != y.m || x.n != y.n || x.k != y.k || x.trans_a != y.trans_a ||
        x.trans_b != y.trans_b || a[i].kind != b[i].kind || a[i].capped != b[i].capped)
      return false;
  }
  return true;
}

TEST(GemmRandomShapes, ASeedDrawsTheSameShapesAndOtherSeedsOthers) {
  const auto a = gemm_random_shapes(200, 7, 4);
  EXPECT_EQ(a.size(), 200u);
  EXPECT_TRUE(same(a, gemm_random_shapes(200, 7, 4)));
  // A shorter draw is the start of a longer one: shape i does not depend on how many follow.
  EXPECT_TRUE(
      same(gemm_random_shapes(50, 7, 4), std::vector<RandomGemmShape>(a.begin(), a.begin() + 50)));
  for (std::uint64_t other : {0ull, 1ull, 8ull, 0xffffffffffffffffull})
    EXPECT_FALSE(same(a, gemm_random_shapes(200, other, 4))) << "seed " << other;
  EXPECT_TRUE(gemm_random_shapes(0, 7, 4).empty());
}

// The transform is integers only, so these shapes are what seed 1 draws on any machine; a change
// here breaks the repetition of every recorded run (a CSV's seed column). Checked against a
// separate implementation (Python: mt19937_64 from its definition, 2^x in 50-digit decimals).
TEST(GemmRandomShapes, SeedOneDrawsTheRecordedShapes) {
  const auto drawn = gemm_random_shapes(6, 1, 4);
  std::string got;
  for (const auto& r : drawn)
    got += std::string(r.shape.trans_a ? "t" : "n") + (r.shape.trans_b ? "t" : "n") + " " +
           describe(r) + "\n";
  EXPECT_EQ(got,
            "nn skinny 1x1211x2219\n"
            "nn matvec 6380x1x1346\n"
            "tt huge-k 197x538x755016\n"
            "nt general 3738x68x845\n"
            "tt small-k 374x1629x83\n"
            "tt huge-k 24x409x76016\n");
}

TEST(GemmRandomShapes, ClassAndOpSharesFollowTheDocumentedDistribution) {
  constexpr int kDraws = 4000;
  const auto drawn = gemm_random_shapes(kDraws, 2026, 4);
  std::map<std::string, int> classes, ops;
  int general_m_below_1024 = 0, general = 0, huge_k_m_below_128 = 0, huge_k = 0;
  for (const auto& r : drawn) {
    ++classes[r.kind];
    ++ops[std::string(r.shape.trans_a ? "t" : "n") + (r.shape.trans_b ? "t" : "n")];
    if (r.kind == "general") {
      ++general;
      general_m_below_1024 += r.shape.m < 1024;
    }
    if (r.kind == "huge-k") {
      ++huge_k;
      huge_k_m_below_128 += r.shape.m < 128;
    }
  }
  // Binomial standard deviations: 4.5 of them is far outside chance for a fixed seed, and well
  // inside what a wrong threshold (a class's share off by 5 points) would move.
  auto near = [](int count, int of, double share) {
    const double sd = std::sqrt(share * (1 - share) / of);
    return std::abs(static_cast<double>(count) / of - share) < 4.5 * sd;
  };
  EXPECT_EQ(classes.size(), kClassShare.size());
  for (const auto& [kind, share] : kClassShare)
    EXPECT_TRUE(near(classes[kind], kDraws, share))
        << kind << ": " << classes[kind] << " of " << kDraws << ", documented " << share;
  EXPECT_EQ(ops.size(), 4u);
  for (const char* op : {"nn", "nt", "tn", "tt"})
    EXPECT_TRUE(near(ops[op], kDraws, 0.25)) << op << ": " << ops[op] << " of " << kDraws;
  // Log-uniform, not uniform: half of [64, 16384]'s octaves lie below 1024 (a uniform draw would
  // put 6% there), half of [16, 1024]'s below 128 (uniform: 11%). f32 caps neither dimension.
  EXPECT_TRUE(near(general_m_below_1024, general, 0.5))
      << general_m_below_1024 << " of " << general;
  EXPECT_TRUE(near(huge_k_m_below_128, huge_k, 0.5)) << huge_k_m_below_128 << " of " << huge_k;
}

TEST(GemmRandomShapes, EveryDimensionInItsRangeAndTheMemoryCapHolds) {
  for (int bytes : {2, 4, 8}) {
    int capped = 0, matvec_n = 0, matvec_m = 0, small_m = 0, small_n = 0;
    for (const auto& r : gemm_random_shapes(3000, 99, bytes)) {
      expect_in_class_ranges(r);
      const GemmShape& s = r.shape;
      const std::int64_t need = (s.m * s.k + s.k * s.n + s.m * s.n) * bytes;
      EXPECT_LE(need, kRandomGemmMaxBytes) << describe(r) << ", " << bytes << " bytes";
      if (r.capped) {
        ++capped;
        // Scaled down no further than needed: one more of the largest dimension would not fit.
        std::int64_t m = s.m, n = s.n, k = s.k;
        std::int64_t& largest = m >= n && m >= k ? m : n >= k ? n : k;
        ++largest;
        EXPECT_GT((m * k + k * n + m * n) * bytes, kRandomGemmMaxBytes) << describe(r);
      }
      matvec_n += r.kind == "matvec" && s.n == 1;
      matvec_m += r.kind == "matvec" && s.m == 1;
      small_m += r.kind == "skinny" && s.m <= 16;
      small_n += r.kind == "skinny" && s.n <= 16;
    }
    // Both sides of the skinny and matrix-vector classes occur.
    EXPECT_GT(matvec_n, 0);
    EXPECT_GT(matvec_m, 0);
    EXPECT_GT(small_m, 0);
    EXPECT_GT(small_n, 0);
    // Huge-k shapes of large m + n and k pass 3 GiB in f32 and f64; f64 general shapes too. In
    // 2-byte elements only a huge-k shape near every upper end would (none among these 3000).
    if (bytes >= 4) {
      EXPECT_GT(capped, 0) << bytes << " bytes";
    }
  }
  // The low ends of the ranges occur: 1 in the skinny class (a quarter of its small dimensions)
  // and 64 in the general one (about 0.3% of its dimensions).
  bool skinny_one = false, general_64 = false;
  for (const auto& r : gemm_random_shapes(3000, 5, 4)) {
    skinny_one |= r.kind == "skinny" && (r.shape.m == 1 || r.shape.n == 1);
    general_64 |= r.kind == "general" && (r.shape.m == 64 || r.shape.n == 64 || r.shape.k == 64);
  }
  EXPECT_TRUE(skinny_one);
  EXPECT_TRUE(general_64);
}

// Elements of 2 (bf16, fp16), 4 (f32, tf32) or 8 bytes (f64).
TEST(GemmRandomShapes, ElementsOfTwoFourOrEightBytes) {
  EXPECT_THROW(gemm_random_shapes(1, 1, 1), Error);
  EXPECT_THROW(gemm_random_shapes(1, 1, 16), Error);
  EXPECT_EQ(gemm_random_shapes(3, 1, 2).size(), 3u);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// The workloads' reference splits k where C has fewer 64 x 64 tiles than four blocks an SM: every
// split at least 256 deep and a multiple of 16, the splits covering k exactly once.
TEST(GemmReference, SplitsKWhereTheOutputHasFewTiles) {
  const GemmReferenceSplit huge = gemm_reference_split_plan(122, 171, 992628, 132);
  EXPECT_EQ(huge.splits, 88);  // 6 tiles: 528 blocks
  EXPECT_EQ(huge.k_per_split, 11280);
  const GemmReferenceSplit big = gemm_reference_split_plan(16258, 13353, 8352, 132);
  EXPECT_EQ(big.splits, 1);  // 53295 tiles
  EXPECT_EQ(big.k_per_split, 8352);
  EXPECT_EQ(gemm_reference_split_plan(64, 64, 300, 132).splits, 1);  // one split of 256 at most
  EXPECT_EQ(gemm_reference_split_plan(64, 64, 512, 132).splits, 2);
  for (const std::int64_t m : {1, 17, 64, 65, 700, 3000, 20000})
    for (const std::int64_t n : {1, 5, 64, 300, 9000})
      for (const std::int64_t k : {0, 1, 15, 16, 255, 257, 4096, 65537, 1048576}) {
        const GemmReferenceSplit s = gemm_reference_split_plan(m, n, k, 132);
        const std::int64_t depth = std::max<std::int64_t>(1, k);
        SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
        ASSERT_GE(s.splits, 1);
        EXPECT_LE(s.splits, 65535);
        EXPECT_EQ(s.k_per_split % 16, 0);
        EXPECT_LT(static_cast<std::int64_t>(s.splits - 1) * s.k_per_split, depth);
        EXPECT_GE(static_cast<std::int64_t>(s.splits) * s.k_per_split, depth);
        if (s.splits > 1) {
          EXPECT_GE(s.k_per_split, 256);
        }
        const std::int64_t tiles = ((m + 63) / 64) * ((n + 63) / 64);
        if (tiles >= 4 * 132) {
          EXPECT_EQ(s.splits, 1);
        }
      }
}

// Its own source, compiled (real NVRTC) for every type, op and architecture the GEMM workloads
// run on, without local memory, and outside gemm's hashed sources: the tuned results do not
// depend on it.
TEST(GemmReference, CompilesForEveryTypeOpAndArchitectureAndStaysOutOfTheTemplateHash) {
  for (const char* arch : {"sm_80", "sm_90"})
    for (const char* type : {"float", "double"})
      for (const bool ta : {false, true})
        for (const bool tb : {false, true}) {
          const CompileRequest r = gemm_reference_request(type, ta, tb, arch);
          SCOPED_TRACE(r.name_expressions.front() + " " + arch);
          CompileResult out;
          ASSERT_NO_THROW(out = compile(r));
          ASSERT_EQ(out.resources.size(), 1u);
          EXPECT_EQ(local_memory_reason(out.resources[0]), "");
        }
  const Family& gemm = find_family("gemm");
  const Problem p = gemm.default_problems().front();
  const CompileRequest r =
      gemm.compile_request(gemm.default_config(p, DeviceLimits::for_arch(9, 0)), p, "sm_90");
  EXPECT_EQ(r.source.find("gemm_reference_split"), std::string::npos);
  for (const auto& [name, text] : r.headers) EXPECT_NE(name, "gemm_reference.cuh");
}

// The GEMM workloads' kept reference (gemm.hpp), driven here by a reference and a comparison of
// plain values standing in for the device buffers (on a GPU:
// GemmGpu.AReferenceIsMadeOncePerSeedAndAgainWhereItSaysWrong):
// made once per seed, made again where it says wrong, never kept from a make() that threw.
TEST(KeptReference, MadeOncePerSeedAndAgainWhereItSaysWrong) {
  KeptReference kept;
  int inputs = 0;      // what prepare() filled A and B with (the seed's values)
  int reference = -1;  // what the reference was made from
  int result = 0;      // what the candidate wrote to C
  auto make = [&] { reference = inputs; };
  auto compare = [&] { return result == reference ? std::string() : std::string("wrong"); };
  auto prepare = [&](std::uint64_t seed) {
    inputs = static_cast<int>(seed) * 10;
    result = -7;  // C poisoned
    kept.prepared(seed);
  };
  prepare(1);
  result = inputs;  // a right candidate
  EXPECT_EQ(kept.verify(make, compare), "");
  EXPECT_EQ(kept.made(), 1u);
  prepare(1);
  result = inputs;
  EXPECT_EQ(kept.verify(make, compare), "");
  EXPECT_EQ(kept.made(), 1u);  // kept
  prepare(1);                  // not run: wrong, made again, still wrong
  EXPECT_EQ(kept.verify(make, compare), "wrong");
  EXPECT_EQ(kept.made(), 2u);
  // The kept reference overwritten (a candidate's stray write): a right candidate passes.
  prepare(1);
  reference = 12345;
  result = inputs;
  EXPECT_EQ(kept.verify(make, compare), "");
  EXPECT_EQ(kept.made(), 3u);
  // Another seed: made for it.
  prepare(2);
  result = inputs;
  EXPECT_EQ(kept.verify(make, compare), "");
  EXPECT_EQ(kept.made(), 4u);
  // A make() that throws keeps nothing: the next verify makes it.
  prepare(3);
  result = inputs;
  EXPECT_THROW(kept.verify([] { throw Error(ErrorCode::kCuda, "launch"); }, compare), Error);
  EXPECT_EQ(kept.verify(make, compare), "");
  EXPECT_EQ(kept.made(), 5u);
  // Nothing prepared yet: never taken as kept.
  KeptReference fresh;
  reference = inputs = 99, result = 99;
  EXPECT_EQ(fresh.verify(make, compare), "");
  EXPECT_EQ(fresh.verify(make, compare), "");
  EXPECT_EQ(fresh.made(), 2u);
}

}  // namespace
}  // namespace ktune
