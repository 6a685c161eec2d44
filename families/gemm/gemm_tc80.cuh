// Tensor-core GEMM for sm_80 and sm_89 (family gemm_tc80): the fallback of gemm_tc for A100- and
// L40-class GPUs, which have neither wgmma nor the TMA. bf16, fp16 or tf32 inputs, fp32
// accumulation, warp-level mma.sync, operands brought to shared memory by cp.async (16-byte copies
// that fill with zeros past the edges) through a pipeline of STAGES buffers.
//
// The kernel's view is gemm_tc's: D (M x N, rows of ldd elements) = alpha * X (M x K) * Y (N x K)^T
// + beta * D, X and Y each k-contiguous (k-major) or MN-contiguous (MN-major, 16-bit types only),
// one matrix or a strided batch. The host maps the column-major BLAS call onto it as for gemm_tc
// (D = C^T, X = op(B)^T, Y = op(A)).
//
// Shared memory holds, per stage, 128 bytes of k (64 16-bit elements, 32 of tf32) of BM rows of X
// and BN rows of Y. A k-major tile is rows of 128 bytes whose eight 16-byte chunks are permuted by
// XOR with the row (chunk c of row r at c ^ (r % 8)); an MN-major tile is boxes of 64 MN-elements
// (128 bytes) by the 64 k-rows, chunks permuted by the k-row. Either way the eight addresses of an
// 8 x 8 ldmatrix read, and the 16-bit ones of the tf32 fragments, fall in distinct banks.
//
// The workload helpers (tc_fill, tc_reference, tc_compare, tc_scale) and the epilogue's pair
// store are gemm_tc's (gemm_tc.cuh).
#include "gemm_tc.cuh"

