// GEMM family descriptor: parameters, constraints, names, launch geometry, verified workload.
#include "families/gemm/gemm.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "families/family.hpp"
#include "families/file_family.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {

constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();

// Same layout as ktune::GemmParams<T> in gemm.cuh.
template <typename T>
struct GemmArgs {
  const void* a;
  const void* b;
  void* c;
  void* workspace;
  long long lda, ldb, ldc;
  int m, n, k;
  int k_per_split;
  int swizzle;
  int c_vector;
  T alpha, beta;
};

std::int64_t get(const Config& c, const char* name) { return config_value(c, name, "gemm"); }

// `s` is `text`: sizes, then the bytes, the length known where it is inlined. std::string's == with
// a literal calls strlen and memcmp, which were most of read_shape's walk (a first call of a shape
// nobody tuned reads a few hundred problems there).
inline bool is(const std::string& s, std::string_view text) {
  return s.size() == text.size() && std::memcmp(s.data(), text.data(), text.size()) == 0;
}

int dtype_bytes(const std::string& dtype) {
  if (is(dtype, "f32")) return 4;
  if (is(dtype, "f64")) return 8;
  throw Error(ErrorCode::kInvalidArgument, "gemm: unknown dtype '" + dtype + "' (f32, f64)");
}

void parse_op(const std::string& op, bool& ta, bool& tb) {
  if (op.size() != 2 || (op[0] != 'n' && op[0] != 't') || (op[1] != 'n' && op[1] != 't'))
    throw Error(ErrorCode::kInvalidArgument, "gemm: op must be nn, nt, tn or tt, got '" + op + "'");
  ta = op[0] == 't';
  tb = op[1] == 't';
}

// Derived geometry of one configuration; `why` says what is wrong when it is not a valid tile
// (null when it is).
struct Geometry {
  int threads = 0, wm_iter = 0, sub_m = 0, sub_n = 0, accumulators = 0, smem = 0;
  const char* why = nullptr;
};

// The parameters of a configuration, read in one walk of it: the model's predictions and the
// rules (several hundred each on a first call of a shape nobody tuned) read them over and over,
// and a lookup by name for each value took most of their time.
struct Tile {
  std::int64_t bk = 0, bm = 0, bn = 0, kcontig = 0, minb = 0, mma = 0, pad = 0, prefetch = 0,
               splitk = 0, stages = 0, swizzle = 0, tm = 0, tn = 0, unroll = 0, vec = 0, wm = 0,
               wn = 0, wniter = 0;
};

// Every parameter of Tile, with its member, in the order of the names (a Config's order).
constexpr std::pair<std::string_view, std::int64_t Tile::*> kTileParams[] = {
    {"BK", &Tile::bk},           {"BM", &Tile::bm},
    {"BN", &Tile::bn},           {"KCONTIG", &Tile::kcontig},
    {"MINB", &Tile::minb},       {"MMA", &Tile::mma},
    {"PAD", &Tile::pad},         {"PREFETCH", &Tile::prefetch},
    {"SPLITK", &Tile::splitk},   {"STAGES", &Tile::stages},
    {"SWIZZLE", &Tile::swizzle}, {"TM", &Tile::tm},
    {"TN", &Tile::tn},           {"UNROLL", &Tile::unroll},
    {"VEC", &Tile::vec},         {"WM", &Tile::wm},
    {"WN", &Tile::wn},           {"WNITER", &Tile::wniter}};

// Sets of those parameters, a bit each in kTileParams' order.
using ParamSet = std::uint32_t;
constexpr ParamSet param_bit(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kTileParams); ++i)
    if (kTileParams[i].first == name) return ParamSet{1} << i;
  return 0;
}
template <typename Names>
constexpr ParamSet params_of(const Names& names) {
  ParamSet s = 0;
  for (std::string_view n : names) s |= param_bit(n);
  return s;
}
constexpr ParamSet kAllParams = (ParamSet{1} << std::size(kTileParams)) - 1;
// What the geometry and the cost model read.
constexpr const char* kModelNames[] = {"BK",     "BM", "BN", "KCONTIG", "MINB", "PAD",   "SPLITK",
                                       "STAGES", "TM", "TN", "WM",      "WN",   "WNITER"};
constexpr ParamSet kModelParams = params_of(kModelNames);

// A whole configuration of this family read in one pass: each of its names the one kTileParams
// has at its place, compared with a length known here (so compiled to a few integer compares, not
// a call of memcmp), and its value stored. False where any name differs.
template <std::size_t... I>
bool read_whole_tile(const Config& c, Tile& t, std::index_sequence<I...>) {
  const auto e = c.begin();
  auto one = [&](auto i) {
    constexpr std::string_view expected = kTileParams[decltype(i)::value].first;
    const std::string& name = e[decltype(i)::value].first;
    if (name.size() != expected.size() ||
        std::memcmp(name.data(), expected.data(), expected.size()) != 0)
      return false;
    t.*kTileParams[decltype(i)::value].second = e[decltype(i)::value].second;
    return true;
  };
  return (one(std::integral_constant<std::size_t, I>{}) && ...);
}

// The parameters of `c` (others stay 0); a parameter of `required` that `c` lacks throws as a
// lookup by name does.
Tile read_tile(const Config& c, ParamSet required = kModelParams) {
  // A whole configuration of this family (a first call's lookup reads several hundred, most of
  // them several times): each name where kTileParams has it, every value read in one pass.
  if (c.size() == std::size(kTileParams)) {
    Tile t;
    if (read_whole_tile(c, t, std::make_index_sequence<std::size(kTileParams)>{})) return t;
  }
  Tile t;
  ParamSet found = 0;
  std::size_t i = 0;
  for (auto it = c.begin(); it != c.end() && i < std::size(kTileParams); ++it) {
    const std::string_view name = it->first;
    int order = 0;
    while (i < std::size(kTileParams) && (order = compare_names(kTileParams[i].first, name)) < 0)
      ++i;
    if (i < std::size(kTileParams) && order == 0) {
      t.*kTileParams[i].second = it->second;
      found |= ParamSet{1} << i++;
    }
  }
  if (const ParamSet missing = required & ~found; missing)
    for (std::size_t j = 0; j < std::size(kTileParams); ++j)
      if (missing & (ParamSet{1} << j)) get(c, kTileParams[j].first.data());  // throws
  return t;
}

// The tile shape: BM, BN, BK, WM, WN, TM, TN and WNITER only (the prefix of the space).
Geometry shape_geometry(const Tile& t) {
  Geometry g;
  const std::int64_t bm = t.bm, bn = t.bn, wm = t.wm, wn = t.wn, tm = t.tm, tn = t.tn,
                     wni = t.wniter;
  if (bm % wm || bn % wn) return g.why = "warp tile does not divide the block tile", g;
  g.threads = static_cast<int>((bm / wm) * (bn / wn) * 32);
  const std::int64_t per_warp = 32 * tm * tn * wni;
  if ((wm * wn) % per_warp) return g.why = "warp tile is not a whole number of thread tiles", g;
  g.wm_iter = static_cast<int>(wm * wn / per_warp);
  if (wm % g.wm_iter || wn % wni) return g.why = "sub-tiles do not divide the warp tile", g;
  g.sub_m = static_cast<int>(wm / g.wm_iter);
  g.sub_n = static_cast<int>(wn / wni);
  if (g.sub_m % tm || g.sub_n % tn || (g.sub_m / tm) * (g.sub_n / tn) != 32)
    return g.why = "a sub-tile must hold exactly 32 thread tiles", g;
  g.accumulators = static_cast<int>(g.wm_iter * tm * wni * tn);
  return g;
}

Geometry geometry(const Tile& t, int bytes, bool ta, bool tb) {
  Geometry g = shape_geometry(t);
  if (g.why) return g;
  const std::int64_t bm = t.bm, bn = t.bn, bk = t.bk;
  // Per stage: k-major BK x (B? + PAD), or k-contiguous B? x (BK + PAD) (KCONTIG, as in gemm.cuh).
  const std::int64_t pad = t.pad, kc = t.kcontig;
  const std::int64_t a = kc && ta ? bm * (bk + pad) : bk * (bm + pad);
  const std::int64_t b = kc && !tb ? bn * (bk + pad) : bk * (bn + pad);
  g.smem = static_cast<int>(t.stages * (a + b) * bytes);
  return g;
}

Geometry geometry(const Config& c, int bytes, bool ta, bool tb) {
  return geometry(read_tile(c), bytes, ta, tb);
}

Geometry geometry(const Config& c, const Problem& p) {
  bool ta, tb;
  parse_op(p.attr("op"), ta, tb);
  return geometry(c, dtype_bytes(p.attr("dtype")), ta, tb);
}

// How k is split: `split` parts of whole k-tiles (k per split, and the parts that are not empty).
struct KSplit {
  std::int64_t per_split, splits;
};
KSplit k_split(std::int64_t k, std::int64_t split, std::int64_t bk) {
  if (split <= 1) return {k, 1};
  const std::int64_t per_split = ((k + split - 1) / split + bk - 1) / bk * bk;
  return {per_split, (k + per_split - 1) / per_split};
}

// Split-K where the m x n tiles number fewer than this many waves of the GPU's SMs (one block an
// SM): beyond filling an idle GPU, splitting evens out a last wave the tiles leave part idle (on an
// H200, 1896 x 3284 x 5836 f32 tt: 390 tiles of 128 x 128 unsplit, three to an SM where two fit at
// once, ran 0.73 x cuBLAS; 195 tiles of 128 x 256 split 2 ways, 0.98; docs/GEMM.md, "Split-K up to
// four waves of tiles").
constexpr std::int64_t kSplitWaves = 4;

