// Host tests of the tensor-core GEMM families (gemm_tc, bf16 / f16 / tf32, and its mma.sync
// fallback gemm_tc80): their problems and their checks, the spaces' constraints against the device
// limits, the default for every problem, the tolerance of the verification, which family a GPU
// runs, and real NVRTC compiles for sm_90a (wgmma, TMA, clusters), sm_80 and sm_89 without spills.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "families/family.hpp"
#include "families/gemm/gemm_tc.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

const DeviceLimits kH100 = DeviceLimits::for_arch(9, 0);

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string rejection(const Problem& p) {
  try {
    find_family("gemm_tc").validate(p);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return {};
}

TEST(GemmTc, ProblemsTakeSixteenBitInputsOfEveryOpAndTf32KContiguous) {
  EXPECT_EQ(rejection(gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8)), "");
  EXPECT_EQ(rejection(gemm_tc_problem("f16", "f32", true, false, 1, 1, 1, 8)), "");
  EXPECT_EQ(rejection(gemm_tc_problem("tf32", "f32", true, false, 100, 200, 300, 4)), "");
  // tf32: float out, 16 bytes = 4 elements of alignment.
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("tf32", "bf16", true, false, 64, 64, 64, 4)),
                       "out must be f32 for tf32"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("tf32", "tf32", true, false, 64, 64, 64, 4)),
                       "out must be f32 for tf32"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("tf32", "f32", true, false, 64, 64, 64, 8)),
                       "align must be 4 elements of tf32"));
  // Every op for 16-bit types (MN-major operands); tf32 is k-major only.
  EXPECT_EQ(rejection(gemm_tc_problem("bf16", "bf16", false, false, 64, 64, 64, 8)), "");
  EXPECT_EQ(rejection(gemm_tc_problem("f16", "f32", false, true, 64, 64, 64, 8)), "");
  EXPECT_EQ(rejection(gemm_tc_problem("bf16", "f32", true, true, 64, 64, 64, 8)), "");
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("tf32", "f32", false, false, 64, 64, 64, 4)),
                       "op must be tn for tf32"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("f32", "f32", true, false, 64, 64, 64, 8)),
                       "dtype must be bf16, f16 or tf32"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("bf16", "f16", true, false, 64, 64, 64, 8)),
                       "out must be f32 or the input dtype"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("bf16", "bf16", true, false, 64, 64, 64, 4)),
                       "align must be 8 elements of bf16"));
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("bf16", "bf16", true, false, 0, 64, 64, 8)),
                       "m must be in"));
  // ktune tune gemm_tc --dtype tf32: out and align follow dtype unless given.
  const Family& f = find_family("gemm_tc");
  Problem p = f.default_problems().front();
  p.attrs["dtype"] = "tf32";
  f.complete_problem(p, {"dtype"});
  EXPECT_EQ(p.attr("out"), "f32");
  EXPECT_EQ(p.size("align"), 4);
  EXPECT_EQ(rejection(p), "");
  p.attrs["dtype"] = "f16";
  p.attrs["out"] = "f32";
  f.complete_problem(p, {"dtype", "out"});
  EXPECT_EQ(p.attr("out"), "f32");
  EXPECT_EQ(p.size("align"), 8);
  // A strided batch is the batch axis; a key written before it had none (one matrix).
  EXPECT_EQ(rejection(gemm_tc_problem("bf16", "bf16", true, false, 64, 64, 64, 8, 16)), "");
  EXPECT_TRUE(contains(rejection(gemm_tc_problem("bf16", "bf16", true, false, 64, 64, 64, 8, 0)),
                       "batch must be in"));
  EXPECT_EQ(gemm_tc_problem("bf16", "bf16", true, false, 64, 64, 64, 8, 16).key(),
            "align=8;batch=16;dtype=bf16;k=64;m=64;n=64;op=tn;out=bf16");
  EXPECT_NO_THROW(f.parse_problem("align=8;dtype=bf16;k=64;m=64;n=64;op=tn;out=bf16"));
  EXPECT_DOUBLE_EQ(*f.work_of(gemm_tc_problem("f16", "f32", true, false, 10, 20, 30, 8, 4), kH100),
                   2.0 * 10 * 20 * 30 * 4);
  // A key from a database or a caller is parsed and checked the same way.
  EXPECT_THROW(find_family("gemm_tc").parse_problem(
                   "align=8;dtype=bf16;k=64;m=64;n=64;op=tn;out=bf16;extra=1"),
               Error);
}

