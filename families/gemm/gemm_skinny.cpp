// The skinny GEMM family (gemm_skinny.cuh): GEMM calls whose n or m is at most 16, matrix-vector
// products included. Its problems are GEMM problems (the same axes and keys); Runtime::gemm sends
// such calls here instead of to the tiled kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/gemm/skinny_rules.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {
constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();
}  // namespace

namespace {

constexpr std::int64_t kMaxSmall = 16;
// How much more a doubling of the short side (m or n, at most 16) moves the nearest step than
// one of the long side or k (nearest_distance).
constexpr double kShortSideWeight = 4.0;

using skinny::Geometry;
using skinny::get;
using skinny::Rules;

// Same layout as ktune::SkinnyParams<T> in gemm_skinny.cuh.
template <typename T>
struct SkinnyArgs {
  const void* x;
  const void* y;
  void* d;
  void* workspace;
  long long xs_m, xs_k, ys_k, ys_n, ds_m, ds_n;
  int m, n, k;
  int k_per_split;
  T alpha, beta;
};

Geometry skinny_of(const Problem& p) {
  const std::string& op = p.attr("op");
  return skinny::geometry_of(op[0] == 't', op[1] == 't', p.size("m"), p.size("n"), p.size("k"));
}

int dtype_bytes(const Problem& p) { return p.attr("dtype") == "f64" ? 8 : 4; }
skinny::Types types_of(int bytes) { return {bytes, bytes, 4}; }

class GemmSkinnyFamily final : public Family {
 public:
  GemmSkinnyFamily()
      : rules_(skinny::params(
            {1, 2, 4}, "elements per load of X (needs aligned pointers and leading dims)",
            "k splits over the grid, their partial sums added in a fixed order by a second "
            "kernel",
            /*extended=*/true)) {}
  std::string name() const override { return "gemm_skinny"; }
  std::string description() const override {
    return "GEMM with n or m <= 16 (matrix-vector included): X read once, f32/f64";
  }
  std::string source_file() const override { return "gemm_skinny.cuh"; }
  const std::vector<Param>& params() const override { return rules_.params(); }
  std::string metric_unit() const override { return "TFLOPS"; }
  std::optional<double> work_of(const Problem& p, const DeviceLimits&) const override {
    validate(p);
    return 2.0 * static_cast<double>(p.size("m")) * static_cast<double>(p.size("n")) *
           static_cast<double>(p.size("k"));
  }

  std::vector<Problem> check_problems() const override {
    // Both kernels (nn with n small: X m-contiguous; tn: k-contiguous), both dtypes, a split.
    return {gemm_skinny_problem("f32", false, false, 8192, 1, 8192, 4),
            gemm_skinny_problem("f32", true, false, 8192, 16, 8192, 4),
            gemm_skinny_problem("f64", false, true, 1, 8192, 8192, 2),
            gemm_skinny_problem("f64", true, true, 4, 8192, 8192, 2),
            gemm_skinny_problem("f32", false, false, 64, 8, 262144, 4)};
  }
  std::vector<Problem> default_problems() const override {
    return {gemm_skinny_problem("f32", false, false, 8192, 1, 8192, 4)};
  }