// What a round of the blocks resident on an SM costs beyond their k-tiles, in k-tiles: the
// pipeline filled before the first k-tile and C written after the last, paid once a round (blocks
// resident together hide each other's). Without it the model carried a tile's time from a long k
// to a short one in proportion to its k-tiles and rated short k too fast: the H200's
// presets-stage answers of seeds 20262942-44 and 20262955 ran 1.14 x their prediction at k < 128,
// 1.09 over all (f32). Paid once a block instead, it broke the measurements moved from split-K to
// fewer blocks an SM (test_lookup.cpp). 1.5 to 3 read alike on the host guards (2: the shipped
// grid's leave-one-out 0.940 -> 0.942; the winners measured on seed 20261901's draw, ranked
// 0.938 -> 0.949 and predicted within |log| 0.117 -> 0.099 for f32, 0.130 -> 0.115 for f64). The
// answers it changes ran as fast as before (an H100, nine fresh seeds: f32 0.998 -> 1.000, f64
// 1.020 -> 1.019 x cuBLAS; docs/GEMM.md, "A cost per round of resident blocks"): what it buys is
// predictions nearer to what runs.
constexpr double kTileSteps = 2.0;

// The cost model of the predicted lookup step (docs/GEMM.md, "Shapes nobody tuned"): what a
// configuration does on a problem, in units its own measurement calibrates.
struct GemmCost {
  // Block-steps (k-tiles) on the busiest SM, weighed by how well the blocks resident there at
  // once keep it busy (fully from 8 warps on: 2 per scheduler).
  double sm_steps = 0;
  double block_steps = 0;   // the busiest SM's blocks x the k-tiles of each, unweighed
  double together = 1;      // blocks resident on the busiest SM at once
  double dram_bytes = 0;    // A, B and C once each: the least any tiling moves
  double reduce_bytes = 0;  // split-K partial sums written and read, and C written by the sum
  bool split = false;
  // Operands stored transposed into shared memory without padding (PAD 0, not kept
  // k-contiguous): 0, 1 or 2.
  int bare_transposes = 0;
};

// What the cost model reads of a problem, read once for the two configurations of a prediction.
struct Shape {
  const std::string* op = nullptr;
  int bytes = 0;
  bool ta = false, tb = false;
  std::int64_t m = 0, n = 0, k = 0;
};

// A problem's dtype, found without making a string of its name (as attr("dtype") does).
const std::string& dtype_of(const Problem& p) {
  for (const auto& [name, value] : p.attrs)
    if (is(name, "dtype")) return value;
  return p.attr("dtype");  // throws
}

// In one walk of each of the problem's maps: a first call of a shape nobody tuned reads a few
// thousand problems here (two a prediction), and a lookup by name of each of the five, each with
// a string made of its name, was a tenth of that call's lookup.
Shape read_shape(const Problem& p) {
  Shape s;
  for (const auto& [name, value] : p.attrs)
    if (is(name, "op")) s.op = &value;
  const std::int64_t* m = nullptr;
  const std::int64_t* n = nullptr;
  const std::int64_t* k = nullptr;
  for (const auto& [name, value] : p.sizes) {
    if (name.size() != 1) continue;
    if (name[0] == 'm')
      m = &value;
    else if (name[0] == 'n')
      n = &value;
    else if (name[0] == 'k')
      k = &value;
  }
  // A missing one throws as the lookup by name does.
  if (!s.op) s.op = &p.attr("op");
  s.bytes = dtype_bytes(dtype_of(p));
  parse_op(*s.op, s.ta, s.tb);
  s.m = m ? *m : p.size("m"), s.n = n ? *n : p.size("n"), s.k = k ? *k : p.size("k");
  return s;
}

GemmCost gemm_cost(const Config& c, const Shape& p, const DeviceLimits& limits) {
  const int bytes = p.bytes;
  const bool ta = p.ta, tb = p.tb;
  const std::int64_t pm = p.m, pn = p.n, pk = p.k;
  const double m = static_cast<double>(pm), n = static_cast<double>(pn),
               k = static_cast<double>(pk);
  const Tile t = read_tile(c);
  const std::int64_t bm = t.bm, bn = t.bn, bk = t.bk;
  const std::int64_t tiles = ((pm + bm - 1) / bm) * ((pn + bn - 1) / bn);
  const auto [kps, splits] = k_split(pk, t.splitk, bk);
  const Geometry g = geometry(t, bytes, ta, tb);
  // Blocks resident per SM: shared memory, threads and registers (the accumulators and their
  // operands, or the cap MINB sets) allowing.
  const int words = bytes / 4;
  int regs = std::min(255, g.accumulators * words * 3 / 2 + 40);
  if (const std::int64_t minb = t.minb; minb > 1)
    regs = std::min(regs, limits.regs_per_sm / static_cast<int>(minb * g.threads) / 8 * 8);
  const int per_warp = (regs * 32 + 255) / 256 * 256;
  const int warps = std::max(1, g.threads / 32);
  const int resident = std::max(
      1, std::min({limits.regs_per_sm / (warps * per_warp),
                   limits.smem_per_sm / std::max(1, g.smem + 1024),
                   limits.max_threads_per_sm / std::max(1, g.threads), limits.max_blocks_per_sm}));
  const double blocks = static_cast<double>(tiles * splits);
  const double busiest = std::ceil(blocks / limits.sm_count);
  const double together = std::min<double>(busiest, resident);
  // Fewer warps than 8 slow an SM down far less than in proportion: each warp's loop has ILP of
  // its own. The fourth root fits the H100 (b9cf150): the f64 64x64 tile measured at one 4-warp
  // block per SM (64x64x262144, split 128) ran 6.19 ms at 6657x2098x6275 nt, where a linear
  // 1/2 predicted 3.74 (0.5^0.25 = 0.84 predicts 6.3). That is a move to more blocks an SM than
  // measured; predict_ms slows a move to fewer further.
  const double busy = std::pow(std::min(1.0, together * warps / 8.0), 0.25);
  GemmCost cost;
  // Each block's k-tiles, and kTileSteps for each round of the blocks resident together.
  cost.block_steps = busiest * std::ceil(static_cast<double>(kps) / static_cast<double>(bk)) +
                     std::ceil(busiest / together) * kTileSteps;
  cost.sm_steps = cost.block_steps / busy;
  cost.together = together;
  cost.dram_bytes = (m * k + k * n + m * n) * bytes;
  cost.split = splits > 1;
  if (t.pad == 0) cost.bare_transposes = (ta && !t.kcontig) + (!tb && !t.kcontig);
  if (cost.split)
    cost.reduce_bytes = (2.0 * static_cast<double>(splits) + 1) * static_cast<double>(tiles) *
                        static_cast<double>(bm * bn) * bytes;
  return cost;
}

// The predicted step's model (docs/GEMM.md, "Shapes nobody tuned"): what `measured`, timed at
// `measured_ms` on `tuned`, says a candidate takes on `target`.
//
// Time = a fixed launch cost + the larger of the main loop (the busiest SM's block-steps x the
// configuration's own time per block-step, calibrated on its measurement) and the least DRAM
// traffic, + the split-K reduction's traffic and launch. A configuration's block-steps take the
// time they took where it was measured: the model moves it between shapes (tile and wave
// quantisation, occupancy, k, split-K); it does not guess tiles nobody measured.
class Prediction {
 public:
  // The problem predicted for, on one device: what every measurement's prediction shares (a
  // candidate's cost there is the same from each of its measurements).
  class Target {
   public:
    Target(const Problem& target, const DeviceInfo& device)
        : to_(read_shape(target)),
          limits_(device.limits),
          // Peak DRAM bandwidth from the memory clock and bus (double data rate); H100's where
          // unknown.
          bandwidth_(
              known_or(dram_bandwidth(device.memory_clock_khz, device.memory_bus_bits), 3.35e12)),
          // Split-K partial sums are read back right after they are written: what fits in L2
          // moves at about twice the DRAM rate (docs/GEMM.md, "Fewer blocks an SM than where
          // measured"). The architecture's L2, not this GPU's (60 MiB on an H200, 50 for
          // sm_90): the database does not keep it, and `ktune explain --gpu` must answer as the
          // runtime does.
          l2_(static_cast<double>(
              DeviceLimits::for_arch(device.limits.cc_major, device.limits.cc_minor).l2_bytes)) {}
    GemmCost cost(const Config& candidate) const { return gemm_cost(candidate, to_, limits_); }

   private:
    friend class Prediction;
    static double known_or(double bandwidth, double otherwise) {
      return bandwidth > 0 ? bandwidth : otherwise;
    }
    const Shape to_;
    const DeviceLimits& limits_;
    const double bandwidth_, l2_;
  };

  // The measurement's split-K reduction is taken out of its time at the bandwidth of the GPU
  // that timed it: an H200's split-K winner (4.8 TB/s) carried to an H100 (3.35) had its
  // reduction rated 1.4 x too slow there, so its main loop too fast, and the unsplit form of its
  // kernel was predicted as fast as the best tiles (docs/GEMM.md, "A measurement's reduction at
  // its own GPU's bandwidth").
  Prediction(const Family::Measured& measured, const Target& target)
      : target_(target),
        from_(read_shape(*measured.tuned)),
        was_(gemm_cost(*measured.config, from_, target.limits_)),
        loop_ms_(std::max(
            measured.ms - kLaunchMs -
                side_ms(was_, Target::known_or(measured.memory_bandwidth, target.bandwidth_)),
            0.25 * measured.ms)) {}

  std::optional<double> of(const Config& candidate) const { return of(target_.cost(candidate)); }
  // The candidate's cost on the target given (Target::cost).
  std::optional<double> of(const GemmCost& will) const {
    if (was_.sm_steps <= 0 || will.sm_steps <= 0) return std::nullopt;
    const double loop_ms = loop_ms_;
    double loop_will = will.sm_steps * (loop_ms / was_.sm_steps);
    // Fewer blocks sharing an SM than where it was measured: the occupancy law (gemm_cost) keeps
    // a small block's k-steps about as fast as they were, but a block alone waits on its own
    // loads (a 32 x 64 f32 tile measured at 4 blocks an SM ran 2.3 x slower than predicted at
    // 1). Each k-step taking as long as where measured bounds it the other way; the prediction
    // is the geometric mean of the two (docs/GEMM.md, "Fewer blocks an SM than where measured").
    if (will.together < was_.together)
      loop_will = std::sqrt(loop_will * will.block_steps * (loop_ms / was_.block_steps) *
                            (was_.together / will.together));
    double ms =
        kLaunchMs + std::max(loop_will, will.dram_bytes / target_.bandwidth_ * 1e3) + side_ms(will);
    // Measured on another op: its loads differ; keep a margin for what was not measured.
    if (*from_.op != *target_.to_.op) ms *= 1.1;
    // Stores into shared memory that conflict on its banks where none did when measured: a
    // kernel measured on nt (no operand stored transposed) carried without padding to tn (both)
    // ran 1.6 to 2.1 x its prediction on the H100 (docs/GEMM.md, "Huge k with a mid-sized
    // output: a tile for each padding of the short side").
    for (int i = was_.bare_transposes; i < will.bare_transposes; ++i) ms *= kBareTranspose;
    return ms;
  }