TEST(GemmTc, ConstraintsKeepEveryConfigWithinTheDeviceLimits) {
  const Family& f = find_family("gemm_tc");
  for (const Problem& p : {gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8),
                           gemm_tc_problem("f16", "f32", true, false, 100, 3000, 70, 8),
                           gemm_tc_problem("bf16", "f32", true, false, 8192, 64, 64, 8),
                           gemm_tc_problem("tf32", "f32", true, false, 3000, 2000, 100, 4)}) {
    SearchSpace space(f, p, kH100);
    ASSERT_GT(space.size(), 0u) << p.key();
    for (const Config& c : space.configs()) {
      const std::int64_t bm = c.at("WM") * (c.at("PINGPONG") ? 1 : c.at("CONSUMERS")),
                         bn = c.at("BN");
      if (c.at("PINGPONG")) {
        EXPECT_EQ(c.at("CONSUMERS"), 2) << to_string(c);
      }
      // 128 bytes of k a stage row; EPI: two buffers of WM rows of 128 bytes per consumer.
      const std::int64_t smem = c.at("STAGES") * (bm + bn) * 128 + 1024 +
                                (c.at("EPI") ? c.at("CONSUMERS") * 2 * c.at("WM") * 128 : 0);
      EXPECT_LE(smem, kH100.smem_per_block_optin) << to_string(c);
      EXPECT_LE(c.at("WM") / 64 * bn, 256) << "accumulators: " << to_string(c);
      EXPECT_EQ(f.block_threads(c, p), (c.at("CONSUMERS") + 1) * 128);
    }
  }
  // One tile row: no cluster pair and no rasterisation group.
  const Problem flat = gemm_tc_problem("bf16", "bf16", true, false, 4096, 64, 4096, 8);
  Config c = f.default_config(flat, kH100);
  c["CLUSTER"] = 2;
  EXPECT_TRUE(contains(f.reject(c, flat, kH100), "cluster needs two tile rows"));
  c = f.default_config(flat, kH100);
  c["GROUP"] = 16;
  EXPECT_TRUE(contains(f.reject(c, flat, kH100), "GROUP taller than the grid"));
  // A cluster's half of an MN-major Y (op_a = N) is whole 64-column boxes: BN 128 or 256.
  const Problem nn = gemm_tc_problem("bf16", "bf16", false, false, 4096, 4096, 4096, 8);
  c = f.default_config(nn, kH100);
  c["CLUSTER"] = 2, c["BN"] = 192;
  EXPECT_TRUE(contains(f.reject(c, nn, kH100), "MN-major Y"));
  c["BN"] = 128;
  EXPECT_EQ(f.reject(c, nn, kH100), "");
  // The persistent grid walks the tiles of every matrix of a batch: 8 tiles of 1024^2, 64 of them.
  const Problem one = gemm_tc_problem("bf16", "bf16", true, false, 1024, 1024, 1024, 8);
  const Problem many = gemm_tc_problem("bf16", "bf16", true, false, 1024, 1024, 1024, 8, 64);
  c = f.default_config(one, kH100);
  c["PERSIST"] = 1;
  EXPECT_TRUE(contains(f.reject(c, one, kH100), "nothing to walk"));
  EXPECT_EQ(f.reject(c, many, kH100), "");
  // Too deep a pipeline for the shared memory, and a GPU without wgmma.
  c = f.default_config(flat, kH100);
  c["BN"] = 256, c["WM"] = 64, c["STAGES"] = 6;
  EXPECT_TRUE(contains(
      f.reject(c, gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8), kH100),
      "shared memory"));
  EXPECT_TRUE(contains(f.reject(f.default_config(flat, kH100), flat, DeviceLimits::for_arch(8, 0)),
                       "needs sm_90"));
}

