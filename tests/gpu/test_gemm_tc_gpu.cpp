// GPU tests of the tensor-core GEMM (family gemm_tc, sm_90; bf16, fp16, tf32): configurations of
// every code path
// (tile shapes, one or two consumer warpgroups, clusters with TMA multicast, the persistent grid)
// against a host reference in double, with alpha and beta, edges in m, n and k, an odd ldc (the
// scalar stores) and rows of C past m that must stay as they were.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include "families/family.hpp"
#include "families/gemm/gemm_tc.hpp"
#include "gpu_util.hpp"
#include "ktune/ktune.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {
namespace {

using testing::download;
using testing::upload;

// Values i / 128 with |i| <= 128: exact in bf16, fp16 and tf32, so every product is exact and the
// reference in double is the exact sum.
std::uint16_t encode(float v, bool bf16) {
  if (bf16) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<std::uint16_t>(bits >> 16);  // exact: the low half is zero
  }
  if (v == 0) return 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  const double frac = std::frexp(std::fabs(v), &e);  // |v| = frac 2^e, frac in [0.5, 1)
  const auto mant = static_cast<std::uint16_t>(std::lround((frac * 2 - 1) * 1024));
  return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | mant);
}

// The bytes of an input array of `dtype` (bf16, f16 or tf32: float).
std::vector<unsigned char> encode_inputs(const std::vector<double>& v, const std::string& dtype) {
  std::vector<unsigned char> out;
  if (dtype == "tf32") {
    std::vector<float> f(v.begin(), v.end());
    out.resize(f.size() * 4);
    std::memcpy(out.data(), f.data(), out.size());
  } else {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      h[i] = encode(static_cast<float>(v[i]), dtype == "bf16");
    out.resize(h.size() * 2);
    std::memcpy(out.data(), h.data(), out.size());
  }
  return out;
}

double decode(std::uint16_t h, bool bf16) {
  if (bf16) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int e = (h >> 10) & 31, m = h & 1023;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -mag : mag;
}