 private:
  static constexpr double kLaunchMs = 0.003;
  // A prediction's factor for each operand stored transposed into shared memory without padding
  // that was not where measured: the largest of 1.3, 1.6 and 2 that kept the four host guards
  // (PredictedOn*) where they were (1.6 and 2 rank the H100's huge-k set and the H200's draw
  // worse: most such moves cost little; a few cost 2 x).
  static constexpr double kBareTranspose = 1.3;
  // The split-K reduction of `c` at DRAM bandwidth `bandwidth` (the target's by default).
  double side_ms(const GemmCost& c) const { return side_ms(c, target_.bandwidth_); }
  double side_ms(const GemmCost& c, double bandwidth) const {
    if (!c.split) return 0.0;
    const double in_l2 = std::min(c.reduce_bytes, target_.l2_);
    return (in_l2 / 2 + (c.reduce_bytes - in_l2)) / bandwidth * 1e3 + kLaunchMs;
  }

  const Target& target_;
  const Shape from_;
  const GemmCost was_;
  const double loop_ms_;  // the measurement's main loop: its time less the launch and the split
};

// The family's data (axes, parameters, kernel name, metric, problems) is its family file,
// gemm.family.toml; this class adds what data cannot say: the rules, walked in parameter order
// (reject_prefix on the first 12, the tile shape, SPLITK, MMA, VEC and SWIZZLE, then reject), the
// split-k reduction kernel, the launch, the workload, the default, adapt, the variants and the
// model.
class GemmFamily final : public BuiltinFileFamily {
  // The parameters reject_prefix() reads, which the file lists first.
  static constexpr const char* kPrefix[] = {"BM", "BN",     "BK",     "WM",  "WN",  "TM",
                                            "TN", "WNITER", "SPLITK", "MMA", "VEC", "SWIZZLE"};
  static constexpr ParamSet kPrefixParams = params_of(kPrefix);
  static constexpr std::size_t kShapeParams = 8;  // BM to WNITER: what reject_shape reads
  static_assert(std::string_view(kPrefix[kShapeParams - 1]) == "WNITER");

  // Why k may not be split `split` ways over `tiles` m x n tiles of k-tiles `bk` (null where it
  // may; always for split 1).
  static const char* refuse_split(std::int64_t split, std::int64_t tiles, std::int64_t k,
                                  std::int64_t bk, const DeviceLimits& limits) {
    if (split <= 1) return nullptr;
    // Split K only where the m x n tiles leave the GPU idle or its last wave partly so.
    if (tiles >= kSplitWaves * limits.sm_count) return "enough tiles without splitting k";
    if (tiles * split > 8 * limits.sm_count) return "more splits than the GPU can use";
    const KSplit parts = k_split(k, split, bk);
    // Whole k-tiles per split can leave the last few splits empty (63819 in 128 splits of
    // 504: 127); the launch runs the splits that are not. Half of them empty is another count.
    if (2 * parts.splits <= split) return "SPLITK leaves half the splits empty";
    if (parts.per_split < 4 * bk) return "splits shorter than 4 k-tiles";
    return nullptr;
  }

  // Why a block tile extent of 3 x 2^j (48, 96, 192) may not tile an extent of the problem (m or
  // n): unless it pads it less than the power of two below it and, by at least 5% of the extent,
  // less than the one above (130 rows: 144 in 48s, 160 in 32s, 192 in 64s). Null for a power of
  // two. Large problems pad little with any tile: their spaces stay as the powers of two make them.
  static const char* refuse_tile_extent(std::int64_t tile, std::int64_t extent) {
    const auto t = static_cast<std::uint64_t>(tile);
    if (std::has_single_bit(t)) return nullptr;
    const auto above = static_cast<std::int64_t>(std::bit_ceil(t)),
               below = static_cast<std::int64_t>(std::bit_floor(t));
    auto padded = [extent](std::int64_t by) { return (extent + by - 1) / by * by; };
    if (padded(tile) >= padded(below) || 20 * (padded(above) - padded(tile)) < extent)
      return "a tile of 48, 96 or 192 where it pads the problem no less than the powers of two "
             "beside it";
    return nullptr;
  }

  // The rules on the tile shape alone (BM, BN, BK, WM, WN, TM, TN, WNITER: the head of the prefix,
  // which SearchSpace walks before the rest of it) and the problem's shape; `g` is the shape's
  // geometry, for the rest of the prefix's rules.
  static const char* reject_shape(const Tile& t, const Shape& s, const DeviceLimits& limits,
                                  Geometry& g) {
    const std::int64_t m = s.m, n = s.n;
    const std::int64_t bm = t.bm, bn = t.bn;
    const int bytes = s.bytes;
    g = shape_geometry(t);
    if (g.why) return g.why;
    // 128 or 256 threads: fewer hide less latency, more leave too few registers per thread. Two
    // warps for the smallest tiles (32 x 32, 32 x 64): small problems and small k need many
    // blocks more than big ones (cuBLAS runs such tiles there: 3743 x 264 x 103 f32 nt, 32 x 64
    // tiles of 64 threads; 350 x 182 x 340 f64 tn, 32 x 32 tensor-core tiles).
    const bool smallest = bm * bn <= 2048;
    // Where 64 x 64 tiles fill the GPU four times over, the smallest tiles only read A and B
    // more often.
    if (smallest && !gemm_smallest_tiles_apply(m, n, limits.sm_count))
      return "tiles of at most 32 x 64 where 64 x 64 tiles fill the GPU four times over";
    if (!smallest && (t.wm < 32 || t.wn < 32))
      return "warp tiles of 16 rows or columns are for block tiles of at most 32 x 64";
    const bool two_warps = g.threads == 64 && smallest;
    if ((g.threads != 128 && g.threads != 256 && !two_warps) ||
        g.threads > limits.max_threads_per_block)
      return "threads per block other than 128 or 256 (64 for tiles of at most 32 x 64)";
    // Square thread tiles: the transposed shapes are reached by the warp tile instead.
    if (t.tm != t.tn) return "TM != TN";
    // Accumulators per thread: enough FMAs per shared-memory load to approach the FMA peak
    // (at least 64 for f32, 32 for f64), few enough to stay in registers without spilling.
    const int min_acc = std::min<int>(bytes == 4 ? 64 : 32, static_cast<int>(t.bm * t.bn / 128));
    if (g.accumulators > (bytes == 4 ? 128 : 64) || g.accumulators < min_acc)
      return "thread tile out of range";
    if (const char* why = refuse_tile_extent(bm, m)) return why;
    if (const char* why = refuse_tile_extent(bn, n)) return why;
    return nullptr;
  }

  // reject_prefix on the parameters read (those of kPrefixParams at least) and the problem's shape
  // and alignment class.
  static const char* reject_prefix(const Tile& t, const Shape& s, std::int64_t align,
                                   const DeviceLimits& limits) {
    if (const char* why = refuse_split(t, s, limits)) return why;
    Geometry g;
    if (const char* why = reject_shape(t, s, limits, g)) return why;
    return reject_after_shape(t, s, align, limits, g);
  }

  // refuse_split on a prefix's tile and split.
  static const char* refuse_split(const Tile& t, const Shape& s, const DeviceLimits& limits) {
    const std::int64_t tiles = ((s.m + t.bm - 1) / t.bm) * ((s.n + t.bn - 1) / t.bn);
    return refuse_split(t.splitk, tiles, s.k, t.bk, limits);
  }

  // The rest of reject_prefix, after refuse_split and reject_shape (whose geometry `g` is).
  static const char* reject_after_shape(const Tile& t, const Shape& s, std::int64_t align,
                                        const DeviceLimits& limits, const Geometry& g) {
    const std::int64_t m = s.m, n = s.n;
    const std::int64_t bm = t.bm, bn = t.bn, bk = t.bk;
    const std::int64_t tiles_m = (m + bm - 1) / bm, tiles = tiles_m * ((n + bn - 1) / bn);
    const int bytes = s.bytes;
    if (const std::int64_t kind = t.mma; kind) {
      if (bytes != 8) return "MMA (FP64 tensor cores) is f64 only";
      if (limits.cc_major < 8 || (kind >= 2 && limits.cc_major < 9))
        return "this MMA shape needs a newer GPU (m8n8k4: sm_80, m16n8k*: sm_90)";
      if (t.bk % (kind <= 2 ? 4 : kind == 3 ? 8 : 16))
        return "BK is not a multiple of the MMA shape's k";
      // The warp tile alone shapes the tensor-core path: the thread-tile parameters keep one value
      // (WNITER 3 where only it makes a warp tile 48 columns wide a whole number of thread tiles).
      if (t.tm != 4 || t.tn != 4 || t.wniter != (t.wn == 48 ? 3 : 1))
        return "MMA takes TM=TN=4, WNITER=1 (3 for WN=48)";
    }
    const bool ta = s.ta, tb = s.tb;
    const std::int64_t vec = t.vec;
    if (vec * bytes > 16) return "VEC * element size exceeds 16 bytes";
    if (vec > align) return "VEC exceeds the alignment class of the problem";
    // Between scalar loads and the widest the problem allows, nothing is gained.
    if (vec != 1 && vec != std::min<std::int64_t>(align, 16 / bytes))
      return "VEC between 1 and the widest allowed";
    const std::int64_t a_contig = ta ? bk : bm, b_contig = tb ? bn : bk;
    if (a_contig % vec || b_contig % vec) return "VEC does not divide the contiguous tile extent";
    if ((bm * bk) % (vec * g.threads) || (bn * bk) % (vec * g.threads))
      return "tiles do not split evenly over the threads";
    // Tiles larger than the problem waste the whole block: keep one tile that covers it.
    if ((bm >= 2 * m && bm > 64) || (bn >= 2 * n && bn > 64))
      return "block tile far larger than the problem";
    if (t.swizzle > 1 && tiles_m <= t.swizzle) return "SWIZZLE equals SWIZZLE=1 here";
    if (tiles_m > kMaxDim || tiles > kMaxDim) return "too many tiles for one launch";
    return nullptr;
  }