// EPI: the epilogue through shared memory and the TMA. Its buffers count in the shared memory
// (the usual 128 x 256 tile keeps its four stages; turns on 64 x 256 tiles lose their fifth), a
// split k stores directly (refused, and dropped by adapt where a split is chosen), and a call's C
// is stored by the TMA only where beta is 0 and its address, rows, matrices and row length are
// whole 16 bytes.
TEST(GemmTc, EpilogueThroughTheTmaWhereSharedMemoryAndCAllowIt) {
  const Family& f = find_family("gemm_tc");
  const Problem big = gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8);
  Config c = f.default_config(big, kH100);
  ASSERT_EQ(c.at("BN"), 256);
  ASSERT_EQ(c.at("STAGES"), 4);
  c["EPI"] = 1;
  EXPECT_EQ(f.reject(c, big, kH100), "");  // 4 x 48 KiB + 32 KiB + 1 KiB
  // Turns (64 x 256 a consumer): five stages of 40 KiB fit, and not with EPI's 32 KiB.
  c["PINGPONG"] = 1, c["STAGES"] = 5, c["EPI"] = 0;
  EXPECT_EQ(f.reject(c, big, kH100), "");
  c["EPI"] = 1;
  EXPECT_EQ(f.reject(c, big, kH100), "more shared memory than a block may have");
  // Few tiles and a long k: a split, and no EPI with it.
  const Problem deep = gemm_tc_problem("bf16", "bf16", true, false, 256, 512, 65536, 8);
  Config split = f.default_config(deep, kH100);
  ASSERT_GT(split.at("SPLITK"), 1);
  split["EPI"] = 1;
  EXPECT_TRUE(contains(f.reject(split, deep, kH100), "EPI"));
  Config tuned = f.default_config(big, kH100);
  tuned["EPI"] = 1;
  const Config adapted = f.adapt(tuned, deep, kH100);
  EXPECT_GT(adapted.at("SPLITK"), 1);
  EXPECT_EQ(adapted.at("EPI"), 0);
  EXPECT_EQ(f.reject(adapted, deep, kH100), "");
  EXPECT_EQ(f.adapt(tuned, big, kH100).at("EPI"), 1);  // its own problem: kept

  // The call: C of m = 1000 bf16 (2000 bytes a row) at a 256-aligned address, ldc 1008.
  Config epi = f.default_config(big, kH100);
  epi["EPI"] = 1;
  TcCall call;
  call.dtype = "bf16", call.out = "bf16";
  call.m = 1000, call.n = 3000, call.k = 520;
  call.c = reinterpret_cast<void*>(std::uintptr_t{1} << 20);
  call.ldc = 1008;
  EXPECT_TRUE(gemm_tc_tma_store(epi, call));
  EXPECT_FALSE(gemm_tc_tma_store(f.default_config(big, kH100), call));  // EPI = 0
  TcCall other = call;
  other.beta = 0.5f;  // C read: the registers' path
  EXPECT_FALSE(gemm_tc_tma_store(epi, other));
  other = call;
  other.ldc = 1001;  // rows 2002 bytes apart
  EXPECT_FALSE(gemm_tc_tma_store(epi, other));
  other = call;
  other.m = 999, other.ldc = 1008;  // rows of 1998 bytes
  EXPECT_FALSE(gemm_tc_tma_store(epi, other));
  other = call;
  other.c = reinterpret_cast<void*>((std::uintptr_t{1} << 20) + 8);
  EXPECT_FALSE(gemm_tc_tma_store(epi, other));
  other = call;
  other.out = "f32", other.m = 1004, other.ldc = 1008;  // 4016 bytes: f32 rows of 4 x 1004
  EXPECT_TRUE(gemm_tc_tma_store(epi, other));
  other = call;
  other.batch = 3, other.stride_c = 1008 * 3000 + 4;  // matrices 8 bytes off 16
  EXPECT_FALSE(gemm_tc_tma_store(epi, other));
  other.stride_c = 1008 * 3000 + 8;
  EXPECT_TRUE(gemm_tc_tma_store(epi, other));
}

TEST(GemmTc, DefaultIsValidForEveryProblemShape) {
  const Family& f = find_family("gemm_tc");
  for (std::int64_t m : {1, 63, 4096})
    for (std::int64_t n : {1, 200, 8192})
      for (std::int64_t k : {1, 100, 1 << 20})
        for (const Problem& p : {gemm_tc_problem("bf16", "f32", true, false, m, n, k, 8),
                                 gemm_tc_problem("tf32", "f32", true, false, m, n, k, 4)}) {
          const Config c = f.default_config(p, kH100);
          EXPECT_NO_THROW(f.check_config(c));
          EXPECT_EQ(f.reject(c, p, kH100), "") << p.key();
        }
}

TEST(GemmTc, ToleranceCatchesOneLostProductAtUsualK) {
  // The output's rounding for the 16-bit outputs; none for f32.
  EXPECT_DOUBLE_EQ(gemm_tc_tolerance("bf16", "bf16", 1).rel, 1.0 / 256);
  EXPECT_DOUBLE_EQ(gemm_tc_tolerance("f16", "f16", 1).rel, 1.0 / 2048);
  EXPECT_DOUBLE_EQ(gemm_tc_tolerance("bf16", "f32", 1).rel, 0.0);
  EXPECT_DOUBLE_EQ(gemm_tc_tolerance("tf32", "f32", 1).rel, 0.0);
  // The accumulation term grows like sqrt(k).
  EXPECT_NEAR(gemm_tc_tolerance("f16", "f32", 4096).acc / gemm_tc_tolerance("f16", "f32", 1024).acc,
              2.0, 1e-12);
  // Floats that tf32 does not hold lose up to 2^-10 of each factor: 2^-9 of each product's
  // magnitude, and a little more; arrays of 16-bit types hold what is multiplied.
  EXPECT_EQ(gemm_tc_tolerance("bf16", "f32", 64).input, 0.0);
  const double in = gemm_tc_tolerance("tf32", "f32", 64).input;
  EXPECT_GE(in, (1 + std::ldexp(1.0, -10)) * (1 + std::ldexp(1.0, -10)) - 1);
  EXPECT_LT(in, std::ldexp(1.0, -8));
  // Uniform inputs in [-1, 1): |a b| averages 1/4, so absref is about k / 4. A product lost (or
  // counted twice) moves the sum by about 1/4: more than the tolerance up to k = 8192.
  for (std::int64_t k : {64, 4096, 8192}) {
    const TcTolerance t = gemm_tc_tolerance("tf32", "f32", k);
    EXPECT_LT(t.acc * static_cast<double>(k) / 4, 0.25) << "k = " << k;
  }
  // The fp32 accumulation of exact products: one rounding of the sum (2^-24 relative) fits.
  const TcTolerance t = gemm_tc_tolerance("bf16", "f32", 1);
  EXPECT_GT(t.acc, std::ldexp(1.0, -24));
}