  // Every configuration of THREADS x ROWS x VEC at one unroll (Y through L1, staged for 2 and 4
  // row groups, and for f64 the tensor cores), and each unroll, KWARPS, split and GROUPS on one
  // shape: every code path without the whole product.
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool usual = c.at("UNROLL") == 2 && c.at("KWARPS") <= 2 && c.at("SPLITK") == 1 &&
                         c.at("GROUPS") % 2 == 0;
      const bool paths = c.at("THREADS") == 128 && c.at("ROWS") == 1;
      if (usual || paths) out.push_back(c);
    }
    return out;
  }

  void validate(const Problem& p) const override {
    Problem as_gemm = p;  // the gemm family's checks of the axes, then the short side
    as_gemm.family = "gemm";
    gemm_family().validate(as_gemm);
    if (!gemm_is_skinny(p.size("m"), p.size("n")))
      throw Error(ErrorCode::kInvalidArgument,
                  "gemm_skinny: m or n must be at most 16, got m = " + std::to_string(p.size("m")) +
                      ", n = " + std::to_string(p.size("n")) + " (the gemm family takes these)");
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    return rules_.reject(c, skinny_of(p), p.size("align"), types_of(dtype_bytes(p)), limits);
  }

  std::string reject_compiled(const Config&, const Problem&, const DeviceLimits&,
                              const FunctionResources& res) const override {
    return local_memory_reason(res);
  }

  Config adapt(const Config& config, const Problem& p, const DeviceLimits& limits) const override {
    return rules_.adapt(config, skinny_of(p), p.size("align"), types_of(dtype_bytes(p)), limits);
  }

  // The tuned problem that answers one nobody tuned (the nearest step): the same attributes, then
  // near in sizes (log scale), the short side counting kShortSideWeight times. A winner's ROWS,
  // THREADS and split are fitted to the columns it was tuned for: with the short side counted
  // once, an f64 m = 1 winner of 1 x 4218 x 293 tn was nearer to 9 x 6910 x 262 tn than the
  // m = 8 winner of 8 x 4096 x 4096 tn, and ran there at 0.41 x cuBLAS where that one runs at
  // 0.72 (docs/GEMM.md, "The skinny short side").
  double nearest_distance(const Problem& target, const Problem& tuned) const override {
    const double d = problem_distance(target, tuned);
    if (!std::isfinite(d)) return d;
    const auto short_side = [](const Problem& p) {
      return std::log2(1.0 + static_cast<double>(std::min(p.size("m"), p.size("n"))));
    };
    return d + (kShortSideWeight - 1.0) * std::fabs(short_side(target) - short_side(tuned));
  }

  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(get(c, "THREADS"));
  }

  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    const Geometry s = skinny_of(p);
    const std::string type = dtype_bytes(p) == 4 ? "float" : "double";
    const bool split = get(c, "SPLITK") > 1;
    auto arg = [&](const char* name) { return ", " + std::to_string(get(c, name)); };
    std::string head = type + ", " + std::to_string(s.n) + ", " + (s.y_kcontig ? "1" : "0") +
                       arg("THREADS") + arg("ROWS") + arg("VEC");
    std::vector<std::string> names;
    if (skinny::mma_of(c))
      names.push_back("ktune::skinny_dot_mma<" + type + ", " + std::to_string(s.n) +
                      (s.x_kcontig ? ", 1, " : ", 0, ") + (s.y_kcontig ? "1" : "0") +
                      arg("THREADS") + arg("ROWS") + arg("VEC") + arg("UNROLL") +
                      (split ? ", 1>" : ", 0>"));
    else if (s.x_kcontig && skinny::groups_of(c) > 0)
      names.push_back("ktune::skinny_dot_staged<" + head + arg("GROUPS") + arg("UNROLL") +
                      (split ? ", 1>" : ", 0>"));
    else if (s.x_kcontig)
      names.push_back("ktune::skinny_dot<" + head + arg("UNROLL") + (split ? ", 1>" : ", 0>"));
    else
      names.push_back("ktune::skinny_axpy<" + head + arg("KWARPS") + arg("UNROLL") +
                      (split ? ", 1>" : ", 0>"));
    if (split) names.push_back("ktune::skinny_reduce<" + type + ">");
    return names;
  }

  Config default_config(const Problem& p, const DeviceLimits& limits) const override {
    return rules_.default_config(skinny_of(p), p.size("align"), types_of(dtype_bytes(p)), limits);
  }

  // Held off the tensor cores (MMA 0 only), the FMA kernel the default takes without them.
  Config default_config_within(const Problem& p, const DeviceLimits& limits,
                               const ParamValues& only) const override {
    if (only.count("MMA") && !within({{"MMA", 1}}, only)) {
      Config c = rules_.default_config(skinny_of(p), p.size("align"), types_of(dtype_bytes(p)),
                                       limits, /*tensor_cores=*/false);
      if (within(c, only)) return c;
    }
    return Family::default_config_within(p, limits, only);
  }

  // f32 on the tensor cores is 3xTF32: each product's error is about 2^-21 of |a b|, not FP32's
  // 2^-24 (docs/GEMM.md, "f32 skinny shapes on the tensor cores: 3xTF32").
  ParamValues strict_precision(const Problem& p) const override {
    if (dtype_bytes(p) == 4) return {{"MMA", {0}}};
    return {};
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override {
    validate(p);
    return make_gemm_workload(p, device, cache, gemm_skinny_launch);
  }

 private:
  Rules rules_;
};

}  // namespace