  // reject on every parameter read, the problem's shape and its alignment class.
  static const char* reject(const Tile& t, const Shape& s, std::int64_t align,
                            const DeviceLimits& limits) {
    const int bytes = s.bytes;
    const bool ta = s.ta, tb = s.tb;
    // The cheapest tests first: most of the cartesian product fails one of them.
    const bool mma = t.mma != 0;
    // (The rest of MMA's rules are in reject_prefix.)
    if (mma && (t.prefetch || t.unroll)) return "MMA takes PREFETCH=0, UNROLL=0";
    if (t.stages >= 3 && limits.cc_major < 8) return "cp.async stages need sm_80 or newer";
    if (const std::int64_t kc = t.kcontig; kc) {
      if (!ta && tb) return "KCONTIG without an operand that is k-contiguous in memory (op nt)";
      if (mma) return "KCONTIG is for the FMA units";
      if (kc * bytes > 16) return "KCONTIG * element size exceeds 16 bytes";
      if (t.prefetch) return "KCONTIG reads k-steps in groups: no PREFETCH";
      if (t.bk % kc || (t.unroll && t.unroll % kc)) return "KCONTIG must divide BK and the unroll";
    }
    if (const char* why = reject_prefix(t, s, align, limits)) return why;
    const Geometry g = geometry(t, bytes, ta, tb);
    const std::int64_t bk = t.bk;
    if (g.smem > limits.smem_per_block_optin) return "shared memory exceeds the per-block limit";
    if (const std::int64_t minb = t.minb; minb > 1) {
      // The register cap __launch_bounds__ derives: whole warps of 256-register granules.
      const int cap =
          std::min(255, limits.regs_per_sm / static_cast<int>(minb * g.threads) / 8 * 8);
      if (cap >= 255) return "MINB caps no registers at this block size (same as MINB=1)";
      // Accumulators and one set of fragments in 32-bit registers, plus addressing.
      const int words = bytes / 4;
      // (KCONTIG: a k-contiguous operand's fragments are KCONTIG k-steps deep).
      const std::int64_t kc = std::max<std::int64_t>(1, t.kcontig);
      const auto fragments = g.wm_iter * t.tm * (ta ? kc : 1) + t.wniter * t.tn * (tb ? 1 : kc);
      const auto need = (g.accumulators + fragments) * words + 24;
      if (cap < need) return "MINB leaves fewer registers than the accumulators need";
      if (minb * (g.smem + 1024) > limits.smem_per_sm)
        return "shared memory holds fewer blocks per SM than MINB";
      if (minb * g.threads > limits.max_threads_per_sm) return "more threads than an SM holds";
    }
    // Padding only matters where a tile is stored transposed into shared memory, or kept
    // k-contiguous (KCONTIG is refused above where no operand is), or read by the tensor cores
    // (their fragments read four k rows at once: padding spreads them over the banks).
    if (t.pad > 0 && !ta && tb && !mma) return "PAD without a transposed shared-memory store";
    const std::int64_t unroll = t.unroll;
    if (unroll != 0 && (bk % unroll || unroll >= bk))
      return "UNROLL must be an even divisor below BK";
    // The prefetch ping-pong indexes fragments by k parity: only a full unroll keeps them in
    // registers. A single stage is the plain baseline: no prefetch, full unroll.
    if (unroll != 0 && t.prefetch) return "PREFETCH needs the k loop fully unrolled";
    if (t.stages == 1 && (t.prefetch || unroll != 0))
      return "STAGES=1 is the unbuffered baseline (no prefetch, full unroll)";
    return nullptr;
  }

 public:
  GemmFamily() : BuiltinFileFamily("gemm") {
    // The rules below are this class's; a rule in the file would not be walked in prefix order.
    if (!BuiltinFileFamily::describe_constraints().empty())
      throw Error(ErrorCode::kInternal, "gemm.family.toml: the gemm rules are in gemm.cpp");
    const auto& ps = params();
    for (std::size_t i = 0; i < std::size(kPrefix); ++i)
      if (ps.size() <= i || ps[i].name != kPrefix[i])
        throw Error(ErrorCode::kInternal, std::string("gemm.family.toml: parameter ") +
                                              std::to_string(i + 1) + " must be " + kPrefix[i] +
                                              " (the prefix the rules walk first)");
  }

