// The reference the GEMM workloads check every candidate against (gemm.cpp, GemmWorkload::verify):
// each element of alpha op(A) op(B) + beta C0 and the sum of its terms' magnitudes, accumulated in
// double, 64 x 64 elements of C a block of 256 threads (4 x 4 each), and the k range split over
// gridDim.z blocks (k_per_split each, a multiple of 16) where C has too few tiles to fill the GPU:
// the splits add their sums into ref and absref, which the caller zeroes first. Unsplit, each
// block stores its elements. A 122 x 171 output with k = 992628 made 6 blocks, about 0.24 s of
// each of a tune's candidates on an H200.
//
// Its own source, in no family's template hash: it changes no kernel that is timed. (gemm.cuh's
// gemm_reference, the unsplit form that came before, stays there unused until that template
// changes for another reason: removing it would change gemm's template hash and leave every
// shipped result stale.)
#pragma once

namespace ktune {

template <typename T, int TA, int TB>
__global__ void __launch_bounds__(256)
    gemm_reference_split(const T* __restrict__ a, long long lda, const T* __restrict__ b,
                         long long ldb, int m, int n, int k, int k_per_split, double alpha,
                         double beta, const T* c0, long long ldc, double* ref, double* absref) {
  __shared__ double as[16][64 + 1];
  __shared__ double bs[16][64 + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.x * 64, n0 = blockIdx.y * 64;
  const long long k_begin = static_cast<long long>(blockIdx.z) * k_per_split;
  const long long k_end = min(static_cast<long long>(k), k_begin + k_per_split);
  double acc[4][4] = {}, mag[4][4] = {};
  for (long long k0 = k_begin; k0 < k_end; k0 += 16) {
    for (int e = threadIdx.x; e < 16 * 64; e += 256) {
      const int kk = e / 64, x = e % 64;
      const long long i = m0 + x, j = n0 + x, kg = k0 + kk;
      double av = 0, bv = 0;
      if (i < m && kg < k_end) av = TA ? a[kg + i * lda] : a[i + kg * lda];
      if (j < n && kg < k_end) bv = TB ? b[j + kg * ldb] : b[kg + j * ldb];
      as[kk][x] = av;
      bs[kk][x] = bv;
    }
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const double av = as[kk][ty * 4 + i], bv = bs[kk][tx * 4 + j];
          acc[i][j] = fma(av, bv, acc[i][j]);
          mag[i][j] = fma(fabs(av), fabs(bv), mag[i][j]);
        }
    __syncthreads();
  }
  const bool split = gridDim.z > 1;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + ty * 4 + i, col = n0 + tx * 4 + j;
      if (row >= m || col >= n) continue;
      const long long idx = row + static_cast<long long>(col) * m;
      double r = alpha * acc[i][j], mg = fabs(alpha) * mag[i][j];
      if (blockIdx.z == 0 && beta != 0.0 && c0) {
        const double c = c0[row + col * ldc];
        r += beta * c;
        mg += fabs(beta * c);
      }
      if (split) {
        atomicAdd(ref + idx, r);
        atomicAdd(absref + idx, mg);
      } else {
        ref[idx] = r;
        absref[idx] = mg;
      }
    }
}

}  // namespace ktune