// The code of the Error a call throws, or nullopt when it is accepted.
template <typename Call>
std::optional<ErrorCode> code(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

struct Case {
  std::string dtype, out;
  std::int64_t m, n, k;
  Config changes;         // over the default configuration
  float beta = 0.5f;      // 0: with ldc a multiple of 8, the 16-byte stores
  std::string op = "tn";  // nn, nt, tt: MN-major operands in the kernel
  int align = 0;          // elements of the leading dimensions' alignment (0: 16 bytes)
};

// The values as bf16 in a new device buffer.
std::unique_ptr<detail::DeviceBuffer> upload_bf16(const std::vector<double>& vals) {
  std::vector<std::uint16_t> h(vals.size());
  for (std::size_t i = 0; i < vals.size(); ++i) h[i] = encode(static_cast<float>(vals[i]), true);
  auto buf = std::make_unique<detail::DeviceBuffer>(h.size() * 2);
  upload(buf->get(), h);
  return buf;
}

void run_case(const Family& f, const Device& device, KernelCache& cache, const Case& c,
              std::uint64_t seed) {
  const bool tf32 = c.dtype == "tf32";
  const std::int64_t align = c.align ? c.align : tf32 ? 4 : 8;  // 16 bytes unless given
  const bool ta = c.op[0] == 't', tb = c.op[1] == 't';
  Problem p = gemm_tc_problem(c.dtype, c.out, ta, tb, c.m, c.n, c.k, align);
  p.family = f.name();
  Config config = f.default_config(p, device.limits());
  for (const auto& [name, value] : c.changes) config[name] = value;
  const std::string label = f.name() + " " + p.key() + " " + to_string(config);
  ASSERT_EQ(f.reject(config, p, device.limits()), "") << label;
  const bool out16 = c.out != "f32", out_bf16 = c.out == "bf16";
  // Leading dimensions past the rows, a multiple of the alignment: A k x m (ta) or m x k, B k x n
  // or n x k (tb), column-major.
  // An alignment below 16 bytes: odd multiples of it, so that it is the call's.
  auto ld_for = [&](std::int64_t rows) {
    const std::int64_t ld = (rows + align - 1) / align * align + align;
    return c.align && (ld / align) % 2 == 0 ? ld + align : ld;
  };
  const std::int64_t lda = ld_for(ta ? c.k : c.m), ldb = ld_for(tb ? c.n : c.k);
  // Element (i, q) of op(A) and (q, j) of op(B) in the stored arrays.
  auto at_a = [&](std::int64_t i, std::int64_t q) {
    return static_cast<std::size_t>(ta ? q + i * lda : i + q * lda);
  };
  auto at_b = [&](std::int64_t q, std::int64_t j) {
    return static_cast<std::size_t>(tb ? j + q * ldb : q + j * ldb);
  };
  // An odd ldc (pair stores), or with beta = 0 a multiple of 8 (16-byte stores); rows past m.
  const std::int64_t ldc = c.beta == 0 ? (c.m + 3 + 7) / 8 * 8 : c.m + 3;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(-128, 128);
  std::vector<double> a(static_cast<std::size_t>(lda * (ta ? c.m : c.k)), 0),
      b(static_cast<std::size_t>(ldb * (tb ? c.k : c.n)), 0),
      c0(static_cast<std::size_t>(ldc * c.n));
  for (auto& v : a) v = pick(rng) / 128.0;
  for (auto& v : b) v = pick(rng) / 128.0;
  for (auto& v : c0) v = pick(rng) / 128.0;
  const std::vector<unsigned char> ha = encode_inputs(a, c.dtype), hb = encode_inputs(b, c.dtype);
  detail::DeviceBuffer da(ha.size()), db(hb.size()), dc(c0.size() * (out16 ? 2 : 4));
  upload(da.get(), ha);
  upload(db.get(), hb);
  if (out16) {
    std::vector<std::uint16_t> hc(c0.size());
    for (std::size_t i = 0; i < c0.size(); ++i) hc[i] = encode(static_cast<float>(c0[i]), out_bf16);
    upload(dc.get(), hc);
  } else {
    std::vector<float> hc(c0.begin(), c0.end());
    upload(dc.get(), hc);
  }
  TcCall call;
  call.dtype = c.dtype, call.out = c.out;
  call.trans_a = ta, call.trans_b = tb;
  call.m = c.m, call.n = c.n, call.k = c.k;
  call.alpha = 1.5f, call.beta = c.beta;
  call.a = reinterpret_cast<const void*>(da.get()), call.lda = lda;
  call.b = reinterpret_cast<const void*>(db.get()), call.ldb = ldb;
  call.c = reinterpret_cast<void*>(dc.get()), call.ldc = ldc;
  ASSERT_EQ(gemm_tc_alignment(call), align);
  auto kernel = cache.get(f.compile_request(config, p, device.limits().arch()));
  gemm_tc_launch(f, *kernel, config, call, nullptr);
  testing::synchronize();
  std::vector<double> got(c0.size());
  if (out16) {
    const auto h = download<std::uint16_t>(dc.get(), c0.size());
    for (std::size_t i = 0; i < h.size(); ++i) got[i] = decode(h[i], out_bf16);
  } else {
    const auto h = download<float>(dc.get(), c0.size());
    got.assign(h.begin(), h.end());
  }
  const TcTolerance tol = gemm_tc_tolerance(c.dtype, c.out, c.k);  // exact inputs: no input term
  std::int64_t wrong = 0;
  for (std::int64_t j = 0; j < c.n; ++j)
    for (std::int64_t i = 0; i < ldc; ++i) {
      const std::size_t e = static_cast<std::size_t>(i + j * ldc);
      if (i >= c.m) {  // rows past m: untouched
        if (got[e] != c0[e] && ++wrong <= 3) ADD_FAILURE() << label << ": row " << i << " written";
        continue;
      }
      double sum = 0, mag = 0;
      for (std::int64_t q = 0; q < c.k; ++q) {
        const double pr = a[at_a(i, q)] * b[at_b(q, j)];
        sum += pr;
        mag += std::fabs(pr);
      }
      const double ref = 1.5 * sum + c.beta * c0[e];
      const double bound =
          tol.rel * std::fabs(ref) + 1.5 * tol.acc * mag + 1e-6 * std::fabs(c0[e]) + 1e-12;
      if (!(std::fabs(got[e] - ref) <= bound) && ++wrong <= 3)
        ADD_FAILURE() << label << ": C(" << i << ", " << j << ") = " << got[e] << ", expected "
                      << ref;
    }
  EXPECT_EQ(wrong, 0) << label;
}

TEST(GemmTcGpu, EveryCodePathMatchesTheHostReference) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only (wgmma, TMA); this GPU is "
                 << ktune_held_device.limits().arch();
  KernelCache cache(ktune_held_device, nullptr);
  const std::vector<Case> cases = {
      {"bf16", "bf16", 1000, 3000, 520, {}},
      {"f16", "f32", 2500, 3000, 136, {{"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}}},
      {"bf16", "f32", 64, 8, 40, {}},
      {"f16", "f16", 77, 1025, 4100, {{"CONSUMERS", 1}, {"WM", 128}, {"BN", 128}, {"STAGES", 6}}},
      {"bf16", "f32", 1500, 4000, 200, {{"BN", 64}, {"WM", 128}, {"STAGES", 2}, {"PERSIST", 1}}},
      {"bf16", "bf16", 2000, 520, 200, {{"BN", 192}, {"CLUSTER", 2}, {"GROUP", 1}}},
      // beta = 0 and an aligned C: 16-byte stores (partial groups at the right edge).
      {"bf16", "bf16", 1000, 3000, 520, {}, 0.0f},
      {"f16", "f32", 2500, 3000, 136, {{"CLUSTER", 2}, {"PERSIST", 1}}, 0.0f},
      {"f16", "f16", 77, 1025, 4100, {{"BN", 128}}, 0.0f},
      // Consumers taking turns, with an odd number of units per block and with clusters.
      {"bf16", "bf16", 1000, 1500, 700, {{"PINGPONG", 1}, {"WM", 128}, {"BN", 128}}},
      {"f16",
       "f32",
       2600,
       3000,
       300,
       {{"PINGPONG", 1}, {"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}}},
      // tf32: 32 k-elements per stage (k = 4100 leaves 4 in the last), the same code paths.
      {"tf32", "f32", 1000, 3000, 520, {}},
      {"tf32", "f32", 2500, 3000, 136, {{"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}}, 0.0f},
      {"tf32", "f32", 77, 1025, 4100, {{"CONSUMERS", 1}, {"WM", 128}, {"BN", 128}, {"STAGES", 6}}},
      {"tf32", "f32", 1000, 1500, 700, {{"PINGPONG", 1}, {"WM", 128}, {"BN", 128}}},
      {"tf32", "f32", 1500, 4000, 200, {{"BN", 64}, {"WM", 128}, {"STAGES", 2}, {"PERSIST", 1}}},
      // The other ops: X (op_b = T) and Y (op_a = N) MN-major, 64-element boxes; with two m64
      // MMAs, both tile widths, clusters (the MN-major half of Y), turns, the persistent grid.
      {"bf16", "bf16", 1000, 3000, 520, {}, 0.5f, "nn"},
      {"f16", "f32", 1000, 3000, 520, {}, 0.0f, "tt"},
      {"bf16", "f32", 1000, 3000, 520, {}, 0.5f, "nt"},
      {"f16", "f16", 77, 1025, 4100, {{"CONSUMERS", 1}, {"WM", 128}, {"BN", 128}}, 0.5f, "nt"},
      {"bf16", "bf16", 2500, 3000, 136, {{"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}}, 0.0f, "nn"},
      {"f16",
       "f32",
       2000,
       520,
       200,
       {{"BN", 128}, {"CLUSTER", 2}, {"WM", 128}, {"GROUP", 1}},
       0.5f,
       "nt"},
      {"bf16", "f32", 1000, 1500, 700, {{"PINGPONG", 1}, {"WM", 64}, {"BN", 192}}, 0.5f, "tt"},
      {"f16",
       "f16",
       1500,
       4000,
       200,
       {{"BN", 64}, {"WM", 128}, {"STAGES", 2}, {"PERSIST", 1}},
       0.5f,
       "nn"},
      // Split k: f32 partial sums in scratch, then their sum into C; runs whose last k-tiles are
      // past k (passed through the ring unloaded), with turns, clusters, the persistent grid,
      // tf32 and MN-major operands.
      {"bf16", "bf16", 200, 96, 40000, {{"SPLITK", 8}}},
      {"f16",
       "f32",
       300,
       260,
       12000,
       {{"SPLITK", 16}, {"PINGPONG", 1}, {"BN", 128}, {"WM", 128}},
       0.0f},
      {"tf32", "f32", 130, 70, 30000, {{"SPLITK", 32}}},
      {"bf16",
       "bf16",
       600,
       600,
       4000,
       {{"SPLITK", 8}, {"BN", 128}, {"CLUSTER", 2}, {"PERSIST", 1}, {"GROUP", 1}},
       0.0f,
       "nn"},
      {"f16",
       "f16",
       77,
       1025,
       9000,
       {{"SPLITK", 4}, {"CONSUMERS", 1}, {"WM", 128}, {"BN", 128}},
       0.5f,
       "nt"},
      // The epilogue through shared memory and the TMA (EPI = 1, beta = 0; C's columns a
      // multiple of 16 bytes, the last tile's part of a box): shared tiles, two m64 MMAs, turns,
      // clusters, the persistent grid (a block's buffers reused from unit to unit), f32 and
      // 16-bit C, every op; with beta != 0, or C's columns not a multiple of 16 bytes (2500 of
      // bf16), the same kernel stores from the registers.
      {"bf16", "bf16", 1000, 3000, 520, {{"EPI", 1}}, 0.0f},
      {"f16", "f32", 2500, 3000, 136, {{"CLUSTER", 2}, {"PERSIST", 1}, {"EPI", 1}}, 0.0f},
      {"f16",
       "f16",
       120,
       1025,
       4100,
       {{"CONSUMERS", 1}, {"WM", 128}, {"BN", 128}, {"SPLITK", 1}, {"EPI", 1}},
       0.0f},
      {"bf16",
       "bf16",
       1000,
       1500,
       700,
       {{"PINGPONG", 1}, {"WM", 128}, {"BN", 128}, {"EPI", 1}},
       0.0f},
      {"tf32",
       "f32",
       1000,
       1500,
       700,
       {{"PINGPONG", 1}, {"WM", 64}, {"BN", 192}, {"EPI", 1}},
       0.0f},
      {"bf16",
       "bf16",
       2504,
       3000,
       136,
       {{"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}, {"PINGPONG", 1}, {"EPI", 1}},
       0.0f,
       "nn"},
      {"bf16",
       "bf16",
       2500,
       3000,
       136,
       {{"BN", 256}, {"CLUSTER", 2}, {"PERSIST", 1}, {"PINGPONG", 1}, {"EPI", 1}},
       0.0f,
       "nn"},
      {"f16", "f32", 1000, 3000, 520, {{"EPI", 1}}, 0.0f, "tt"},
      {"bf16", "bf16", 1000, 3000, 520, {{"EPI", 1}}, 0.5f, "nt"},
  };
  std::uint64_t seed = 7;
  for (const Case& c : cases) run_case(gemm_tc_family(), ktune_held_device, cache, c, ++seed);
}

// The skinny kernels (gemm_tc_skinny: m or n at most 16, on the FMA units; any GPU the tensor-core
// calls run on): both kernels (X m-contiguous: nn with n small, tt with m small; k-contiguous: tn,
// nt with m small), every input and output type, one to 16 columns, packets of 1 to 8 elements
// with the k tails past the last whole packet, rows per block, the warps that share rows, split k
// (the reduction's fixed order), tf32 of any layout, alignments below 16 bytes.
TEST(GemmTcSkinnyGpu, EveryCodePathMatchesTheHostReference) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major < 8)
    GTEST_SKIP() << "the tensor-core calls need sm_80 or later; this GPU is "
                 << ktune_held_device.limits().arch();
  KernelCache cache(ktune_held_device, nullptr);
  const std::vector<Case> cases = {
      {"bf16", "bf16", 2000, 1, 1306, {}, 0.5f, "nn"},
      {"bf16", "bf16", 1, 2000, 1306, {}, 0.5f, "tt"},
      {"f16", "f32", 3000, 16, 700, {}, 0.0f, "tn"},
      {"bf16",
       "f32",
       3000,
       3,
       5003,
       {{"ROWS", 4}, {"VEC", 8}, {"THREADS", 256}, {"SPLITK", 1}},
       0.5f,
       "tn"},
      {"f16", "f16", 5, 3000, 4100, {}, 0.5f, "nt"},
      {"bf16", "bf16", 13970, 14, 1162, {}, 0.5f, "nn"},
      {"f16", "f32", 4097, 2, 333, {{"KWARPS", 2}, {"VEC", 4}}, 0.5f, "nn"},
      {"bf16", "bf16", 64, 1, 100000, {{"SPLITK", 16}}, 0.5f, "tn"},
      {"f16", "f16", 300, 4, 30000, {{"SPLITK", 8}}, 0.0f, "nn"},
      {"tf32", "f32", 1000, 1, 30001, {{"SPLITK", 8}}, 0.0f, "tn"},
      {"tf32", "f32", 1000, 7, 777, {}, 0.5f, "nn", 1},
      {"tf32", "f32", 9, 2000, 777, {}, 0.5f, "tt", 2},
      {"bf16", "bf16", 1001, 1, 1001, {}, 0.5f, "tn", 1},
      {"f16", "f32", 1, 1001, 999, {}, 0.5f, "nn", 2},
  };
  std::uint64_t seed = 70;
  for (const Case& c : cases)
    run_case(gemm_tc_skinny_family(), ktune_held_device, cache, c, ++seed);
}

// Through the runtime: a bf16 matrix-vector product of an operand 2 bytes past a 16-byte boundary
// (gemm_tc, after a copy into aligned scratch), and a tf32 one of a k x n operand (the skinny
// kernels, which read it where it is: no transpose), against the host reference.
TEST(GemmTcSkinnyGpu, TheRuntimeRunsMatrixVectorProductsOfEveryLayout) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major < 8)
    GTEST_SKIP() << "the tensor-core calls need sm_80 or later; this GPU is "
                 << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t m = 3001, k = 1306;
  std::mt19937_64 rng(31);
  std::uniform_int_distribution<int> pick(-128, 128);
  // y (m) = x (m x k, row-major, rows of k + 1 starting one element in) @ v (k).
  std::vector<double> x(static_cast<std::size_t>(m * (k + 1) + 1), 0.0),
      v(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t q = 0; q < k; ++q)
      x[static_cast<std::size_t>(1 + i * (k + 1) + q)] = pick(rng) / 128.0;
  for (auto& e : v) e = pick(rng) / 128.0;
  const auto dx = upload_bf16(x), dv = upload_bf16(v);
  detail::DeviceBuffer dy(static_cast<std::size_t>(m) * 4);
  rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kN, m, 1, k, 1.0f, DataType::kBF16,
             reinterpret_cast<const void*>(dx->get() + 2), k + 1,
             reinterpret_cast<const void*>(dv->get()), 1, 0.0f, DataType::kF32,
             reinterpret_cast<void*>(dy.get()), 1);
  testing::synchronize();
  const auto got = download<float>(dy.get(), static_cast<std::size_t>(m));
  const TcTolerance t = gemm_tc_tolerance("bf16", "f32", k);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    double ref = 0, mag = 0;
    for (std::int64_t q = 0; q < k; ++q) {
      const double pr =
          x[static_cast<std::size_t>(1 + i * (k + 1) + q)] * v[static_cast<std::size_t>(q)];
      ref += pr;
      mag += std::fabs(pr);
    }
    if (!(std::fabs(got[static_cast<std::size_t>(i)] - ref) <= t.acc * mag + 1e-9) && ++wrong <= 3)
      ADD_FAILURE() << "y(" << i << ") = " << got[static_cast<std::size_t>(i)] << ", expected "
                    << ref;
  }
  EXPECT_EQ(wrong, 0);
  // tf32, row-major y (m x 3) = x (m x k) @ w (k x 3 stored k-major rows of 3: op nn).
  const std::int64_t n = 3;
  std::vector<float> xf(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(k * n));
  for (auto& e : xf) e = static_cast<float>(pick(rng) / 128.0);
  for (auto& e : w) e = static_cast<float>(pick(rng) / 128.0);
  detail::DeviceBuffer dxf(xf.size() * 4), dw(w.size() * 4),
      dy3(static_cast<std::size_t>(m * n) * 4);
  upload(dxf.get(), xf);
  upload(dw.get(), w);
  rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kN, m, n, k, 1.0f, DataType::kTF32,
             reinterpret_cast<const void*>(dxf.get()), k, reinterpret_cast<const void*>(dw.get()),
             n, 0.0f, DataType::kF32, reinterpret_cast<void*>(dy3.get()), n);
  testing::synchronize();
  const auto got3 = download<float>(dy3.get(), static_cast<std::size_t>(m * n));
  const TcTolerance t32 = gemm_tc_tolerance("tf32", "f32", k);
  wrong = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (std::int64_t q = 0; q < k; ++q) {
        const double pr = static_cast<double>(xf[static_cast<std::size_t>(i * k + q)]) *
                          w[static_cast<std::size_t>(q * n + j)];
        ref += pr;
        mag += std::fabs(pr);
      }
      const double g = got3[static_cast<std::size_t>(i * n + j)];
      if (!(std::fabs(g - ref) <= t32.acc * mag + 1e-9) && ++wrong <= 3)
        ADD_FAILURE() << "tf32 y(" << i << ", " << j << ") = " << g << ", expected " << ref;
    }
  EXPECT_EQ(wrong, 0);
}

// The fallback (gemm_tc80: mma.sync, cp.async; sm_80 and later, so it runs on sm_90 too): every
// tile shape and warp layout that changes the fragments' loops, each pipeline depth, the group
// walk, every op (ldmatrix.trans of MN-major operands), tf32, edges in m, n and k (partial
// 16-byte copies), beta and odd ldc.
TEST(GemmTc80Gpu, EveryCodePathMatchesTheHostReference) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major < 8)
    GTEST_SKIP() << "gemm_tc80 needs sm_80 or later; this GPU is "
                 << ktune_held_device.limits().arch();
  KernelCache cache(ktune_held_device, nullptr);
  using C = Config;
  const C wide = {{"BM", 128}, {"BN", 256}, {"WARPS_M", 2}, {"WARPS_N", 4}};
  const C tall = {{"BM", 256}, {"BN", 64}, {"WARPS_M", 4}, {"WARPS_N", 1}, {"STAGES", 4}};
  const C small = {{"BM", 64}, {"BN", 64}, {"WARPS_M", 2}, {"WARPS_N", 1}, {"STAGES", 2}};
  const C thin = {{"BM", 128}, {"BN", 128}, {"WARPS_M", 4}, {"WARPS_N", 4}, {"STAGES", 5}};
  const C flat = {{"BM", 64}, {"BN", 256}, {"WARPS_M", 1}, {"WARPS_N", 4}, {"GROUP", 1}};
  const std::vector<Case> cases = {
      {"bf16", "bf16", 1000, 3000, 520, {}},
      {"f16", "f32", 2500, 3000, 136, wide},
      {"bf16", "f32", 64, 8, 40, {}},
      {"f16", "f16", 77, 1025, 4100, tall},
      {"bf16", "f32", 1500, 4000, 200, small},
      {"bf16", "bf16", 2000, 520, 203, thin},
      {"f16", "f32", 300, 700, 1000, flat, 0.0f},
      {"tf32", "f32", 1000, 3000, 520, {}},
      {"tf32", "f32", 77, 1025, 4100, tall, 0.0f},
      {"tf32", "f32", 1500, 400, 203, small},
      {"bf16", "bf16", 1000, 3000, 520, {}, 0.5f, "nn"},
      {"f16", "f32", 1000, 3000, 520, wide, 0.0f, "tt"},
      {"bf16", "f32", 1000, 3000, 520, tall, 0.5f, "nt"},
      {"f16", "f16", 77, 1025, 4100, small, 0.5f, "nt"},
      {"bf16", "bf16", 250, 300, 136, thin, 0.0f, "nn"},
      {"f16", "f32", 200, 70, 203, flat, 0.5f, "tt"},
  };
  std::uint64_t seed = 70;
  for (const Case& c : cases) run_case(gemm_tc80_family(), ktune_held_device, cache, c, ++seed);
}

// The tuner's workload of gemm_tc80 (tc_fill inputs, the double reference on the GPU, the
// poisoned guard rows) accepts its candidates' results, one matrix and strided batches, and
// refuses a result that is wrong (a run skipped: C keeps its poison).
TEST(GemmTc80Gpu, TheTunersWorkloadVerifiesItsCandidates) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major < 8)
    GTEST_SKIP() << "gemm_tc80 needs sm_80 or later; this GPU is "
                 << ktune_held_device.limits().arch();
  KernelCache cache(ktune_held_device, nullptr);
  const Family& f = gemm_tc80_family();
  const std::vector<Problem> problems = {
      f.make_problem({{"m", 1000}, {"n", 700}, {"k", 300}}, {}),
      f.make_problem({{"m", 520}, {"n", 300}, {"k", 136}, {"batch", 3}}, {{"op", "nt"}}),
      f.make_problem({{"m", 300}, {"n", 1000}, {"k", 100}, {"batch", 2}, {"align", 4}},
                     {{"dtype", "tf32"}, {"out", "f32"}}),
  };
  std::uint64_t seed = 5;
  for (const Problem& p : problems) {
    auto workload = f.make_workload(p, ktune_held_device, cache);
    const Config config = f.default_config(p, ktune_held_device.limits());
    ASSERT_EQ(f.reject(config, p, ktune_held_device.limits()), "") << p.key();
    auto kernel = cache.get(f.compile_request(config, p, ktune_held_device.limits().arch()));
    workload->prepare(++seed, nullptr);
    workload->run(*kernel, config, nullptr);
    EXPECT_EQ(workload->verify(nullptr), "") << p.key();
    // The same seed again: the reference is kept (KeptReference, gemm.hpp).
    workload->prepare(seed, nullptr);
    workload->run(*kernel, config, nullptr);
    EXPECT_EQ(workload->verify(nullptr), "") << p.key();
    EXPECT_EQ(gemm_tc_workload_references(*workload), 1u) << p.key();
    // Not run on the same seed: wrong against the kept reference, made again, still wrong.
    workload->prepare(seed, nullptr);
    EXPECT_NE(workload->verify(nullptr), "") << p.key();
    EXPECT_EQ(gemm_tc_workload_references(*workload), 2u) << p.key();
    workload->prepare(++seed, nullptr);  // not run: every element of C is wrong
    EXPECT_NE(workload->verify(nullptr), "") << p.key();
    EXPECT_EQ(gemm_tc_workload_references(*workload), 3u) << p.key();
  }
}

// Through the public API (Runtime::gemm_ex), without a database: row-major x @ w.T with C of the
// input type, column-major A^T B with C in f32 and beta, row-major x @ v (op nn), k = 0
// (C = beta C), unaligned operands (the same bits, through aligned copies), and C of another
// 16-bit type refused with kUnsupported.
TEST(GemmTcGpu, GemmExRunsRowMajorXTimesWTransposedAndRefusesWhatItCannotServe) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only; this GPU is " << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t m = 300, n = 520, k = 200;  // row-major x (m x k), w (n x k), y (m x n)
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<int> pick(-128, 128);
  std::vector<double> x(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
  for (auto& v : x) v = pick(rng) / 128.0;
  for (auto& v : w) v = pick(rng) / 128.0;
  for (const bool bf16 : {true, false}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f16");
    const DataType t = bf16 ? DataType::kBF16 : DataType::kF16;
    std::vector<std::uint16_t> hx(x.size()), hw(w.size());
    for (std::size_t i = 0; i < x.size(); ++i) hx[i] = encode(static_cast<float>(x[i]), bf16);
    for (std::size_t i = 0; i < w.size(); ++i) hw[i] = encode(static_cast<float>(w[i]), bf16);
    detail::DeviceBuffer dx(hx.size() * 2), dw(hw.size() * 2),
        dy(static_cast<std::size_t>(m * n) * 4);
    upload(dx.get(), hx);
    upload(dw.get(), hw);
    auto ref = [&](std::int64_t i, std::int64_t j) {
      double sum = 0;
      for (std::int64_t q = 0; q < k; ++q)
        sum += x[static_cast<std::size_t>(i * k + q)] * w[static_cast<std::size_t>(j * k + q)];
      return sum;
    };
    // y = x @ w.T, row-major, C of the input type.
    rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, t,
               reinterpret_cast<const void*>(dx.get()), k, reinterpret_cast<const void*>(dw.get()),
               k, 0.0f, t, reinterpret_cast<void*>(dy.get()), n);
    testing::synchronize();
    const auto y16 = download<std::uint16_t>(dy.get(), static_cast<std::size_t>(m * n));
    const TcTolerance tol16 = gemm_tc_tolerance(bf16 ? "bf16" : "f16", bf16 ? "bf16" : "f16", k);
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double r = ref(i, j), got = decode(y16[static_cast<std::size_t>(i * n + j)], bf16);
        if (!(std::fabs(got - r) <= tol16.rel * std::fabs(r) + tol16.acc * k + 1e-12) &&
            ++wrong <= 3)
          ADD_FAILURE() << "y(" << i << ", " << j << ") = " << got << ", expected " << r;
      }
    EXPECT_EQ(wrong, 0);
    // Column-major C (n x m) = A^T B with A = w^T stored as w (k x n, ld k) and B = x^T stored as
    // x (k x m, ld k): the same products, C in f32, beta = 0.5 over C = 1.
    std::vector<float> ones(static_cast<std::size_t>(m * n), 1.0f);
    upload(dy.get(), ones);
    rt.gemm_ex(Layout::kColMajor, Op::kT, Op::kN, n, m, k, 2.0f, t,
               reinterpret_cast<const void*>(dw.get()), k, reinterpret_cast<const void*>(dx.get()),
               k, 0.5f, DataType::kF32, reinterpret_cast<void*>(dy.get()), n);
    testing::synchronize();
    const auto y32 = download<float>(dy.get(), static_cast<std::size_t>(m * n));
    wrong = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double r = 2 * ref(i, j) + 0.5, got = y32[static_cast<std::size_t>(j + i * n)];
        if (!(std::fabs(got - r) <= 1e-5 * (std::fabs(r) + 1)) && ++wrong <= 3)
          ADD_FAILURE() << "C(" << j << ", " << i << ") = " << got << ", expected " << r;
      }
    EXPECT_EQ(wrong, 0);
    // k = 0: C = beta C, A and B unread.
    rt.gemm_ex(Layout::kColMajor, Op::kT, Op::kN, n, m, 0, 1.0f, t, nullptr, 1, nullptr, 1, 0.25f,
               DataType::kF32, reinterpret_cast<void*>(dy.get()), n);
    testing::synchronize();
    const auto scaled = download<float>(dy.get(), static_cast<std::size_t>(m * n));
    EXPECT_FLOAT_EQ(scaled[0], 0.25f * y32[0]);
    EXPECT_FLOAT_EQ(scaled.back(), 0.25f * y32.back());
    // Row-major y = x @ v with v = w^T stored k x n (op nn: an MN-major operand), C in f32.
    std::vector<std::uint16_t> hv(w.size());
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t q = 0; q < k; ++q)
        hv[static_cast<std::size_t>(q * n + j)] = hw[static_cast<std::size_t>(j * k + q)];
    detail::DeviceBuffer dv(hv.size() * 2);
    upload(dv.get(), hv);
    rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kN, m, n, k, 1.0f, t,
               reinterpret_cast<const void*>(dx.get()), k, reinterpret_cast<const void*>(dv.get()),
               n, 0.0f, DataType::kF32, reinterpret_cast<void*>(dy.get()), n);
    testing::synchronize();
    const auto ynn = download<float>(dy.get(), static_cast<std::size_t>(m * n));
    wrong = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double r = ref(i, j), got = ynn[static_cast<std::size_t>(i * n + j)];
        if (!(std::fabs(got - r) <= 1e-5 * (std::fabs(r) + 1)) && ++wrong <= 3)
          ADD_FAILURE() << "nn: y(" << i << ", " << j << ") = " << got << ", expected " << r;
      }
    EXPECT_EQ(wrong, 0);
    // Operands the TMA cannot read (x 2 bytes past a 16-byte boundary, rows of k + 1 elements)
    // are copied into aligned scratch first: the same kernel on the same values, the same bits.
    {
      const std::int64_t ldu = k + 1;
      std::vector<std::uint16_t> hu(static_cast<std::size_t>(m * ldu + 1), 0);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t q = 0; q < k; ++q)
          hu[static_cast<std::size_t>(1 + i * ldu + q)] = hx[static_cast<std::size_t>(i * k + q)];
      detail::DeviceBuffer du(hu.size() * 2);
      upload(du.get(), hu);
      rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, t,
                 reinterpret_cast<const void*>(du.get() + 2), ldu,
                 reinterpret_cast<const void*>(dw.get()), k, 0.0f, t,
                 reinterpret_cast<void*>(dy.get()), n);
      testing::synchronize();
      EXPECT_EQ(download<std::uint16_t>(dy.get(), static_cast<std::size_t>(m * n)), y16);
    }
    // What is not served yet: C of another 16-bit type.
    const void* px = reinterpret_cast<const void*>(dx.get());
    void* py = reinterpret_cast<void*>(dy.get());
    EXPECT_EQ(code([&] {
                rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, t, px, k, px, k, 0.0f,
                           bf16 ? DataType::kF16 : DataType::kBF16, py, n);
              }),
              ErrorCode::kUnsupported);
    // A bad argument is still a bad argument (ldc too small), checked before anything runs.
    EXPECT_EQ(code([&] {
                rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, t, px, k, px, k, 0.0f,
                           t, py, n - 1);
              }),
              ErrorCode::kInvalidArgument);
  }
}

