// GEMM family: C = alpha * op(A) * op(B) + beta * C, column-major, f32/f64 on the FMA units or
// f64 on the FP64 tensor cores. Block tile BM x BN x BK in shared memory (k-major for both
// operands, so every operand fragment is a vector load), warp tile WM x WN split into WMITER x
// WNITER sub-tiles, TM x TN registers per thread and sub-tile; register-staged double buffering or
// a cp.async pipeline of 3 or 4 stages, shared-to-register prefetch, split-K, grouped block
// rasterization, and a register cap that keeps MINB blocks resident per SM. KCONTIG keeps an
// operand that is k-contiguous in memory (A with op T, B with op N) k-contiguous in shared memory
// too, so it is copied without a transpose and read KCONTIG k-steps per vector. Edge tiles: the
// register-staged copies read rows and columns past the matrix from row or column 0 unchecked
// (their results are never written), leaving the predicated path to the last k-tile and to
// vectors that straddle m or n; the cp.async copies zero-fill past the matrix. For f64, MMA = 1 to
// 4 computes the warp tile with mma.sync (m8n8k4, m16n8k4, m16n8k8, m16n8k16; see GemmDmma) from
// the same shared-memory tiles instead of the FMA units.
#pragma once

#include "common.cuh"

namespace ktune {

enum GemmOp { kGemmN = 0, kGemmT = 1 };

// Same layout as ktune::GemmArgs<T> in gemm.hpp.
template <typename T>
struct GemmParams {
  const T* a;
  const T* b;
  T* c;
  T* workspace;  // split-K partial sums: splits x tiles x BM x BN (GemmTile::frag_pos)
  long long lda, ldb, ldc;
  int m, n, k;
  int k_per_split;  // a multiple of BK; the k range of blockIdx.z
  int swizzle;      // block rasterization group (1: plain column order of tiles)
  int c_vector;     // 1: C and ldc allow 16-byte accesses down a column
  T alpha, beta;
};

// Grouped rasterization (as in Triton's GROUP_M): `swizzle` consecutive tile rows are walked
// column by column, so blocks running together share A and B tiles in L2.
__device__ __forceinline__ void gemm_tile_of(int id, int tiles_m, int tiles_n, int swizzle, int& tm,
                                             int& tn) {
  if (swizzle <= 1) {
    tm = id % tiles_m;
    tn = id / tiles_m;
  } else {
    const int per_group = swizzle * tiles_n;
    const int group = id / per_group;
    const int first_m = group * swizzle;
    const int rows = min(tiles_m - first_m, swizzle);
    const int in_group = id % per_group;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
  }
}

// Asynchronous global -> shared copies (sm_80+): BYTES of 4, 8 or 16, of which the first
// `src_bytes` are read and the rest zero-filled (0: nothing is read, `src` is not dereferenced).
template <int BYTES>
__device__ __forceinline__ void gemm_cp_async(void* dst, const void* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES),
                 "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void gemm_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void gemm_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// D = A * B + D on the FP64 tensor cores, one MM x 8 x MK tile per warp. KIND 1: m8n8k4 (sm_80);
// 2, 3, 4: m16n8k4, m16n8k8, m16n8k16 (sm_90). With g = lane / 4 and t = lane % 4, register r of
// A holds A[g + 8 (r % (MM/8))][t + 4 (r / (MM/8))], register r of B holds B[t + 4 r][g] and
// register r of D holds D[g + 8 (r / 2)][2 t + r % 2].
template <int KIND>
struct GemmDmma {
  static constexpr int kM = KIND == 1 ? 8 : 16;
  static constexpr int kK = KIND <= 2 ? 4 : (KIND == 3 ? 8 : 16);
  static constexpr int kA = kM * kK / 32, kB = kK / 4, kC = kM / 4;
  __device__ __forceinline__ static void run(double (&d)[kC], const double (&a)[kA],
                                             const double (&b)[kB]) {
    if constexpr (KIND == 1) {
      asm volatile(
          "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
          "{%0, %1};\n"
          : "+d"(d[0]), "+d"(d[1])
          : "d"(a[0]), "d"(b[0]));
    } else if constexpr (KIND == 2) {
      asm volatile(
          "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, "
          "{%6}, {%0, %1, %2, %3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a[0]), "d"(a[1]), "d"(b[0]));
    } else if constexpr (KIND == 3) {
      asm volatile(
          "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
            "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    }
  }
};

template <typename T, int OPA, int OPB, int BM, int BN, int BK, int WM, int WN, int TM, int TN,
          int WNITER, int STAGES, int PREFETCH, int UNROLL, int VEC, int PAD, int MMA, int MINB,
          int KCONTIG, int SPLIT>
struct GemmTile {
  static constexpr int kBM = BM, kBN = BN;
  static constexpr int kWarpsM = BM / WM;
  static constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
  static constexpr int kWmIter = (WM * WN) / (32 * TM * TN * WNITER);
  static constexpr int kSubM = WM / kWmIter;
  static constexpr int kSubN = WN / WNITER;
  static constexpr int kLanesM = kSubM / TM;  // lanes of a warp along m
  static constexpr int kLanesN = kSubN / TN;
  // Shared-memory layout: k-major rows (As[k][m], Bs[k][n]), or with KCONTIG k-contiguous rows
  // (As[m][k], Bs[n][k]) for an operand that is k-contiguous in memory.
  static constexpr bool kAk = KCONTIG > 0 && OPA == kGemmT;
  static constexpr bool kBk = KCONTIG > 0 && OPB == kGemmN;
  static constexpr int kLdA = kAk ? BK + PAD : BM + PAD;  // row strides
  static constexpr int kLdB = kBk ? BK + PAD : BN + PAD;
  static constexpr int kStageA = (kAk ? BM : BK) * kLdA;  // elements per stage
  static constexpr int kStageB = (kBk ? BN : BK) * kLdB;
  static constexpr int kFragM = kWmIter * TM;
  static constexpr int kFragN = WNITER * TN;
  // Global -> register staging: each operand tile is read along its contiguous dimension.
  static constexpr int kAContig = OPA == kGemmN ? BM : BK;
  static constexpr int kBContig = OPB == kGemmT ? BN : BK;
  static constexpr int kALoads = BM * BK / VEC / kThreads;
  static constexpr int kBLoads = BN * BK / VEC / kThreads;
  // Widest shared-memory access that the fragments allow (16 bytes at most).
  static constexpr int kUnroll = UNROLL == 0 ? BK : UNROLL;
  static constexpr int kKv = KCONTIG > 0 ? KCONTIG : 1;  // k-steps per k-contiguous read
  static constexpr int kChunk = 16 / sizeof(T);
  static constexpr int kChunkM =
      TM % kChunk == 0 ? kChunk : (TM % 2 == 0 && sizeof(T) <= 8 ? 2 : 1);
  static constexpr int kChunkN =
      TN % kChunk == 0 ? kChunk : (TN % 2 == 0 && sizeof(T) <= 8 ? 2 : 1);
  // MMA: the warp tile as MM x 8 tensor-core tiles.
  using Dmma = GemmDmma<MMA ? MMA : 1>;
  static constexpr int kMmaM = WM / Dmma::kM;
  static constexpr int kMmaN = WN / 8;

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
  static_assert(kThreads >= 32 && kThreads <= 1024, "32 to 1024 threads per block");
  static_assert(kWmIter >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0,
                "a warp tile must hold 32 threads' TM x TN x WNITER sub-tiles");
  static_assert(WM % kWmIter == 0 && WN % WNITER == 0, "sub-tiles must divide the warp tile");
  static_assert(kSubM % TM == 0 && kSubN % TN == 0, "thread tiles must divide the sub-tile");
  static_assert((kSubM / TM) * (kSubN / TN) == 32, "a sub-tile must hold exactly 32 thread tiles");
  static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
  static_assert(VEC * sizeof(T) <= 16, "one global access moves at most 16 bytes");
  static_assert(kAContig % VEC == 0 && kBContig % VEC == 0,
                "VEC must divide the contiguous tile extent");
  static_assert(kALoads >= 1 && kALoads * VEC * kThreads == BM * BK,
                "A tile must split evenly over threads");
  static_assert(kBLoads >= 1 && kBLoads * VEC * kThreads == BN * BK,
                "B tile must split evenly over threads");
  static_assert(STAGES >= 1 && STAGES <= 4,
                "STAGES: 1 (no buffering), 2 (double buffering), 3 or 4 (cp.async pipeline)");
  static_assert(MMA >= 0 && MMA <= 4, "MMA: 0 (FMA units) or a tensor-core shape 1 to 4");
  static_assert(MINB >= 1 && MINB <= 4, "MINB: 1 to 4 resident blocks per SM");
  static_assert(
      !MMA ||
          (sizeof(T) == 8 && BK % Dmma::kK == 0 && WM % Dmma::kM == 0 && !PREFETCH && UNROLL == 0),
      "MMA: f64 only, BK and WM multiples of the shape, no fragment prefetch, full unroll");
  static_assert(PAD % 4 == 0 && PAD % VEC == 0, "PAD keeps rows 16-byte aligned");
  static_assert(PREFETCH >= 0 && PREFETCH <= 3 && (PREFETCH == 0 || (UNROLL == 0 && BK % 2 == 0)),
                "PREFETCH: 0, 1 (within a k-tile), 2 (within and across k-tiles) or 3 (across "
                "k-tiles), with the k loop fully unrolled");
  static_assert(PREFETCH < 2 || STAGES >= 2, "PREFETCH 2 and 3 need a second stage");
  static_assert(UNROLL == 0 || (BK % UNROLL == 0 && UNROLL % 2 == 0),
                "UNROLL: 0 (all of BK) or an even divisor");
  static_assert(
      KCONTIG == 0 || ((OPA == kGemmT || OPB == kGemmN) && !MMA && !PREFETCH &&
                       KCONTIG * sizeof(T) <= 16 && BK % KCONTIG == 0 && kUnroll % KCONTIG == 0),
      "KCONTIG: an operand k-contiguous in memory, FMA units, no prefetch, and a k-vector "
      "of at most 16 bytes that divides BK and the unroll");

  // Where fragment element t of sub-tile w lies in the warp tile: blocked (TM consecutive rows per
  // thread, read as vectors along m) for a k-major operand; lane-interleaved for a k-contiguous
  // one, so the lanes of one read hit consecutive rows of the tile, which the padding spreads over
  // the banks.
  __device__ __forceinline__ static int a_row(int wi, int t, int lm) {
    return wi * kSubM + (kAk ? t * kLanesM + lm : lm * TM + t);
  }
  __device__ __forceinline__ static int b_col(int wj, int t, int ln) {
    return wj * kSubN + (kBk ? t * kLanesN + ln : ln * TN + t);
  }
  // Split K: a block writes its partial sums warp by warp, each warp's accumulators in register
  // order with the 32 lanes side by side (accumulator f of a lane at f * 32 + lane), so that
  // every store of a warp fills 128 contiguous bytes. kFrag: accumulators per thread.
  static constexpr int kFrag = MMA ? kMmaM * kMmaN * Dmma::kC : kFragM * kFragN;
  // Accumulators the reduction takes together: consecutive rows of a column of C (a thread's
  // blocked rows, up to 16 bytes), else one.
  static constexpr int kRun = (MMA || kAk) ? 1 : (TM < kChunk ? TM : kChunk);
  // Where accumulator f of a lane of a warp lies in the block tile.
  __device__ __forceinline__ static void frag_pos(int warp, int lane, int f, int& row, int& col) {
    const int wm0 = (warp % kWarpsM) * WM, wn0 = (warp / kWarpsM) * WN;
    if constexpr (MMA) {
      const int r = f % Dmma::kC, j = (f / Dmma::kC) % kMmaN, i = f / (Dmma::kC * kMmaN);
      row = wm0 + i * Dmma::kM + lane / 4 + 8 * (r / 2);
      col = wn0 + j * 8 + (lane % 4) * 2 + r % 2;
    } else {
      const int fm = f / kFragN, fn = f % kFragN;
      row = wm0 + a_row(fm / TM, fm % TM, lane % kLanesM);
      col = wn0 + b_col(fn / TN, fn % TN, lane / kLanesM);
    }
  }

};

// Loads VEC consecutive elements at p; with `check`, elements with ok[e] false read as zero.
// Called with a constant `check`, so each call site keeps only one path after inlining.
template <typename T, int VEC>
__device__ __forceinline__ Packet<T, VEC> gemm_load(const T* p, bool check, bool all_ok,
                                                    const bool* ok) {
  Packet<T, VEC> r;
  if (!check || all_ok) {
    r = *reinterpret_cast<const Packet<T, VEC>*>(p);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) r.v[e] = ok[e] ? p[e] : T(0);
  }
  return r;
}

// MINB = 1 names no minimum (0): the register allocation is the one without the argument.
template <typename T, int OPA, int OPB, int BM, int BN, int BK, int WM, int WN, int TM, int TN,
          int WNITER, int STAGES, int PREFETCH, int UNROLL, int VEC, int PAD, int MMA, int MINB,
          int KCONTIG, int SPLIT>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB > 1 ? MINB : 0)
    gemm_kernel(GemmParams<T> p) {
  using G = GemmTile<T, OPA, OPB, BM, BN, BK, WM, WN, TM, TN, WNITER, STAGES, PREFETCH, UNROLL, VEC,
                     PAD, MMA, MINB, KCONTIG, SPLIT>;
  extern __shared__ __align__(16) unsigned char gemm_smem[];
  T* As = reinterpret_cast<T*>(gemm_smem);  // [STAGES][kStageA]
  T* Bs = As + STAGES * G::kStageA;         // [STAGES][kStageB]
#if __CUDA_ARCH__ >= 900
  // Split K: let the reduction's launch begin now (it waits for this grid's end before reading).
  if constexpr (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif

  const int tid = threadIdx.x;
  const int tiles_m = (p.m + BM - 1) / BM;
  const int tiles_n = (p.n + BN - 1) / BN;
  int tile_m, tile_n;
  gemm_tile_of(blockIdx.x, tiles_m, tiles_n, p.swizzle, tile_m, tile_n);
  const int m0 = tile_m * BM;
  const int n0 = tile_n * BN;
  const int k_begin = SPLIT ? blockIdx.z * p.k_per_split : 0;
  const int k_end = SPLIT ? min(p.k, k_begin + p.k_per_split) : p.k;
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  const int full_k_tiles = k_end > k_begin ? (k_end - k_begin) / BK : 0;
  const bool interior = m0 + BM <= p.m && n0 + BN <= p.n;
  // On the FMA units the unchecked loads cover an edge tile too unless a vector along m (A, op N)
  // or n (B, op T) straddles the end of the matrix (the tensor-core kernels measured faster
  // without the clamp, so they keep edge tiles on the checked path).
  const bool clamp = !MMA;
  const bool whole_vectors =
      clamp ? (OPA != kGemmN || VEC == 1 || p.m % VEC == 0 || m0 + BM <= p.m) &&
                  (OPB != kGemmT || VEC == 1 || p.n % VEC == 0 || n0 + BN <= p.n)
            : interior;

  Packet<T, VEC> a_stage[G::kALoads] = {};  // (stored once more after the last tile: PREFETCH 2, 3)
  Packet<T, VEC> b_stage[G::kBLoads] = {};

  // Global -> registers. Vector v of the tile: c along the contiguous dimension, o across it.
  // Double buffering (STAGES 2): the unchecked copies start from their addresses in k-tile 0
  // (rows and columns past the matrix clamped to 0 as below) and add kt times one k-tile's
  // stride; a 64-bit address per copy recomputed each k-tile, by every warp right after the
  // barrier, left the FMA units idle (A/B on the H200: f64 nt 4096^3 on the tensor cores 5.7%
  // faster, f32 1000^3 3.7%; the unbuffered STAGES 1, whose k loops are short, lost 3.5%).
  const T* a_first[G::kALoads];
  const T* b_first[G::kBLoads];
  const long long a_kstep = OPA == kGemmN ? BK * p.lda : BK;  // elements per k-tile
  const long long b_kstep = OPB == kGemmT ? BK * p.ldb : BK;
#pragma unroll
  for (int l = 0; l < G::kALoads; ++l) {
    const int v = tid + l * G::kThreads;
    const int c = (v % (G::kAContig / VEC)) * VEC;
    const int o = v / (G::kAContig / VEC);
    int row = OPA == kGemmN ? m0 + c : m0 + o;
    const int col = OPA == kGemmN ? k_begin + o : k_begin + c;
    if (clamp && row >= p.m) row = 0;
    a_first[l] = OPA == kGemmN ? p.a + row + col * p.lda : p.a + col + row * p.lda;
  }
#pragma unroll
  for (int l = 0; l < G::kBLoads; ++l) {
    const int v = tid + l * G::kThreads;
    const int c = (v % (G::kBContig / VEC)) * VEC;
    const int o = v / (G::kBContig / VEC);
    const int kk = OPB == kGemmT ? k_begin + o : k_begin + c;
    int col = OPB == kGemmT ? n0 + c : n0 + o;
    if (clamp && col >= p.n) col = 0;
    b_first[l] = OPB == kGemmT ? p.b + col + kk * p.ldb : p.b + kk + col * p.ldb;
  }
  auto load_tiles = [&](int kt, bool check) {
    if (STAGES == 2 && !check) {
#pragma unroll
      for (int l = 0; l < G::kALoads; ++l)
        a_stage[l] = *reinterpret_cast<const Packet<T, VEC>*>(a_first[l] + kt * a_kstep);
#pragma unroll
      for (int l = 0; l < G::kBLoads; ++l)
        b_stage[l] = *reinterpret_cast<const Packet<T, VEC>*>(b_first[l] + kt * b_kstep);
      return;
    }
    const int k0 = k_begin + kt * BK;
#pragma unroll
    for (int l = 0; l < G::kALoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kAContig / VEC)) * VEC;
      const int o = v / (G::kAContig / VEC);
      int row = OPA == kGemmN ? m0 + c : m0 + o;        // index in m
      const int col = OPA == kGemmN ? k0 + o : k0 + c;  // index in k
      if (clamp && !check && row >= p.m) row = 0;       // past the matrix: never written back
      const T* ptr = OPA == kGemmN ? p.a + row + col * p.lda : p.a + col + row * p.lda;
      bool ok[VEC];
      bool all = true;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        ok[e] = OPA == kGemmN ? (row + e < p.m && col < k_end) : (row < p.m && col + e < k_end);
        all &= ok[e];
      }
      a_stage[l] = gemm_load<T, VEC>(ptr, check, all, ok);
    }
#pragma unroll
    for (int l = 0; l < G::kBLoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kBContig / VEC)) * VEC;
      const int o = v / (G::kBContig / VEC);
      const int kk = OPB == kGemmT ? k0 + o : k0 + c;  // index in k
      int col = OPB == kGemmT ? n0 + c : n0 + o;       // index in n
      if (clamp && !check && col >= p.n) col = 0;
      const T* ptr = OPB == kGemmT ? p.b + col + kk * p.ldb : p.b + kk + col * p.ldb;
      bool ok[VEC];
      bool all = true;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        ok[e] = OPB == kGemmT ? (col + e < p.n && kk < k_end) : (col < p.n && kk + e < k_end);
        all &= ok[e];
      }
      b_stage[l] = gemm_load<T, VEC>(ptr, check, all, ok);
    }
  };
  auto load = [&](int kt) {
    if (whole_vectors && kt < full_k_tiles)
      load_tiles(kt, false);
    else
      load_tiles(kt, true);
  };

  // Registers -> shared memory: As[k][m], Bs[k][n], or As[m][k], Bs[n][k] (kAk, kBk).
  auto store = [&](int stage) {
    T* as = As + stage * G::kStageA;
    T* bs = Bs + stage * G::kStageB;
#pragma unroll
    for (int l = 0; l < G::kALoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kAContig / VEC)) * VEC;
      const int o = v / (G::kAContig / VEC);
      if (OPA == kGemmN || G::kAk) {
        *reinterpret_cast<Packet<T, VEC>*>(as + o * G::kLdA + c) = a_stage[l];
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) as[(c + e) * G::kLdA + o] = a_stage[l].v[e];
      }
    }
