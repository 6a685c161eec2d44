// Histogram math shared by host and device: the argument block, sample -> bin, the shared-memory
// layout, and the counter-based generator of the tuning inputs. One definition for both sides, so
// the host reference and the kernels cannot disagree on a bin or a sample.
#pragma once

#if defined(__CUDACC__)
#define KTUNE_HD __host__ __device__ __forceinline__
#else
#define KTUNE_HD inline
#endif

namespace ktune {

// Passed by value to the kernels; the host fills it after checking the caller's arguments.
struct HistogramArgs {
  int bins;                  // output bins, 1..4096
  int identity;              // bytes, 256 bins over [0, 256): a byte is its own bin
  long long lower;           // integer samples: the bins cover [lower, upper)
  long long upper;           //
  unsigned long long range;  // upper - lower
  double inv_range;          // 1 / range, for the estimate that the exact quotient corrects
  float lower_f;             // float samples: the bins cover [lower_f, upper_f)
  float upper_f;             //
  float scale_f;             // bins / (upper_f - lower_f) rounded to float, as CUB computes it
};

constexpr unsigned kHistogramNoBin = 0xFFFFFFFFu;

// floor((s - lower) * bins / (upper - lower)) for lower <= s < upper, exactly. The product is below
// 2^44, so the double estimate is within 1e-12 of the quotient and one correction step suffices.
KTUNE_HD unsigned histogram_bin_int(long long s, const HistogramArgs& a) {
  if (s < a.lower || s >= a.upper) return kHistogramNoBin;
  const unsigned long long num =
      static_cast<unsigned long long>(s - a.lower) * static_cast<unsigned long long>(a.bins);
  unsigned long long q = static_cast<unsigned long long>(static_cast<double>(num) * a.inv_range);
  if (q * a.range > num)
    --q;
  else if ((q + 1) * a.range <= num)
    ++q;
  return static_cast<unsigned>(q);
}

// CUB's HistogramEven for floats: (int)((s - lower) * scale) in float. A sample just below upper
// can round up to bin `bins`; it is a valid sample, so it goes to the last bin. NaN fails both
// tests.
KTUNE_HD unsigned histogram_bin_float(float s, const HistogramArgs& a) {
  if (!(s >= a.lower_f && s < a.upper_f)) return kHistogramNoBin;
#if defined(__CUDA_ARCH__)
  const float x = __fmul_rn(__fsub_rn(s, a.lower_f), a.scale_f);  // never contracted or fused
#else
  const float x = (s - a.lower_f) * a.scale_f;
#endif
  const int b = static_cast<int>(x);
  return b < a.bins ? static_cast<unsigned>(b) : static_cast<unsigned>(a.bins - 1);
}

KTUNE_HD unsigned histogram_bin(unsigned char s, const HistogramArgs& a) {
  return a.identity ? s : histogram_bin_int(s, a);
}
KTUNE_HD unsigned histogram_bin(unsigned short s, const HistogramArgs& a) {
  return histogram_bin_int(s, a);
}
KTUNE_HD unsigned histogram_bin(int s, const HistogramArgs& a) { return histogram_bin_int(s, a); }
KTUNE_HD unsigned histogram_bin(float s, const HistogramArgs& a) {
  return histogram_bin_float(s, a);
}

// --- Privatisation (template parameter PRIV) and replica layout (LAYOUT) ---
enum HistogramPriv { kHistGlobal = 0, kHistBlock = 1, kHistLanes = 2, kHistWarps = 3 };
enum HistogramLayout { kHistReplicaMajor = 0, kHistPadded = 1, kHistInterleaved = 2 };

KTUNE_HD int histogram_replicas(int priv, int r, int block) {
  return priv == kHistGlobal ? 0 : priv == kHistBlock ? 1 : priv == kHistLanes ? r : block / 32;
}

// Words between replicas in the replica-major layouts; a padded replica shifts the next one's
// bins by one bank.
KTUNE_HD int histogram_replica_stride(int layout, int pbins) {
  return pbins + (layout == kHistPadded ? 1 : 0);
}

KTUNE_HD unsigned histogram_replica_words(int priv, int r, int layout, int block, int pbins) {
  const int nr = histogram_replicas(priv, r, block);
  return static_cast<unsigned>(nr) * static_cast<unsigned>(histogram_replica_stride(layout, pbins));
}

// A cluster block owns every cluster-th bin and receives the other blocks' totals for it.
KTUNE_HD unsigned histogram_merge_words(int priv, int pbins, int cluster) {
  return priv == kHistGlobal || cluster <= 1
             ? 0u
             : static_cast<unsigned>((pbins + cluster - 1) / cluster);
}

// Dynamic shared memory of one block, in 32-bit words.
KTUNE_HD unsigned histogram_smem_words(int priv, int r, int layout, int block, int pbins,
                                       int cluster) {
  return histogram_replica_words(priv, r, layout, block, pbins) +
         histogram_merge_words(priv, pbins, cluster);
}

// --- Tuning inputs: counter-based, so that the host regenerates what the device wrote ---
enum HistogramInput { kHistUniform = 0, kHistSkewed = 1, kHistConstant = 2 };

// Samples are made in integer "units": the sample itself for integer types, multiples of 2^-24
// for floats (exact, so both sides round nothing differently).
struct HistogramData {
  unsigned long long seed;
  int input;        // HistogramInput
  int reserved;     //
  long long mid;    // skewed: centre of the distribution, in units
  long long width;  // skewed: units per step of the binomial offset (about one bin)
  long long value;  // constant: the one sample, in units
};

// splitmix64's finalizer (as mix64 in common.cuh, which is device-only).
KTUNE_HD unsigned long long histogram_mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The popcount of every kBits-bit field of x (kBits = 8, 16 or 32), in that field: one pass for
// all fields, and no popcount instruction needed on the host.
template <int kBits>
KTUNE_HD unsigned long long histogram_field_popc(unsigned long long x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  if (kBits >= 16) x = (x + (x >> 8)) & 0x00ff00ff00ff00ffULL;
  if (kBits >= 32) x = (x + (x >> 16)) & 0x0000ffff0000ffffULL;
  return x;
}

KTUNE_HD long long histogram_clamp(long long v, long long lo, long long hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

KTUNE_HD void histogram_from_units(long long u, unsigned char& s) {
  s = static_cast<unsigned char>(histogram_clamp(u, 0, 255));
}
KTUNE_HD void histogram_from_units(long long u, unsigned short& s) {
  s = static_cast<unsigned short>(histogram_clamp(u, 0, 65535));
}
KTUNE_HD void histogram_from_units(long long u, int& s) {
  s = static_cast<int>(histogram_clamp(u, -2147483647LL - 1, 2147483647LL));
}
KTUNE_HD void histogram_from_units(long long u, float& s) {
  s = static_cast<float>(u) * 5.9604644775390625e-08f;  // 2^-24: exact scaling
}

// Uniform samples from a field of the random word: the whole value range for integer types; for
// floats [-1, 1) in steps of 2^-23, with 1/128 NaN and 1/128 drawn from [-2, 2) (half outside).
// Steps of 2^-23 keep s - (-1) exact, so no sample rounds onto a bin edge (CUB, which does not
// clamp a sample that rounds up to the top edge, counts these inputs exactly too).
KTUNE_HD void histogram_uniform(unsigned long long field, unsigned char& s) {
  s = static_cast<unsigned char>(field);
}
KTUNE_HD void histogram_uniform(unsigned long long field, unsigned short& s) {
  s = static_cast<unsigned short>(field);
}
KTUNE_HD void histogram_uniform(unsigned long long field, int& s) {
  s = static_cast<int>(static_cast<unsigned>(field));
}
KTUNE_HD void histogram_uniform(unsigned long long field, float& s) {
  const unsigned low = static_cast<unsigned>(field & 127);
  long long k = (static_cast<long long>(field >> 8) - (1LL << 23)) * 2;
  if (low == 1) k *= 2;
  histogram_from_units(k, s);
  if (low == 0) {
#if defined(__CUDA_ARCH__)
    s = __uint_as_float(0x7fc00000u);
#else
    s = __builtin_bit_cast(float, 0x7fc00000u);
#endif
  }
}

// The 8 / sizeof(T) samples of 64-bit word w (sample j at byte offset j * sizeof(T)).
template <typename T>
KTUNE_HD void histogram_data_word(const HistogramData& g, unsigned long long w, T* out) {
  static_assert(sizeof(T) <= 4, "at least two samples per word");
  constexpr int kSamples = 8 / static_cast<int>(sizeof(T));
  constexpr int kBits = 64 / kSamples;
  constexpr unsigned long long kMask = (1ULL << kBits) - 1;
  const unsigned long long r1 = histogram_mix64(g.seed ^ (w * 0xd1b54a32d192ed03ULL));
  if (g.input == kHistConstant) {
    for (int j = 0; j < kSamples; ++j) histogram_from_units(g.value, out[j]);
  } else if (g.input == kHistSkewed) {
    // A binomial(2 * kBits, 1/2) offset: normal-like, sigma = sqrt(kBits / 2) steps.
    const unsigned long long p1 = histogram_field_popc<kBits>(r1);
    const unsigned long long p2 =
        histogram_field_popc<kBits>(histogram_mix64(~g.seed ^ (w * 0x9e3779b97f4a7c15ULL)));
    for (int j = 0; j < kSamples; ++j) {
      const int d =
          static_cast<int>(((p1 >> (j * kBits)) & kMask) + ((p2 >> (j * kBits)) & kMask)) - kBits;
      histogram_from_units(g.mid + d * g.width, out[j]);
    }
  } else {
    for (int j = 0; j < kSamples; ++j) histogram_uniform((r1 >> (j * kBits)) & kMask, out[j]);
  }
}

}  // namespace ktune
