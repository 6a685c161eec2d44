// Device helpers shared by the templates: fixed-width types, hashing RNG, raw vector loads/stores.
#pragma once

namespace ktune {

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

// splitmix64 finalizer: a counter-based generator, so fills are reproducible from (seed, index).
__device__ __forceinline__ u64 mix64(u64 x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), never exactly representing a zero-filled buffer.
template <typename T>
__device__ __forceinline__ T random_value(u64 seed, u64 i) {
  const u64 r = mix64(seed ^ (i * 0xd1b54a32d192ed03ULL));
  return static_cast<T>(static_cast<double>(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

template <typename T>
__global__ void fill_random(T* p, u64 n, u64 seed) {
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<u64>(gridDim.x) * blockDim.x)
    p[i] = random_value<T>(seed, i);
}

// A packet of VEC elements moved as one access of sizeof(T) * VEC bytes (at most 16).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Packet {
  T v[VEC];
};

// Raw global loads and stores of 4, 8 or 16 bytes; CACHE = 1 marks them streaming (.cs,
// evict-first), which keeps a one-pass stream from displacing other data in L2.
template <int BYTES, int CACHE>
struct RawAccess;

template <int CACHE>
struct RawAccess<4, CACHE> {
  __device__ __forceinline__ static void load(const void* p, u32* w) {
    if (CACHE)
      asm volatile("ld.global.cs.b32 %0, [%1];" : "=r"(w[0]) : "l"(p));
    else
      asm volatile("ld.global.b32 %0, [%1];" : "=r"(w[0]) : "l"(p));
  }
  __device__ __forceinline__ static void store(void* p, const u32* w) {
    if (CACHE)
      asm volatile("st.global.cs.b32 [%0], %1;" ::"l"(p), "r"(w[0]) : "memory");
    else
      asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(w[0]) : "memory");
  }
};

template <int CACHE>
struct RawAccess<8, CACHE> {
  __device__ __forceinline__ static void load(const void* p, u32* w) {
    if (CACHE)
      asm volatile("ld.global.cs.v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
    else
      asm volatile("ld.global.v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  }
  __device__ __forceinline__ static void store(void* p, const u32* w) {
    if (CACHE)
      asm volatile("st.global.cs.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
    else
      asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
  }
};

template <int CACHE>
struct RawAccess<16, CACHE> {
  __device__ __forceinline__ static void load(const void* p, u32* w) {
    if (CACHE)
      asm volatile("ld.global.cs.v4.b32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "l"(p));
    else
      asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "l"(p));
  }
  __device__ __forceinline__ static void store(void* p, const u32* w) {
    if (CACHE)
      asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3])
                   : "memory");
    else
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3])
                   : "memory");
  }
};

template <typename T, int VEC>
union PacketBits {
  Packet<T, VEC> packet;
  u32 words[sizeof(T) * VEC / 4];
};

template <int CACHE, typename T, int VEC>
__device__ __forceinline__ Packet<T, VEC> load_packet(const Packet<T, VEC>* p) {
  PacketBits<T, VEC> b;
  RawAccess<sizeof(T) * VEC, CACHE>::load(p, b.words);
  return b.packet;
}

template <int CACHE, typename T, int VEC>
__device__ __forceinline__ void store_packet(Packet<T, VEC>* p, const Packet<T, VEC>& value) {
  PacketBits<T, VEC> b;
  b.packet = value;
  RawAccess<sizeof(T) * VEC, CACHE>::store(p, b.words);
}

}  // namespace ktune