TEST(GemmTc, WgmmaWrappersCoverEveryTileWidth) {
  const std::string h = gemm_tc_wgmma_header();
  for (const char* n : {"m64n64k16", "m64n128k16", "m64n192k16", "m64n256k16"}) {
    EXPECT_TRUE(contains(h, std::string(n) + ".f32.bf16.bf16")) << n;
    EXPECT_TRUE(contains(h, std::string(n) + ".f32.f16.f16")) << n;
  }
  for (const char* n : {"m64n64k8", "m64n128k8", "m64n192k8", "m64n256k8"})
    EXPECT_TRUE(contains(h, std::string(n) + ".f32.tf32.tf32")) << n;
  // m64n256k16 takes 128 accumulators, the two descriptors, the scale flag (%130), then the
  // operands' transpositions as immediates.
  EXPECT_TRUE(contains(h, "%127}, %128, %129, p, 1, 1, %131, %132;"));
  EXPECT_TRUE(contains(h, "\"n\"(TA), \"n\"(TB)"));
  // tf32 takes no transposition immediates (k-major only).
  EXPECT_TRUE(contains(h, "%127}, %128, %129, p, 1, 1;"));
}

TEST(GemmTc, KernelsCompileForSm90aWithoutSpills) {
  const Family& f = find_family("gemm_tc");
  const Problem p16 = gemm_tc_problem("f16", "f32", true, false, 4000, 3000, 520, 8);
  std::vector<Config> configs = {f.default_config(p16, kH100)};
  Config big = configs.front();
  big["BN"] = 256, big["STAGES"] = 4, big["CLUSTER"] = 2, big["PERSIST"] = 1;
  configs.push_back(big);
  Config turns = configs.front();
  turns["PINGPONG"] = 1, turns["WM"] = 128, turns["BN"] = 128, turns["CLUSTER"] = 2;  // Y_PART 64
  configs.push_back(turns);
  Config one = configs.front();
  one["CONSUMERS"] = 1, one["WM"] = 128, one["BN"] = 128;
  configs.push_back(one);
  const Problem tf32 = gemm_tc_problem("tf32", "f32", true, false, 4000, 3000, 520, 4);
  const Problem nt = gemm_tc_problem("bf16", "bf16", false, true, 4000, 3000, 520, 8);
  for (std::size_t i = 0; i < configs.size() + 4; ++i) {
    // Every configuration for f16 (tn); the default and the cluster of consumers taking turns for
    // tf32, and for bf16 with both operands MN-major (nt).
    const std::size_t j = i - configs.size();
    const Config& c = configs[i < configs.size() ? i : (j % 2) * 2];
    const Problem& p = i < configs.size() ? p16 : j < 2 ? tf32 : nt;
    ASSERT_EQ(f.reject(c, p, kH100), "") << to_string(c);
    const CompileRequest r = f.compile_request(c, p, "sm_90");
    EXPECT_EQ(r.arch, "sm_90a");  // wgmma and setmaxnreg need the architecture-specific target
    CompileResult out;
    ASSERT_NO_THROW(out = compile(r)) << to_string(c);
    ASSERT_EQ(out.resources.size(), 1u);
    EXPECT_EQ(local_memory_reason(out.resources[0]), "") << to_string(c) << " " << p.key();
    EXPECT_EQ(f.reject_compiled(c, p, kH100, out.resources[0]), "");
  }
}