// tf32 through Runtime::gemm_ex: float arrays of any values (not rounded to tf32 beforehand),
// row-major y = x @ w.T, within the documented tolerance with its input term; unaligned operands
// give the same bits (copied to aligned scratch first), and so do the other ops and a batch (the
// operands that are not k-contiguous transposed into scratch first); tf32 with C of another type
// than f32 refused with kUnsupported.
TEST(GemmTcGpu, GemmExTf32TakesAnyFloatsWithinTheInputRoundingBound) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only; this GPU is " << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t m = 333, n = 260, k = 1000;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
  for (auto& v : x) v = uni(rng);
  for (auto& v : w) v = uni(rng);
  detail::DeviceBuffer dx(x.size() * 4), dw(w.size() * 4), dy(static_cast<std::size_t>(m * n) * 4);
  upload(dx.get(), x);
  upload(dw.get(), w);
  const void* px = reinterpret_cast<const void*>(dx.get());
  const void* pw = reinterpret_cast<const void*>(dw.get());
  void* py = reinterpret_cast<void*>(dy.get());
  rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kTF32, px, k, pw, k, 0.0f,
             DataType::kF32, py, n);
  testing::synchronize();
  const auto y = download<float>(dy.get(), static_cast<std::size_t>(m * n));
  const TcTolerance tol = gemm_tc_tolerance("tf32", "f32", k);
  ASSERT_GT(tol.input, 0.0);
  std::int64_t wrong = 0, beyond_fp32 = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (std::int64_t q = 0; q < k; ++q) {
        const double pr = static_cast<double>(x[static_cast<std::size_t>(i * k + q)]) *
                          w[static_cast<std::size_t>(j * k + q)];
        sum += pr;
        mag += std::fabs(pr);
      }
      const double err = std::fabs(y[static_cast<std::size_t>(i * n + j)] - sum);
      if (!(err <= (tol.acc + tol.input) * mag + 1e-12) && ++wrong <= 3)
        ADD_FAILURE() << "y(" << i << ", " << j << ") = " << y[static_cast<std::size_t>(i * n + j)]
                      << ", expected " << sum;
      if (err > std::ldexp(mag, -20)) ++beyond_fp32;
    }
  EXPECT_EQ(wrong, 0);
  // The inputs were multiplied as tf32, not as fp32: products off by about 2^-11 of random signs
  // put most results about 2^-11 sqrt(k) / 4 (3e-3) from the exact sum, beyond 2^-20 of the
  // magnitude sum (2.4e-4), which full fp32 products (about 2e-5 off) stay within.
  EXPECT_GT(beyond_fp32, m * n / 2);
  EXPECT_EQ(code([&] {
              rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kTF32, px, k,
                         pw, k, 0.0f, DataType::kBF16, py, n);
            }),
            ErrorCode::kUnsupported);
  // Unaligned floats (x 4 bytes past a 16-byte boundary, rows of k + 1): copied into aligned
  // scratch first, the same bits.
  {
    const std::int64_t ldu = k + 1;
    std::vector<float> u(static_cast<std::size_t>(m * ldu + 1), 0.0f);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t q = 0; q < k; ++q)
        u[static_cast<std::size_t>(1 + i * ldu + q)] = x[static_cast<std::size_t>(i * k + q)];
    detail::DeviceBuffer du(u.size() * 4);
    upload(du.get(), u);
    rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kTF32,
               reinterpret_cast<const void*>(du.get() + 4), ldu, pw, k, 0.0f, DataType::kF32, py,
               n);
    testing::synchronize();
    EXPECT_EQ(download<float>(dy.get(), static_cast<std::size_t>(m * n)), y);
  }
  // The other ops: an operand that is not k-contiguous is transposed into scratch first and the
  // same tn kernel multiplies the same values, so every layout gives y's bits. v = w^T stored
  // k x n (row-major op nn), xt = x^T stored k x m (op_a = T).
  {
    std::vector<float> v(static_cast<std::size_t>(k * n)), xt(static_cast<std::size_t>(k * m));
    for (std::int64_t q = 0; q < k; ++q) {
      for (std::int64_t j = 0; j < n; ++j)
        v[static_cast<std::size_t>(q * n + j)] = w[static_cast<std::size_t>(j * k + q)];
      for (std::int64_t i = 0; i < m; ++i)
        xt[static_cast<std::size_t>(q * m + i)] = x[static_cast<std::size_t>(i * k + q)];
    }
    detail::DeviceBuffer dv(v.size() * 4), dxt(xt.size() * 4);
    upload(dv.get(), v);
    upload(dxt.get(), xt);
    const void* pv = reinterpret_cast<const void*>(dv.get());
    const void* pxt = reinterpret_cast<const void*>(dxt.get());
    struct Case {
      const char* name;
      Op op_a, op_b;
      const void *a, *b;
      std::int64_t lda, ldb;
    };
    for (const Case& c : {Case{"x @ v (nn)", Op::kN, Op::kN, px, pv, k, n},
                          Case{"xt^T @ w^T (tt)", Op::kT, Op::kT, pxt, pw, m, k},
                          Case{"xt^T @ v (tn)", Op::kT, Op::kN, pxt, pv, m, n}}) {
      upload(dy.get(), std::vector<float>(static_cast<std::size_t>(m * n), std::nanf("")));
      rt.gemm_ex(Layout::kRowMajor, c.op_a, c.op_b, m, n, k, 1.0f, DataType::kTF32, c.a, c.lda, c.b,
                 c.ldb, 0.0f, DataType::kF32, py, n);
      testing::synchronize();
      EXPECT_EQ(download<float>(dy.get(), static_cast<std::size_t>(m * n)), y) << c.name;
    }
    // A batch of two: x twice (m * k apart), one v for both (stride 0), transposed per matrix.
    std::vector<float> x2(x);
    x2.insert(x2.end(), x.begin(), x.end());
    detail::DeviceBuffer dx2(x2.size() * 4), dy2(static_cast<std::size_t>(2 * m * n) * 4);
    upload(dx2.get(), x2);
    rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kN, m, n, k, 1.0f, DataType::kTF32,
                               reinterpret_cast<const void*>(dx2.get()), k, m * k, pv, n, 0, 0.0f,
                               DataType::kF32, reinterpret_cast<void*>(dy2.get()), n, m * n, 2);
    testing::synchronize();
    const auto y2 = download<float>(dy2.get(), static_cast<std::size_t>(2 * m * n));
    EXPECT_EQ(std::vector<float>(y2.begin(), y2.begin() + m * n), y);
    EXPECT_EQ(std::vector<float>(y2.begin() + m * n, y2.end()), y);
  }
}