  // Every tile shape with the usual code path, and every code-path toggle (stages, prefetch,
  // unroll, vector width, padding, register cap) on the first shape of each unit (FMA, tensor
  // cores). nn and tt together load each operand both directly and transposed; the small-m,n
  // problem brings the split-K kernels.
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    if (space.empty()) return space;
    auto shape_of = [](const Config& c) {
      Config s;
      for (const char* k : {"BM", "BN", "BK", "WM", "WN", "TM", "TN", "WNITER", "MMA"})
        s[k] = c.at(k);
      return s;
    };
    std::int64_t widest = 1, pad = 0;
    for (const auto& c : space)
      widest = std::max(widest, c.at("VEC")), pad = std::max(pad, c.at("PAD"));
    // By MMA; not the smallest tiles (32 x 64 at most), which only small problems take, where one
    // of the others is there: the toggles stay on the tiles every problem has.
    std::map<std::int64_t, Config> first;
    for (const bool smallest : {false, true})
      for (const auto& c : space)
        if ((c.at("BM") * c.at("BN") <= 2048) == smallest) first.emplace(c.at("MMA"), shape_of(c));
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool usual = c.at("STAGES") == 2 && c.at("PREFETCH") == !c.at("MMA") &&
                         c.at("MINB") == 1 && c.at("KCONTIG") == 0 && c.at("UNROLL") == 0 &&
                         c.at("VEC") == widest && c.at("PAD") == pad && c.at("SWIZZLE") == 1;
      if (usual || shape_of(c) == first.at(c.at("MMA"))) out.push_back(c);
    }
    return out;
  }

  void validate(const Problem& p) const override {
    BuiltinFileFamily::validate(p);  // the axes: types, ops, ranges, nothing else
    const std::int64_t align = p.size("align");
    if (align != 1 && align != 2 && align != 4)
      throw Error(ErrorCode::kInvalidArgument, "gemm: align must be 1, 2 or 4 elements");
    if (align * dtype_bytes(p.attr("dtype")) > 16)
      throw Error(ErrorCode::kInvalidArgument, "gemm: align 4 is 32 bytes for f64; use 1 or 2");
  }

  // The tile shape, SPLITK, MMA, VEC and SWIZZLE come first in params(): most of their
  // combinations are no tile, split k where the problem has tiles enough without, a tensor-core
  // shape for f32 or for a thread tile it does not take, a vector the problem's alignment does not
  // allow, or a rasterization group as tall as the grid (all of them for a 64 x 64 C, whose walk
  // took 11 s on the host with these three after the prefix).
  std::size_t prefix_params() const override { return std::size(kPrefix); }
  // The tile shape (BM to WNITER) first: most of its combinations are no tile for the problem, and
  // walking SPLITK, MMA, VEC and SWIZZLE under each of them took longer than the rest of the walk
  // once BM and BN took 48, 96 and 192.
  std::size_t head_params() const override { return kShapeParams; }
  std::string reject_prefix(const Config& c, const Problem& p,
                            const DeviceLimits& limits) const override {
    const char* why =
        reject_prefix(read_tile(c, kPrefixParams), read_shape(p), p.size("align"), limits);
    return why ? why : "";
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    const char* why = reject(read_tile(c, kAllParams), read_shape(p), p.size("align"), limits);
    return why ? why : "";
  }
  // The two rules above on a Tile filled from the values by position and the problem read once:
  // by name, a huge k's space (200k to 480k configurations) took 2.6 to 4.4 s to walk on the host.
  std::unique_ptr<SpaceRules> space_rules(const Problem& p,
                                          const DeviceLimits& limits) const override {
    class Rules final : public SpaceRules {
     public:
      Rules(const std::vector<Param>& params, const Problem& p, const DeviceLimits& limits)
          : shape_(read_shape(p)), align_(p.size("align")), limits_(limits) {
        ParamSet found = 0;
        for (const Param& param : params) {
          const ParamSet bit = param_bit(param.name);
          member_.push_back(bit ? kTileParams[std::countr_zero(bit)].second : nullptr);
          found |= bit;
        }
        if (found != kAllParams)
          throw Error(ErrorCode::kInternal, "gemm.family.toml lacks a parameter the rules read");
      }
      // The tile shape's rules once per shape, its geometry kept for the prefixes under it
      // (SearchSpace asks prefix_ok only of those under the shape head_ok accepted last).
      bool head_ok(const std::int64_t* values) override {
        return !reject_shape(tile(values, kShapeParams), shape_, limits_, head_);
      }
      bool prefix_ok(const std::int64_t* values) override {
        const Tile t = tile(values, std::size(kPrefix));
        return !refuse_split(t, shape_, limits_) &&
               !reject_after_shape(t, shape_, align_, limits_, head_);
      }
      bool ok(const std::int64_t* values) override {
        return !reject(tile(values, member_.size()), shape_, align_, limits_);
      }

     private:
      Tile tile(const std::int64_t* values, std::size_t count) const {
        Tile t;
        for (std::size_t i = 0; i < count; ++i)
          if (member_[i]) t.*member_[i] = values[i];
        return t;
      }
      Shape shape_;
      std::int64_t align_;
      DeviceLimits limits_;
      std::vector<std::int64_t Tile::*> member_;  // each parameter's, in params() order
      Geometry head_;                             // of the tile shape head_ok accepted last
    };
    return std::make_unique<Rules>(params(), p, limits);
  }

  std::string reject_compiled(const Config& c, const Problem& p, const DeviceLimits& limits,
                              const FunctionResources& res) const override {
    if (std::string why = local_memory_reason(res); !why.empty()) return why;
    const Geometry g = geometry(c, p);
    const int per_warp = (res.registers * 32 + 255) / 256 * 256;
    if ((g.threads / 32) * per_warp > limits.regs_per_block)
      return "registers do not fit the block";
    return {};
  }

  Config adapt(const Config& config, const Problem& p, const DeviceLimits& limits) const override {
    // A result tuned for another problem: keep its tiles, drop what this problem cannot use.
    Config c = config;
    if (!c.count("VEC") || !c.count("SPLITK") || !c.count("SWIZZLE")) return c;
    std::int64_t& vec = c["VEC"];
    vec = std::min<std::int64_t>(vec, p.size("align"));
    // Each rule asked once of each configuration this walks through (`why` is always c's).
    std::string why = reject(c, p, limits);
    while (vec > 1 && why.find("VEC") != std::string::npos) {
      vec /= 2;
      why = reject(c, p, limits);
    }
    if (why.find("SWIZZLE") != std::string::npos) {
      c["SWIZZLE"] = 1;
      why = reject(c, p, limits);
    }
    if (c["SPLITK"] > 1 && !why.empty()) c["SPLITK"] = 1;
    return c;
  }

  // The model: Prediction, above.
  std::optional<double> predict_ms(const Measured& measured, const Config& candidate,
                                   const Problem& target, const DeviceInfo& device) const override {
    if (dtype_of(*measured.tuned) != dtype_of(target) || !(measured.ms > 0)) return std::nullopt;
    const Prediction::Target at(target, device);
    return Prediction(measured, at).of(candidate);
  }

  // The measurement's part (its shape, its cost, its time per block-step) once for all of them.
  std::vector<std::optional<double>> predict_ms_each(const Measured& measured,
                                                     const std::vector<const Config*>& candidates,
                                                     const Problem& target,
                                                     const DeviceInfo& device) const override {
    std::vector<std::optional<double>> out(candidates.size());
    if (candidates.empty() || dtype_of(*measured.tuned) != dtype_of(target) || !(measured.ms > 0))
      return out;
    const Prediction::Target at(target, device);
    const Prediction prediction(measured, at);
    for (std::size_t i = 0; i < candidates.size(); ++i) out[i] = prediction.of(*candidates[i]);
    return out;
  }

  // The candidate's part (its cost on the target) once for all the measurements.
  std::vector<std::optional<double>> predict_ms_from_each(const std::vector<Measured>& measured,
                                                          const Config& candidate,
                                                          const Problem& target,
                                                          const DeviceInfo& device) const override {
    std::vector<std::optional<double>> out(measured.size());
    if (measured.empty()) return out;
    const Prediction::Target at(target, device);
    const GemmCost will = at.cost(candidate);
    const std::string_view dtype = dtype_of(target);
    for (std::size_t i = 0; i < measured.size(); ++i) {
      const Measured& m = measured[i];
      if (dtype_of(*m.tuned) != dtype || !(m.ms > 0)) continue;
      out[i] = Prediction(m, at).of(will);
    }
    return out;
  }

  std::vector<Config> variants(const Config& c, const Problem& p,
                               const DeviceLimits& limits) const override {
    // Other split-K counts: a winner of a square shape splits nothing, and a shape with few tiles
    // and a long k needs it split (the model weighs the waves it fills against the reduction).
    // Only the counts the split rules allow (reject() would refuse the others, at the cost of
    // all its rules, on every candidate of a first call).
    std::vector<Config> out;
    const std::int64_t bm = get(c, "BM"), bn = get(c, "BN"), bk = get(c, "BK");
    const std::int64_t tiles = ((p.size("m") + bm - 1) / bm) * ((p.size("n") + bn - 1) / bn);
    if (tiles >= kSplitWaves * limits.sm_count) return out;
    const auto splits = std::find_if(params().begin(), params().end(),
                                     [](const Param& q) { return q.name == "SPLITK"; });
    const std::int64_t own = get(c, "SPLITK"), k = p.size("k");
    for (std::int64_t split : splits->values) {
      if (split == own || refuse_split(split, tiles, k, bk, limits)) continue;
      Config v = c;
      v["SPLITK"] = split;
      out.push_back(std::move(v));
    }
    return out;
  }

  Config measurement_key(const Config& c) const override {
    // The split and the rasterisation change with the problem (variants(), adapt()); the tile,
    // its pipeline and its loads are the kernel the model carries from one shape to another.
    Config key = c;
    key["SPLITK"] = 1;
    key["SWIZZLE"] = 1;
    return key;
  }

  int block_threads(const Config& c, const Problem& p) const override {
    return geometry(c, p).threads;
  }

  // The file's kernel, and where k is split the reduction, whose template arguments are the
  // kernel's without the last (SPLIT): gemm.cuh declares them so.
  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    std::vector<std::string> names = BuiltinFileFamily::name_expressions(c, p);
    if (get(c, "SPLITK") > 1) {
      const std::string& kernel = names.front();
      const std::size_t open = kernel.find('<'), last = kernel.rfind(',');
      names.push_back("ktune::gemm_splitk_reduce<" + kernel.substr(open + 1, last - open - 1) +
                      ">");
    }
    return names;
  }

  Config default_config(const Problem& p, const DeviceLimits& limits) const override {
    Config c = default_tile(p);
    // Few tiles and a long k (24 x 26 x 63819 ran 160 times slower than cuBLAS unsplit): the
    // largest valid split that keeps the splits within two waves of the GPU.
    const std::int64_t tiles = ((p.size("m") + 63) / 64) * ((p.size("n") + 63) / 64);
    Config best = c;
    const auto splits = std::find_if(params().begin(), params().end(),
                                     [](const Param& q) { return q.name == "SPLITK"; });
    for (const std::int64_t split : splits->values) {
      if (split <= 1) continue;
      if (tiles * split > 2 * limits.sm_count) break;
      Config v = c;
      v["SPLITK"] = split;
      if (reject(v, p, limits).empty()) best = std::move(v);
    }
    return best;
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override;

 private:
  // 64 x 64 tiles of 128 threads, scalar loads, k not split: valid for every size and alignment.
  static Config default_tile(const Problem& p) {
    bool ta, tb;
    parse_op(p.attr("op"), ta, tb);
    return {{"BM", 64},
            {"BN", 64},
            {"BK", 8},
            {"WM", 32},
            {"WN", 32},
            {"TM", 4},
            {"TN", 4},
            {"WNITER", 1},
            {"STAGES", 2},
            {"PREFETCH", 1},
            {"UNROLL", 0},
            {"VEC", 1},
            {"PAD", (ta || !tb) ? 4 : 0},
            {"SWIZZLE", 1},
            {"SPLITK", 1},
            {"MMA", 0},
            {"MINB", 1},
            {"KCONTIG", 0}};
  }
};

template <typename T>
GemmArgs<T> make_args(const GemmCall& call, void* workspace, std::int64_t k_per_split,
                      int swizzle = 1) {
  return GemmArgs<T>{call.a, call.b, call.c, workspace, static_cast<long long>(call.lda),
                     static_cast<long long>(call.ldb), static_cast<long long>(call.ldc),
                     static_cast<int>(call.m), static_cast<int>(call.n), static_cast<int>(call.k),
                     static_cast<int>(k_per_split), swizzle,
                     // 16-byte accesses down a column of C: pointer and ldc aligned to 16 bytes.
                     reinterpret_cast<std::uintptr_t>(call.c) % 16 == 0 &&
                         (call.ldc * call.element_bytes) % 16 == 0,
                     static_cast<T>(call.alpha), static_cast<T>(call.beta)};
}