const Family& gemm_skinny_family() {
  static const GemmSkinnyFamily instance;
  return instance;
}

bool gemm_is_skinny(std::int64_t m, std::int64_t n) { return std::min(m, n) <= kMaxSmall; }

Problem gemm_skinny_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                            std::int64_t n, std::int64_t k, int align) {
  Problem p = gemm_problem(dtype, trans_a, trans_b, m, n, k, align);
  p.family = "gemm_skinny";
  return p;
}

Problem gemm_call_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                          std::int64_t n, std::int64_t k, int align) {
  return (gemm_is_skinny(m, n) ? gemm_skinny_problem : gemm_problem)(dtype, trans_a, trans_b, m, n,
                                                                     k, align);
}

void gemm_skinny_launch(const Kernel& kernel, const Config& config, const DeviceLimits&,
                        const GemmCall& call, CUstream stream) {
  const Geometry s = skinny::geometry_of(call.trans_a, call.trans_b, call.m, call.n, call.k,
                                         call.lda, call.ldb, call.ldc);
  const skinny::KParts parts = skinny::k_parts(s.k, get(config, "SPLITK"), 4);
  CUdeviceptr workspace = 0;
  if (parts.splits > 1) {
    const auto size = static_cast<std::size_t>(parts.splits * s.m * s.n) * call.element_bytes;
    workspace = detail::scratch_alloc(size, stream);
    if (call.poison_scratch)
      check(driver().cuMemsetD8Async(workspace, 0xFF, size, stream), "cuMemsetD8Async (scratch)");
  }
  auto go = [&](auto args) { skinny::launch(kernel, config, s, parts, &args, stream); };
  const void* x = s.swapped ? call.b : call.a;
  const void* y = s.swapped ? call.a : call.b;
  auto make = [&](auto alpha, auto beta) {
    using T = decltype(alpha);
    return SkinnyArgs<T>{x,
                         y,
                         call.c,
                         reinterpret_cast<void*>(workspace),
                         s.xs_m,
                         s.xs_k,
                         s.ys_k,
                         s.ys_n,
                         s.ds_m,
                         s.ds_n,
                         static_cast<int>(s.m),
                         static_cast<int>(s.n),
                         static_cast<int>(s.k),
                         static_cast<int>(parts.per_split),
                         alpha,
                         beta};
  };
  if (call.element_bytes == 4)
    go(make(static_cast<float>(call.alpha), static_cast<float>(call.beta)));
  else
    go(make(call.alpha, call.beta));
  if (workspace) check(detail::scratch_free(workspace, stream), "scratch_free");
}