// Split k: only where the tiles leave the GPU idle and each run keeps 4 k-tiles or more; the
// untuned answers (the default, and a winner of another shape adapted) split a long k over few
// tiles, and keep a tuned winner's valid split on its own problem.
TEST(GemmTc, SplitKServesFewTilesWithALongK) {
  const Family& f = find_family("gemm_tc");
  const Problem square = gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8);
  Config c = f.default_config(square, kH100);
  EXPECT_EQ(c.at("SPLITK"), 1);
  c["SPLITK"] = 2;
  EXPECT_TRUE(contains(f.reject(c, square, kH100), "enough tiles without splitting k"));
  // 1024 x 1024: 32 tiles of 128 x 256; k = 256 is 4 k-tiles of 64: no run of 4 in 2 splits.
  const Problem short_k = gemm_tc_problem("bf16", "bf16", true, false, 1024, 1024, 256, 8);
  c = f.default_config(short_k, kH100);
  EXPECT_EQ(c.at("SPLITK"), 1);
  c["SPLITK"] = 2;
  EXPECT_TRUE(contains(f.reject(c, short_k, kH100), "shorter than 4 k-tiles"));
  // 32 tiles in 128 runs: 4096 units, more than 4 waves of 132 SMs.
  const Problem long_k = gemm_tc_problem("bf16", "bf16", true, false, 1024, 1024, 65536, 8);
  c = f.default_config(long_k, kH100);
  c["SPLITK"] = 128;
  EXPECT_TRUE(contains(f.reject(c, long_k, kH100), "more runs of k than the GPU can use"));
  // The default splits a long k over few tiles: 512 x 16 x 500000 is one tile.
  for (const Problem& p : {long_k, gemm_tc_problem("bf16", "f32", true, false, 512, 16, 500000, 8),
                           gemm_tc_problem("tf32", "f32", true, false, 96, 735, 100000, 4),
                           gemm_tc_problem("f16", "f16", false, true, 300, 700, 40000, 8, 3)}) {
    const Config d = f.default_config(p, kH100);
    EXPECT_GE(d.at("SPLITK"), 4) << p.key();
    EXPECT_EQ(f.reject(d, p, kH100), "") << p.key();
  }
  // The winner of 1024^3 (no split; a persistent grid of pairs) on the long k: split, and the
  // persistent grid kept where the runs give it units to walk.
  const Problem cube = gemm_tc_problem("bf16", "bf16", true, false, 1024, 1024, 1024, 8);
  Config winner = f.default_config(cube, kH100);
  winner["BN"] = 128, winner["CLUSTER"] = 2, winner["GROUP"] = 1;
  ASSERT_EQ(f.reject(winner, cube, kH100), "");
  EXPECT_EQ(f.adapt(winner, cube, kH100), winner);  // on its own problem: as tuned
  const Config adapted = f.adapt(winner, long_k, kH100);
  EXPECT_GE(adapted.at("SPLITK"), 2);
  EXPECT_EQ(adapted.at("BN"), 128);
  EXPECT_EQ(f.reject(adapted, long_k, kH100), "");
  // A tuned split that fits its problem stays; one that does not is chosen afresh.
  Config split8 = f.default_config(long_k, kH100);
  split8["SPLITK"] = 8;
  ASSERT_EQ(f.reject(split8, long_k, kH100), "");
  EXPECT_EQ(f.adapt(split8, long_k, kH100), split8);
  const Config on_short = f.adapt(split8, short_k, kH100);
  EXPECT_EQ(on_short.at("SPLITK"), 1);
  EXPECT_EQ(f.reject(on_short, short_k, kH100), "");
  // A tile twice as wide or tall as the problem is narrowed to it (C^T is the kernel's D: its
  // rows are C's columns): 27 x 25 in one 64 x 64 tile of one consumer; 26 x 574 (D 574 x 26) in
  // tiles 64 wide of two consumers of 64 rows.
  const Problem tiny = gemm_tc_problem("tf32", "f32", true, false, 27, 25, 98980, 4);
  const Config t = f.default_config(tiny, kH100);
  EXPECT_EQ(t.at("BN"), 64);
  EXPECT_EQ(t.at("WM"), 64);
  EXPECT_EQ(t.at("CONSUMERS"), 1);
  EXPECT_GT(t.at("SPLITK"), 1);
  EXPECT_EQ(f.reject(t, tiny, kH100), "");
  const Problem narrow = gemm_tc_problem("tf32", "f32", true, false, 26, 574, 943451, 4);
  const Config w = f.adapt(winner, narrow, kH100);
  EXPECT_EQ(w.at("BN"), 64);
  EXPECT_EQ(w.at("WM") * w.at("CONSUMERS"), 128);
  EXPECT_EQ(f.reject(w, narrow, kH100), "");
  EXPECT_EQ(f.adapt(f.default_config(square, kH100), square, kH100),
            f.default_config(square, kH100));  // a tile the problem fills is kept
  // A stored configuration from before SPLITK existed reads as unsplit.
  Config old = winner;
  old.erase("SPLITK");
  EXPECT_EQ(f.normalize(old).at("SPLITK"), 1);
}

// The split kernels: partial sums in f32 whatever C is, then the sum of the runs (a second
// function of the module) into C of the problem's type.
TEST(GemmTc, SplitKernelsCompileForSm90aWithoutSpills) {
  const Family& f = find_family("gemm_tc");
  for (const Problem& p : {gemm_tc_problem("bf16", "bf16", true, false, 256, 512, 65536, 8),
                           gemm_tc_problem("tf32", "f32", true, false, 256, 512, 65536, 4),
                           gemm_tc_problem("f16", "f16", false, true, 256, 512, 65536, 8, 2)}) {
    Config c = f.default_config(p, kH100);
    ASSERT_GT(c.at("SPLITK"), 1) << p.key();
    const std::vector<std::string> names = f.name_expressions(c, p);
    ASSERT_EQ(names.size(), 2u);
    EXPECT_TRUE(contains(names[0], "ktune::tc::gemm_tc<" +
                                       std::string(p.attr("dtype") == "tf32"   ? "2"
                                                   : p.attr("dtype") == "bf16" ? "0"
                                                                               : "1") +
                                       ", 0, "))
        << names[0];
    EXPECT_EQ(names[1], "ktune::tc::tc_splitk_reduce<" +
                            std::string(p.attr("out") == "f32"    ? "0"
                                        : p.attr("out") == "bf16" ? "1"
                                                                  : "2") +
                            ">");
    CompileResult out;
    ASSERT_NO_THROW(out = compile(f.compile_request(c, p, "sm_90"))) << p.key();
    ASSERT_EQ(out.resources.size(), 2u);
    for (const auto& r : out.resources)
      EXPECT_EQ(local_memory_reason(r), "")
          << p.key() << " " << r.mangled_name << " " << r.registers << " " << to_string(c);
    EXPECT_EQ(f.reject_compiled(c, p, kH100, out.resources[0]), "");
  }
}