// Fresh random A and B, C poisoned with NaN, verified against a double-accumulation reference.
class GemmWorkload final : public Workload {
 public:
  // `p` is a problem of the gemm family or of gemm_skinny (the same axes), checked by the caller;
  // `launch` runs a candidate of that family.
  GemmWorkload(const Problem& p, const Device& device, KernelCache& cache, GemmLauncher launch)
      : device_(device), launch_(launch) {
    const Family& family = gemm_family();
    Problem problem = p;  // the helpers come from the gemm family's source
    problem.family = "gemm";
    const int bytes = dtype_bytes(p.attr("dtype"));
    bool ta, tb;
    parse_op(p.attr("op"), ta, tb);
    const std::int64_t align = p.size("align");
    call_.element_bytes = bytes;
    call_.trans_a = ta;
    call_.trans_b = tb;
    call_.m = p.size("m");
    call_.n = p.size("n");
    call_.k = p.size("k");
    call_.alpha = 1.0;
    call_.beta = 0.0;
    auto round_up = [](std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; };
    const std::int64_t rows_a = ta ? call_.k : call_.m, cols_a = ta ? call_.m : call_.k;
    const std::int64_t rows_b = tb ? call_.n : call_.k, cols_b = tb ? call_.k : call_.n;
    call_.lda = round_up(rows_a, align);
    call_.ldb = round_up(rows_b, align);
    // Guard rows past m in every column (a write there shows in verify()), with ldc kept a
    // multiple of 16 bytes as a caller's usually is, so C is written with vector stores.
    call_.ldc = round_up(call_.m + 1, 16 / bytes);
    // Offsets that make the pointers aligned to exactly `align` elements.
    const std::size_t offset = align == 4 ? 0 : static_cast<std::size_t>(align) * bytes;
    a_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.lda * cols_a) * bytes + 16);
    b_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.ldb * cols_b) * bytes + 16);
    c_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.ldc * call_.n) * bytes);
    ref_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.m * call_.n) * 8);
    absref_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.m * call_.n) * 8);
    result_ = detail::DeviceBuffer(16);
    call_.a = reinterpret_cast<const void*>(a_.get() + offset);
    call_.b = reinterpret_cast<const void*>(b_.get() + offset);
    call_.c = reinterpret_cast<void*>(c_.get());
    CompileRequest r = family.compile_request(family.default_config(problem, device.limits()),
                                              problem, device.limits().arch());
    const std::string type = bytes == 4 ? "float" : "double";
    r.name_expressions = {"ktune::fill_random<" + type + ">", "ktune::gemm_compare<" + type + ">"};
    helpers_ = cache.get(r);
    reference_ = cache.get(gemm_reference_request(type, ta, tb, device.limits().arch()));
    split_ = gemm_reference_split_plan(call_.m, call_.n, call_.k, device.limits().sm_count);
  }

  void prepare(std::uint64_t seed, CUstream stream) override {
    const int bytes = call_.element_bytes;
    std::uint64_t s = seed;
    for (const detail::DeviceBuffer* buf : {&a_, &b_}) {
      CUdeviceptr ptr = buf->get();
      std::uint64_t count = buf->size() / bytes;
      void* args[] = {&ptr, &count, &s};
      helpers_->launch(0, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, args);
      s = s * 6364136223846793005ull + 1442695040888963407ull;
    }
    check(driver().cuMemsetD8Async(c_.get(), 0xFF, c_.size(), stream), "cuMemsetD8Async");
    reference_made_.prepared(seed);
    verifying_run_ = true;
  }

  // The first run after prepare() is the one verify() checks: its split-K scratch is poisoned
  // (GemmCall::poison_scratch), since every candidate of a run has the same inputs; the timed
  // runs after it are not slowed by that.
  void run(const Kernel& kernel, const Config& config, CUstream stream) override {
    GemmCall call = call_;
    call.poison_scratch = verifying_run_;
    verifying_run_ = false;
    launch_(kernel, config, device_.limits(), call, stream);
  }

  std::string verify(CUstream stream) override {
    return reference_made_.verify([&] { make_reference(stream); }, [&] { return compare(stream); });
  }

  double work() const override { return 2.0 * call_.m * call_.n * call_.k; }
  std::size_t bytes() const override {
    return a_.size() + b_.size() + c_.size() + ref_.size() + absref_.size();
  }
  const GemmCall& call() const { return call_; }
  std::size_t references() const { return reference_made_.made(); }

 private:
  // ref and absref: each element of C and the sum of its terms' magnitudes, in double.
  void make_reference(CUstream stream) {
    const unsigned gx = static_cast<unsigned>((call_.m + 63) / 64),
                   gy = static_cast<unsigned>((call_.n + 63) / 64);
    CUdeviceptr null_c0 = 0, ref = ref_.get(), absref = absref_.get();
    // Split, the k ranges add into ref and absref.
    if (split_.splits > 1) {
      check(driver().cuMemsetD8Async(ref, 0, ref_.size(), stream), "cuMemsetD8Async");
      check(driver().cuMemsetD8Async(absref, 0, absref_.size(), stream), "cuMemsetD8Async");
    }
    CUdeviceptr a = reinterpret_cast<CUdeviceptr>(call_.a),
                b = reinterpret_cast<CUdeviceptr>(call_.b);
    long long lda = call_.lda, ldb = call_.ldb, ldc = call_.ldc;
    int m = static_cast<int>(call_.m), n = static_cast<int>(call_.n), k = static_cast<int>(call_.k),
        k_per_split = split_.k_per_split;
    double alpha = call_.alpha, beta = call_.beta;
    void* params[] = {&a,           &lda,   &b,    &ldb,     &m,   &n,   &k,
                      &k_per_split, &alpha, &beta, &null_c0, &ldc, &ref, &absref};
    reference_->launch(0, gx, gy, static_cast<unsigned>(split_.splits), 256, 1, 1, 0, stream,
                       params);
  }

  // C against the reference: "" or what is wrong.
  std::string compare(CUstream stream) {
    CUdeviceptr ref = ref_.get(), absref = absref_.get(), result = result_.get();
    gemm_clear_verdict(result, stream);
    // Rounding of a length-k sum with random signs grows like sqrt(k); 16 eps sqrt(k) times the
    // sum of magnitudes stays far below one misplaced product (|a||b| ~ 1/4 of it per term).
    const double eps = call_.element_bytes == 4 ? 5.96e-8 : 1.11e-16;
    double tol_scale =
        16 * eps * std::sqrt(static_cast<double>(std::max<std::int64_t>(1, call_.k)));
    double tol_floor = 1e-30;
    CUdeviceptr cptr = c_.get();
    long long ldc = call_.ldc;
    int m = static_cast<int>(call_.m), n = static_cast<int>(call_.n);
    void* params[] = {&cptr, &ldc, &m, &n, &ref, &absref, &tol_scale, &tol_floor, &result};
    helpers_->launch(1, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, params);
    return gemm_read_verdict(result, call_.ldc, call_.m, stream);
  }

  const Device& device_;
  GemmLauncher launch_;
  GemmCall call_;
  detail::DeviceBuffer a_, b_, c_, ref_, absref_, result_;
  std::shared_ptr<const Kernel> helpers_;    // fill_random, gemm_compare (gemm.cuh)
  std::shared_ptr<const Kernel> reference_;  // gemm_reference_split (gemm_reference.cuh)
  GemmReferenceSplit split_;
  KeptReference reference_made_;
  bool verifying_run_ = false;
};

std::unique_ptr<Workload> GemmFamily::make_workload(const Problem& p, const Device& device,
                                                    KernelCache& cache) const {
  validate(p);
  return std::make_unique<GemmWorkload>(p, device, cache, gemm_launch);
}

}  // namespace

std::unique_ptr<Workload> make_gemm_workload(const Problem& p, const Device& device,
                                             KernelCache& cache, GemmLauncher launch) {
  return std::make_unique<GemmWorkload>(p, device, cache, launch);
}

GemmReferenceSplit gemm_reference_split_plan(std::int64_t m, std::int64_t n, std::int64_t k,
                                             int sm_count) {
  auto round_up = [](std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; };
  const std::int64_t depth = std::max<std::int64_t>(1, k);
  const std::int64_t tiles = ((m + 63) / 64) * ((n + 63) / 64),
                     target = 4 * static_cast<std::int64_t>(std::max(1, sm_count));
  std::int64_t splits = 1;
  if (tiles < target)
    splits = std::max<std::int64_t>(1, std::min((target + tiles - 1) / tiles, depth / 256));
  const std::int64_t per = round_up((depth + splits - 1) / splits, 16);
  return {static_cast<int>((depth + per - 1) / per), static_cast<int>(per)};
}

CompileRequest gemm_reference_request(const std::string& type, bool ta, bool tb,
                                      const std::string& arch) {
  CompileRequest r;
  r.source_name = "gemm_reference.cuh";
  r.source = template_source(r.source_name);
  r.name_expressions = {"ktune::gemm_reference_split<" + type + ", " + (ta ? "1" : "0") + ", " +
                        (tb ? "1" : "0") + ">"};
  r.arch = arch;
  return r;
}

const Family& gemm_family() {
  static const GemmFamily instance;
  return instance;
}

void gemm_clear_verdict(CUdeviceptr result, CUstream stream) {
  check(driver().cuMemsetD8Async(result, 0, 8, stream), "cuMemsetD8Async");
  check(driver().cuMemsetD8Async(result + 8, 0xFF, 8, stream), "cuMemsetD8Async");
}

std::string gemm_read_verdict(CUdeviceptr result, std::int64_t ldc, std::int64_t m,
                              CUstream stream) {
  std::uint64_t host[2] = {0, 0};
  check(driver().cuMemcpyDtoHAsync(host, result, sizeof(host), stream), "cuMemcpyDtoHAsync");
  check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (host[0] == 0) return {};
  const std::int64_t row = static_cast<std::int64_t>(host[1] % static_cast<std::uint64_t>(ldc)),
                     col = static_cast<std::int64_t>(host[1] / static_cast<std::uint64_t>(ldc));
  return std::to_string(host[0]) + " element(s) of C wrong, first at (" + std::to_string(row) +
         ", " + std::to_string(col) + ")" + (row >= m ? " outside the matrix (guard row)" : "");
}

GemmCall gemm_workload_call(const Workload& workload) {
  const auto* w = dynamic_cast<const GemmWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, "gemm_workload_call: not a gemm workload");
  return w->call();
}

std::size_t gemm_workload_references(const Workload& workload) {
  const auto* w = dynamic_cast<const GemmWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, "gemm_workload_references: not a gemm workload");
  return w->references();
}

void validate_gemm_args(const char* function, bool row_major, bool trans_a, bool trans_b,
                        std::int64_t m, std::int64_t n, std::int64_t k, bool alpha_zero,
                        const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
                        const void* c, std::int64_t ldc) {
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, std::string(function) + ": " + what);
  };
  if (m < 0) fail("m must be >= 0, got " + std::to_string(m));
  if (n < 0) fail("n must be >= 0, got " + std::to_string(n));
  if (k < 0) fail("k must be >= 0, got " + std::to_string(k));
  if (m > kMaxDim) fail("m must be < 2^31, got " + std::to_string(m));
  if (n > kMaxDim) fail("n must be < 2^31, got " + std::to_string(n));
  if (k > kMaxDim) fail("k must be < 2^31, got " + std::to_string(k));
  // Rows of each matrix as stored (column-major: the leading dimension covers them).
  const std::int64_t a_rows = row_major ? (trans_a ? m : k) : (trans_a ? k : m);
  const std::int64_t b_rows = row_major ? (trans_b ? k : n) : (trans_b ? n : k);
  const std::int64_t c_rows = row_major ? n : m;
  if (lda < std::max<std::int64_t>(1, a_rows))
    fail("lda must be >= max(1, " + std::to_string(a_rows) + "), got " + std::to_string(lda));
  if (ldb < std::max<std::int64_t>(1, b_rows))
    fail("ldb must be >= max(1, " + std::to_string(b_rows) + "), got " + std::to_string(ldb));
  if (ldc < std::max<std::int64_t>(1, c_rows))
    fail("ldc must be >= max(1, " + std::to_string(c_rows) + "), got " + std::to_string(ldc));
  if (m == 0 || n == 0) return;
  if (!c) fail("c is null");
  if (k > 0 && !alpha_zero) {
    if (!a) fail("a is null");
    if (!b) fail("b is null");
  }
}