#pragma unroll
    for (int l = 0; l < G::kBLoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kBContig / VEC)) * VEC;
      const int o = v / (G::kBContig / VEC);
      if (OPB == kGemmT || G::kBk) {
        *reinterpret_cast<Packet<T, VEC>*>(bs + o * G::kLdB + c) = b_stage[l];
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) bs[(c + e) * G::kLdB + o] = b_stage[l].v[e];
      }
    }
  };

  // Global -> shared memory without registers (STAGES >= 3), with the same vector mapping. An
  // operand whose contiguous dimension is the shared-memory row (A with op N, B with op T, and a
  // k-contiguous operand kept so) moves VEC elements per copy, zero-filled past the matrix; the
  // other is stored transposed, one element per copy.
  auto copy_async = [&](int kt, int stage, bool check) {
    const int k0 = k_begin + kt * BK;
    T* as = As + stage * G::kStageA;
    T* bs = Bs + stage * G::kStageB;
#pragma unroll
    for (int l = 0; l < G::kALoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kAContig / VEC)) * VEC;
      const int o = v / (G::kAContig / VEC);
      if (OPA == kGemmN) {
        const int row = m0 + c, col = k0 + o;
        const int valid = !check ? VEC : (col < k_end ? max(0, min(VEC, p.m - row)) : 0);
        gemm_cp_async<VEC * sizeof(T)>(as + o * G::kLdA + c, valid ? p.a + row + col * p.lda : p.a,
                                       valid * static_cast<int>(sizeof(T)));
      } else if (G::kAk) {
        const int row = m0 + o, col = k0 + c;
        const int valid = !check ? VEC : (row < p.m ? max(0, min(VEC, k_end - col)) : 0);
        gemm_cp_async<VEC * sizeof(T)>(as + o * G::kLdA + c, valid ? p.a + col + row * p.lda : p.a,
                                       valid * static_cast<int>(sizeof(T)));
      } else {
        const int row = m0 + o, col = k0 + c;
        const T* ptr = p.a + col + row * p.lda;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool ok = !check || (row < p.m && col + e < k_end);
          gemm_cp_async<sizeof(T)>(as + (c + e) * G::kLdA + o, ok ? ptr + e : p.a,
                                   ok ? static_cast<int>(sizeof(T)) : 0);
        }
      }
    }