namespace skinny {

Geometry geometry_of(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  Geometry s;
  s.swapped = m < n;
  s.k = k;
  if (!s.swapped) {
    // X = op(A): A(i, p) = a[i + p lda], or a[p + i lda] transposed. Y = op(B) likewise.
    s.m = m, s.n = n;
    s.x_kcontig = ta;
    s.xs_m = ta ? lda : 1, s.xs_k = ta ? 1 : lda;
    s.y_kcontig = !tb;
    s.ys_k = tb ? ldb : 1, s.ys_n = tb ? 1 : ldb;
    s.ds_m = 1, s.ds_n = ldc;
  } else {
    // X = op(B)^T: X(j, p) = op(B)(p, j). Y = op(A)^T: Y(p, i) = op(A)(i, p). D(j, i) = C(i, j).
    s.m = n, s.n = m;
    s.x_kcontig = !tb;
    s.xs_m = tb ? 1 : ldb, s.xs_k = tb ? ldb : 1;
    s.y_kcontig = ta;
    s.ys_k = ta ? 1 : lda, s.ys_n = ta ? lda : 1;
    s.ds_m = ldc, s.ds_n = 1;
  }
  return s;
}

KParts k_parts(std::int64_t k, std::int64_t split, std::int64_t quantum) {
  if (split <= 1) return {k, 1};
  const std::int64_t per = ((k + split - 1) / split + quantum - 1) / quantum * quantum;
  return {per, (k + per - 1) / per};
}

std::int64_t get(const Config& c, const char* name) { return config_value(c, name, "skinny GEMM"); }

std::int64_t groups_of(const Config& c) {
  auto it = c.find("GROUPS");
  return it == c.end() ? 0 : it->second;
}

bool mma_of(const Config& c) {
  auto it = c.find("MMA");
  return it != c.end() && it->second != 0;
}

namespace {
// Groups of 8 rows one tensor-core tile takes, the least ROWS of the MMA kernel: f32's m16n8k8 a
// pair, f64's m8n8k4 one.
std::int64_t mma_row_groups(const Types& t) { return t.in_bytes == 4 ? 2 : 1; }
}  // namespace

Rules::Rules(std::vector<Param> params) : params_(std::move(params)) {
  extended_ =
      std::any_of(params_.begin(), params_.end(), [](const Param& q) { return q.name == "MMA"; });
}

std::int64_t Rules::block_rows(const Config& c, bool x_kcontig) {
  if (mma_of(c)) return get(c, "THREADS") / 32 * 8 * get(c, "ROWS");
  if (x_kcontig) return get(c, "ROWS") * std::max<std::int64_t>(1, groups_of(c));
  const std::int64_t warps = get(c, "THREADS") / 32;
  return warps / get(c, "KWARPS") * get(c, "ROWS") * 32 * get(c, "VEC");
}

std::int64_t Rules::blocks(const Config& c, const Geometry& s) {
  const std::int64_t rows = block_rows(c, s.x_kcontig);
  return (s.m + rows - 1) / rows;
}

std::string Rules::reject(const Config& c, const Geometry& s, std::int64_t align, const Types& t,
                          const DeviceLimits& limits) const {
  const std::int64_t threads = get(c, "THREADS"), rows = get(c, "ROWS"), vec = get(c, "VEC"),
                     kwarps = get(c, "KWARPS");
  const std::int64_t in = t.in_bytes, acc = t.acc_bytes;
  if (threads > limits.max_threads_per_block) return "more threads than a block may have";
  if (vec * in > 16) return "VEC * element size exceeds 16 bytes";
  if (vec > align) return "VEC exceeds the alignment class of the problem";
  const std::int64_t max_acc = acc == 4 ? 64 : 32;
  const std::int64_t groups = groups_of(c);
  const bool mma = mma_of(c);
  if (mma) {
    if (in != acc || (in != 8 && in != 4)) return "MMA (the tensor cores) is for f32 and f64";
    if (limits.cc_major < 8) return "MMA needs sm_80 or newer";
    if (rows % mma_row_groups(t)) return "MMA in f32 takes ROWS in pairs (tiles of 16 rows)";
    if (vec > 2) return "MMA loads k in pairs (VEC 1 or 2)";
    if (groups != 0) return "MMA reads Y through L1 (GROUPS 0)";
    if (kwarps != 1) return "MMA: each warp takes its own rows (KWARPS 1)";
    if (!s.x_kcontig && vec != 1) return "MMA reads an m-contiguous X a scalar at a time (VEC 1)";
    // Sums in the mma fragments: 2 a lane per group of 8 rows and tile of 8 columns; the
    // smallest block (two warps of one tile: 8 rows in f64, 16 in f32) covers 16 or 32 rows.
    const std::int64_t block = block_rows(c, true);
    if (block > 2 * 8 * mma_row_groups(t) && block >= 2 * s.m)
      return "more rows per block than the problem has";
  } else if (s.x_kcontig) {
    if (kwarps != 1) return "KWARPS is for X stored m-contiguous";
    if (groups > 0) {
      // The staged kernel holds no Y in registers: twice the sums (a compile that spills is
      // refused after it).
      if (threads / groups < 32) return "fewer than a warp per row group";
      if (rows * s.n > 2 * max_acc) return "more sums per thread than registers hold";
      const std::int64_t chunk = threads / groups * get(c, "UNROLL") + 1;  // packets, padded
      const std::int64_t smem = s.n * chunk * vec * in + threads / 32 * rows * s.n * acc;
      if (smem > limits.smem_per_block)
        return "the staged chunk of Y needs more static shared memory";
    } else if (rows * s.n > max_acc) {
      return "more sums per thread than registers hold";
    }
    const std::int64_t block = block_rows(c, true);
    if (block > 1 && block >= 2 * s.m) return "more rows per block than the problem has";
  } else {
    if (groups != 0) return "GROUPS is for X stored k-contiguous";
    const std::int64_t warps = threads / 32;
    if (warps % kwarps) return "KWARPS does not divide the warps";
    if (rows * vec * s.n > max_acc) return "more sums per thread than registers hold";
    const std::int64_t smem = (kwarps - 1) * (warps / kwarps) * rows * vec * s.n * 32 * acc;
    if (smem > limits.smem_per_block) return "the KWARPS sum needs more static shared memory";
    // The smallest block of this THREADS and KWARPS is enough for a short side.
    if ((rows > 1 || vec > std::min<std::int64_t>(align, 16 / in)) &&
        block_rows(c, false) >= 2 * s.m)
      return "more rows per block than the problem has";
  }
  const std::int64_t split = get(c, "SPLITK");
  if (split > 1) {
    // Split k only where the rows leave the GPU short of warps (32 per SM hide the latency).
    const std::int64_t nblocks = blocks(c, s);
    if (nblocks * (threads / 32) >= 32 * limits.sm_count) return "enough warps without splitting k";
    if (nblocks * split > 32 * limits.sm_count) return "more splits than the GPU can use";
    const KParts parts = k_parts(s.k, split, t.k_quantum);
    // Rounding k per split to whole packets may leave a split or a few empty; half of them
    // empty is the next smaller SPLITK again.
    if (parts.splits * 2 <= split) return "SPLITK leaves half its splits empty";
    const std::int64_t least = mma            ? 8 * get(c, "UNROLL")
                               : !s.x_kcontig ? kwarps * 4
                                              : threads / std::max<std::int64_t>(1, groups) * vec;
    if (parts.per_split < least) return "splits too short for the block";
  }
  if (blocks(c, s) > kMaxDim) return "too many blocks for one launch";
  return {};
}

namespace {
Config with_split(Config c, std::int64_t split) {
  c["SPLITK"] = split;
  return c;
}
}  // namespace

Config Rules::adapt(const Config& config, const Geometry& s, std::int64_t align, const Types& t,
                    const DeviceLimits& limits) const {
  Config c = config;
  for (const auto& param : params_)
    if (!c.count(param.name)) {
      if (param.name != "GROUPS" && param.name != "MMA") return c;
      c[param.name] = 0;  // a configuration from before the staged and tensor-core kernels
    }
  c["VEC"] = std::min<std::int64_t>({c["VEC"], align, 16 / t.in_bytes});
  if (s.x_kcontig) c["KWARPS"] = 1;
  if (!s.x_kcontig && c.count("GROUPS")) c["GROUPS"] = 0;
  // The tensor-core kernel where the target allows it (f32 or f64; scalar loads of an
  // m-contiguous X; f32's rows in pairs), else the FMA one.
  if (mma_of(c)) {
    Config tc = c;
    tc["VEC"] = s.x_kcontig ? std::min<std::int64_t>(tc["VEC"], 2) : 1;
    tc["ROWS"] = std::max(tc["ROWS"], mma_row_groups(t));  // an f64 tile of 8 rows, for f32
    if (reject(with_split(tc, 1), s, align, t, limits).find("MMA") == std::string::npos)
      c = tc;
    else
      c["MMA"] = 0;
  }
  const std::int64_t least_rows = mma_of(c) ? mma_row_groups(t) : 1;
  // Fewer rows per block where the problem has fewer, or where its N sums per row would not fit
  // the registers (a winner of N = 8 with 8 rows for N = 13: 4 rows).
  auto too_many_rows = [&] {
    const std::string why = reject(with_split(c, 1), s, align, t, limits);
    return why.find("rows") != std::string::npos || why.find("sums") != std::string::npos;
  };
  while (c["ROWS"] > least_rows && too_many_rows()) c["ROWS"] /= 2;
  if (groups_of(c) > 0) {
    // Staged Y: fewer row groups where the problem has fewer rows; a chunk of more columns than
    // the tuned problem's, fewer packets per thread, else Y through the L1 cache.
    while (c["GROUPS"] > 1 && too_many_rows()) c["GROUPS"] /= 2;
    auto smem_short = [&] {
      return reject(with_split(c, 1), s, align, t, limits).find("shared") != std::string::npos;
    };
    while (c["UNROLL"] > 1 && smem_short()) c["UNROLL"] /= 2;
    if (smem_short()) c["GROUPS"] = 0;
    while (c["ROWS"] > 1 && too_many_rows()) c["ROWS"] /= 2;
  }
  // Then narrower packets, where one row's VEC x N sums still do not fit (a dot kernel's winner
  // of 8-element packets for an m-contiguous X and N = 16; f32 and f64 never get here).
  while (c["VEC"] > 1 && too_many_rows()) c["VEC"] /= 2;
  if (!s.x_kcontig)
    while (c["KWARPS"] > 1 && !reject(with_split(c, 1), s, align, t, limits).empty())
      c["KWARPS"] /= 2;
  return fill_split(c, s, align, t, limits);
}

Config Rules::default_config(const Geometry& s, std::int64_t align, const Types& t,
                             const DeviceLimits& limits, bool tensor_cores) const {
  std::int64_t rows = 1;
  if (s.x_kcontig)
    while (rows < 8 && rows * 2 * s.n <= (t.acc_bytes == 4 ? 32 : 16) && rows * 2 < 2 * s.m)
      rows *= 2;
  // X m-contiguous: loads of axpy_load_bytes (f32 and f64: one element) and four warps on each
  // row group, as the H100's f32 winners of 4096 x 1 x 4096 (more blocks of fewer rows, and more
  // loads in flight per block).
  const std::int64_t x_vec =
      s.x_kcontig ? 16 / t.in_bytes : std::max(1, t.axpy_load_bytes / t.in_bytes);
  std::int64_t threads = s.x_kcontig ? 128 : 512;
  if (s.x_kcontig && t.threads_fit_k)
    while (threads > 64 && threads / 2 * std::min<std::int64_t>(align, x_vec) >= s.k) threads /= 2;
  const bool f64 = t.in_bytes == 8 && t.acc_bytes == 8, f32 = t.in_bytes == 4 && t.acc_bytes == 4;
  if (extended_ && tensor_cores && s.x_kcontig && ((f64 && s.n >= 4) || (f32 && s.n >= 9)) &&
      limits.cc_major >= 8) {
    // f64 with 4 to 16 columns: the tensor-core kernel, as its winners on an H200 (0.9 to 1.4 x
    // cuBLAS where the FMA kernels reached 0.5 to 0.8): 8 warps of one tile, 4 slabs in flight.
    // f32 with 9 to 16: the 3xTF32 kernel, as its winners on an H100 (10 to 14 columns: 0.85 to
    // 1.12 x cuBLAS where the FMA kernels reached 0.63 to 0.99), one 16-row tile a warp.
    Config m = {{"THREADS", 256},
                {"ROWS", mma_row_groups(t)},
                {"VEC", std::min<std::int64_t>(align, 2)},
                {"KWARPS", 1},
                {"UNROLL", 4},
                {"SPLITK", 1},
                {"GROUPS", 0},
                {"MMA", 1}};
    while (m["THREADS"] > 64 && !reject(m, s, align, t, limits).empty()) m["THREADS"] /= 2;
    if (reject(m, s, align, t, limits).empty()) return fill_split(m, s, align, t, limits);
  }
  Config c = {{"THREADS", threads},
              {"ROWS", rows},
              {"VEC", std::min<std::int64_t>(align, x_vec)},
              {"KWARPS", s.x_kcontig ? 1 : 4},
              {"UNROLL", s.x_kcontig ? 2 : 4},
              {"SPLITK", 1}};
  if (extended_) c["GROUPS"] = c["MMA"] = 0;
  // Down to what the problem allows (ROWS, VEC and KWARPS of 1 always fit).
  while (c["KWARPS"] > 1 && !reject(c, s, align, t, limits).empty()) c["KWARPS"] /= 2;
  while (c["VEC"] > 1 && !reject(c, s, align, t, limits).empty()) c["VEC"] /= 2;
  while (c["ROWS"] > 1 && !reject(c, s, align, t, limits).empty()) c["ROWS"] /= 2;
  return fill_split(c, s, align, t, limits);
}

// The k split: the fewest splits that give the GPU 32 warps per SM (latency hidden by warps, each
// with its own loads in flight), or the most that are valid. Where those leave the busiest SM more
// than 1.4 x the average of blocks, more splits, the fewest that fill two waves of resident blocks
// (the scheduler then evens the SMs out). On the H200, 17 blocks of rows in 16 splits (3 blocks
// on 8 SMs, 2.06 on average) read 1 x 4251 x 6796 nt (f32) at 2.1 TB/s, 64 splits at 2.6 (0.75 ->
// 0.96 x cuBLAS); splitting further where the busiest SM held 1.24 to 1.3 x the average, into 1.2
// waves, lost 7 to 11% on five shapes (bench/results/2026-11-29_h200_skinny_split_ab_*).
Config Rules::fill_split(Config c, const Geometry& s, std::int64_t align, const Types& t,
                         const DeviceLimits& limits) const {
  const std::int64_t nblocks = blocks(c, s);
  const std::int64_t threads = get(c, "THREADS");
  const std::int64_t warps = nblocks * (threads / 32);
  const auto& splits = std::find_if(params_.begin(), params_.end(), [](const Param& q) {
                         return q.name == "SPLITK";
                       })->values;
  std::int64_t least = 1;
  for (const std::int64_t split : splits) {
    if (split <= 1) continue;
    if (warps * (split / 2) >= 32 * limits.sm_count) break;
    if (reject(with_split(c, split), s, align, t, limits).empty()) least = split;
  }
  const double sms = limits.sm_count;
  const double spread = static_cast<double>(nblocks * k_parts(s.k, least, t.k_quantum).splits);
  if (std::ceil(spread / sms) > 1.4 * spread / sms) {
    const std::int64_t wave =
        limits.sm_count * std::max<std::int64_t>(1, limits.max_threads_per_sm / threads);
    for (const std::int64_t split : splits) {
      if (split <= least || nblocks * k_parts(s.k, split, t.k_quantum).splits < 2 * wave) continue;
      Config v = with_split(c, split);
      if (reject(v, s, align, t, limits).empty()) return v;
    }
  }
  return with_split(c, least);
}

std::vector<Param> params(std::vector<std::int64_t> vec, const char* vec_help,
                          const char* split_help, bool extended) {
  std::vector<Param> out = {
      {"THREADS", {64, 128, 256, 512}, "threads per block"},
      {"ROWS",
       {1, 2, 4, 8},
       "rows of the long side per block (X k-contiguous) or packets of rows per lane (X "
       "m-contiguous)"},
      {"VEC", std::move(vec), vec_help},
      {"KWARPS",
       {1, 2, 4, 8},
       "X m-contiguous: warps of a block that share its rows and interleave k, summed in "
       "shared memory"},
      {"UNROLL", {1, 2, 4}, "k-loop unroll: loads of that many steps in flight per thread"},
      {"SPLITK", {1, 2, 4, 8, 16, 32, 64}, split_help},
  };
  if (!extended) return out;
  // A huge k over a few dozen rows of an m-contiguous X (16 x 33 x 585357: one block of rows)
  // needs hundreds of splits to fill the GPU; 64 left it at 0.03 to 0.08 x cuBLAS.
  for (Param& q : out)
    if (q.name == "SPLITK") q.values.insert(q.values.end(), {128, 256, 512});
  out.push_back({"GROUPS",
                 {0, 1, 2, 4},
                 "X k-contiguous: 0 reads Y through the L1 cache; G > 0 stages each k-chunk of "
                 "Y in shared memory for G row groups of ROWS rows (Y read once per G x ROWS "
                 "rows)"});
  out.push_back({"MMA",
                 {0, 1},
                 "1 computes on the tensor cores, ROWS then counting groups of 8 rows per warp "
                 "(an m-contiguous X with VEC 1): f64 on the FP64 units (mma.sync m8n8k4), f32 "
                 "as 3xTF32 (mma.sync m16n8k8, each operand split into two TF32 parts; ROWS "
                 "even)"});
  return out;
}

void launch(const Kernel& kernel, const Config& c, const Geometry& s, const KParts& parts,
            void* args, CUstream stream) {
  void* params[] = {args};
  kernel.launch(0, static_cast<unsigned>(Rules::blocks(c, s)), 1,
                static_cast<unsigned>(parts.splits), static_cast<unsigned>(get(c, "THREADS")), 1, 1,
                0, stream, params);
  if (parts.splits > 1) {
    int splits = static_cast<int>(parts.splits);
    void* reduce[] = {args, &splits};
    const std::int64_t total = s.m * s.n;
    const std::int64_t threads = parts.splits > 32 ? total * 32 : total;  // see skinny_reduce
    const unsigned grid =
        static_cast<unsigned>(std::min<std::int64_t>((threads + 255) / 256, 4096));
    kernel.launch_dependent(1, grid, 1, 1, 256, 1, 1, 0, stream, reduce);
  }
}

}  // namespace skinny

}  // namespace ktune