int gemm_alignment(const GemmCall& call) {
  for (int v : {4, 2}) {
    if (v * call.element_bytes > 16) continue;
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(v) * call.element_bytes;
    if (reinterpret_cast<std::uintptr_t>(call.a) % bytes == 0 &&
        reinterpret_cast<std::uintptr_t>(call.b) % bytes == 0 && call.lda % v == 0 &&
        call.ldb % v == 0)
      return v;
  }
  return 1;
}

Problem gemm_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                     std::int64_t n, std::int64_t k, int align) {
  Problem p;
  p.family = "gemm";
  p.attrs = {{"dtype", dtype}, {"op", std::string(trans_a ? "t" : "n") + (trans_b ? "t" : "n")}};
  p.sizes = {{"m", m}, {"n", n}, {"k", k}, {"align", align}};
  return p;
}

void gemm_launch(const Kernel& kernel, const Config& config, const DeviceLimits&,
                 const GemmCall& call, CUstream stream) {
  const int bytes = call.element_bytes;
  const Geometry g = geometry(config, bytes, call.trans_a, call.trans_b);
  const std::int64_t bm = get(config, "BM"), bn = get(config, "BN"), bk = get(config, "BK");
  const std::int64_t tiles = ((call.m + bm - 1) / bm) * ((call.n + bn - 1) / bn);
  const std::int64_t split = get(config, "SPLITK");
  const int swizzle = static_cast<int>(get(config, "SWIZZLE"));
  const KSplit parts = k_split(call.k, split, bk);
  const std::int64_t kps = parts.per_split, splits = parts.splits;
  CUdeviceptr workspace = 0;
  if (split > 1) {
    const auto size = static_cast<std::size_t>(splits * tiles * bm * bn) * bytes;
    workspace = detail::scratch_alloc(size, stream);
    if (call.poison_scratch)
      check(driver().cuMemsetD8Async(workspace, 0xFF, size, stream), "cuMemsetD8Async (scratch)");
  }
  void* ws = reinterpret_cast<void*>(workspace);
  auto go = [&](auto args) {
    void* params[] = {&args};
    kernel.launch(0, static_cast<unsigned>(tiles), 1, static_cast<unsigned>(splits), g.threads, 1,
                  1, g.smem, stream, params);
    if (split > 1) {
      // 256 threads: groups of splits (y) times runs of accumulators (x): a thread's consecutive
      // rows of C, up to 16 bytes (GemmTile::kRun). Few runs take more groups, up to 32, so that
      // about 2^18 threads share the loads; the groups depend on the problem and configuration
      // only, which keeps the order of the sums, and so the bits, fixed.
      int s = static_cast<int>(splits);
      const bool a_k_contiguous = get(config, "KCONTIG") > 0 && call.trans_a;
      const std::int64_t run = get(config, "MMA") || a_k_contiguous
                                   ? 1
                                   : std::min<std::int64_t>(get(config, "TM"), 16 / bytes);
      const std::int64_t runs = tiles * bm * bn / run;
      int groups = 1;
      while (groups < 32 && groups * 2 <= s && runs * groups < (std::int64_t(1) << 18)) groups *= 2;
      const int per_block = 256 / groups;
      void* reduce[] = {&args, &s};
      const std::int64_t blocks = (runs + per_block - 1) / per_block;
      kernel.launch_dependent(1, static_cast<unsigned>(blocks), 1, 1, per_block, groups, 1, 0,
                              stream, reduce);
    }
  };
  if (bytes == 4)
    go(make_args<float>(call, ws, kps, swizzle));
  else
    go(make_args<double>(call, ws, kps, swizzle));
  if (workspace) check(detail::scratch_free(workspace, stream), "scratch_free");
}

std::vector<GemmShape> gemm_suite() {
  return {{1024, 1024, 1024, false, false}, {2048, 2048, 2048, false, false},
          {4096, 4096, 4096, false, false}, {8192, 8192, 8192, false, false},
          {1000, 1000, 1000, false, false}, {4095, 4095, 4095, false, false},
          {4096, 4096, 256, false, false},  {8192, 128, 8192, false, false},
          {16384, 16384, 64, false, false}, {6000, 32, 6000, false, false},
          {64, 64, 262144, false, false},   {4096, 4096, 4096, false, true},
          {4096, 4096, 4096, true, false},  {4096, 4096, 4096, true, true}};
}

bool gemm_grid_class_takes(std::string_view grid_class, std::string_view kind) {
  if (grid_class == "all") return true;
  if (grid_class == "tiled" || grid_class == "small") return kind != "skinny";
  return grid_class == kind;
}

bool gemm_smallest_tiles_apply(std::int64_t m, std::int64_t n, int sm_count) {
  return ((m + 63) / 64) * ((n + 63) / 64) < 4 * std::int64_t(sm_count);
}

std::vector<GemmGridShape> gemm_grid() {
  constexpr bool N = false, T = true;
  std::vector<GemmGridShape> grid = {
      // Squares the suite lacks (it has 1000, 1024, 2048, 4095, 4096 and 8192).
      {{256, 256, 256, N, N}, "square"},
      {{2500, 2500, 2500, T, T}, "square"},
      {{16384, 16384, 16384, N, T}, "square"},
      // General: odd sizes between 128 and 12000, each op.
      {{300, 600, 1100, N, N}, "general"},
      {{128, 1024, 4096, N, T}, "general"},
      {{1024, 128, 512, T, N}, "general"},
      {{512, 512, 16384, T, T}, "general"},
      {{2000, 200, 600, N, T}, "general"},
      {{1024, 4096, 1024, T, N}, "general"},
      {{3000, 700, 5000, T, T}, "general"},
      {{6000, 1500, 6000, N, T}, "general"},
      {{10000, 10000, 2000, N, N}, "general"},
      // More of them where the model did worst on f32 at 0f3c2e0 (general tn 0.75, tt 0.80 x
      // cuBLAS over seeds 20261126 to 28): both operands or A stored k-contiguous.
      {{700, 700, 700, T, N}, "general"},
      {{1500, 3000, 800, T, N}, "general"},
      {{4000, 1000, 2000, T, N}, "general"},
      {{200, 5000, 3000, T, N}, "general"},
      {{6000, 6000, 1200, T, N}, "general"},
      {{500, 1200, 9000, T, T}, "general"},
      {{2000, 2000, 300, T, T}, "general"},
      {{8000, 400, 700, T, T}, "general"},
      {{9000, 3000, 9000, T, T}, "general"},
      {{150, 300, 2000, N, N}, "general"},
      {{3500, 3500, 8000, N, N}, "general"},
      {{900, 12000, 500, N, T}, "general"},
      // Small ones, fewer than four waves of 64 x 64 tiles on an H200, where the smallest tiles
      // (32 x 32 to 64 x 32, two warps) are in the space; added with them, where the presets
      // stage's lowest shapes were (seeds 20261171 to 20261501: one side of 100 to 400).
      {{384, 200, 320, T, N}, "general"},
      {{160, 1500, 320, N, T}, "general"},
      {{2400, 96, 500, N, T}, "general"},
      {{120, 4000, 1500, N, N}, "general"},
      {{700, 900, 2500, T, T}, "general"},
      {{1300, 300, 4000, N, T}, "general"},
      // One side of 150 to 600 against one of 1500 to 16000, k from 400 to 9000, and both of a
      // few hundred with k = 8000 (most of the presets stage's shapes below 0.80 x cuBLAS on
      // seeds 20262923-24, both dtypes), each op. Their f64 presets are shipped
      // (nvidia-h200-gemm-{grid,cross}-tail.json); the f32 ones lowered f32 and are not
      // (docs/GEMM.md, "The presets stage's tails of one side a few hundred").
      {{3000, 200, 6000, N, T}, "general"},
      {{4000, 300, 2500, N, N}, "general"},
      {{600, 400, 8000, N, T}, "general"},
      {{4000, 600, 9000, N, N}, "general"},
      {{1600, 300, 700, N, T}, "general"},
      {{150, 3600, 1200, T, T}, "general"},
      {{300, 10000, 600, T, T}, "general"},
      {{1500, 1500, 3000, N, T}, "general"},
      {{1000, 9000, 9000, T, T}, "general"},
      {{180, 16000, 400, T, N}, "general"},
      // Tall and wide.
      {{16384, 2048, 1024, T, N}, "tall-wide"},
      {{96, 12000, 2000, T, T}, "tall-wide"},
      {{20000, 200, 1000, N, T}, "tall-wide"},
      {{12000, 80, 8000, T, T}, "tall-wide"},
      // Small k: a short main loop, the tile's load and store of C dominate.
      {{8192, 8192, 16, N, N}, "small-k"},
      {{4096, 2048, 32, N, T}, "small-k"},
      {{2048, 2048, 64, T, N}, "small-k"},
      {{1024, 1024, 128, T, T}, "small-k"},
      {{6000, 1500, 24, N, N}, "small-k"},
      {{700, 3000, 200, T, N}, "small-k"},
      {{400, 600, 100, N, T}, "small-k"},
      {{3000, 5000, 48, T, N}, "small-k"},
      {{12000, 900, 120, T, N}, "small-k"},
      {{500, 9000, 20, T, T}, "small-k"},
      {{9000, 9000, 160, T, T}, "small-k"},
      {{2500, 700, 40, N, N}, "small-k"},
      {{640, 1100, 96, T, T}, "small-k"},
      {{3600, 256, 100, N, T}, "small-k"},
      {{300, 2500, 40, T, N}, "small-k"},
      {{350, 5000, 96, N, N}, "small-k"},
      // Huge k: few tiles, k split over the GPU.
      {{32, 32, 65536, N, N}, "huge-k"},
      {{24, 100, 400000, T, T}, "huge-k"},
      {{128, 128, 1048576, N, T}, "huge-k"},
      {{512, 512, 131072, T, N}, "huge-k"},
      {{1000, 300, 200000, N, N}, "huge-k"},
      {{64, 600, 40000, T, T}, "huge-k"},
      {{200, 800, 600000, N, T}, "huge-k"},
      {{800, 800, 300000, N, T}, "huge-k"},
      {{40, 700, 400000, N, N}, "huge-k"},
      {{400, 300, 80000, T, T}, "huge-k"},
      // Outputs of one side 120 to 900 (the presets stage's lowest class on seed 20261911: 0.55 to
      // 0.88 x cuBLAS in f32), each op; tuned on the H200 with the cross measurements of every
      // winner on them (nvidia-h200-gemm-{grid,cross}-hugek.json).
      {{150, 200, 500000, N, N}, "huge-k"},
      {{600, 250, 700000, N, T}, "huge-k"},
      {{120, 300, 100000, N, T}, "huge-k"},
      {{300, 300, 300000, T, N}, "huge-k"},
      {{900, 300, 40000, T, T}, "huge-k"},
      {{250, 500, 150000, T, T}, "huge-k"},
      {{400, 160, 1000000, N, N}, "huge-k"},
      // One side under 100 (the tail shapes' other class on seeds 20262923-24).
      {{80, 400, 500000, T, N}, "huge-k"},
      {{48, 800, 300000, N, T}, "huge-k"},
  };
  // m or n at most 16 (the skinny kernels): matrix-vector, 4, 8, 12 and 16 columns, either side
  // short, every op (4 and 12 added where the nearest of 1 and 8 had answered 3 to 14 columns;
  // 16 where 12's answered 13 to 16 with the FMA kernel after f32's 3xTF32 one came), at a long
  // side and k of 4096; and since 90bd0b1 at three points away from it, where the presets stage's
  // skinny shapes ran lowest (seeds 20262942 and 47 on an H100 at 1fc5486: one column, a long side
  // of 12000 to 16000 and k of 450 to 580 at 0.59 to 0.63 x cuBLAS; others with k under 300, or
  // both near 1500): the nearest of one 4096 x 4096 shape per width was their only answer. Since
  // 2026-12-06 also a long side of 128 with k = 200000: a skinny shape of huge k (27 of the 6400
  // shapes of seeds 20262900-99: a long side of 16 to 923, k of 35000 to 860000) took the 4096 x
  // 4096 winner (on an H100, 18 x 16 x 199709 nt f32 ran 0.42 x cuBLAS). Its f32 winners ship,
  // its f64 ones lowered the shapes they were for (docs/GEMM.md, "A skinny grid point at huge k").
  for (const auto& [length, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096},
                                  {16384, 448},
                                  {4096, 288},
                                  {1536, 1536},
                                  {128, 200000}})
    for (const std::int64_t width : {1, 8, 4, 12, 16})
      for (const bool short_m : {false, true})
        for (bool ta : {N, T})
          for (bool tb : {N, T})
            grid.push_back(
                {{short_m ? width : length, short_m ? length : width, k, ta, tb}, "skinny"});
  return grid;
}