#pragma unroll
    for (int l = 0; l < G::kBLoads; ++l) {
      const int v = tid + l * G::kThreads;
      const int c = (v % (G::kBContig / VEC)) * VEC;
      const int o = v / (G::kBContig / VEC);
      if (OPB == kGemmT) {
        const int kk = k0 + o, col = n0 + c;
        const int valid = !check ? VEC : (kk < k_end ? max(0, min(VEC, p.n - col)) : 0);
        gemm_cp_async<VEC * sizeof(T)>(bs + o * G::kLdB + c, valid ? p.b + col + kk * p.ldb : p.b,
                                       valid * static_cast<int>(sizeof(T)));
      } else if (G::kBk) {
        const int kk = k0 + c, col = n0 + o;
        const int valid = !check ? VEC : (col < p.n ? max(0, min(VEC, k_end - kk)) : 0);
        gemm_cp_async<VEC * sizeof(T)>(bs + o * G::kLdB + c, valid ? p.b + kk + col * p.ldb : p.b,
                                       valid * static_cast<int>(sizeof(T)));
      } else {
        const int kk = k0 + c, col = n0 + o;
        const T* ptr = p.b + kk + col * p.ldb;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool ok = !check || (col < p.n && kk + e < k_end);
          gemm_cp_async<sizeof(T)>(bs + (c + e) * G::kLdB + o, ok ? ptr + e : p.b,
                                   ok ? static_cast<int>(sizeof(T)) : 0);
        }
      }
    }
  };
  // The copies zero-fill what lies past the matrix without diverging: edge tiles take the checked
  // copies (no clamping needed).
  auto issue_async = [&](int kt, int stage) {
    if (interior && kt < full_k_tiles)
      copy_async(kt, stage, false);
    else
      copy_async(kt, stage, true);
  };

  const int warp = tid / 32;
  const int lane = tid % 32;
  const int wm0 = (warp % G::kWarpsM) * WM;
  const int wn0 = (warp / G::kWarpsM) * WN;
  const int lm = lane % G::kLanesM;
  const int ln = lane / G::kLanesM;

  T acc[G::kFragM][G::kFragN];
