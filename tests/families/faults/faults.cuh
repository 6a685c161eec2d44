// Planted faults, for the tuner's own tests (faults.family.toml): a scaled copy out[i] = 2 * in[i]
// whose variants either work (KIND 0, several block shapes) or fail in one chosen way, so that a
// tuning run proves it survives each failure and classifies it.
#pragma once

typedef unsigned long long u64;

enum FaultKind {
  kFaultNone = 0,        // correct
  kFaultOutOfBounds = 1, // a store 2^36 floats past the output: an illegal address
  kFaultMisaligned = 2,  // a 16-byte load from a 4-byte aligned address: misaligned address
  kFaultTrap = 3,        // __trap(): the launch fails
  kFaultEndless = 4,     // never finishes: the host-side timeout must end it
  kFaultLaunch = 5,      // faults_refused: a launch the driver refuses (see below)
};

template <int KIND, int UNROLL>
__global__ void faults_kernel(float* out, const float* in, u64 n) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  const u64 first = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (KIND == kFaultEndless) {
    // The sleep is a side effect the compiler must keep, so the loop cannot be removed.
    for (;;) __nanosleep(1000);
  }
  if (KIND == kFaultTrap && first == 0) __trap();
  if (KIND == kFaultMisaligned && first == 0) {
    // Inline PTX: from a float4 the compiler would load only the components used, one by one.
    float a, b, c, d;
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
                 : "l"(in + 1));
    out[0] = a + b + c + d;
  }
#pragma unroll UNROLL
  for (u64 i = first; i < n; i += stride) {
    out[i] = 2.0f * in[i];
    if (KIND == kFaultOutOfBounds && i == 0) out[i + (1ull << 36)] = 1.0f;
  }
}

// A launch the driver refuses although every limit the family file states holds: the kernel
// fixes clusters of 2 blocks at compile time (compute capability 9.0+) and the family launches
// it on 3 blocks, which no whole number of clusters makes. Not sticky: the worker goes on.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define FAULTS_CLUSTER_OF_TWO __cluster_dims__(2, 1, 1)
#else
#define FAULTS_CLUSTER_OF_TWO
#endif

template <int KIND, int UNROLL>
__global__ void FAULTS_CLUSTER_OF_TWO faults_refused(float* out, const float* in, u64 n) {
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<u64>(gridDim.x) * blockDim.x)
    out[i] = 2.0f * in[i];
}

// The reference: what every candidate must write.
__global__ void faults_reference(float* out, const float* in, u64 n) {
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<u64>(gridDim.x) * blockDim.x)
    out[i] = 2.0f * in[i];
}