// Strided batches through Runtime::gemm_strided_batched_ex: row-major y_b = x_b @ w_b.T of 3
// products in one launch (C f32 and bf16), x @ v (op nn) with one v for every product (stride 0),
// a stride that is not a multiple of 16 bytes (the batch copied into aligned scratch first), and
// C's matrices overlapping refused with kInvalidArgument.
// A long k over few tiles through the runtime (no database: the default configuration, which
// splits k): one product with bf16 C and alpha, beta; a strided batch with f32 C.
TEST(GemmTcGpu, TheRuntimeSplitsALongKOverFewTiles) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only; this GPU is " << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t batch = 2, m = 96, n = 136, k = 30000;
  ASSERT_GE(gemm_tc_family()
                .default_config(gemm_tc_problem("bf16", "bf16", true, false, n, m, k, 8),
                                ktune_held_device.limits())
                .at("SPLITK"),
            4);
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int> pick(-128, 128);
  // x: batch matrices m x k (row-major); w: batch matrices n x k; y: m x n, sc apart.
  std::vector<double> x(static_cast<std::size_t>(m * k * batch)),
      w(static_cast<std::size_t>(n * k * batch)), y0(static_cast<std::size_t>(m * n * batch));
  for (auto& e : x) e = pick(rng) / 128.0;
  for (auto& e : w) e = pick(rng) / 128.0;
  for (auto& e : y0) e = pick(rng) / 128.0;
  const auto dx = upload_bf16(x), dw = upload_bf16(w), dy16 = upload_bf16(y0);
  std::vector<double> ref(static_cast<std::size_t>(m * n * batch)), mag(ref.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double r = 0, a = 0;
        for (std::int64_t q = 0; q < k; ++q) {
          const double pr = x[static_cast<std::size_t>((b * m + i) * k + q)] *
                            w[static_cast<std::size_t>((b * n + j) * k + q)];
          r += pr;
          a += std::fabs(pr);
        }
        ref[static_cast<std::size_t>((b * m + i) * n + j)] = r;
        mag[static_cast<std::size_t>((b * m + i) * n + j)] = a;
      }
  auto cptr = [](const std::unique_ptr<detail::DeviceBuffer>& buf) {
    return reinterpret_cast<const void*>(buf->get());
  };
  // One product: y = 1.5 x w^T + 0.5 y, bf16.
  rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.5f, DataType::kBF16, cptr(dx), k,
             cptr(dw), k, 0.5f, DataType::kBF16, reinterpret_cast<void*>(dy16->get()), n);
  testing::synchronize();
  const TcTolerance t16 = gemm_tc_tolerance("bf16", "bf16", k);
  const auto got16 = download<std::uint16_t>(dy16->get(), static_cast<std::size_t>(m * n));
  std::int64_t wrong = 0;
  for (std::size_t e = 0; e < got16.size(); ++e) {
    const double want = 1.5 * ref[e] + 0.5 * y0[e];
    const double bound = t16.rel * std::fabs(want) + 1.5 * t16.acc * mag[e] + 1e-6;
    if (!(std::fabs(decode(got16[e], true) - want) <= bound) && ++wrong <= 3)
      ADD_FAILURE() << "y(" << e / n << ", " << e % n << ") = " << decode(got16[e], true)
                    << ", expected " << want;
  }
  EXPECT_EQ(wrong, 0);
  // The batch, f32 C (beta 0: what C held does not matter).
  detail::DeviceBuffer dy(static_cast<std::size_t>(m * n * batch) * 4);
  rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kBF16,
                             cptr(dx), k, m * k, cptr(dw), k, n * k, 0.0f, DataType::kF32,
                             reinterpret_cast<void*>(dy.get()), n, m * n, batch);
  testing::synchronize();
  const TcTolerance t32 = gemm_tc_tolerance("bf16", "f32", k);
  const auto got = download<float>(dy.get(), ref.size());
  wrong = 0;
  for (std::size_t e = 0; e < got.size(); ++e)
    if (!(std::fabs(got[e] - ref[e]) <= t32.acc * mag[e] + 1e-6) && ++wrong <= 3)
      ADD_FAILURE() << "batch element " << e << " = " << got[e] << ", expected " << ref[e];
  EXPECT_EQ(wrong, 0);
}