#pragma unroll
  for (int i = 0; i < G::kFragM; ++i)
#pragma unroll
    for (int j = 0; j < G::kFragN; ++j) acc[i][j] = T(0);

  T af[PREFETCH ? 2 : 1][G::kFragM];
  T bf[PREFETCH ? 2 : 1][G::kFragN];

  // Fragments of one k-step from k-major tiles: TM (TN) consecutive rows per thread and sub-tile.
  auto load_a_fragment = [&](const T* as, int kk, int slot) {
#pragma unroll
    for (int wi = 0; wi < G::kWmIter; ++wi)
#pragma unroll
      for (int i = 0; i < TM; i += G::kChunkM) {
        const auto v = *reinterpret_cast<const Packet<T, G::kChunkM>*>(as + kk * G::kLdA + wm0 +
                                                                       wi * G::kSubM + lm * TM + i);
#pragma unroll
        for (int e = 0; e < G::kChunkM; ++e) af[slot][wi * TM + i + e] = v.v[e];
      }
  };
  auto load_b_fragment = [&](const T* bs, int kk, int slot) {
#pragma unroll
    for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
      for (int j = 0; j < TN; j += G::kChunkN) {
        const auto v = *reinterpret_cast<const Packet<T, G::kChunkN>*>(bs + kk * G::kLdB + wn0 +
                                                                       wj * G::kSubN + ln * TN + j);
#pragma unroll
        for (int e = 0; e < G::kChunkN; ++e) bf[slot][wj * TN + j + e] = v.v[e];
      }
  };
  auto load_fragments = [&](const T* as, const T* bs, int kk, int slot) {
    load_a_fragment(as, kk, slot);
    load_b_fragment(bs, kk, slot);
  };
  auto fma_fragments = [&](int slot) {
#pragma unroll
    for (int i = 0; i < G::kFragM; ++i)
#pragma unroll
      for (int j = 0; j < G::kFragN; ++j) acc[i][j] = fma(af[slot][i], bf[slot][j], acc[i][j]);
  };
  // MMA: the warp tile's accumulators as the tensor cores hold them (see GemmDmma).
  using D = typename G::Dmma;
  T macc[MMA ? G::kMmaM : 1][MMA ? G::kMmaN : 1][D::kC];
