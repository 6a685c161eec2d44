// Device helpers for families described by a family file: input fills and the output comparison
// against the reference kernel. Compiled on their own, never with a user's sources.
#pragma once

#include "common.cuh"

namespace ktune {

// Element types a family file names, as the host code numbers them (file_family.cpp, kTypes).
// 0 f32, 1 f64, 2 i32, 3 u32, 4 i64, 5 u64, 6 i8, 7 u8, 8 i16, 9 u16.

// Fill kinds: 0 uniform in [a, b), 1 normal (mean a, deviation b), 2 integers in [a, b],
// 3 the constant a.
template <typename T>
__global__ void data_fill(T* p, u64 n, u64 seed, int kind, double a, double b) {
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<u64>(gridDim.x) * blockDim.x) {
    const u64 r = mix64(seed ^ (i * 0xd1b54a32d192ed03ULL));
    const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    double v;
    if (kind == 0) {
      v = a + (b - a) * u;
    } else if (kind == 1) {
      // Box-Muller with a second uniform from the same counter.
      const u64 r2 = mix64(r ^ 0x632be59bd9b4e019ULL);
      const double u2 = (static_cast<double>(r2 >> 11) + 1.0) * (1.0 / 9007199254740993.0);
      v = a + b * sqrt(-2.0 * log(u2)) * cospi(2.0 * u);
    } else if (kind == 2) {
      const double span = b - a + 1.0;
      v = a + floor(u * span);
      if (v > b) v = b;
    } else {
      v = a;
    }
    p[i] = static_cast<T>(v);
  }
}

// Compares `n` elements of `got` with `want`. Floating types: |got - want| <= abs + rel * |want|
// (NaN never matches), or, with ulps >= 0, at most `ulps` representable values apart. Integer
// types: equal. result[0] counts mismatches, result[1] holds the first mismatching index
// (atomicMin; the host sets it to ~0 first).
template <typename T>
__device__ __forceinline__ long long ulp_distance(T a, T b);

template <>
__device__ __forceinline__ long long ulp_distance<float>(float a, float b) {
  int ia = __float_as_int(a), ib = __float_as_int(b);
  if (ia < 0) ia = 0x80000000 - ia;
  if (ib < 0) ib = 0x80000000 - ib;
  const long long d = static_cast<long long>(ia) - ib;
  return d < 0 ? -d : d;
}

template <>
__device__ __forceinline__ long long ulp_distance<double>(double a, double b) {
  long long ia = __double_as_longlong(a), ib = __double_as_longlong(b);
  if (ia < 0) ia = static_cast<long long>(0x8000000000000000ULL) - ia;
  if (ib < 0) ib = static_cast<long long>(0x8000000000000000ULL) - ib;
  // The difference of two such values can overflow only for opposite infinities.
  const unsigned long long d =
      ia > ib ? static_cast<unsigned long long>(ia) - ib : static_cast<unsigned long long>(ib) - ia;
  return d > 0x7fffffffffffffffULL ? 0x7fffffffffffffffLL : static_cast<long long>(d);
}

template <typename T, bool FLOATING>
__global__ void data_compare(const T* got, const T* want, u64 n, double abs_tol, double rel_tol,
                             long long ulps, u64* result) {
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<u64>(gridDim.x) * blockDim.x) {
    bool ok;
    if constexpr (FLOATING) {
      const T g = got[i], w = want[i];
      if (g != g || w != w) {
        ok = false;  // a NaN (the poison of an output never written) never matches
      } else if (ulps >= 0) {
        ok = ulp_distance<T>(g, w) <= ulps;
      } else {
        const double diff = fabs(static_cast<double>(g) - static_cast<double>(w));
        ok = diff <= abs_tol + rel_tol * fabs(static_cast<double>(w));
      }
    } else {
      ok = got[i] == want[i];
    }
    if (!ok) {
      atomicAdd(result, 1ULL);
      atomicMin(result + 1, i);
    }
  }
}

}  // namespace ktune
