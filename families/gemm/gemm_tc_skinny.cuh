// Skinny GEMM of the tensor-core types (family gemm_tc_skinny): D(M x N) = alpha * X(M x K)
// Y(K x N) + beta * D with N <= 16, X and Y of bf16, fp16 or tf32 (float arrays), fp32 sums, D of
// f32, bf16 or fp16: the bf16 / fp16 / tf32 calls whose n (or m) is at most 16, matrix-vector
// products included. Such a product is bound by reading X, which a tensor-core tile of 64 or more
// columns would read for one; these kernels read it once, streaming, in packets of up to 16
// bytes, while Y (K x N, small) comes through the caches. They are gemm_skinny.cuh's kernels with
// the loads of these types and fp32 sums (the host's rules are shared: skinny_rules.hpp):
//  - tcs_dot: X k-contiguous (rows are dot products): the block's threads stride along k over
//    ROWS rows together, then reduce across lanes and warps;
//  - tcs_axpy: X m-contiguous: each lane holds ROWS packets of VEC consecutive rows, KWARPS warps
//    take interleaved k, then reduce in shared memory.
// tf32 inputs are multiplied in fp32 (FFMA): at least as exact as the tensor cores' 10 bits.
// SPLIT: the k range of grid dimension z is one of several; fp32 partial sums go to the workspace
// ([split][j][i]) and tcs_reduce adds them in split order (the bits do not depend on timing).
#pragma once

#include "common.cuh"

namespace ktune {
namespace tcs {

typedef unsigned short u16;

// Same layout as TcSkinnyArgs in gemm_tc.cpp. Strides in elements; one of X's is 1.
struct Params {
  const void* x;
  const void* y;
  void* d;
  float* workspace;
  long long xs_m, xs_k, ys_k, ys_n, ds_m, ds_n;
  int m, n, k;
  int k_per_split;
  float alpha, beta;
};

// Element types (gemm_tc.cuh's codes): IN 0 bf16, 1 fp16, 2 tf32 (float storage); OUT 0 f32,
// 1 bf16, 2 fp16.
template <int IN>
struct Elem {
  typedef u16 T;
};
template <>
struct Elem<2> {
  typedef float T;
};

template <int IN>
__device__ __forceinline__ float to_f(u16 v) {
  if (IN == 0) return __uint_as_float(static_cast<unsigned>(v) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
template <int IN>
__device__ __forceinline__ float to_f(float v) {
  return v;
}

// D(idx) = v + beta * D(idx) (v already times alpha), D not read where beta is 0 (BLAS).
template <int OUT>
__device__ __forceinline__ void store_d(void* d, long long idx, float v, float beta) {
  if (OUT == 0) {
    float* p = static_cast<float*>(d) + idx;
    *p = beta == 0.0f ? v : v + beta * *p;
  } else {
    u16* p = static_cast<u16*>(d) + idx;
    const float r = beta == 0.0f ? v : v + beta * to_f<OUT - 1>(*p);
    u16 out;
    if (OUT == 1)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out) : "f"(r));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(out) : "f"(r));
    *p = out;
  }
}

// One result: D(i, j) = alpha * v + beta * D(i, j); or, in a split, the partial sum of split
// blockIdx.z into the workspace.
template <int OUT, int SPLIT>
__device__ __forceinline__ void put(const Params& p, int i, int j, float v) {
  if (SPLIT)
    p.workspace[(static_cast<long long>(blockIdx.z) * p.n + j) * p.m + i] = v;
  else
    store_d<OUT>(p.d, static_cast<long long>(i) * p.ds_m + static_cast<long long>(j) * p.ds_n,
                 p.alpha * v, p.beta);
}

// A packet of X: one streaming load of 4 to 16 bytes, or a plain one of a single 16-bit element.
template <typename T, int VEC, bool RAW = (sizeof(T) * VEC >= 4)>
struct XLoad {
  static __device__ __forceinline__ Packet<T, VEC> get(const T* p) {
    return load_packet<1>(reinterpret_cast<const Packet<T, VEC>*>(p));
  }
};
template <typename T, int VEC>
struct XLoad<T, VEC, false> {
  static __device__ __forceinline__ Packet<T, VEC> get(const T* p) {
    return *reinterpret_cast<const Packet<T, VEC>*>(p);
  }
};

// Y(kk .. kk + VEC - 1, j) as floats: one packet where Y is k-contiguous (YK), else VEC loads.
template <int IN, int VEC, int YK>
__device__ __forceinline__ void y_values(const Params& p, int kk, int j, float (&out)[VEC]) {
  typedef typename Elem<IN>::T T;
  const T* y = static_cast<const T*>(p.y);
  if (YK) {
    const Packet<T, VEC> v = *reinterpret_cast<const Packet<T, VEC>*>(y + kk + j * p.ys_n);
#pragma unroll
    for (int e = 0; e < VEC; ++e) out[e] = to_f<IN>(v.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) out[e] = to_f<IN>(__ldg(y + (kk + e) * p.ys_k + j * p.ys_n));
  }
}

template <int IN, int OUT, int N, int YK, int THREADS, int ROWS, int VEC, int UNROLL, int SPLIT>
__global__ void __launch_bounds__(THREADS) tcs_dot(Params p) {
  static_assert(THREADS % 32 == 0 && N >= 1 && N <= 16, "tcs_dot: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
  typedef typename Elem<IN>::T T;
  using P = Packet<T, VEC>;
  const int row0 = blockIdx.x * ROWS;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  const int kv = k0 + (k1 - k0) / VEC * VEC;  // the end of the whole packets
  const T* xr[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)  // rows past m read row m - 1; their sums are not written
    xr[r] = static_cast<const T*>(p.x) + static_cast<long long>(min(row0 + r, p.m - 1)) * p.xs_m;
  float acc[ROWS][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j) acc[r][j] = 0.0f;
#pragma unroll UNROLL
  for (int kk = k0 + threadIdx.x * VEC; kk < kv; kk += THREADS * VEC) {
    float xf[ROWS][VEC];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const P xv = XLoad<T, VEC>::get(xr[r] + kk);
#pragma unroll
      for (int e = 0; e < VEC; ++e) xf[r][e] = to_f<IN>(xv.v[e]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float yf[VEC];
      y_values<IN, VEC, YK>(p, kk, j, yf);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[r][j] = fmaf(xf[r][e], yf[e], acc[r][j]);
    }
  }
  const T* y = static_cast<const T*>(p.y);
  for (int kk = kv + threadIdx.x; kk < k1; kk += THREADS) {  // fewer than VEC left
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const float yv = to_f<IN>(__ldg(y + kk * p.ys_k + j * p.ys_n));
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r][j] = fmaf(to_f<IN>(xr[r][kk]), yv, acc[r][j]);
    }
  }
  // Lanes, then warps in order.
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
      for (int off = 16; off > 0; off /= 2)
        acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
  constexpr int kWarps = THREADS / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (kWarps == 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        if (row0 + r < p.m)
#pragma unroll
          for (int j = 0; j < N; ++j) put<OUT, SPLIT>(p, row0 + r, j, acc[r][j]);
    return;
  }
  __shared__ float part[kWarps][ROWS * N];
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < N; ++j) part[warp][r * N + j] = acc[r][j];
  __syncthreads();
  for (int t = threadIdx.x; t < ROWS * N; t += THREADS) {
    const int r = t / N, j = t % N;
    if (row0 + r >= p.m) continue;
    float sum = part[0][t];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += part[w][t];
    put<OUT, SPLIT>(p, row0 + r, j, sum);
  }
}