#pragma unroll
  for (int i = 0; i < (MMA ? G::kMmaM : 1); ++i)
#pragma unroll
    for (int j = 0; j < (MMA ? G::kMmaN : 1); ++j)
#pragma unroll
      for (int r = 0; r < D::kC; ++r) macc[i][j][r] = T(0);
  const int lr = lane / 4, lk = lane % 4;

  auto compute = [&](int stage) {
    const T* as = As + stage * G::kStageA;
    const T* bs = Bs + stage * G::kStageB;
    if constexpr (MMA) {
      constexpr int halves = D::kM / 8;
#pragma unroll
      for (int kk = 0; kk < BK; kk += D::kK) {
        T a[G::kMmaM][D::kA], b[G::kMmaN][D::kB];
#pragma unroll
        for (int i = 0; i < G::kMmaM; ++i)
#pragma unroll
          for (int r = 0; r < D::kA; ++r)
            a[i][r] = as[(kk + lk + 4 * (r / halves)) * G::kLdA + wm0 + i * D::kM + lr +
                         8 * (r % halves)];
#pragma unroll
        for (int j = 0; j < G::kMmaN; ++j)
#pragma unroll
          for (int r = 0; r < D::kB; ++r)
            b[j][r] = bs[(kk + lk + 4 * r) * G::kLdB + wn0 + j * 8 + lr];
#pragma unroll
        for (int i = 0; i < G::kMmaM; ++i)
#pragma unroll
          for (int j = 0; j < G::kMmaN; ++j) D::run(macc[i][j], a[i], b[j]);
      }
    } else if (KCONTIG) {
      // Groups of kKv k-steps: a k-contiguous operand's fragments are kKv-wide vectors read once
      // per group, a k-major operand's are read per k-step as above.
      constexpr int kv = G::kKv;
#pragma unroll G::kUnroll / G::kKv
      for (int kg = 0; kg < BK; kg += kv) {
        T av[G::kAk ? G::kFragM : 1][kv];
        T bv[G::kBk ? G::kFragN : 1][kv];
        if constexpr (G::kAk) {
#pragma unroll
          for (int wi = 0; wi < G::kWmIter; ++wi)
#pragma unroll
            for (int t = 0; t < TM; ++t) {
              const auto v = *reinterpret_cast<const Packet<T, kv>*>(
                  as + (wm0 + G::a_row(wi, t, lm)) * G::kLdA + kg);
#pragma unroll
              for (int e = 0; e < kv; ++e) av[wi * TM + t][e] = v.v[e];
            }
        }
        if constexpr (G::kBk) {
#pragma unroll
          for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
            for (int t = 0; t < TN; ++t) {
              const auto v = *reinterpret_cast<const Packet<T, kv>*>(
                  bs + (wn0 + G::b_col(wj, t, ln)) * G::kLdB + kg);
#pragma unroll
              for (int e = 0; e < kv; ++e) bv[wj * TN + t][e] = v.v[e];
            }
        }
#pragma unroll
        for (int e = 0; e < kv; ++e) {
          if constexpr (!G::kAk) load_a_fragment(as, kg + e, 0);
          if constexpr (!G::kBk) load_b_fragment(bs, kg + e, 0);
#pragma unroll
          for (int i = 0; i < G::kFragM; ++i)
#pragma unroll
            for (int j = 0; j < G::kFragN; ++j)
              acc[i][j] =
                  fma(G::kAk ? av[i][e] : af[0][i], G::kBk ? bv[j][e] : bf[0][j], acc[i][j]);
        }
      }
    } else if (PREFETCH) {
      load_fragments(as, bs, 0, 0);
#pragma unroll G::kUnroll
      for (int kk = 0; kk < BK; ++kk) {
        if (kk + 1 < BK) load_fragments(as, bs, kk + 1, (kk + 1) & 1);
        fma_fragments(kk & 1);
      }
    } else {
#pragma unroll G::kUnroll
      for (int kk = 0; kk < BK; ++kk) {
        load_fragments(as, bs, kk, 0);
        fma_fragments(0);
      }
    }
  };

  // PREFETCH 2 and 3: the fragments of the next k-tile's first k-step are read right after the
  // barrier that publishes that tile, before this tile's last k-step computes, so the warps leave
  // the barrier with a k-step of FMAs to issue while those loads are in flight (as CUTLASS's
  // pipelined main loops do). The next stage is filled by then: the cp.async pipeline waits for
  // it, double buffering stores it from the registers. After the last tile the same store and
  // reads go to a stage that is not read again: unconditional, they cost no spills where a branch
  // around them did (NVRTC, sm_90: 140 bytes for the 256 x 128 SGEMM tile). Inside a tile, 2
  // reads each k-step's fragments one k-step ahead (as PREFETCH 1), 3 reads them in their own
  // k-step (as 0) into slot 0 while slot 1 holds the first k-step's.
  auto compute_across = [&](int stage, int next_stage) {
    constexpr bool ahead = PREFETCH == 2;
    const T* as = As + stage * G::kStageA;
    const T* bs = Bs + stage * G::kStageB;
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (ahead && kk + 1 < BK) load_fragments(as, bs, kk + 1, (kk + 1) & 1);
      if (!ahead && kk > 0) load_fragments(as, bs, kk, 0);
      if (kk + 1 == BK) {
        if constexpr (STAGES >= 3)
          gemm_cp_async_wait<STAGES - 2>();  // the next tile has landed
        else
          store(next_stage);
        __syncthreads();
        load_fragments(As + next_stage * G::kStageA, Bs + next_stage * G::kStageB, 0,
                       ahead ? BK & 1 : 1);
      }
      fma_fragments(ahead ? kk & 1 : (kk == 0 ? 1 : 0));
    }
  };
  constexpr bool kAcross = PREFETCH >= 2;
  constexpr int kFirstSlot = PREFETCH == 3 ? 1 : 0;  // where a tile's first fragments go

  if (k_tiles > 0) {
    if constexpr (kAcross && STAGES >= 3) {
#pragma unroll
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) issue_async(s, s);
        gemm_cp_async_commit();
      }
      gemm_cp_async_wait<STAGES - 2>();
      __syncthreads();
      load_fragments(As, Bs, 0, kFirstSlot);
      int read = 0, write = STAGES - 1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        // Stage `write` was last read by tile kt - 1, before the barrier in its last k-step.
        if (kt + STAGES - 1 < k_tiles) issue_async(kt + STAGES - 1, write);
        gemm_cp_async_commit();
        const int next = read + 1 == STAGES ? 0 : read + 1;
        compute_across(read, next);
        read = next;
        write = write + 1 == STAGES ? 0 : write + 1;
      }
    } else if constexpr (kAcross) {
      load(0);
      store(0);
      __syncthreads();
      load_fragments(As, Bs, 0, kFirstSlot);
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int stage = kt & 1;
        if (kt + 1 < k_tiles) load(kt + 1);  // in flight while this tile is computed
        // Stage `stage ^ 1` was last read by tile kt - 1, before the barrier in its last k-step.
        compute_across(stage, stage ^ 1);
      }
    } else if (STAGES >= 3) {
      // cp.async pipeline: STAGES - 1 tiles in flight while one is computed, one barrier a tile.
#pragma unroll
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) issue_async(s, s);
        gemm_cp_async_commit();
      }
      int read = 0, write = STAGES - 1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        gemm_cp_async_wait<STAGES - 2>();  // tile kt has landed (for this thread's copies)
        __syncthreads();                   // for every thread's, and stage `write` is free
        if (kt + STAGES - 1 < k_tiles) issue_async(kt + STAGES - 1, write);
        gemm_cp_async_commit();
        compute(read);
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
      }
    } else if (STAGES == 2) {
      load(0);
      store(0);
      __syncthreads();
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int stage = kt & 1;
        if (kt + 1 < k_tiles) load(kt + 1);  // in flight while this tile is computed
        compute(stage);
        if (kt + 1 < k_tiles) store(stage ^ 1);
        __syncthreads();
      }
    } else {
      for (int kt = 0; kt < k_tiles; ++kt) {
        load(kt);
        if (kt > 0) __syncthreads();
        store(0);
        __syncthreads();
        compute(0);
      }
    }
  }

  // Split K: the partial sums in the layout of GemmTile::frag_pos, whole tiles (edge tiles too:
  // the reduction skips what lies outside C).
  if constexpr (SPLIT) {
    T* ws = p.workspace +
            ((static_cast<long long>(blockIdx.z) * gridDim.x + blockIdx.x) * (G::kThreads / 32) +
             warp) * (G::kFrag * 32) + lane;
    if constexpr (MMA) {
#pragma unroll
      for (int i = 0; i < G::kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < G::kMmaN; ++j)
#pragma unroll
          for (int r = 0; r < D::kC; ++r) ws[((i * G::kMmaN + j) * D::kC + r) * 32] = macc[i][j][r];
    } else {
#pragma unroll
      for (int i = 0; i < G::kFragM; ++i)
#pragma unroll
        for (int j = 0; j < G::kFragN; ++j) ws[(i * G::kFragN + j) * 32] = acc[i][j];
    }
    return;
  }

  // Epilogue: alpha * acc + beta * C (C not read when beta == 0).
  const bool beta_zero = p.beta == T(0);
  if constexpr (MMA) {
#pragma unroll
    for (int i = 0; i < G::kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < G::kMmaN; ++j)
#pragma unroll
        for (int r = 0; r < D::kC; ++r) {
          const int row = m0 + wm0 + i * D::kM + lr + 8 * (r / 2);
          const int col = n0 + wn0 + j * 8 + lk * 2 + r % 2;
          if (!interior && (row >= p.m || col >= p.n)) continue;
          const T v = macc[i][j][r];
          T* cp = p.c + row + static_cast<long long>(col) * p.ldc;
          *cp = beta_zero ? p.alpha * v : fma(p.alpha, v, p.beta * *cp);
        }
    return;
  }
  if (interior && p.c_vector && TM % G::kChunk == 0 && !G::kAk) {
    // A thread's TM rows of a column are contiguous: write them as 16-byte vectors.
#pragma unroll
    for (int wi = 0; wi < G::kWmIter; ++wi)
#pragma unroll
      for (int i = 0; i < TM; i += G::kChunk) {
        const int row = m0 + wm0 + G::a_row(wi, i, lm);
#pragma unroll
        for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
          for (int j = 0; j < TN; ++j) {
            const int col = n0 + wn0 + G::b_col(wj, j, ln);
            auto* cp = reinterpret_cast<Packet<T, G::kChunk>*>(p.c + row +
                                                               static_cast<long long>(col) * p.ldc);
            Packet<T, G::kChunk> v;
            if (beta_zero) {
#pragma unroll
              for (int e = 0; e < G::kChunk; ++e)
                v.v[e] = p.alpha * acc[wi * TM + i + e][wj * TN + j];
            } else {
              v = *cp;
#pragma unroll
              for (int e = 0; e < G::kChunk; ++e)
                v.v[e] = fma(p.alpha, acc[wi * TM + i + e][wj * TN + j], p.beta * v.v[e]);
            }
            *cp = v;
          }
      }
    return;
  }