// The transpose gemm_ex runs before a tf32 product whose operand is not k-contiguous: its own
// source, compiled for every architecture the tensor-core families serve, without spills, and
// outside the families' hashed sources (the tuned results do not depend on it).
TEST(GemmTc, Tf32TransposeCompilesForEveryArchitectureAndStaysOutOfTheTemplateHash) {
  for (const char* arch : {"sm_80", "sm_89", "sm_90"}) {
    const CompileRequest r = gemm_tc_transpose_request(arch);
    EXPECT_EQ(r.arch, arch);
    CompileResult out;
    ASSERT_NO_THROW(out = compile(r)) << arch;
    ASSERT_EQ(out.resources.size(), 1u);
    EXPECT_EQ(local_memory_reason(out.resources[0]), "") << arch;
    EXPECT_EQ(out.resources[0].smem_static, 32 * 33 * 4) << arch;
  }
  for (const char* family : {"gemm_tc", "gemm_tc80"}) {
    const Family& f = find_family(family);
    const Problem p = gemm_tc_problem("tf32", "f32", true, false, 64, 64, 64, 4);
    const CompileRequest r = f.compile_request(f.default_config(p, kH100), p, "sm_90");
    EXPECT_EQ(r.source.find("tc_transpose32"), std::string::npos) << family;
    for (const auto& [name, text] : r.headers) EXPECT_NE(name, "tc_transpose.cuh") << family;
  }
}

// The fallback takes the same problems under its own name; a GPU of sm_90 runs gemm_tc, one of
// sm_80 to sm_89 (or later, without wgmma) gemm_tc80, one below sm_80 neither.
TEST(GemmTc80, TakesGemmTcsProblemsAndServesTheGpusWithoutWgmma) {
  const Family& f = find_family("gemm_tc80");
  EXPECT_EQ(&f, &gemm_tc80_family());
  const Problem p = f.default_problems().front();
  EXPECT_EQ(p.family, "gemm_tc80");
  EXPECT_EQ(p.key(), "align=8;batch=1;dtype=bf16;k=4096;m=4096;n=4096;op=tn;out=bf16");
  try {
    f.validate(gemm_tc_problem("tf32", "f32", false, false, 64, 64, 64, 4));
    ADD_FAILURE() << "tf32 nn accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "gemm_tc80: op must be tn for tf32")) << e.what();
  }
  EXPECT_EQ(gemm_tc_family_for(kH100).name(), "gemm_tc");
  for (int minor : {0, 6, 9})
    EXPECT_EQ(gemm_tc_family_for(DeviceLimits::for_arch(8, minor)).name(), "gemm_tc80");
  EXPECT_EQ(gemm_tc_family_for(DeviceLimits::for_arch(10, 0)).name(), "gemm_tc80");
  try {
    gemm_tc_family_for(DeviceLimits::for_arch(7, 5));
    ADD_FAILURE() << "sm_75 served";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(contains(e.what(), "sm_80 or later")) << e.what();
  }
}

TEST(GemmTc80, ConstraintsKeepEveryConfigWithinTheDeviceLimits) {
  const Family& f = find_family("gemm_tc80");
  for (const auto& limits : {DeviceLimits::for_arch(8, 0), DeviceLimits::for_arch(8, 9), kH100}) {
    for (Problem p : {gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8),
                      gemm_tc_problem("f16", "f32", false, true, 100, 3000, 70, 8),
                      gemm_tc_problem("tf32", "f32", true, false, 3000, 2000, 100, 4, 3)}) {
      p.family = f.name();
      SearchSpace space(f, p, limits);
      ASSERT_GT(space.size(), 0u) << p.key();
      for (const Config& c : space.configs()) {
        const std::int64_t bm = c.at("BM"), bn = c.at("BN");
        const std::int64_t threads = 32 * c.at("WARPS_M") * c.at("WARPS_N");
        EXPECT_LE(c.at("STAGES") * (bm + bn) * 128, limits.smem_per_block_optin) << to_string(c);
        const std::int64_t acc = (bm / c.at("WARPS_M") / 16) * (bn / c.at("WARPS_N") / 8) * 4;
        EXPECT_LE(acc + 64, std::min<std::int64_t>(255, 65536 / threads)) << to_string(c);
        EXPECT_LE((bm + bn) * 8 / threads, 24) << to_string(c);
        EXPECT_EQ(f.block_threads(c, p), threads);
      }
    }
  }
  // sm_89 has 99 KiB of shared memory per block: three stages of 128 x 128 fit, four do not.
  const auto l40 = DeviceLimits::for_arch(8, 9);
  const Problem p = f.default_problems().front();
  Config c = f.default_config(p, l40);
  EXPECT_EQ(f.reject(c, p, l40), "");
  c["STAGES"] = 4;
  EXPECT_TRUE(contains(f.reject(c, p, l40), "shared memory"));
  EXPECT_EQ(f.reject(c, p, DeviceLimits::for_arch(8, 0)), "");
  // One warp would issue 32 copies per stage; 16 warps of 64 x 64 need 192 of their 128 registers.
  c = f.default_config(p, l40);
  c["BM"] = 64, c["BN"] = 64, c["WARPS_M"] = 1, c["WARPS_N"] = 1;
  EXPECT_TRUE(contains(f.reject(c, p, l40), "copies per thread"));
  c["BM"] = 256, c["BN"] = 256, c["WARPS_M"] = 4, c["WARPS_N"] = 4, c["STAGES"] = 2;
  EXPECT_TRUE(contains(f.reject(c, p, kH100), "block this large"));
  EXPECT_TRUE(
      contains(f.reject(f.default_config(p, l40), p, DeviceLimits::for_arch(7, 5)), "needs sm_80"));
}