template <int IN, int OUT, int N, int YK, int THREADS, int ROWS, int VEC, int KWARPS, int UNROLL,
          int SPLIT>
__global__ void __launch_bounds__(THREADS) tcs_axpy(Params p) {
  constexpr int kWarps = THREADS / 32, kWarpRows = kWarps / KWARPS;
  static_assert(THREADS % 32 == 0 && kWarps % KWARPS == 0 && N >= 1 && N <= 16,
                "tcs_axpy: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
  typedef typename Elem<IN>::T T;
  using P = Packet<T, VEC>;
  const T* y = static_cast<const T*>(p.y);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wr = warp % kWarpRows, wk = warp / kWarpRows;
  // Packet r of this lane: rows first(r) .. first(r) + VEC - 1.
  const int base = (blockIdx.x * kWarpRows + wr) * ROWS * 32 * VEC + lane * VEC;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  float acc[ROWS][VEC][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int e = 0; e < VEC; ++e)
#pragma unroll
      for (int j = 0; j < N; ++j) acc[r][e][j] = 0.0f;
#pragma unroll UNROLL
  for (int kk = k0 + wk; kk < k1; kk += KWARPS) {
    float yv[N];
#pragma unroll
    for (int j = 0; j < N; ++j)
      yv[j] = to_f<IN>(__ldg(y + static_cast<long long>(kk) * p.ys_k + j * p.ys_n));
    const T* column = static_cast<const T*>(p.x) + static_cast<long long>(kk) * p.xs_k;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const int row = base + r * 32 * VEC;
      float xf[VEC];
      if (row + VEC <= p.m) {
        const P xv = XLoad<T, VEC>::get(column + row);
#pragma unroll
        for (int e = 0; e < VEC; ++e) xf[e] = to_f<IN>(xv.v[e]);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) xf[e] = row + e < p.m ? to_f<IN>(column[row + e]) : 0.0f;
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e)
#pragma unroll
        for (int j = 0; j < N; ++j) acc[r][e][j] = fmaf(xf[e], yv[j], acc[r][e][j]);
    }
  }
  if (KWARPS > 1) {
    // Warps 1 .. KWARPS-1 of each row group hand their sums to warp 0, which adds them in order.
    constexpr int kPerLane = ROWS * VEC * N;
    __shared__ float part[KWARPS > 1 ? KWARPS - 1 : 1][kWarpRows][kPerLane][32];
    if (wk > 0)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
#pragma unroll
          for (int j = 0; j < N; ++j) part[wk - 1][wr][(r * VEC + e) * N + j][lane] = acc[r][e][j];
    __syncthreads();
    if (wk > 0) return;
#pragma unroll
    for (int w = 0; w < KWARPS - 1; ++w)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
#pragma unroll
          for (int j = 0; j < N; ++j) acc[r][e][j] += part[w][wr][(r * VEC + e) * N + j][lane];
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      const int row = base + r * 32 * VEC + e;
      if (row < p.m)
#pragma unroll
        for (int j = 0; j < N; ++j) put<OUT, SPLIT>(p, row, j, acc[r][e][j]);
    }
}

// Launched as a programmatic dependent of the split kernel: adds the splits' partial sums in
// split order and writes D.
template <int OUT>
__global__ void __launch_bounds__(256) tcs_reduce(Params p, int splits) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const long long total = static_cast<long long>(p.m) * p.n;
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % p.m), j = static_cast<int>(idx / p.m);
    float sum = p.workspace[idx];
    for (int s = 1; s < splits; ++s) sum += p.workspace[s * total + idx];
    put<OUT, 0>(p, i, j, sum);
  }
}

}  // namespace tcs
}  // namespace ktune