#pragma unroll
  for (int wi = 0; wi < G::kWmIter; ++wi)
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = m0 + wm0 + G::a_row(wi, i, lm);
#pragma unroll
      for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int col = n0 + wn0 + G::b_col(wj, j, ln);
          if (!interior && (row >= p.m || col >= p.n)) continue;
          const T v = acc[wi * TM + i][wj * TN + j];
          T* cp = p.c + row + static_cast<long long>(col) * p.ldc;
          *cp = beta_zero ? p.alpha * v : fma(p.alpha, v, p.beta * *cp);
        }
    }
}

// Deterministic split-K reduction over the partial sums of gemm_kernel<..., SPLIT = 1> (tiles x
// splits blocks, laid out as GemmTile::frag_pos says). Thread (x, y) of a block takes one run of
// G::kRun accumulators of one lane (consecutive rows of a column of C, one 16-byte vector there
// where C allows) and sums splits y, y + G, y + 2G, ... in that order, four loads in flight; the
// G = blockDim.y group sums are then added in order, alpha and beta last. The 32 runs of a warp's
// lanes sit side by side, so each load reads 128 contiguous bytes. The order depends only on the
// problem and the configuration (the host picks G from them), so the bits repeat.
template <typename G, typename T>
__device__ __forceinline__ void gemm_splitk_sum(const GemmParams<T>& p, int splits) {
  constexpr int R = G::kRun, kWarps = G::kThreads / 32;
  constexpr long long kTile = static_cast<long long>(G::kThreads) * G::kFrag;  // BM x BN
  using P = Packet<T, R>;
  __shared__ P part[256];
  const int tiles_m = (p.m + G::kBM - 1) / G::kBM, tiles_n = (p.n + G::kBN - 1) / G::kBN;
  const long long tiles = static_cast<long long>(tiles_m) * tiles_n;
  const long long run = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int groups = blockDim.y, y = threadIdx.y;
  const bool live = run < tiles * (kTile / R);
  // run -> lane, the run's place among a lane's accumulators, warp, tile.
  const int lane = static_cast<int>(run % 32);
  long long q = run / 32;
  const int g = static_cast<int>(q % (G::kFrag / R));
  q /= G::kFrag / R;
  const int warp = static_cast<int>(q % kWarps);
  const long long tile = q / kWarps;
  // Accumulator f of the run's first row, and the distance to the next row's.
  constexpr int kNext = R > 1 ? G::kFragN : 1;
  const int f = R > 1 ? (g / G::kFragN) * R * G::kFragN + g % G::kFragN : g;
  P sum;
#pragma unroll
  for (int e = 0; e < R; ++e) sum.v[e] = T(0);
  if (live) {
    const T* src = p.workspace + (tile * kWarps + warp) * (G::kFrag * 32LL) + f * 32 + lane;
    const long long split_stride = tiles * kTile;
    int s = y;
    for (; s + 3 * groups < splits; s += 4 * groups) {
      T in[4][R];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int e = 0; e < R; ++e) in[u][e] = src[(s + u * groups) * split_stride + e * kNext * 32];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int e = 0; e < R; ++e) sum.v[e] += in[u][e];
    }
    for (; s < splits; s += groups) {
#pragma unroll
      for (int e = 0; e < R; ++e) sum.v[e] += src[s * split_stride + e * kNext * 32];
    }
  }
  if (groups > 1) {
    part[y * blockDim.x + threadIdx.x] = sum;
    __syncthreads();
    if (y != 0) return;
    for (int o = 1; o < groups; ++o) {
      const P other = part[o * blockDim.x + threadIdx.x];
#pragma unroll
      for (int e = 0; e < R; ++e) sum.v[e] += other.v[e];
    }
  }
  if (!live) return;
  int tile_m, tile_n, row, col;
  gemm_tile_of(static_cast<int>(tile), tiles_m, tiles_n, p.swizzle, tile_m, tile_n);
  G::frag_pos(warp, lane, f, row, col);
  row += tile_m * G::kBM;
  col += tile_n * G::kBN;
  if (col >= p.n || row >= p.m) return;
  T* cp = p.c + row + static_cast<long long>(col) * p.ldc;
  const bool whole = R > 1 && p.c_vector && row + R <= p.m;
  P c;
  if (p.beta != T(0)) {
    if (whole) {
      c = *reinterpret_cast<const P*>(cp);
    } else {
#pragma unroll
      for (int e = 0; e < R; ++e) c.v[e] = row + e < p.m ? cp[e] : T(0);
    }
  }