TEST(GemmTc80, DefaultIsValidForEveryProblemShape) {
  const Family& f = find_family("gemm_tc80");
  for (const auto& limits : {DeviceLimits::for_arch(8, 0), DeviceLimits::for_arch(8, 9), kH100})
    for (std::int64_t m : {1, 63, 4096})
      for (std::int64_t n : {1, 200, 8192})
        for (std::int64_t k : {1, 100, 1 << 20})
          for (const Problem& p : {gemm_tc_problem("bf16", "f32", false, true, m, n, k, 8),
                                   gemm_tc_problem("tf32", "f32", true, false, m, n, k, 4)}) {
            const Config c = f.default_config(p, limits);
            EXPECT_NO_THROW(f.check_config(c));
            EXPECT_EQ(f.reject(c, p, limits), "") << p.key();
          }
}

// mma.sync and cp.async compile for sm_80 and sm_89 (and sm_90, where the fallback runs too),
// every operand layout and type, without spills.
TEST(GemmTc80, KernelsCompileForSm80AndSm89WithoutSpills) {
  const Family& f = find_family("gemm_tc80");
  const Problem tn = gemm_tc_problem("bf16", "bf16", true, false, 4000, 3000, 520, 8);
  const Problem nt = gemm_tc_problem("f16", "f32", false, true, 4000, 3000, 520, 8);
  const Problem tf32 = gemm_tc_problem("tf32", "f32", true, false, 4000, 3000, 520, 4, 2);
  for (const auto& [arch, limits] : {std::pair{"sm_80", DeviceLimits::for_arch(8, 0)},
                                     std::pair{"sm_89", DeviceLimits::for_arch(8, 9)}}) {
    for (const Problem* p : {&tn, &nt, &tf32}) {
      Config c = f.default_config(*p, limits);
      if (p == &nt) c["BN"] = 64, c["WARPS_M"] = 4, c["WARPS_N"] = 1;  // another warp layout
      ASSERT_EQ(f.reject(c, *p, limits), "") << to_string(c);
      const CompileRequest r = f.compile_request(c, *p, arch);
      EXPECT_EQ(r.arch, arch);
      CompileResult out;
      ASSERT_NO_THROW(out = compile(r)) << arch << " " << to_string(c) << " " << p->key();
      ASSERT_EQ(out.resources.size(), 1u);
      EXPECT_EQ(local_memory_reason(out.resources[0]), "") << arch << " " << to_string(c);
    }
  }
}