// The typed gemm() of bf16 and fp16 pointers is gemm_ex with those types (the same bits), and
// Options::allow_tf32 sends gemm() of floats to the tf32 tensor cores (the bits of gemm_ex with
// kTF32, not those of the FP32 path).
TEST(GemmTcGpu, TypedGemmAndAllowTf32AreGemmEx) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major < 8)
    GTEST_SKIP() << "the tensor-core calls need sm_80 or later; this GPU is "
                 << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t m = 300, n = 200, k = 520;  // row-major y (m x n) = x (m x k) w^T (w: n x k)
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
  for (auto& e : x) e = value(rng);
  for (auto& e : w) e = value(rng);
  auto to16 = [](const std::vector<float>& v, bool bf16) {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) h[i] = encode(v[i], bf16);
    return h;
  };
  for (const bool bf16 : {true, false}) {
    const DataType type = bf16 ? DataType::kBF16 : DataType::kF16;
    detail::DeviceBuffer dx(x.size() * 2), dw(w.size() * 2), ex(m * n * 4), typed(m * n * 4);
    upload(dx.get(), to16(x, bf16));
    upload(dw.get(), to16(w, bf16));
    for (const bool out32 : {false, true}) {
      const std::size_t bytes = static_cast<std::size_t>(m * n) * (out32 ? 4 : 2);
      rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, type,
                 reinterpret_cast<const void*>(dx.get()), k,
                 reinterpret_cast<const void*>(dw.get()), k, 0.0f, out32 ? DataType::kF32 : type,
                 reinterpret_cast<void*>(ex.get()), n);
      if (bf16) {
        const auto* a = reinterpret_cast<const __nv_bfloat16*>(dx.get());
        const auto* b = reinterpret_cast<const __nv_bfloat16*>(dw.get());
        if (out32)
          rt.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
                  reinterpret_cast<float*>(typed.get()), n);
        else
          rt.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
                  reinterpret_cast<__nv_bfloat16*>(typed.get()), n);
      } else {
        const auto* a = reinterpret_cast<const __half*>(dx.get());
        const auto* b = reinterpret_cast<const __half*>(dw.get());
        if (out32)
          rt.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
                  reinterpret_cast<float*>(typed.get()), n);
        else
          rt.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
                  reinterpret_cast<__half*>(typed.get()), n);
      }
      testing::synchronize();
      EXPECT_EQ(download<unsigned char>(ex.get(), bytes),
                download<unsigned char>(typed.get(), bytes))
          << (bf16 ? "bf16" : "f16") << (out32 ? " -> f32" : "");
    }
  }
  // Floats that tf32 does not hold (random 24-bit mantissas).
  detail::DeviceBuffer fx(x.size() * 4), fw(w.size() * 4), ex(m * n * 4), tf(m * n * 4),
      fp(m * n * 4);
  upload(fx.get(), x);
  upload(fw.get(), w);
  rt.gemm_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kTF32,
             reinterpret_cast<const void*>(fx.get()), k, reinterpret_cast<const void*>(fw.get()), k,
             0.0f, DataType::kF32, reinterpret_cast<void*>(ex.get()), n);
  o.allow_tf32 = true;
  Runtime tf32(o);
  const auto* a = reinterpret_cast<const float*>(fx.get());
  const auto* b = reinterpret_cast<const float*>(fw.get());
  tf32.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
            reinterpret_cast<float*>(tf.get()), n);
  rt.gemm(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, a, k, b, k, 0.0f,
          reinterpret_cast<float*>(fp.get()), n);
  testing::synchronize();
  const auto want = download<float>(ex.get(), static_cast<std::size_t>(m * n));
  const auto got = download<float>(tf.get(), want.size());
  const auto fp32 = download<float>(fp.get(), want.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << "allow_tf32";
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += fp32[i] != want[i];
  EXPECT_GT(differ, want.size() / 2) << "the FP32 path gave the tf32 bits";
}