#pragma unroll
  for (int e = 0; e < R; ++e)
    sum.v[e] = p.beta == T(0) ? p.alpha * sum.v[e] : fma(p.alpha, sum.v[e], p.beta * c.v[e]);
  if (whole) {
    *reinterpret_cast<P*>(cp) = sum;
  } else {
#pragma unroll
    for (int e = 0; e < R; ++e)
      if (row + e < p.m) cp[e] = sum.v[e];
  }
}

// Launched as a programmatic dependent of gemm_kernel (Kernel::launch_dependent): its blocks may
// start while the GEMM's last blocks still run, and wait here until the partial sums are written.
template <typename T, int OPA, int OPB, int BM, int BN, int BK, int WM, int WN, int TM, int TN,
          int WNITER, int STAGES, int PREFETCH, int UNROLL, int VEC, int PAD, int MMA, int MINB,
          int KCONTIG>
__global__ void __launch_bounds__(256) gemm_splitk_reduce(GemmParams<T> p, int splits) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  gemm_splitk_sum<GemmTile<T, OPA, OPB, BM, BN, BK, WM, WN, TM, TN, WNITER, STAGES, PREFETCH,
                           UNROLL, VEC, PAD, MMA, MINB, KCONTIG, 1>>(p, splits);
}

// C = beta * C for k == 0 or alpha == 0 (BLAS: A and B are not read); beta == 0 writes zeros.
template <typename T>
__global__ void gemm_scale(T* c, long long ldc, int m, int n, T beta) {
  const long long total = static_cast<long long>(m) * n;
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long long>(gridDim.x) * blockDim.x) {
    T* cp = c + idx % m + (idx / m) * ldc;
    *cp = beta == T(0) ? T(0) : beta * *cp;
  }
}