// gemm_tc_skinny: the bf16 / fp16 / tf32 calls with m or n at most 16 and one product.
std::string skinny_rejection(const Problem& p) {
  try {
    find_family("gemm_tc_skinny").validate(p);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return {};
}

Problem skinny(const std::string& dtype, const std::string& out, bool ta, bool tb, std::int64_t m,
               std::int64_t n, std::int64_t k, int align, std::int64_t batch = 1) {
  Problem p = gemm_tc_problem(dtype, out, ta, tb, m, n, k, align, batch);
  p.family = "gemm_tc_skinny";
  return p;
}

TEST(GemmTcSkinny, TakesOneSkinnyProductOfAnyLayoutAndAlignment) {
  EXPECT_EQ(skinny_rejection(skinny("bf16", "bf16", false, false, 8192, 1, 8192, 8)), "");
  EXPECT_EQ(skinny_rejection(skinny("f16", "f32", true, true, 16, 100000, 5, 1)), "");
  // tf32 of any op (these kernels read it in any layout), at most 4 elements of alignment.
  EXPECT_EQ(skinny_rejection(skinny("tf32", "f32", false, false, 1, 3000, 7, 1)), "");
  EXPECT_EQ(skinny_rejection(skinny("tf32", "f32", false, true, 3000, 2, 7, 4)), "");
  EXPECT_TRUE(contains(skinny_rejection(skinny("tf32", "f32", true, false, 9, 9, 9, 8)),
                       "align must be 1, 2, 4 elements of tf32"));
  EXPECT_TRUE(contains(skinny_rejection(skinny("bf16", "bf16", true, false, 9, 9, 9, 3)),
                       "align must be 1, 2, 4 or 8"));
  EXPECT_TRUE(contains(skinny_rejection(skinny("bf16", "bf16", true, false, 17, 17, 9, 8)),
                       "m or n must be at most 16"));
  EXPECT_TRUE(contains(skinny_rejection(skinny("bf16", "bf16", true, false, 1, 99, 9, 8, 2)),
                       "batch must be 1"));
  EXPECT_TRUE(contains(skinny_rejection(skinny("f32", "f32", true, false, 1, 99, 9, 4)),
                       "dtype must be bf16, f16 or tf32"));
  EXPECT_TRUE(contains(skinny_rejection(skinny("bf16", "f16", true, false, 1, 99, 9, 8)),
                       "out must be f32 or the input dtype"));
  // Which calls the runtime sends here.
  EXPECT_TRUE(gemm_tc_is_skinny("tf32", 1, 5000, 1));
  EXPECT_TRUE(gemm_tc_is_skinny("tf32", 5000, 4, 1));
  EXPECT_FALSE(gemm_tc_is_skinny("tf32", 5000, 5, 1));  // the tensor-core tiles win from 5 up
  EXPECT_FALSE(gemm_tc_is_skinny("tf32", 17, 5000, 1));
  EXPECT_FALSE(gemm_tc_is_skinny("tf32", 1, 5000, 4));  // strided batches: gemm_tc
  EXPECT_TRUE(gemm_tc_is_skinny("bf16", 1, 5000, 1));   // with their presets
  EXPECT_TRUE(gemm_tc_is_skinny("f16", 5000, 4, 1));
  EXPECT_FALSE(gemm_tc_is_skinny("f16", 5000, 5, 1));
}

TEST(GemmTcSkinny, DefaultAndAdaptedConfigsAreValidForEveryShape) {
  const Family& f = find_family("gemm_tc_skinny");
  const Problem tuned = skinny("bf16", "bf16", true, false, 8192, 16, 8192, 8);
  Config winner = f.default_config(tuned, kH100);
  winner["ROWS"] = 2, winner["VEC"] = 8, winner["THREADS"] = 256;
  ASSERT_EQ(f.reject(winner, tuned, kH100), "") << to_string(winner);
  for (std::int64_t small : {1, 3, 16})
    for (std::int64_t big : {1, 100, 7000, 1 << 20})
      for (std::int64_t k : {1, 13, 1306, 1 << 20})
        for (const char* op : {"nn", "nt", "tn", "tt"})
          for (const auto& [dtype, align] :
               {std::pair{"bf16", 8}, std::pair{"f16", 1}, std::pair{"tf32", 4}})
            for (bool swap : {false, true}) {
              const std::int64_t m = swap ? big : small, n = swap ? small : big;
              const Problem p = skinny(dtype, std::string(dtype) == "tf32" ? "f32" : dtype,
                                       op[0] == 't', op[1] == 't', m, n, k, align);
              ASSERT_EQ(skinny_rejection(p), "") << p.key();
              const Config c = f.default_config(p, kH100);
              EXPECT_NO_THROW(f.check_config(c));
              EXPECT_EQ(f.reject(c, p, kH100), "") << p.key() << " " << to_string(c);
              const Config a = f.adapt(winner, p, kH100);
              EXPECT_EQ(f.reject(a, p, kH100), "") << p.key() << " " << to_string(a);
              // Loads no wider than the alignment, 16 bytes or the problem.
              EXPECT_LE(c.at("VEC"), align);
              EXPECT_LE(c.at("VEC") * (std::string(dtype) == "tf32" ? 4 : 2), 16);
            }
  // A long k over few rows is split; a matrix-vector product of many rows is not.
  EXPECT_GT(
      f.default_config(skinny("bf16", "bf16", true, false, 64, 1, 1 << 20, 8), kH100).at("SPLITK"),
      1);
  EXPECT_EQ(f.default_config(skinny("bf16", "bf16", true, false, 1 << 20, 1, 4096, 8), kH100)
                .at("SPLITK"),
            1);
}

TEST(GemmTcSkinny, KernelsCompileForSm90AndSm80WithoutSpills) {
  const Family& f = find_family("gemm_tc_skinny");
  for (const auto& [arch, limits] :
       {std::pair{"sm_90", kH100}, std::pair{"sm_80", DeviceLimits::for_arch(8, 0)}}) {
    for (const Problem& p : {skinny("bf16", "bf16", false, false, 11659, 1, 7173, 8),
                             skinny("f16", "f32", true, false, 1974, 1, 1306, 8),
                             skinny("bf16", "bf16", true, true, 14, 13970, 1162, 2),
                             skinny("tf32", "f32", false, false, 64, 8, 262144, 4)}) {
      const Config c = f.default_config(p, limits);
      ASSERT_EQ(f.reject(c, p, limits), "") << to_string(c);
      CompileResult out;
      ASSERT_NO_THROW(out = compile(f.compile_request(c, p, arch))) << arch << " " << p.key();
      ASSERT_EQ(out.resources.size(), c.at("SPLITK") > 1 ? 2u : 1u) << p.key();
      for (const auto& res : out.resources)
        EXPECT_EQ(local_memory_reason(res), "") << arch << " " << to_string(c) << " " << p.key();
    }
  }
}

}  // namespace
}  // namespace ktune