// EPI = 1 stores the bits EPI = 0 stores: the same products, rounded the same way, and nothing
// outside C's rows and matrices (C starts as a pattern no product gives). Strided batches (the
// 3-D store map), edges in both directions, both tile schedules, f32 and 16-bit C; C's rows not
// 16 bytes apart or not a multiple of 16 bytes long: the TMA cannot store them, the kernel
// stores from the registers.
TEST(GemmTcGpu, TheTmaStoreEpilogueWritesTheBitsOfTheRegisterStores) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only; this GPU is " << ktune_held_device.limits().arch();
  KernelCache cache(ktune_held_device, nullptr);
  const Family& f = gemm_tc_family();
  struct Run {
    std::string dtype, out;
    std::int64_t m, n, k, batch, ldc_pad;  // ldc: m rounded up to 8, and ldc_pad
    Config changes;
    bool tma;  // EPI = 1 stores C through the TMA (else from the registers)
  };
  const std::vector<Run> runs = {
      {"bf16", "bf16", 336, 517, 304, 3, 8, {}, true},
      {"bf16", "bf16", 333, 517, 304, 3, 8, {}, false},  // rows of 666 bytes
      {"f16", "f32", 2000, 700, 200, 4, 4, {{"PINGPONG", 1}, {"PERSIST", 1}}, true},
      {"tf32", "f32", 132, 1100, 96, 4, 12, {{"BN", 128}, {"WM", 128}, {"CONSUMERS", 1}}, true},
      {"bf16", "f32", 700, 900, 136, 1, 1, {}, false},  // rows of C 4 bytes past 16
      {"f16", "f16", 2104, 260, 64, 1, 8, {{"CLUSTER", 2}, {"BN", 128}}, true},
      {"tf32", "f32", 130, 1100, 96, 1, 12, {}, false},  // rows of 520 bytes
  };
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<int> pick(-128, 128);
  for (const Run& r : runs) {
    const bool out16 = r.out != "f32";
    const std::int64_t align = r.dtype == "tf32" ? 4 : 8;
    Problem p = gemm_tc_problem(r.dtype, r.out, true, false, r.m, r.n, r.k, align, r.batch);
    Config config = f.default_config(p, ktune_held_device.limits());
    for (const auto& [name, value] : r.changes) config[name] = value;
    config["SPLITK"] = 1;
    const std::int64_t lda = r.k, ldb = r.k, ldc = (r.m + 7) / 8 * 8 + r.ldc_pad;
    const std::int64_t sa = lda * r.m + 8, sb = ldb * r.n + 16, sc = ldc * r.n + 8;
    std::vector<double> a(static_cast<std::size_t>(sa * r.batch)),
        b(static_cast<std::size_t>(sb * r.batch));
    for (auto& v : a) v = pick(rng) / 128.0;
    for (auto& v : b) v = pick(rng) / 128.0;
    const auto ha = encode_inputs(a, r.dtype), hb = encode_inputs(b, r.dtype);
    detail::DeviceBuffer da(ha.size()), db(hb.size());
    upload(da.get(), ha);
    upload(db.get(), hb);
    const std::size_t c_bytes = static_cast<std::size_t>(sc * r.batch) * (out16 ? 2 : 4);
    std::vector<std::vector<unsigned char>> got;
    for (int epi : {0, 1}) {
      config["EPI"] = epi;
      const std::string label = p.key() + " " + to_string(config);
      ASSERT_EQ(f.reject(config, p, ktune_held_device.limits()), "") << label;
      detail::DeviceBuffer dc(c_bytes);
      upload(dc.get(), std::vector<unsigned char>(c_bytes, 0x7f));
      TcCall call;
      call.dtype = r.dtype, call.out = r.out;
      call.trans_a = true, call.trans_b = false;
      call.m = r.m, call.n = r.n, call.k = r.k;
      call.alpha = 1.5f, call.beta = 0.0f;
      call.a = reinterpret_cast<const void*>(da.get()), call.lda = lda;
      call.b = reinterpret_cast<const void*>(db.get()), call.ldb = ldb;
      call.c = reinterpret_cast<void*>(dc.get()), call.ldc = ldc;
      call.batch = r.batch, call.stride_a = sa, call.stride_b = sb, call.stride_c = sc;
      EXPECT_EQ(gemm_tc_tma_store(config, call), epi == 1 && r.tma) << label;
      auto kernel = cache.get(f.compile_request(config, p, ktune_held_device.limits().arch()));
      gemm_tc_launch(f, *kernel, config, call, nullptr);
      testing::synchronize();
      got.push_back(download<unsigned char>(dc.get(), c_bytes));
    }
    const std::string label = p.key() + " " + to_string(config);
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < c_bytes; ++i)
      if (got[0][i] != got[1][i] && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << label << ": first differing byte " << first;
    // Something was computed: the first element is no longer the pattern.
    const std::vector<unsigned char> pattern(out16 ? 2 : 4, 0x7f);
    EXPECT_NE(std::memcmp(got[1].data(), pattern.data(), pattern.size()), 0) << label;
  }
}