namespace {

// floor(sqrt(v)), digit by digit: integers only, usable in a constant expression.
constexpr std::uint64_t isqrt(std::uint64_t v) {
  std::uint64_t root = 0;
  for (std::uint64_t bit = std::uint64_t(1) << 62; bit; bit >>= 2) {
    if (v >= root + bit) {
      v -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
  }
  return root;
}

// Fraction bits of the exponent of a log-uniform draw: 2^24 steps per octave.
constexpr int kLogFracBits = 24;

// kExp2Q31[b] = 2^(2^(b - 24)) in Q31 fixed point (2^31 is 1.0): the square root of 2, then the
// square root of that, and so on. Computed with integer square roots, not typed in, and not with
// a math library's exp2, whose last bit may differ from one machine to the next.
struct Exp2Table {
  std::uint64_t q31[kLogFracBits];
};
constexpr Exp2Table make_exp2_table() {
  Exp2Table t{};
  std::uint64_t root = isqrt(std::uint64_t(1) << 63);  // sqrt(2) in Q31 = sqrt(2 * 2^62)
  for (int b = kLogFracBits - 1; b >= 0; --b) {
    t.q31[b] = root;
    root = isqrt(root << 31);  // root < 2^32, so root << 31 < 2^63
  }
  return t;
}
constexpr Exp2Table kExp2Q31 = make_exp2_table();
static_assert(kExp2Q31.q31[kLogFracBits - 1] == 3037000499u, "sqrt(2) in Q31");

// A uniform integer in [0, range) from the generator's 64-bit outputs: outputs below 2^64 mod
// range are drawn again, so every value is equally likely. (The standard's distributions are
// implementation-defined: libstdc++ and libc++ turn the same outputs into different numbers.)
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t range) {
  const std::uint64_t reject_below = (std::uint64_t(0) - range) % range;
  std::uint64_t x = rng();
  while (x < reject_below) x = rng();
  return x % range;
}

// floor(2^x), x uniform in [lo_log2, hi_log2] in steps of 2^-24: a log-uniform integer in
// [2^lo_log2, 2^hi_log2], both ends included. 2^frac(x) is the product of kExp2Q31 over the set
// bits of the fraction, in integers: the same shapes on every machine.
std::int64_t log_uniform(std::mt19937_64& rng, int lo_log2, int hi_log2) {
  const std::uint64_t steps = std::uint64_t(hi_log2 - lo_log2) << kLogFracBits;
  const std::uint64_t x = uniform_below(rng, steps + 1);
  const int octave = lo_log2 + static_cast<int>(x >> kLogFracBits);
  std::uint64_t q31 = std::uint64_t(1) << 31;  // stays below 2^32: the product is below 2
  for (int b = 0; b < kLogFracBits; ++b)
    if ((x >> b) & 1) q31 = (q31 * kExp2Q31.q31[b]) >> 31;
  return static_cast<std::int64_t>((q31 << octave) >> 31);  // octave <= 20: below 2^52
}

}  // namespace

std::vector<RandomGemmShape> gemm_random_shapes(std::size_t n, std::uint64_t seed,
                                                int element_bytes) {
  if (element_bytes != 2 && element_bytes != 4 && element_bytes != 8)
    throw Error(ErrorCode::kInvalidArgument,
                "gemm_random_shapes: element_bytes must be 2, 4 or 8, got " +
                    std::to_string(element_bytes));
  // Bounds as powers of two (log2): 1, 16, 64, 256, 1024, 16384, 32768, 1048576.
  std::mt19937_64 rng(seed);
  auto draw = [&rng](int lo_log2, int hi_log2) { return log_uniform(rng, lo_log2, hi_log2); };
  std::vector<RandomGemmShape> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    // The order of the draws is part of the documented distribution: changing it changes every
    // seed's shapes.
    RandomGemmShape r;
    GemmShape& s = r.shape;
    const std::uint64_t op = uniform_below(rng, 4);  // nn, nt, tn, tt
    s.trans_a = op >= 2;
    s.trans_b = op % 2 == 1;
    const std::uint64_t kind = uniform_below(rng, 100);
    if (kind < 50) {
      r.kind = "general";
      s.m = draw(6, 14);
      s.n = draw(6, 14);
      s.k = draw(6, 14);
    } else if (kind < 65) {
      r.kind = "skinny";  // one of m, n in [1, 16]
      const bool small_m = uniform_below(rng, 2) == 0;
      const std::int64_t small = draw(0, 4), other = draw(8, 14);
      s.m = small_m ? small : other;
      s.n = small_m ? other : small;
      s.k = draw(8, 14);
    } else if (kind < 70) {
      r.kind = "matvec";  // n = 1 (A times a vector) or m = 1 (a vector times B)
      const bool vector_n = uniform_below(rng, 2) == 0;
      const std::int64_t other = draw(10, 14);
      s.m = vector_n ? other : 1;
      s.n = vector_n ? 1 : other;
      s.k = draw(10, 14);
    } else if (kind < 85) {
      r.kind = "huge-k";
      s.m = draw(4, 10);
      s.n = draw(4, 10);
      s.k = draw(15, 20);
    } else {
      r.kind = "small-k";
      s.m = draw(8, 14);
      s.n = draw(8, 14);
      s.k = draw(4, 8);
    }
    // The memory cap, in elements: the largest dimension (the first of m, n, k on a tie) d, with
    // the others p and q, takes the largest value with d (p + q) + p q within it. p q is at most
    // 2^28 elements (2 GiB of f64), so d stays positive; with these classes it stays in its
    // class's range too (general >= 4096, huge k >= 196096 for f64).
    const std::int64_t cap = kRandomGemmMaxBytes / element_bytes;
    if (s.m * s.k + s.k * s.n + s.m * s.n > cap) {
      std::int64_t* dims[] = {&s.m, &s.n, &s.k};
      std::int64_t** largest =
          std::max_element(dims, dims + 3, [](auto* a, auto* b) { return *a < *b; });
      std::int64_t product = 1, sum = 0;  // of the other two
      for (std::int64_t* d : dims) {
        if (d == *largest) continue;
        product *= *d;
        sum += *d;
      }
      **largest = (cap - product) / sum;
      r.capped = true;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string gemm_scale_name(int element_bytes) {
  return std::string("ktune::gemm_scale<") + (element_bytes == 4 ? "float" : "double") + ">";
}

void gemm_scale_launch(const Kernel& kernel, const DeviceLimits& limits, const GemmCall& call,
                       CUstream stream) {
  CUdeviceptr c = reinterpret_cast<CUdeviceptr>(call.c);
  long long ldc = call.ldc;
  int m = static_cast<int>(call.m), n = static_cast<int>(call.n);
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::int64_t>((call.m * call.n + 255) / 256, std::int64_t(limits.sm_count) * 8));
  if (call.element_bytes == 4) {
    float beta = static_cast<float>(call.beta);
    void* params[] = {&c, &ldc, &m, &n, &beta};
    kernel.launch(0, blocks, 1, 1, 256, 1, 1, 0, stream, params);
  } else {
    double beta = call.beta;
    void* params[] = {&c, &ldc, &m, &n, &beta};
    kernel.launch(0, blocks, 1, 1, 256, 1, 1, 0, stream, params);
  }
}

}  // namespace ktune