// Reference for verification: double accumulation, 64 x 64 tiles of 16 x 16 threads with 4 x 4
// results each. ref = alpha * op(A) op(B) + beta * c0 and absref = the same with magnitudes,
// which scales the tolerance. c0 may be null when beta == 0.
template <typename T, int OPA, int OPB>
__global__ void __launch_bounds__(256)
    gemm_reference(GemmParams<T> p, const T* c0, double* ref, double* absref) {
  __shared__ double as[16][64 + 1];
  __shared__ double bs[16][64 + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.x * 64, n0 = blockIdx.y * 64;
  double acc[4][4] = {}, mag[4][4] = {};
  for (int k0 = 0; k0 < p.k; k0 += 16) {
    for (int e = threadIdx.x; e < 16 * 64; e += 256) {
      const int kk = e / 64, x = e % 64;
      const int i = m0 + x, j = n0 + x, kg = k0 + kk;
      double a = 0, b = 0;
      if (i < p.m && kg < p.k) a = OPA == kGemmN ? p.a[i + kg * p.lda] : p.a[kg + i * p.lda];
      if (j < p.n && kg < p.k) b = OPB == kGemmN ? p.b[kg + j * p.ldb] : p.b[j + kg * p.ldb];
      as[kk][x] = a;
      bs[kk][x] = b;
    }
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const double a = as[kk][ty * 4 + i], b = bs[kk][tx * 4 + j];
          acc[i][j] = fma(a, b, acc[i][j]);
          mag[i][j] = fma(fabs(a), fabs(b), mag[i][j]);
        }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + ty * 4 + i, col = n0 + tx * 4 + j;
      if (row >= p.m || col >= p.n) continue;
      const long long idx = row + static_cast<long long>(col) * p.m;
      const double alpha = static_cast<double>(p.alpha), beta = static_cast<double>(p.beta);
      double r = alpha * acc[i][j], mg = fabs(alpha) * mag[i][j];
      if (beta != 0.0 && c0) {
        const double c = c0[row + col * p.ldc];
        r += beta * c;
        mg += fabs(beta * c);
      }
      ref[idx] = r;
      absref[idx] = mg;
    }
}

// Counts elements of C outside tol_scale * absref of the reference (NaN always counts), and rows
// between m and ldc that are no longer the 0xFF poison (writes outside the matrix).
template <typename T>
__global__ void gemm_compare(const T* c, long long ldc, int m, int n, const double* ref,
                             const double* absref, double tol_scale, double tol_floor,
                             u64* result) {
  const long long total = ldc * n;
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = idx % ldc, col = idx / ldc;
    const T v = c[idx];
    bool bad;
    if (row >= m) {
      const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&v);
      bad = false;
      for (int b = 0; b < static_cast<int>(sizeof(T)); ++b) bad |= bytes[b] != 0xFF;
    } else {
      const long long r = row + col * m;
      const double err = fabs(static_cast<double>(v) - ref[r]);
      bad = !(err <= tol_scale * absref[r] + tol_floor);
    }
    if (bad) {
      atomicAdd(&result[0], 1ULL);
      atomicMin(&result[1], static_cast<u64>(idx));
    }
  }
}

}  // namespace ktune