TEST(GemmTcGpu, StridedBatchesMatchTheHostReferencePerMatrix) {
  KTUNE_REQUIRE_GPU();
  if (ktune_held_device.limits().cc_major != 9)
    GTEST_SKIP() << "gemm_tc runs on sm_90 only; this GPU is " << ktune_held_device.limits().arch();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  const std::int64_t batch = 3, m = 200, n = 136, k = 72;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> pick(-128, 128);
  // x: batch matrices m x k (row-major), sx apart; w: batch matrices n x k, sw apart; v: k x n.
  const std::int64_t sx = m * k + 8, sw = n * k + 16;
  std::vector<double> x(static_cast<std::size_t>(sx * batch), 0),
      w(static_cast<std::size_t>(sw * batch), 0), v(static_cast<std::size_t>(k * n));
  for (auto& e : x) e = pick(rng) / 128.0;
  for (auto& e : w) e = pick(rng) / 128.0;
  for (auto& e : v) e = pick(rng) / 128.0;
  const auto dx = upload_bf16(x), dw = upload_bf16(w), dv = upload_bf16(v);
  const std::int64_t sc = m * n + 4;  // C's matrices, row-major m x n, sc apart
  detail::DeviceBuffer dy(static_cast<std::size_t>(sc * batch) * 4);
  auto check = [&](const std::vector<float>& y, bool with_v, const char* what) {
    std::int64_t wrong = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double r = 0;
          for (std::int64_t q = 0; q < k; ++q)
            r += x[static_cast<std::size_t>(b * sx + i * k + q)] *
                 (with_v ? v[static_cast<std::size_t>(q * n + j)]
                         : w[static_cast<std::size_t>(b * sw + j * k + q)]);
          const double got = y[static_cast<std::size_t>(b * sc + i * n + j)];
          if (!(std::fabs(got - r) <= 1e-5 * (std::fabs(r) + 1)) && ++wrong <= 3)
            ADD_FAILURE() << what << ": y" << b << "(" << i << ", " << j << ") = " << got
                          << ", expected " << r;
        }
    EXPECT_EQ(wrong, 0) << what;
  };
  auto ptr = [](const std::unique_ptr<detail::DeviceBuffer>& b) {
    return reinterpret_cast<const void*>(b->get());
  };
  void* py = reinterpret_cast<void*>(dy.get());
  rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kBF16,
                             ptr(dx), k, sx, ptr(dw), k, sw, 0.0f, DataType::kF32, py, n, sc,
                             batch);
  testing::synchronize();
  const auto y = download<float>(dy.get(), static_cast<std::size_t>(sc * batch));
  check(y, false, "x @ w.T");
  // bf16 C: the same products rounded once.
  rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kBF16,
                             ptr(dx), k, sx, ptr(dw), k, sw, 0.0f, DataType::kBF16, py, n, sc,
                             batch);
  testing::synchronize();
  const auto y16 = download<std::uint16_t>(dy.get(), static_cast<std::size_t>(sc * batch));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t e = 0; e < m * n; e += 97) {
      const std::size_t at = static_cast<std::size_t>(b * sc + e);
      EXPECT_NEAR(decode(y16[at], true), y[at], std::fabs(y[at]) / 256 + 1e-6) << b << " " << e;
    }
  // One v for every product (stride 0), op nn.
  rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kN, m, n, k, 1.0f, DataType::kBF16,
                             ptr(dx), k, sx, ptr(dv), n, 0, 0.0f, DataType::kF32, py, n, sc, batch);
  testing::synchronize();
  check(download<float>(dy.get(), static_cast<std::size_t>(sc * batch)), true, "x @ v, stride 0");
  // A stride of m k + 1 elements (not 16 bytes): copied into aligned scratch, the same bits.
  {
    const std::int64_t sx1 = m * k + 1;
    std::vector<double> x1(static_cast<std::size_t>(sx1 * batch), 0);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t e = 0; e < m * k; ++e)
        x1[static_cast<std::size_t>(b * sx1 + e)] = x[static_cast<std::size_t>(b * sx + e)];
    const auto dx1 = upload_bf16(x1);
    rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kBF16,
                               ptr(dx1), k, sx1, ptr(dw), k, sw, 0.0f, DataType::kF32, py, n, sc,
                               batch);
    testing::synchronize();
    // The matrices only: the gaps between them hold what earlier calls left.
    const auto got = download<float>(dy.get(), static_cast<std::size_t>(sc * batch));
    std::int64_t differ = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t e = 0; e < m * n; ++e)
        differ +=
            got[static_cast<std::size_t>(b * sc + e)] != y[static_cast<std::size_t>(b * sc + e)];
    EXPECT_EQ(differ, 0);
  }
  // C's matrices overlapping: refused before anything runs.
  try {
    rt.gemm_strided_batched_ex(Layout::kRowMajor, Op::kN, Op::kT, m, n, k, 1.0f, DataType::kBF16,
                               ptr(dx), k, sx, ptr(dw), k, sw, 0.0f, DataType::kF32, py, n,
                               m * n - 1, batch);
    ADD_FAILURE() << "overlapping C accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("stride_c"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ktune