namespace ktune {
namespace tc80 {

using tc::u32;
using tc::u64;

// Same layout as ktune::Tc80Args in gemm_tc.cpp. X, Y and D of matrix b of a batch start b * sx,
// b * sy and b * sd elements after x, y and d.
struct Tc80Args {
  const void* x;
  long long ldx, sx;
  const void* y;
  long long ldy, sy;
  void* d;
  long long ldd, sd;
  int m, n, k;
  int tiles_m, tiles_n;
  float alpha, beta;
  int batch;
};

// 16 bytes from global memory (only the first `bytes`; the rest of the 16 are zeros) to shared.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Returns once at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Four 8 x 8 matrices of 16-bit elements; lanes 8 j .. 8 j + 7 give the rows of matrix j.
// TRANS: each thread receives the transposed matrices' elements.
template <int TRANS>
__device__ __forceinline__ void ldsm_x4(u32 (&r)[4], u32 addr) {
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// D += A B for one m16n8 tile: m16n8k16 of bf16 (IN 0) or fp16 (IN 1), m16n8k8 of tf32 (IN 2),
// fp32 accumulators c0 .. c3 (rows g and g + 8, columns 2 t and 2 t + 1; g = lane / 4, t = lane %
// 4).
template <int IN>
__device__ __forceinline__ void mma(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if (IN == 0)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else if (IN == 1)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset in a tile of element (row i, k p) of the operand: k-major (MN = 0) rows of 128
// bytes; MN-major (MN = 1) boxes of 64 elements of i by KE k-rows. ELEM: bytes per element.
template <int MN, int ELEM, int KE>
__device__ __forceinline__ u32 tile_offset(int i, int p) {
  if (MN) {
    const int c = (i % 64) / 8;  // 16-byte chunk within the k-row of the box
    return (i / 64) * (KE * 128) + p * 128 + ((c ^ (p & 7)) << 4) + (i % 8) * ELEM;
  }
  const int c = (p * ELEM) / 16;
  return i * 128 + ((c ^ (i & 7)) << 4) + (p * ELEM) % 16;
}

// The k-tile at k0 of rows row0 .. row0 + ROWS - 1 of an operand (`rows` rows, `k` long, ld
// elements apart; k-major or MN-major) into the tile at dst, zeros past the edges, in 16-byte
// cp.async copies spread over the block's THREADS threads. Thread tid takes chunk tid % PER of
// tile rows tid / PER + it * STEP (tile rows: the operand's rows, or k-rows when MN-major).
template <int MN, int ELEM, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(u32 dst, const char* base, long long ld, int rows, int k,
                                          int row0, int k0, int tid) {
  constexpr int KE = 128 / ELEM, CE = 16 / ELEM;  // k per tile, elements per chunk
  constexpr int PER = MN ? ROWS / 8 : 8;          // chunks per tile row
  constexpr int STEP = THREADS / PER, ITERS = ROWS * 8 / THREADS;
  static_assert(THREADS % PER == 0 && (ROWS * 8) % THREADS == 0, "chunks spread evenly");
  const int r = tid / PER, cc = tid % PER;
  // Bytes from one of this thread's chunks to the next, made here at each call: kept across the
  // k-loop instead, every chunk's address would hold registers the accumulators need.
  long long step = static_cast<long long>(STEP) * ld * ELEM;
  asm volatile("" : "+l"(step));
  if (MN) {
    const int gi = row0 + cc * CE;
    const int row_bytes = max(0, min(16, (rows - gi) * ELEM));
    const char* src = base + (static_cast<long long>(k0 + r) * ld + gi) * ELEM;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int p = r + it * STEP;
      const int bytes = k0 + p < k ? row_bytes : 0;
      // A copy of 0 bytes reads nothing, but its address stays one of the operand's.
      cp_async16(dst + tile_offset<1, ELEM, KE>(cc * CE, p), bytes ? src + it * step : base, bytes);
    }
  } else {
    const int gp = k0 + cc * CE;
    const int k_bytes = max(0, min(16, (k - gp) * ELEM));
    const char* src = base + (static_cast<long long>(row0 + r) * ld + gp) * ELEM;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int i = r + it * STEP;
      const int bytes = row0 + i < rows ? k_bytes : 0;
      cp_async16(dst + tile_offset<0, ELEM, KE>(i, cc * CE), bytes ? src + it * step : base, bytes);
    }
  }
}

// BM x BN: the output tile per block; WARPS_M x WARPS_N warps, each computing a BM / WARPS_M by
// BN / WARPS_N part of it in m16n8 MMAs; STAGES: shared-memory buffers of the cp.async pipeline
// (STAGES - 1 k-tiles in flight while one is multiplied); GROUP: tile rows per rasterisation group
// (blocks that run together share X's rows and Y's columns in L2). One block per tile; the grid
// is tiles_m * tiles_n * batch blocks. MNX, MNY: X, Y MN-major (1) or k-major (0). BATCHED: a
// strided batch (matrix blockIdx.x / (tiles_m * tiles_n)).
template <int IN, int OUT, int MNX, int MNY, int BATCHED, int BM, int BN, int WARPS_M, int WARPS_N,
          int STAGES, int GROUP>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32) gemm_tc80(const Tc80Args p) {
#if __CUDA_ARCH__ >= 800
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int ELEM = IN == 2 ? 4 : 2, KE = 128 / ELEM;  // k-elements per stage
  constexpr int KSTEP = IN == 2 ? 8 : 16, KSTEPS = KE / KSTEP;
  constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;  // a warp's part of the tile
  constexpr int MT = WTM / 16, NT = WTN / 8;             // its m16 and n8 MMA tiles
  constexpr int X_BYTES = BM * 128, STAGE_BYTES = (BM + BN) * 128;
  static_assert(BM % 64 == 0 && BN % 64 == 0, "tiles are whole 64-element boxes");
  static_assert(WTM % 16 == 0 && WTN % 16 == 0, "a warp's part is whole 16 x 16 blocks");
  static_assert(MT * NT * 4 <= 128, "accumulators exceed the registers");
  static_assert(STAGES >= 2, "a pipeline has two stages at least");
  static_assert(IN != 2 || OUT == 0, "tf32 inputs give f32 outputs");
  static_assert(IN != 2 || (MNX == 0 && MNY == 0), "tf32 operands are k-major here");
  extern __shared__ __align__(128) unsigned char smem[];
  const u32 base = tc::smem_u32(smem);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp % WARPS_M, warp_n = warp / WARPS_M;

  // The unit: matrix, then tile; GROUP tile rows walked column by column.
  long long u = blockIdx.x;
  const long long per_matrix = static_cast<long long>(p.tiles_m) * p.tiles_n;
  const long long mat = BATCHED ? u / per_matrix : 0;
  u -= mat * per_matrix;
  int tm, tn;
  if (GROUP > 1) {
    const long long in_group = static_cast<long long>(GROUP) * p.tiles_n;
    const int first = static_cast<int>(u / in_group) * GROUP;
    const int rows = min(p.tiles_m - first, GROUP);
    const int r = static_cast<int>(u % in_group);
    tm = first + r % rows;
    tn = r / rows;
  } else {
    tm = static_cast<int>(u / p.tiles_n);
    tn = static_cast<int>(u % p.tiles_n);
  }
  const char* x = static_cast<const char*>(p.x) + mat * p.sx * ELEM;
  const char* y = static_cast<const char*>(p.y) + mat * p.sy * ELEM;
  void* const d = static_cast<char*>(p.d) + mat * p.sd * (OUT == 0 ? 4 : 2);

  const int ktiles = (p.k + KE - 1) / KE;
  auto load_stage = [&](int kt) {
    const u32 s = base + (kt % STAGES) * STAGE_BYTES;
    load_tile<MNX, ELEM, BM, THREADS>(s, x, p.ldx, p.m, p.k, tm * BM, kt * KE, tid);
    load_tile<MNY, ELEM, BN, THREADS>(s + X_BYTES, y, p.ldy, p.n, p.k, tn * BN, kt * KE, tid);
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_stage(s);
    cp_commit();  // empty groups keep the count of groups per k-tile
  }
  const int g = lane / 4, t = lane % 4;
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_wait<STAGES - 2>();  // this thread's copies of k-tile kt have landed
    __syncthreads();        // everyone's have; and k-tile kt - 1's buffer is free
    if (kt + STAGES - 1 < ktiles) load_stage(kt + STAGES - 1);
    cp_commit();
    const u32 sx = base + (kt % STAGES) * STAGE_BYTES, sy = sx + X_BYTES;
    // The fragments of k-step ks into a and b.
    auto fragments = [&](int ks, u32(&a)[MT][4], u32(&b)[NT][2]) {
      if (IN == 2) {
        // tf32 fragments: A (rows g, g + 8; k t, t + 4), B (column g; k t, t + 4).
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const int r = warp_m * WTM + i * 16 + g, q = ks * 8 + t;
          a[i][0] = lds32(sx + tile_offset<0, 4, KE>(r, q));
          a[i][1] = lds32(sx + tile_offset<0, 4, KE>(r + 8, q));
          a[i][2] = lds32(sx + tile_offset<0, 4, KE>(r, q + 4));
          a[i][3] = lds32(sx + tile_offset<0, 4, KE>(r + 8, q + 4));
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int r = warp_n * WTN + j * 8 + g, q = ks * 8 + t;
          b[j][0] = lds32(sy + tile_offset<0, 4, KE>(r, q));
          b[j][1] = lds32(sy + tile_offset<0, 4, KE>(r, q + 4));
        }
      } else {
        // A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15,
        // k 8-15) of the m16 block; B: (columns 0-7, k 0-7), (0-7, k 8-15), (8-15, k 0-7),
        // (8-15, k 8-15) of two n8 blocks. An MN-major operand's rows are k-rows, read transposed.
        const int j8 = lane / 8, r8 = lane % 8;
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const int i0 = warp_m * WTM + i * 16;
          const int row = MNX ? i0 + (j8 & 1) * 8 : i0 + (j8 & 1) * 8 + r8;
          const int q = MNX ? ks * 16 + (j8 >> 1) * 8 + r8 : ks * 16 + (j8 >> 1) * 8;
          ldsm_x4<MNX>(a[i], sx + tile_offset<MNX, 2, KE>(row, q));
        }
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
          const int n0 = warp_n * WTN + j * 8;
          const int row = MNY ? n0 + (j8 >> 1) * 8 : n0 + (j8 >> 1) * 8 + r8;
          const int q = MNY ? ks * 16 + (j8 & 1) * 8 + r8 : ks * 16 + (j8 & 1) * 8;
          u32 r[4];
          ldsm_x4<MNY>(r, sy + tile_offset<MNY, 2, KE>(row, q));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
      }
    };
    // Two sets of fragments: k-step ks + 1's are read while k-step ks multiplies.
    u32 a[2][MT][4], b[2][NT][2];
    fragments(0, a[0], b[0]);
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      if (ks + 1 < KSTEPS) fragments(ks + 1, a[(ks + 1) % 2], b[(ks + 1) % 2]);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          mma<IN>(acc[i][j], a[ks % 2][i], b[ks % 2][j][0], b[ks % 2][j][1]);
    }
  }
  cp_wait<0>();  // no copy (of an empty group) outlives the block

  // Epilogue: pairs of adjacent columns (rows g and g + 8 of each m16n8 tile), with beta.
  const bool vec = (p.ldd % 2 == 0) && (!BATCHED || p.sd % 2 == 0) &&
                   (reinterpret_cast<u64>(p.d) % (OUT == 0 ? 8 : 4) == 0);
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = tn * BN + warp_n * WTN + j * 8 + 2 * t;
      if (col >= p.n) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = tm * BM + warp_m * WTM + i * 16 + g + 8 * h;
        if (row < p.m)
          tc::store_pair<OUT>(d, static_cast<long long>(row) * p.ldd + col, col + 1 < p.n, vec,
                              acc[i][j][2 * h], acc[i][j][2 * h + 1], p.alpha, p.beta);
      }
    }
#else
  __trap();  // compiled for a target without mma.sync of these types: never compute nothing
#endif
}

}  // namespace tc80
}  // namespace ktune
