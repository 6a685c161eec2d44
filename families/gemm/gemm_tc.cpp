// The tensor-core GEMM family (gemm_tc.cuh): bf16 / fp16 / tf32 in, fp32 accumulation, on sm_90a.
#include "families/gemm/gemm_tc.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

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

// A split's scratch filled with 0xFF (NaN) for a verifying run (TcCall::poison_scratch); freed
// where that fails.
void poison(CUdeviceptr scratch, std::size_t bytes, CUstream stream) {
  const CUresult r = driver().cuMemsetD8Async(scratch, 0xFF, bytes, stream);
  if (r != CUDA_SUCCESS) detail::scratch_free(scratch, stream);
  check(r, "cuMemsetD8Async (scratch)");
}

constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();
constexpr int kRowBytes = 128;              // bytes of k per stage row: one 128-byte swizzle row
constexpr int kAlignBytes = 16;             // what the TMA needs of operands and leading dimensions
const int kWgmmaN[] = {64, 128, 192, 256};  // the BN values, each a wgmma N

// Same layout as ktune::tc::TcArgs in gemm_tc.cuh.
struct TcArgs {
  void* d;
  long long ldd;
  int m, n, k;
  int tiles_m, tiles_n;
  float alpha, beta;
  long long stride_d;
  int batch;
  int splits, kt_per;
  int tma_d;
};

// CUtensorMap as the kernel takes it (128 bytes, 64-byte aligned).
struct alignas(64) TmaMap {
  unsigned long long opaque[16];
};
static_assert(sizeof(TmaMap) == sizeof(CUtensorMap), "TmaMap mirrors CUtensorMap");

std::int64_t get(const Config& c, const char* name) { return config_value(c, name, "gemm_tc"); }

int out_code(const std::string& out) {  // the kernel's OUT codes
  if (out == "f32") return 0;
  if (out == "bf16") return 1;
  if (out == "f16") return 2;
  throw Error(ErrorCode::kInvalidArgument,
              "gemm_tc: unknown output type '" + out + "' (f32, bf16 or f16)");
}
int in_code(const std::string& dtype) {  // the kernel's IN codes
  if (dtype == "bf16") return 0;
  if (dtype == "f16") return 1;
  if (dtype == "tf32") return 2;
  throw Error(ErrorCode::kInvalidArgument,
              "gemm_tc: unknown input type '" + dtype + "' (bf16, f16 or tf32)");
}
std::int64_t in_bytes(const std::string& dtype) { return dtype == "tf32" ? 4 : 2; }
// Elements of k per stage row, and the operands' alignment in elements.
std::int64_t row_elems(const std::string& dtype) { return kRowBytes / in_bytes(dtype); }
std::int64_t align_elems(const std::string& dtype) { return kAlignBytes / in_bytes(dtype); }

// The kernel's view of a column-major call: D = C^T (M = n rows of ldc), X = op(B)^T (n x k),
// Y = op(A) (m x k); X is MN-major (n-contiguous) when op_b = T, Y when op_a = N.
struct View {
  std::int64_t m, n, k;
};
View view_of(std::int64_t m, std::int64_t n, std::int64_t k) { return {n, m, k}; }
bool mn_x(const std::string& op) { return op[1] == 't'; }
// Problems written before the batch axis have none: one matrix.
std::int64_t batch_of(const Problem& p) {
  const auto it = p.sizes.find("batch");
  return it == p.sizes.end() ? 1 : it->second;
}
bool mn_y(const std::string& op) { return op[0] == 'n'; }

struct Tile {
  std::int64_t bm, bn, stages, consumers, wm, group, cluster, persist, pingpong, split, epi;
  std::int64_t stage_bytes() const { return (bm + bn) * kRowBytes; }
  // EPI: two buffers of WM rows of 128 bytes per consumer warpgroup after the stages.
  std::int64_t epi_bytes() const { return epi ? consumers * 2 * wm * kRowBytes : 0; }
  std::int64_t smem() const { return stages * stage_bytes() + epi_bytes() + 1024; }
  std::int64_t threads() const { return (consumers + 1) * 128; }
};
Tile tile_of(const Config& c) {
  Tile t;
  t.bn = get(c, "BN");
  t.wm = get(c, "WM");
  t.consumers = get(c, "CONSUMERS");
  t.pingpong = get(c, "PINGPONG");
  t.bm = t.pingpong ? t.wm : t.wm * t.consumers;
  t.stages = get(c, "STAGES");
  t.group = get(c, "GROUP");
  t.cluster = get(c, "CLUSTER");
  t.persist = get(c, "PERSIST");
  t.split = get(c, "SPLITK");
  t.epi = get(c, "EPI");
  return t;
}

// How a split of k runs: k-tiles (128 bytes of k) per run, and the runs that are not empty (k
// tiles 1000 in 64 splits of 16: 63 runs, the last of 8 k-tiles).
struct KRuns {
  std::int64_t ktiles, per_run, runs;
};
KRuns k_runs(std::int64_t k, const std::string& dtype, std::int64_t split) {
  const std::int64_t ktiles = (k + row_elems(dtype) - 1) / row_elems(dtype);
  if (split <= 1) return {ktiles, ktiles, 1};
  const std::int64_t per_run = (ktiles + split - 1) / split;
  return {ktiles, per_run, (ktiles + per_run - 1) / per_run};
}

// The wgmma wrappers for every BN and input type: one asm statement per shape, whose N / 2
// accumulators are operands %0 .. %(N/2 - 1), then the two descriptors.
std::string wgmma_header() {
  std::string s =
      "// Generated by gemm_tc.cpp (wgmma_header): wgmma.mma_async m64nNk16 (bf16, f16) and\n"
      "// m64nNk8 (tf32), fp32 accumulators, operands in shared memory (descriptors), D += A * B.\n"
      "// mma<TA, TB>: A, B MN-major (1) or k-major (0); tf32 is k-major only.\n"
      "#pragma once\nnamespace ktune {\nnamespace tc {\n"
      "template <int N, int IN> struct Wgmma;\n";
  for (int in = 0; in < 3; ++in) {
    const bool tf32 = in == 2;
    const std::string type = in == 0 ? "bf16" : in == 1 ? "f16" : "tf32";
    const std::string k = tf32 ? "k8" : "k16";
    for (int n : kWgmmaN) {
      const int regs = n / 2;
      auto op = [](int i) { return "%" + std::to_string(i); };
      // After the accumulators: the two descriptors, the scale-d flag, then for 16-bit types the
      // transpositions as immediates ("n" operands).
      s += "template <> struct Wgmma<" + std::to_string(n) + ", " + std::to_string(in) +
           "> {\n  template <int TA, int TB>\n  __device__ __forceinline__ static void mma(float "
           "(&d)[" +
           std::to_string(regs) + "], unsigned long long a, unsigned long long b) {\n";
      if (tf32) s += "    static_assert(TA == 0 && TB == 0, \"tf32 operands are k-major\");\n";
      s += "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " + op(regs + 2) +
           ", 0;\\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + k + ".f32." + type +
           "." + type + " {";
      for (int r = 0; r < regs; ++r) s += (r ? ", " : "") + op(r);
      s += "}, " + op(regs) + ", " + op(regs + 1) + ", p, 1, 1" +
           (tf32 ? std::string() : ", " + op(regs + 3) + ", " + op(regs + 4)) +
           ";\\n}\\n\"\n      : ";
      for (int r = 0; r < regs; ++r)
        s += (r ? ", \"+f\"(d[" : "\"+f\"(d[") + std::to_string(r) + "])";
      s += "\n      : \"l\"(a), \"l\"(b), \"r\"(1)" +
           std::string(tf32 ? "" : ", \"n\"(TA), \"n\"(TB)") + ");\n  }\n};\n";
    }
  }
  s += "}  // namespace tc\n}  // namespace ktune\n";
  return s;
}

// What gemm_tc (wgmma, sm_90a) and gemm_tc80 (mma.sync, sm_80 on) share: the problem (axes,
// validation), the verified workload and its helpers (gemm_tc.cuh, which gemm_tc80.cuh includes).
class TcFamilyBase : public Family {
 public:
  // Runs the compiled candidate on a call (m, n, k > 0) whose problem the family accepts.
  virtual void launch(const Kernel& kernel, const Config& config, const TcCall& call,
                      CUstream stream) const = 0;
  // The family whose source holds the verified workload's helpers (tc_fill, tc_reference,
  // tc_compare: gemm_tc.cuh), on this GPU.
  virtual const TcFamilyBase& helper_family(const DeviceLimits&) const { return *this; }

  std::string metric_unit() const override { return "TFLOPS"; }
  std::optional<double> work_of(const Problem& p, const DeviceLimits&) const override {
    validate(p);
    return 2.0 * static_cast<double>(p.size("m")) * static_cast<double>(p.size("n")) *
           static_cast<double>(p.size("k")) * static_cast<double>(batch_of(p));
  }

  // The axes as `ktune tune gemm_tc --m 4096 ...` and `ktune params gemm_tc` show them.
  std::vector<std::string> describe_axes() const override {
    return {"m\t1 .. 2^31-1 (default 4096)\trows of C and of op(A)",
            "n\t1 .. 2^31-1 (default 4096)\tcolumns of C and of op(B)",
            "k\t1 .. 2^31-1 (default 4096)\tthe inner dimension",
            "dtype\tbf16, f16, tf32 (default bf16)\telement type of A and B (tf32: float "
            "arrays, multiplied with 10 bits of mantissa)",
            "out\tf32 or dtype (default: dtype; f32 for tf32)\telement type of C (fp32 "
            "accumulation either way)",
            "op\tnn, nt, tn, tt (default tn)\top(A) and op(B), n or t (BLAS, column-major); "
            "tf32 takes tn only",
            "batch\t1 .. 2^31-1 (default 1)\tproducts of a strided batch",
            "align\t16 bytes (default: 8 for 16 bits, 4 for tf32)\telements the operands, "
            "leading dimensions and batch strides are aligned to"};
  }
  // out and align follow dtype unless given.
  void complete_problem(Problem& p, const std::vector<std::string>& given) const override {
    auto has = [&](const char* axis) {
      return std::find(given.begin(), given.end(), axis) != given.end();
    };
    const auto dtype = p.attrs.find("dtype");
    if (dtype == p.attrs.end() ||
        (dtype->second != "bf16" && dtype->second != "f16" && dtype->second != "tf32"))
      return;  // validate() says what is wrong
    if (!has("out")) p.attrs["out"] = dtype->second == "tf32" ? "f32" : dtype->second;
    if (!has("align")) p.sizes["align"] = align_elems(dtype->second);
  }

  std::vector<Problem> check_problems() const override {
    std::vector<Problem> out = {gemm_tc_problem("bf16", "bf16", true, false, 4096, 4096, 4096, 8),
                                gemm_tc_problem("f16", "f32", true, false, 1000, 3000, 520, 8),
                                gemm_tc_problem("tf32", "f32", true, false, 2000, 1000, 300, 4),
                                gemm_tc_problem("bf16", "bf16", false, true, 3000, 1000, 300, 8)};
    for (Problem& p : out) p.family = name();
    return out;
  }
  std::vector<Problem> default_problems() const override { return {check_problems().front()}; }

  void validate(const Problem& p) const override {
    const std::string& dtype = p.attr("dtype");
    if (dtype != "bf16" && dtype != "f16" && dtype != "tf32")
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": dtype must be bf16, f16 or tf32, got '" + dtype + "'");
    const std::string& out = p.attr("out");
    if (dtype == "tf32" && out != "f32")
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": out must be f32 for tf32 inputs, got '" + out + "'");
    if (out != "f32" && out != dtype)
      throw Error(ErrorCode::kInvalidArgument, name() + ": out must be f32 or the input dtype (" +
                                                   dtype + "), got '" + out + "'");
    const std::string& op = p.attr("op");
    if (op != "tn" && op != "nn" && op != "nt" && op != "tt")
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": op must be nn, nt, tn or tt, got '" + op + "'");
    if (dtype == "tf32" && op != "tn")
      throw Error(ErrorCode::kInvalidArgument,
                  name() +
                      ": op must be tn for tf32 (A transposed, B not: the kernels read tf32 "
                      "operands k-contiguous only), got '" +
                      op + "'");
    for (const char* d : {"m", "n", "k"}) {
      const std::int64_t v = p.size(d);
      if (v < 1 || v > kMaxDim)
        throw Error(
            ErrorCode::kInvalidArgument,
            std::string(name() + ": ") + d + " must be in [1, 2^31-1], got " + std::to_string(v));
    }
    if (p.size("align") != align_elems(dtype))
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": align must be " + std::to_string(align_elems(dtype)) +
                      " elements of " + dtype +
                      " (the kernels read 16-byte aligned operands and leading dimensions), got " +
                      std::to_string(p.size("align")));
    const std::int64_t batch = batch_of(p);
    if (batch < 1 || batch > kMaxDim)
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": batch must be in [1, 2^31-1], got " + std::to_string(batch));
    if (p.attrs.size() != 3 || p.sizes.size() != (p.sizes.count("batch") ? 5u : 4u))
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": a problem has exactly dtype, out, op, m, n, k, batch and align");
  }

  std::string reject_compiled(const Config&, const Problem&, const DeviceLimits&,
                              const FunctionResources& res) const override {
    return local_memory_reason(res);
  }

  // The tiles do not depend on the element type much: bf16 and fp16 run the same kernel at the
  // same speed (a quarter of a doubling in one size apart), tf32 the same tile with half the k
  // step (one doubling). Another C type or op costs as much. So a fp16 shape starts from the
  // bf16 winner of that shape before the fp16 winners of other sizes.
  double transfer_distance(const Problem& target, const Problem& tuned) const override {
    double d = problem_distance(target, tuned, 0.0);  // the sizes (align and batch among them)
    if (!std::isfinite(d)) return d;
    const std::string &a = target.attr("dtype"), &b = tuned.attr("dtype");
    if (a != b) d += (a == "tf32") == (b == "tf32") ? 0.25 : 1.0;
    if ((target.attr("out") == "f32") != (tuned.attr("out") == "f32")) d += 1.0;
    if (target.attr("op") != tuned.attr("op")) d += 1.0;
    return d;
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override;

 protected:
  // The name expression of `kernel` (ktune::tc::gemm_tc, ktune::tc80::gemm_tc80): the problem's
  // IN, OUT, MNX, MNY and BATCHED, then the values of `params` in order.
  // split >= 0 (gemm_tc): SPLIT follows BATCHED, and a split k writes f32 partial sums (OUT 0).
  std::string instantiation(const std::string& kernel, const Config& c, const Problem& p,
                            std::initializer_list<const char*> params, int split = -1) const {
    const std::string& op = p.attr("op");
    std::string s = kernel + "<" + std::to_string(in_code(p.attr("dtype"))) + ", " +
                    std::to_string(split > 0 ? 0 : out_code(p.attr("out"))) + ", " +
                    std::to_string(mn_x(op)) + ", " + std::to_string(mn_y(op)) + ", " +
                    std::to_string(batch_of(p) > 1);
    if (split >= 0) s += ", " + std::to_string(split);
    for (const char* name : params) s += ", " + std::to_string(get(c, name));
    return s + ">";
  }
};

void wgmma_launch(const Kernel& kernel, const Config& config, const TcCall& call, CUstream stream);

class GemmTcFamily final : public TcFamilyBase {
 public:
  GemmTcFamily() {
    params_ = {
        {"BN", {64, 128, 192, 256}, "columns of the output tile per block (the wgmma's N)"},
        {"WM", {64, 128}, "rows of the output tile per consumer warpgroup (one or two m64 MMAs)"},
        {"CONSUMERS",
         {1, 2},
         "consumer warpgroups per block (the tile has WM x CONSUMERS rows, or WM each with "
         "PINGPONG)"},
        {"STAGES", {2, 3, 4, 5, 6}, "shared-memory buffers of the TMA -> wgmma pipeline"},
        {"GROUP", {1, 8, 16}, "tile rows per rasterisation group (L2 reuse between blocks)"},
        {"CLUSTER",
         {1, 2},
         "blocks per thread-block cluster: 2 share the Y tile, each loading half for both (TMA "
         "multicast)"},
        {"PINGPONG",
         {0, 1},
         "1: the two consumer warpgroups take turns, each with a tile of WM rows of its own (one "
         "stores while the other multiplies); 0: they share a tile of 2 WM rows"},
        {"PERSIST",
         {0, 1},
         "1: as many blocks as fit on the GPU at once walk the tiles (the next tile's loads "
         "overlap this one's stores); 0: one block per tile"},
        {"SPLITK",
         {1, 2, 4, 8, 16, 32, 64, 128},
         "runs k is split in where the tiles leave the GPU idle (fp32 partial sums in scratch, "
         "added in a fixed order by a second kernel)"},
        {"EPI",
         {0, 1},
         "1: each consumer writes its tile to shared memory 128 bytes of columns at a time and a "
         "TMA store copies it to C while it goes on (where beta = 0 and C's rows start and end "
         "16-byte aligned; else, and 0: stores from the registers)"},
    };
  }
  std::string name() const override { return "gemm_tc"; }
  std::string description() const override {
    return "tensor-core GEMM, bf16/fp16/tf32 in, fp32 accumulation (wgmma + TMA, sm_90)";
  }
  std::string source_file() const override { return "gemm_tc.cuh"; }
  const std::vector<Param>& params() const override { return params_; }
  SourceSet sources() const override {
    SourceSet s;
    s.name = source_file();
    s.text = template_source(s.name);
    s.headers.emplace_back("gemm_tc_wgmma.cuh", wgmma_header());
    return s;
  }
  // wgmma and setmaxnreg exist only in the architecture-specific sm_90a target.
  std::string compile_arch(const std::string& arch) const override {
    return arch == "sm_90" ? "sm_90a" : arch;
  }

  // Every tile shape and schedule at one depth and group without clusters; each depth, group
  // and cluster on one tile; clusters of consumers taking turns on one tile; a split k on one
  // tile, both schedules (PERSIST does not change the kernel, nor the number of splits).
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool usual = c.at("STAGES") == 4 && c.at("GROUP") == 8;
      const bool shapes = usual && c.at("CLUSTER") == 1;
      const bool rest =
          c.at("BN") == 128 && c.at("WM") == 64 && c.at("CONSUMERS") == 2 && c.at("PINGPONG") == 0;
      const bool turns = usual && c.at("BN") == 256 && c.at("PINGPONG") == 1;
      const bool split = c.at("SPLITK") == 4 && c.at("BN") == 128 && c.at("WM") == 64 &&
                         c.at("CONSUMERS") == 2 && c.at("STAGES") == 4 && c.at("GROUP") == 1 &&
                         c.at("CLUSTER") == 1;
      // The epilogue through the TMA (EPI) on the tile shapes and the consumers taking turns.
      const bool epi = c.at("EPI") == 1 ? (shapes || turns) && c.at("SPLITK") == 1 : true;
      if ((((shapes || rest || turns) && c.at("SPLITK") == 1) || split) && c.at("PERSIST") == 0 &&
          epi)
        out.push_back(c);
    }
    return out;
  }

  // Those of gemm_tc80, and one with few tiles and a long k (the split-k kernels).
  std::vector<Problem> check_problems() const override {
    std::vector<Problem> out = TcFamilyBase::check_problems();
    out.push_back(gemm_tc_problem("bf16", "bf16", true, false, 256, 512, 65536, 8));
    out.back().family = name();
    return out;
  }

  std::string unsupported(const DeviceLimits& limits) const override {
    return limits.cc_major == 9
               ? ""
               : "needs sm_90 (wgmma and the TMA; gemm_tc80 serves sm_80 to sm_89)";
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    if (std::string why = unsupported(limits); !why.empty()) return why;
    const Tile t = tile_of(c);
    if (t.pingpong && t.consumers != 2) return "PINGPONG takes two consumer warpgroups";
    if (t.epi && t.split > 1) return "EPI: a split k stores its partial sums directly";
    if (t.wm / 64 * t.bn > 256) return "more accumulators than the registers hold";
    if (t.smem() > limits.smem_per_block_optin) return "more shared memory than a block may have";
    if (t.threads() > limits.max_threads_per_block) return "more threads than a block may have";
    const View v = view_of(p.size("m"), p.size("n"), p.size("k"));
    const std::int64_t tiles_m = (v.m + t.bm - 1) / t.bm, tiles_n = (v.n + t.bn - 1) / t.bn;
    const std::int64_t units_m = (tiles_m + t.cluster - 1) / t.cluster;
    if (t.cluster > 1 && tiles_m < 2) return "a cluster needs two tile rows";
    if (t.cluster > 1 && mn_y(p.attr("op")) && (t.bn / t.cluster) % 64 != 0)
      return "a cluster's part of an MN-major Y tile is not whole 64-column boxes";
    if (t.group > 1 && t.group >= 2 * units_m) return "GROUP taller than the grid";
    const std::int64_t units = units_m * tiles_n * batch_of(p);
    const std::int64_t slots = std::max<std::int64_t>(1, limits.sm_count / t.cluster);
    const KRuns runs = k_runs(v.k, p.attr("dtype"), t.split);
    if (t.split > 1) {
      if (units >= slots) return "enough tiles without splitting k";
      if (runs.per_run < 4) return "runs of k shorter than 4 k-tiles";
      if (units * runs.runs > 4 * slots) return "more runs of k than the GPU can use";
      if (runs.runs * batch_of(p) * v.m * ((v.n + 7) / 8 * 8) * 4 > (std::int64_t(1) << 31))
        return "partial sums of a split k over 2 GiB";
    }
    if (t.persist && units * runs.runs <= slots)
      return "no more tiles than blocks at once: nothing to walk";
    if (units * t.cluster * runs.runs > kMaxDim) return "too many tiles for one launch";
    return {};
  }

  // A configuration tuned for another problem: a tile twice as wide or tall as the problem is
  // narrowed to it (fit_tile); a rasterisation group or a cluster this problem's grid cannot take
  // is dropped; k is split afresh where the configuration's split does not fit
  // the problem, or where it splits nothing and pick_split expects a split to take a third less
  // time at least (1024 x 1024 x 65536 in 32 tiles of 128 x 256 on 132 SMs: 4 runs, 0.28 x);
  // the persistent grid goes where nothing is left to walk.
  Config adapt(const Config& config, const Problem& p, const DeviceLimits& limits) const override {
    Config c = config;
    for (const auto& param : params_)
      if (!c.count(param.name)) return c;
    auto rejected_for = [&](const char* what) {
      return reject(c, p, limits).find(what) != std::string::npos;
    };
    c = fit_tile(c, p);
    if (rejected_for("GROUP")) c["GROUP"] = 1;
    if (rejected_for("cluster")) c["CLUSTER"] = 1;
    Config unsplit = c;
    unsplit["SPLITK"] = 1;
    unsplit["PERSIST"] = 0;
    unsplit["EPI"] = 0;
    double gain = 1;
    const std::int64_t pick = pick_split(unsplit, p, limits, &gain);
    Config with_persist = c;
    with_persist["PERSIST"] = 0;
    if (!reject(with_persist, p, limits).empty() || (c["SPLITK"] == 1 && gain >= 1.5))
      c["SPLITK"] = pick;
    if (c["SPLITK"] > 1) c["EPI"] = 0;  // a split's partial sums are stored directly
    if (rejected_for("nothing to walk")) c["PERSIST"] = 0;
    return c;
  }

  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(tile_of(c).threads());
  }

  // A split k: the kernel writing f32 partial sums, then the sum of the runs (function 1).
  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    const bool split = get(c, "SPLITK") > 1;
    std::vector<std::string> names = {instantiation(
        "ktune::tc::gemm_tc", c, p,
        {"BN", "WM", "CONSUMERS", "STAGES", "GROUP", "CLUSTER", "PINGPONG", "EPI"}, split)};
    if (split)
      names.push_back("ktune::tc::tc_splitk_reduce<" + std::to_string(out_code(p.attr("out"))) +
                      ">");
    return names;
  }

  // The 128 x 256 tile of two consumer warpgroups sharing it, four stages (the fastest at
  // 4096^3 and 8192^3 on the H200 after the persistent grid, which few tiles cannot use); groups
  // of 8 tile rows where the grid has more than 4; k split where the tiles leave the GPU idle
  // (pick_split).
  Config default_config(const Problem& p, const DeviceLimits& limits) const override {
    const std::int64_t tiles_m = (view_of(p.size("m"), p.size("n"), p.size("k")).m + 127) / 128;
    Config c = {{"BN", 256},
                {"WM", 64},
                {"CONSUMERS", 2},
                {"STAGES", 4},
                {"GROUP", tiles_m > 4 ? 8 : 1},
                {"CLUSTER", 1},
                {"PINGPONG", 0},
                {"PERSIST", 0},
                {"SPLITK", 1},
                {"EPI", 0}};
    c = fit_tile(c, p);
    c["SPLITK"] = pick_split(c, p, limits);
    return c;
  }

  void launch(const Kernel& kernel, const Config& config, const TcCall& call,
              CUstream stream) const override {
    wgmma_launch(kernel, config, call, stream);
  }

 private:
  // A tile at least twice as wide (BN) or tall (BM) as the problem, rounded up to 64, computes
  // mostly zeros: the narrowest wgmma N that covers the problem's columns, and for rows 64 x 2
  // (two consumers) or 64 (one) where those cover them (m = 26, n = 574, k = 10^6 in a 128 x 256
  // tile multiplied 8 times what it kept).
  static Config fit_tile(Config c, const Problem& p) {
    const View v = view_of(p.size("m"), p.size("n"), p.size("k"));
    const std::int64_t n64 = (v.n + 63) / 64 * 64, m64 = (v.m + 63) / 64 * 64;
    if (c["BN"] >= 2 * n64)
      for (const int bn : kWgmmaN)
        if (bn >= v.n) {
          c["BN"] = bn;
          break;
        }
    const std::int64_t bm = c["PINGPONG"] ? c["WM"] : c["WM"] * c["CONSUMERS"];
    if (bm >= 2 * m64) {
      c["WM"] = 64;
      c["PINGPONG"] = 0;
      c["CONSUMERS"] = m64 > 64 ? 2 : 1;
    }
    return c;
  }

  // The split of k for a configuration on a problem nobody tuned (its SPLITK ignored): of the
  // valid ones, the fastest by a rough model of one block per SM. A run of one k-tile of a tile
  // takes 2 BM BN 64 flops at a 132nd of 989 TFLOPS (an H100's bf16 peak; tf32 runs half the k
  // per k-tile at half the rate); the time is the waves of (tile, run) units times the k-tiles of
  // a run, plus for a split the second kernel: a launch (4 us) and the partial sums written and
  // read, and C written, at 3 TB/s.
  // *gain: the unsplit time over the chosen one's.
  std::int64_t pick_split(Config c, const Problem& p, const DeviceLimits& limits,
                          double* gain = nullptr) const {
    const Tile t = tile_of(c);
    const View v = view_of(p.size("m"), p.size("n"), p.size("k"));
    const std::int64_t tiles_m = (v.m + t.bm - 1) / t.bm, tiles_n = (v.n + t.bn - 1) / t.bn;
    const std::int64_t units = (tiles_m + t.cluster - 1) / t.cluster * tiles_n * batch_of(p);
    const double slots =
        static_cast<double>(std::max<std::int64_t>(1, limits.sm_count / t.cluster));
    const double step_us = 2.0 * static_cast<double>(t.bm * t.bn) * 64 / (989e6 / 132);
    const double mn = static_cast<double>(v.m * v.n * batch_of(p));
    auto waves = [&](std::int64_t u) { return std::ceil(static_cast<double>(u) / slots); };
    std::int64_t best = 1;
    const double unsplit_us =
        waves(units) * static_cast<double>(k_runs(v.k, p.attr("dtype"), 1).per_run) * step_us;
    double best_us = unsplit_us;
    const auto splits = std::find_if(params_.begin(), params_.end(),
                                     [](const Param& q) { return q.name == "SPLITK"; });
    for (const std::int64_t split : splits->values) {
      if (split <= 1) continue;
      c["SPLITK"] = split;
      if (!reject(c, p, limits).empty()) continue;
      const KRuns runs = k_runs(v.k, p.attr("dtype"), split);
      const double us = waves(units * runs.runs) * static_cast<double>(runs.per_run) * step_us +
                        4.0 + (2.0 * static_cast<double>(runs.runs) + 1) * mn * 4 / 3e6;
      if (us < best_us) best = split, best_us = us;
    }
    if (gain) *gain = unsplit_us / best_us;
    return best;
  }

  std::vector<Param> params_;
};

const GemmTcFamily& tc_family() {
  static const GemmTcFamily instance;
  return instance;
}

// Same layout as ktune::tc80::Tc80Args in gemm_tc80.cuh.
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

struct MmaTile {
  std::int64_t bm, bn, warps_m, warps_n, stages, group;
  std::int64_t threads() const { return warps_m * warps_n * 32; }
  std::int64_t smem() const { return stages * (bm + bn) * kRowBytes; }
  // m16n8 accumulator tiles of a warp, four registers each.
  std::int64_t accumulators() const { return (bm / warps_m / 16) * (bn / warps_n / 8) * 4; }
};
MmaTile mma_tile_of(const Config& c) {
  return {get(c, "BM"),      get(c, "BN"),     get(c, "WARPS_M"),
          get(c, "WARPS_N"), get(c, "STAGES"), get(c, "GROUP")};
}

void mma_launch(const Kernel& kernel, const Config& config, const TcCall& call, CUstream stream);

// The fallback for GPUs without wgmma and the TMA (sm_80, sm_86, sm_89; it runs on sm_90 too):
// warp-level mma.sync, cp.async pipeline (gemm_tc80.cuh). Same problems as gemm_tc.
class GemmTc80Family final : public TcFamilyBase {
 public:
  GemmTc80Family() {
    params_ = {
        {"BM", {64, 128, 256}, "rows of the output tile per block"},
        {"BN", {64, 128, 256}, "columns of the output tile per block"},
        {"WARPS_M", {1, 2, 4}, "warps along the tile's rows (each takes BM / WARPS_M rows)"},
        {"WARPS_N", {1, 2, 4}, "warps along the tile's columns (each takes BN / WARPS_N)"},
        {"STAGES", {2, 3, 4, 5}, "shared-memory buffers of the cp.async -> mma.sync pipeline"},
        {"GROUP", {1, 8}, "tile rows per rasterisation group (L2 reuse between blocks)"},
    };
  }
  std::string name() const override { return "gemm_tc80"; }
  std::string description() const override {
    return "tensor-core GEMM for sm_80 and later without wgmma (A100, L40), bf16/fp16/tf32 in, "
           "fp32 accumulation (mma.sync + cp.async)";
  }
  std::string source_file() const override { return "gemm_tc80.cuh"; }
  const std::vector<Param>& params() const override { return params_; }
  SourceSet sources() const override {
    SourceSet s;
    s.name = source_file();
    s.text = template_source(s.name);
    s.headers.emplace_back("gemm_tc.cuh", template_source("gemm_tc.cuh"));
    s.headers.emplace_back("gemm_tc_wgmma.cuh", wgmma_header());
    return s;
  }

  // Every tile shape with warps of 64 x 64 (or what the tile allows), three stages, groups of 8;
  // every warp layout of the 128 x 128 tile; each depth and GROUP 1 on that tile.
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool usual = c.at("STAGES") == 3 && c.at("GROUP") == 8;
      const bool square = c.at("BM") == 128 && c.at("BN") == 128;
      const bool shapes = usual && c.at("WARPS_M") == std::min<std::int64_t>(4, c.at("BM") / 64) &&
                          c.at("WARPS_N") == std::min<std::int64_t>(4, c.at("BN") / 64);
      const bool layouts = usual && square;
      const bool rest =
          square && c.at("WARPS_M") == 2 && c.at("WARPS_N") == 2 && (c.at("GROUP") == 8) != usual;
      const bool depths = square && c.at("WARPS_M") == 2 && c.at("WARPS_N") == 2 &&
                          c.at("GROUP") == 8 && c.at("STAGES") != 3;
      if (shapes || layouts || rest || depths) out.push_back(c);
    }
    return out;
  }

  std::string unsupported(const DeviceLimits& limits) const override {
    return limits.cc_major >= 8 ? "" : "needs sm_80 or later (mma.sync of bf16 and tf32, cp.async)";
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    if (std::string why = unsupported(limits); !why.empty()) return why;
    const MmaTile t = mma_tile_of(c);
    if (t.bm / t.warps_m < 16 || t.bn / t.warps_n < 16) return "a warp's part under 16 x 16";
    if (t.accumulators() > 128) return "more accumulators than the registers hold";
    // A thread's registers: 255, or fewer where the block's threads share the SM's 64 Ki; the
    // fragments and addresses take about 64 besides the accumulators.
    if (t.accumulators() + 64 > std::min<std::int64_t>(255, 65536 / t.threads()))
      return "more accumulators than the registers of a block this large hold";
    // Each copy's address and predicate take registers while the accumulators are live.
    if ((t.bm + t.bn) * 8 / t.threads() > 24)
      return "more than 24 16-byte copies per thread per stage (registers)";
    if (t.smem() > limits.smem_per_block_optin) return "more shared memory than a block may have";
    if (t.threads() > limits.max_threads_per_block) return "more threads than a block may have";
    const View v = view_of(p.size("m"), p.size("n"), p.size("k"));
    const std::int64_t tiles_m = (v.m + t.bm - 1) / t.bm, tiles_n = (v.n + t.bn - 1) / t.bn;
    if (t.group > 1 && t.group >= 2 * tiles_m) return "GROUP taller than the grid";
    if (tiles_m * tiles_n * batch_of(p) > kMaxDim) return "too many tiles for one launch";
    return {};
  }

  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(mma_tile_of(c).threads());
  }

  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    return {instantiation("ktune::tc80::gemm_tc80", c, p,
                          {"BM", "BN", "WARPS_M", "WARPS_N", "STAGES", "GROUP"})};
  }

  // 128 x 128 tiles of four warps of 64 x 64, three stages (96 KiB: within sm_89's 99); groups
  // of 8 tile rows where the grid has more than 4.
  Config default_config(const Problem& p, const DeviceLimits&) const override {
    const std::int64_t tiles_m = (view_of(p.size("m"), p.size("n"), p.size("k")).m + 127) / 128;
    return {{"BM", 128},    {"BN", 128},   {"WARPS_M", 2},
            {"WARPS_N", 2}, {"STAGES", 3}, {"GROUP", tiles_m > 4 ? 8 : 1}};
  }

  void launch(const Kernel& kernel, const Config& config, const TcCall& call,
              CUstream stream) const override {
    mma_launch(kernel, config, call, stream);
  }

 private:
  std::vector<Param> params_;
};

const GemmTc80Family& tc80_family() {
  static const GemmTc80Family instance;
  return instance;
}

// A tensor map of `batch` matrices `stride_bytes` apart (3-D; 2-D for one matrix), each of `rows`
// rows of `cols` elements of `type` (bf16, f16, else 32-bit), `ld_bytes` apart: boxes of box_cols
// x box_rows in the layout of the 128-byte swizzle, nothing read past the edges (zeros) or
// written there.
TmaMap encode_map(const std::string& type, void* ptr, std::int64_t cols, std::int64_t rows,
                  std::int64_t ld_bytes, std::int64_t batch, std::int64_t stride_bytes,
                  std::int64_t box_cols, std::int64_t box_rows, CUtensorMapL2promotion promotion) {
  TmaMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld_bytes),
                                 static_cast<cuuint64_t>(stride_bytes)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows),
                             1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  check(driver().cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap*>(&map),
                                        type == "bf16"  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                        : type == "f16" ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                        : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                        batch > 1 ? 3 : 2, ptr, dims, strides, box, element_strides,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  return map;
}

// The tensor map of an operand's `batch` matrices, `stride` elements apart, each of `rows` rows
// and `k` columns. K-major (rows of k elements, `ld` apart): boxes of 128 bytes of k by box_rows
// rows. MN-major (columns of `rows` elements, `ld` apart): boxes of 64 row-elements (128 bytes)
// by the 64 k of a stage. tf32 operands are copied as fp32 (the wgmma reads their top 19 bits).
TmaMap tensor_map(const std::string& dtype, const void* ptr, std::int64_t k, std::int64_t rows,
                  std::int64_t ld, std::int64_t box_rows, bool mn, std::int64_t batch,
                  std::int64_t stride) {
  const std::int64_t elem = in_bytes(dtype);
  return encode_map(dtype, const_cast<void*>(ptr), mn ? rows : k, mn ? k : rows, ld * elem, batch,
                    stride * elem, row_elems(dtype), mn ? row_elems(dtype) : box_rows,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

// Whether the TMA can store D of `batch` matrices of rows of `cols` elements of `out`, ld apart
// (matrices stride apart): its address, rows and matrices 16-byte aligned, and its rows a whole
// number of 16 bytes long. On an H200 a box across the end of a row was written up to the next
// 16 bytes (bf16 C of 2500 or 333 columns in rows of ldc 2504 and 344: 3 to 4 elements past the
// row's end), where C's columns must end.
bool tma_storable(const std::string& out, const void* ptr, std::int64_t cols, std::int64_t ld,
                  std::int64_t batch, std::int64_t stride) {
  const std::int64_t elem = out == "f32" ? 4 : 2;
  return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && (ld * elem) % 16 == 0 &&
         (cols * elem) % 16 == 0 && (batch == 1 || (stride * elem) % 16 == 0);
}

// The tensor map of the epilogue's stores (EPI = 1) of such a D (tma_storable), rows x cols:
// boxes of 128 bytes of columns by box_rows rows.
TmaMap store_map(const std::string& out, void* ptr, std::int64_t cols, std::int64_t rows,
                 std::int64_t ld, std::int64_t box_rows, std::int64_t batch, std::int64_t stride) {
  const std::int64_t elem = out == "f32" ? 4 : 2;
  return encode_map(out, ptr, cols, rows, ld * elem, batch, stride * elem, kRowBytes / elem,
                    box_rows, CU_TENSOR_MAP_L2_PROMOTION_NONE);
}

std::int64_t round_up(std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; }

// Units (blocks, or clusters of blocks) of this kernel the GPU runs at once: the persistent
// grid. Asked of the driver once per kernel (cuOccupancyMaxActiveClusters for clusters).
std::int64_t resident_units(const Kernel& kernel, const Tile& t) {
  static std::mutex mutex;
  static std::map<CUfunction, std::int64_t> known;
  const CUfunction f = kernel.function(0);
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(f); it != known.end()) return it->second;
  }
  const int smem = static_cast<int>(t.smem());
  kernel.allow_dynamic_smem(0, smem);
  std::int64_t units = 0;
  if (t.cluster == 1) {
    int sm_count = 0;
    CUdevice dev = 0;
    check(driver().cuCtxGetDevice(&dev), "cuCtxGetDevice");
    check(driver().cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
          "cuDeviceGetAttribute");
    units = static_cast<std::int64_t>(kernel.max_active_blocks(0, static_cast<int>(t.threads()),
                                                               static_cast<std::size_t>(smem))) *
            sm_count;
  } else {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = static_cast<unsigned>(t.cluster);
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(t.cluster);
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = static_cast<unsigned>(t.threads());
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = static_cast<unsigned>(smem);
    config.attrs = &attr;
    config.numAttrs = 1;
    int clusters = 0;
    check(driver().cuOccupancyMaxActiveClusters(&clusters, f, &config),
          "cuOccupancyMaxActiveClusters");
    units = clusters;
  }
  units = std::max<std::int64_t>(units, 1);
  std::lock_guard lock(mutex);
  known[f] = units;
  return units;
}

class TcWorkload final : public Workload {
 public:
  TcWorkload(const TcFamilyBase& family, const Problem& p, const Device& device, KernelCache& cache)
      : family_(family), device_(device) {
    call_.dtype = p.attr("dtype");
    call_.out = p.attr("out");
    call_.trans_a = p.attr("op")[0] == 't';
    call_.trans_b = p.attr("op")[1] == 't';
    call_.m = p.size("m");
    call_.n = p.size("n");
    call_.k = p.size("k");
    call_.batch = batch_of(p);
    // A is k x m (op_a = T) or m x k, B k x n (op_b = N) or n x k, column-major; C has guard rows
    // past m in every column (written there shows in verify()).
    const std::int64_t align = align_elems(call_.dtype), elem = in_bytes(call_.dtype);
    call_.lda = round_up(call_.trans_a ? call_.k : call_.m, align);
    call_.ldb = round_up(call_.trans_b ? call_.n : call_.k, align);
    call_.ldc = round_up(call_.m + 1, 8);
    // A batch is packed: each matrix right after the previous one.
    call_.stride_a = call_.lda * (call_.trans_a ? call_.m : call_.k);
    call_.stride_b = call_.ldb * (call_.trans_b ? call_.k : call_.n);
    call_.stride_c = call_.ldc * call_.n;
    // The reference's grid has one row of blocks per 64 columns of C (at most 65535).
    if ((call_.n + 63) / 64 > 65535)
      throw Error(
          ErrorCode::kInvalidArgument,
          "gemm_tc: the verified workload takes n up to 4194240, got " + std::to_string(call_.n));
    if (call_.n * call_.batch > kMaxDim)
      throw Error(ErrorCode::kInvalidArgument,
                  "gemm_tc: the verified workload takes n * batch up to 2^31-1, got " +
                      std::to_string(call_.n * call_.batch));
    const std::size_t out_bytes = call_.out == "f32" ? 4 : 2;
    const std::int64_t batch = call_.batch;
    a_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.stride_a * batch * elem));
    b_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.stride_b * batch * elem));
    c_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.stride_c * batch) * out_bytes);
    ref_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.m * call_.n * batch) * 8);
    absref_ = detail::DeviceBuffer(static_cast<std::size_t>(call_.m * call_.n * batch) * 8);
    result_ = detail::DeviceBuffer(16);
    call_.a = reinterpret_cast<const void*>(a_.get());
    call_.b = reinterpret_cast<const void*>(b_.get());
    call_.c = reinterpret_cast<void*>(c_.get());
    // The helpers are in gemm_tc.cuh, which gemm_tc's and gemm_tc80's sources hold, compiled
    // through the family of those two that this GPU runs (for gemm_tc_skinny) with its problem.
    const TcFamilyBase& helpers = family.helper_family(device.limits());
    Problem hp = p;
    hp.family = helpers.name();
    hp.sizes["align"] = align_elems(call_.dtype);
    if (call_.dtype == "tf32") hp.attrs["op"] = "tn";
    CompileRequest r = helpers.compile_request(helpers.default_config(hp, device.limits()), hp,
                                               device.limits().arch());
    const std::string in = std::to_string(in_code(call_.dtype));
    const std::string& op = p.attr("op");
    r.name_expressions = {"ktune::tc::tc_fill<" + in + ">",
                          "ktune::tc::tc_reference<" + in + ", " + std::to_string(mn_x(op)) + ", " +
                              std::to_string(mn_y(op)) + ">",
                          "ktune::tc::tc_compare<" + std::to_string(out_code(call_.out)) + ">"};
    helpers_ = cache.get(r);
  }

  void prepare(std::uint64_t seed, CUstream stream) override {
    std::uint64_t s = seed;
    for (const detail::DeviceBuffer* buf : {&a_, &b_}) {
      CUdeviceptr ptr = buf->get();
      unsigned long long count = buf->size() / static_cast<std::size_t>(in_bytes(call_.dtype));
      void* args[] = {&ptr, &count, &s};
      helpers_->launch(0, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, args);
      s = s * 6364136223846793005ull + 1442695040888963407ull;
    }
    check(driver().cuMemsetD8Async(c_.get(), 0xFF, c_.size(), stream), "cuMemsetD8Async");
    reference_made_.prepared(seed);
    verifying_run_ = true;
  }

  // The first run after prepare() is the one verify() checks: its split scratch is poisoned
  // (TcCall::poison_scratch); the timed runs after it are not slowed by that.
  void run(const Kernel& kernel, const Config& config, CUstream stream) override {
    TcCall call = call_;
    call.poison_scratch = verifying_run_;
    verifying_run_ = false;
    family_.launch(kernel, config, call, stream);
  }

  // Against the reference of this prepare()'s seed, made once for it (KeptReference).
  std::string verify(CUstream stream) override {
    return reference_made_.verify([&] { make_reference(stream); }, [&] { return compare(stream); });
  }

  double work() const override { return 2.0 * call_.m * call_.n * call_.k * call_.batch; }
  std::size_t bytes() const override {
    return a_.size() + b_.size() + c_.size() + ref_.size() + absref_.size();
  }
  const TcCall& call() const { return call_; }
  void scale_tolerance(double scale) { tolerance_scale_ = scale; }
  std::size_t references() const { return reference_made_.made(); }

 private:
  // The reference of the prepared inputs: X = op(B)^T from B (ldb), Y = op(A) from A (lda), each
  // k-major or MN-major as the kernel reads them.
  void make_reference(CUstream stream) {
    const View v = view_of(call_.m, call_.n, call_.k);
    CUdeviceptr ref = ref_.get(), absref = absref_.get();
    CUdeviceptr x = b_.get(), y = a_.get();
    long long ldx = call_.ldb, ldy = call_.lda, sx = call_.stride_b, sy = call_.stride_a;
    int m = static_cast<int>(v.m), n = static_cast<int>(v.n), k = static_cast<int>(v.k);
    void* params[] = {&x, &ldx, &sx, &y, &ldy, &sy, &m, &n, &k, &ref, &absref};
    helpers_->launch(1, static_cast<unsigned>((v.n + 63) / 64),
                     static_cast<unsigned>((v.m + 63) / 64), static_cast<unsigned>(call_.batch), 16,
                     16, 1, 0, stream, params);
  }

  // D against the reference: "" or what is wrong.
  std::string compare(CUstream stream) {
    const View v = view_of(call_.m, call_.n, call_.k);
    CUdeviceptr ref = ref_.get(), absref = absref_.get(), result = result_.get();
    gemm_clear_verdict(result, stream);
    // The inputs hold what is multiplied (tc_fill rounds them to tf32): no input term.
    const TcTolerance tol = gemm_tc_tolerance(call_.dtype, call_.out, call_.k);
    double rel = tol.rel * tolerance_scale_, acc = tol.acc * tolerance_scale_;
    CUdeviceptr cptr = c_.get();
    long long ldd = call_.ldc;
    // The batch's matrices of D are packed: one D of batch * M rows, as the references.
    int m = static_cast<int>(v.m * call_.batch), n = static_cast<int>(v.n);
    void* params[] = {&cptr, &ldd, &m, &n, &ref, &absref, &rel, &acc, &result};
    helpers_->launch(2, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, params);
    // Element e of D is C(e % ldc, e / ldc), as for the other GEMM workloads.
    return gemm_read_verdict(result, call_.ldc, call_.m, stream);
  }

  double tolerance_scale_ = 1.0;
  const TcFamilyBase& family_;
  const Device& device_;
  TcCall call_;
  detail::DeviceBuffer a_, b_, c_, ref_, absref_, result_;
  std::shared_ptr<const Kernel> helpers_;
  KeptReference reference_made_;
  bool verifying_run_ = false;
};

std::unique_ptr<Workload> TcFamilyBase::make_workload(const Problem& p, const Device& device,
                                                      KernelCache& cache) const {
  validate(p);
  return std::make_unique<TcWorkload>(*this, p, device, cache);
}

// ---- gemm_tc_skinny: the calls of these types with n or m at most 16 (gemm_tc_skinny.cuh) ----

constexpr std::int64_t kSkinnyMax = 16;
// The runtime's calls with m or n up to this run here. Measured with the any-shape bench (seed
// 20261140; docs/GEMM_TC.md, "Skinny calls"): on an H200 the tf32 matrix-vector and m or n <= 3
// shapes gained 1.02 to 1.33 x over gemm_tc on these kernels' defaults, while m or n of 5 to 14
// ran better on the tensor-core tiles (up to 1.35 x cuBLASLt there, 0.77 here); bf16 and fp16 on
// the defaults lost to gemm_tc on 3 of 5 shapes. With the H100 presets of this family, on an
// H100, bf16 and fp16 calls with m or n <= 4 gain too, and 5 to 14 still lose (0.16 to 0.75 x
// cuBLASLt here against 0.80 to 1.21 on gemm_tc).
constexpr std::int64_t kSkinnyRoute = 4;

// Same layout as ktune::tcs::Params in gemm_tc_skinny.cuh.
struct TcSkinnyArgs {
  const void* x;
  const void* y;
  void* d;
  void* workspace;
  long long xs_m, xs_k, ys_k, ys_n, ds_m, ds_n;
  int m, n, k;
  int k_per_split;
  float alpha, beta;
};

// X and Y as loaded, fp32 sums; k per split in whole packets of 16 bytes.
// By default 16-byte loads in both kernels, and blocks no wider than a short k.
skinny::Types skinny_types(const std::string& dtype) {
  const int in = static_cast<int>(in_bytes(dtype));
  return {in, 4, 16 / in, 16, true};
}

skinny::Geometry skinny_geometry(const Problem& p) {
  const std::string& op = p.attr("op");
  return skinny::geometry_of(op[0] == 't', op[1] == 't', p.size("m"), p.size("n"), p.size("k"));
}

class GemmTcSkinnyFamily final : public TcFamilyBase {
 public:
  GemmTcSkinnyFamily()
      : rules_(skinny::params({1, 2, 4, 8},
                              "elements per load of X, up to 16 bytes (needs aligned pointers "
                              "and leading dims)",
                              "k splits over the grid, their fp32 partial sums added in a fixed "
                              "order by a second kernel")) {}

  std::string name() const override { return "gemm_tc_skinny"; }
  std::string description() const override {
    return "bf16/fp16/tf32 GEMM with n or m <= 16 (matrix-vector included): X read once, fp32 "
           "sums on the FMA units";
  }
  std::string source_file() const override { return "gemm_tc_skinny.cuh"; }
  const std::vector<Param>& params() const override { return rules_.params(); }

  std::vector<std::string> describe_axes() const override {
    return {"m\t1 .. 2^31-1 (default 8192)\trows of C and of op(A); m or n at most 16",
            "n\t1 .. 2^31-1 (default 1)\tcolumns of C and of op(B); m or n at most 16",
            "k\t1 .. 2^31-1 (default 8192)\tthe inner dimension",
            "dtype\tbf16, f16, tf32 (default bf16)\telement type of A and B (tf32: float "
            "arrays, multiplied in fp32 here)",
            "out\tf32 or dtype (default: dtype; f32 for tf32)\telement type of C (fp32 sums "
            "either way)",
            "op\tnn, nt, tn, tt (default nn)\top(A) and op(B), n or t (BLAS, column-major)",
            "batch\t1\tone product (strided batches run on the tensor-core family)",
            "align\t1, 2, 4, 8 (default: 16 bytes)\telements the operands and leading "
            "dimensions are aligned to (at most 16 bytes)"};
  }

  // Both kernels (X m-contiguous: nn with n small, tt with m small; k-contiguous: tn), the three
  // input types and both kinds of C, a split.
  std::vector<Problem> check_problems() const override {
    std::vector<Problem> out = {gemm_tc_problem("bf16", "bf16", false, false, 8192, 1, 8192, 8),
                                gemm_tc_problem("f16", "f32", true, false, 8192, 16, 8192, 8),
                                gemm_tc_problem("bf16", "f32", true, true, 4, 8192, 8192, 8),
                                gemm_tc_problem("tf32", "f32", true, false, 64, 8, 262144, 4)};
    for (Problem& p : out) p.family = name();
    return out;
  }
  std::vector<Problem> default_problems() const override { return {check_problems().front()}; }

  // Every THREADS x ROWS x VEC at one unroll and one block of 256 threads' KWARPS; each unroll
  // and split on blocks of 128 threads and one row: every code path, a few hundred compiles less
  // than the whole space.
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool usual = c.at("UNROLL") == 2 && c.at("KWARPS") <= 2 && c.at("SPLITK") == 1 &&
                         (c.at("THREADS") == 256 || c.at("ROWS") == 1);
      const bool paths = c.at("THREADS") == 128 && c.at("ROWS") == 1 && c.at("VEC") == 2 &&
                         (c.at("SPLITK") == 1 || c.at("SPLITK") == 4);
      if (usual || paths) out.push_back(c);
    }
    return out;
  }

  void validate(const Problem& p) const override {
    // The tensor-core families' checks of the axes, at their alignment (and op, for tf32: these
    // kernels read tf32 operands of any layout); then this family's own.
    const auto dtype = p.attrs.find("dtype");
    Problem as_tc = p;
    if (dtype != p.attrs.end() && p.sizes.count("align")) {
      const std::int64_t align = p.size("align");
      if (align < 1 || align > align_elems(dtype->second) || (align & (align - 1)))
        throw Error(ErrorCode::kInvalidArgument,
                    name() + ": align must be 1, 2, 4" + (dtype->second == "tf32" ? "" : " or 8") +
                        " elements of " + dtype->second + ", got " + std::to_string(align));
      as_tc.sizes["align"] = align_elems(dtype->second);
      const auto op = p.attrs.find("op");
      if (dtype->second == "tf32" && op != p.attrs.end() &&
          (op->second == "nn" || op->second == "nt" || op->second == "tt"))
        as_tc.attrs["op"] = "tn";
    }
    TcFamilyBase::validate(as_tc);
    if (batch_of(p) != 1)
      throw Error(ErrorCode::kInvalidArgument,
                  name() +
                      ": batch must be 1 (strided batches run on the tensor-core family), "
                      "got " +
                      std::to_string(batch_of(p)));
    if (std::min(p.size("m"), p.size("n")) > kSkinnyMax)
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": m or n must be at most 16, got m = " + std::to_string(p.size("m")) +
                      ", n = " + std::to_string(p.size("n")) +
                      " (the tensor-core family takes these)");
  }

  // Problems alike for this family: the same kernel (X k- or m-contiguous, Y k-contiguous or
  // not, the same element types), whichever of m and n is the short side and whichever op spells
  // the layouts; then near in the long side, the short side, k and alignment (log scale). The
  // tuner's seeds may cross between bf16 and fp16 (the same kernel at the same speed), farther to
  // tf32, and to Y's other layout.
  double nearest_distance(const Problem& target, const Problem& tuned) const override {
    return skinny_distance(target, tuned, false);
  }
  double transfer_distance(const Problem& target, const Problem& tuned) const override {
    return skinny_distance(target, tuned, true);
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    return rules_.reject(c, skinny_geometry(p), p.size("align"), skinny_types(p.attr("dtype")),
                         limits);
  }
  Config adapt(const Config& config, const Problem& p, const DeviceLimits& limits) const override {
    return rules_.adapt(config, skinny_geometry(p), p.size("align"), skinny_types(p.attr("dtype")),
                        limits);
  }
  Config default_config(const Problem& p, const DeviceLimits& limits) const override {
    return rules_.default_config(skinny_geometry(p), p.size("align"), skinny_types(p.attr("dtype")),
                                 limits);
  }
  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(get(c, "THREADS"));
  }

  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    const skinny::Geometry s = skinny_geometry(p);
    const bool split = get(c, "SPLITK") > 1;
    const std::string out = std::to_string(out_code(p.attr("out")));
    auto arg = [&](const char* name) { return ", " + std::to_string(get(c, name)); };
    const std::string head = std::to_string(in_code(p.attr("dtype"))) + ", " + out + ", " +
                             std::to_string(s.n) + ", " + (s.y_kcontig ? "1" : "0") +
                             arg("THREADS") + arg("ROWS") + arg("VEC");
    std::vector<std::string> names;
    if (s.x_kcontig)
      names.push_back("ktune::tcs::tcs_dot<" + head + arg("UNROLL") + (split ? ", 1>" : ", 0>"));
    else
      names.push_back("ktune::tcs::tcs_axpy<" + head + arg("KWARPS") + arg("UNROLL") +
                      (split ? ", 1>" : ", 0>"));
    if (split) names.push_back("ktune::tcs::tcs_reduce<" + out + ">");
    return names;
  }

  const TcFamilyBase& helper_family(const DeviceLimits& limits) const override;

  void launch(const Kernel& kernel, const Config& config, const TcCall& call,
              CUstream stream) const override {
    const skinny::Geometry s = skinny::geometry_of(call.trans_a, call.trans_b, call.m, call.n,
                                                   call.k, call.lda, call.ldb, call.ldc);
    const skinny::KParts parts =
        skinny::k_parts(s.k, get(config, "SPLITK"), skinny_types(call.dtype).k_quantum);
    CUdeviceptr workspace = 0;
    if (parts.splits > 1) {
      const auto size = static_cast<std::size_t>(parts.splits * s.m * s.n) * sizeof(float);
      workspace = detail::scratch_alloc(size, stream);
      if (call.poison_scratch) poison(workspace, size, stream);
    }
    TcSkinnyArgs args{s.swapped ? call.b : call.a,
                      s.swapped ? call.a : call.b,
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
                      call.alpha,
                      call.beta};
    try {
      skinny::launch(kernel, config, s, parts, &args, stream);
    } catch (...) {
      if (workspace) detail::scratch_free(workspace, stream);
      throw;
    }
    if (workspace) check(detail::scratch_free(workspace, stream), "scratch_free");
  }

 private:
  static double skinny_distance(const Problem& target, const Problem& tuned, bool cross_types) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    if (target.family != tuned.family) return kInf;
    const skinny::Geometry a = skinny_geometry(target), b = skinny_geometry(tuned);
    // Another kernel: X of the other layout, or Y's (a kernel reads a k-contiguous Y in packets,
    // another one element at a time; a vector of one column has a layout too: m = 1 with op nn
    // reads A's row, strided by its leading dimension). The tuner's seeds may cross Y's layout.
    if (a.x_kcontig != b.x_kcontig) return kInf;
    double d = 0;
    if (a.y_kcontig != b.y_kcontig) {
      if (!cross_types) return kInf;
      d += 1.0;
    }
    const std::string &ta = target.attr("dtype"), &tb = tuned.attr("dtype");
    const bool other_out = (target.attr("out") == "f32") != (tuned.attr("out") == "f32");
    if (!cross_types && (ta != tb || other_out)) return kInf;
    if (ta != tb) d += (ta == "tf32") == (tb == "tf32") ? 0.25 : 1.0;
    if (other_out) d += 1.0;
    auto apart = [](std::int64_t x, std::int64_t y) {
      return std::fabs(std::log2(1.0 + static_cast<double>(x)) -
                       std::log2(1.0 + static_cast<double>(y)));
    };
    return d + apart(a.m, b.m) + apart(a.n, b.n) + apart(a.k, b.k) +
           apart(target.size("align"), tuned.size("align"));
  }

  skinny::Rules rules_;
};

}  // namespace

namespace {
const GemmTcSkinnyFamily& tc_skinny_family() {
  static const GemmTcSkinnyFamily instance;
  return instance;
}
const TcFamilyBase& GemmTcSkinnyFamily::helper_family(const DeviceLimits& limits) const {
  return dynamic_cast<const TcFamilyBase&>(gemm_tc_family_for(limits));
}
}  // namespace

const Family& gemm_tc_skinny_family() { return tc_skinny_family(); }

bool gemm_tc_is_skinny(const std::string& dtype, std::int64_t m, std::int64_t n,
                       std::int64_t batch) {
  (void)dtype;  // every type alike since the family's presets (bf16 and fp16 lost on defaults)
  return batch == 1 && std::min(m, n) <= kSkinnyRoute;
}

const Family& gemm_tc_family() { return tc_family(); }

const Family& gemm_tc80_family() { return tc80_family(); }

const Family& gemm_tc_family_for(const DeviceLimits& limits) {
  if (limits.cc_major == 9) return tc_family();
  if (limits.cc_major < 8)
    throw Error(ErrorCode::kUnsupported,
                "the tensor-core GEMM needs sm_80 or later (mma.sync of bf16 and tf32, cp.async); "
                "this GPU is " +
                    limits.arch());
  return tc80_family();
}

void gemm_tc_launch(const Family& family, const Kernel& kernel, const Config& config,
                    const TcCall& call, CUstream stream) {
  const auto* tc = dynamic_cast<const TcFamilyBase*>(&family);
  if (!tc)
    throw Error(ErrorCode::kInternal,
                "gemm_tc_launch: " + family.name() + " is not a tensor-core GEMM family");
  tc->launch(kernel, config, call, stream);
}

int gemm_tc_kernel_align(const std::string& dtype) { return static_cast<int>(align_elems(dtype)); }

std::string gemm_tc_wgmma_header() { return wgmma_header(); }

TcTolerance gemm_tc_tolerance(const std::string& dtype, const std::string& out, std::int64_t k) {
  TcTolerance t;
  t.input = dtype == "tf32" ? std::ldexp(1.0 + std::ldexp(1.0, -11), -9) : 0.0;
  t.rel = out == "bf16" ? 1.0 / 256 : out == "f16" ? 1.0 / 2048 : 0.0;
  t.acc = (1 + t.rel) * 16 * 5.96e-8 * std::sqrt(static_cast<double>(std::max<std::int64_t>(1, k)));
  return t;
}

Problem gemm_tc_problem(const std::string& dtype, const std::string& out, bool trans_a,
                        bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, int align,
                        std::int64_t batch) {
  Problem p;
  p.family = "gemm_tc";
  p.attrs = {{"dtype", dtype},
             {"out", out},
             {"op", std::string(trans_a ? "t" : "n") + (trans_b ? "t" : "n")}};
  p.sizes = {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}, {"align", align}};
  return p;
}

namespace {
// gemm_tc_tma_store for a configuration's parsed tile (the launch has it at hand).
bool tma_store(const Tile& t, const TcCall& call) {
  return t.epi && t.split == 1 && call.beta == 0.0f &&
         tma_storable(call.out, call.c, view_of(call.m, call.n, call.k).n, call.ldc, call.batch,
                      call.stride_c);
}
}  // namespace

bool gemm_tc_tma_store(const Config& config, const TcCall& call) {
  return tma_store(tile_of(config), call);
}

int gemm_tc_alignment(const TcCall& call) {
  const int elem = static_cast<int>(in_bytes(call.dtype));
  for (int v : {8, 4, 2}) {
    if (v * elem > kAlignBytes) continue;
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(v * elem);
    if (reinterpret_cast<std::uintptr_t>(call.a) % bytes == 0 &&
        reinterpret_cast<std::uintptr_t>(call.b) % bytes == 0 && call.lda % v == 0 &&
        call.ldb % v == 0 &&
        (call.batch == 1 || (call.stride_a % v == 0 && call.stride_b % v == 0)))
      return v;
  }
  return 1;
}

namespace {

void wgmma_launch(const Kernel& kernel, const Config& config, const TcCall& call, CUstream stream) {
  const Tile t = tile_of(config);
  const View v = view_of(call.m, call.n, call.k);
  const TmaMap map_x = tensor_map(call.dtype, call.b, v.k, v.m, call.ldb, t.bm, call.trans_b,
                                  call.batch, call.stride_b);
  const TmaMap map_y = tensor_map(call.dtype, call.a, v.k, v.n, call.lda, t.bn / t.cluster,
                                  !call.trans_a, call.batch, call.stride_a);
  const KRuns runs = k_runs(v.k, call.dtype, t.split);
  TcArgs args{call.c,
              static_cast<long long>(call.ldc),
              static_cast<int>(v.m),
              static_cast<int>(v.n),
              static_cast<int>(v.k),
              static_cast<int>((v.m + t.bm - 1) / t.bm),
              static_cast<int>((v.n + t.bn - 1) / t.bn),
              call.alpha,
              call.beta,
              static_cast<long long>(call.stride_c),
              static_cast<int>(call.batch),
              static_cast<int>(runs.runs),
              static_cast<int>(runs.per_run),
              0};
  // EPI: C through the TMA where beta is 0 and C's rows allow it (else the kernel's stores from
  // the registers; a split k has no EPI).
  TmaMap map_d{};
  if (tma_store(t, call)) {
    map_d = store_map(call.out, call.c, v.n, v.m, call.ldc, t.wm, call.batch, call.stride_c);
    args.tma_d = 1;
  }
  // A split k (the kernel compiled with SPLIT: SPLITK > 1): the runs' partial sums go to scratch
  // as f32 matrices of rows of ldw (a multiple of 8: the 16-byte stores), then the sum into C.
  CUdeviceptr partial = 0;
  const long long ldw = (v.n + 7) / 8 * 8, sw = v.m * ldw;
  if (t.split > 1) {
    const auto size = static_cast<std::size_t>(sw * runs.runs * call.batch) * sizeof(float);
    partial = detail::scratch_alloc(size, stream);
    if (call.poison_scratch) poison(partial, size, stream);
    args.d = reinterpret_cast<void*>(partial);
    args.ldd = ldw;
    args.stride_d = sw;
    args.alpha = 1.0f;
    args.beta = 0.0f;
  }
  void* params[] = {const_cast<TmaMap*>(&map_x), const_cast<TmaMap*>(&map_y), &args, &map_d};
  const std::int64_t units = static_cast<std::int64_t>((args.tiles_m + t.cluster - 1) / t.cluster) *
                             args.tiles_n * call.batch * runs.runs;
  // Consumers taking turns need two units per block at least.
  std::int64_t grid_units = t.pingpong ? (units + 1) / 2 : units;
  if (t.persist) grid_units = std::min(grid_units, resident_units(kernel, t));
  const unsigned grid = static_cast<unsigned>(grid_units * t.cluster);
  const unsigned threads = static_cast<unsigned>(t.threads()),
                 smem = static_cast<unsigned>(t.smem());
  try {
    if (t.cluster > 1)
      kernel.launch_cluster(0, grid, threads, static_cast<unsigned>(t.cluster), smem, stream,
                            params);
    else
      kernel.launch(0, grid, 1, 1, threads, 1, 1, smem, stream, params);
  } catch (...) {
    if (partial) detail::scratch_free(partial, stream);
    throw;
  }
  if (t.split > 1) {
    const float* w = reinterpret_cast<const float*>(partial);
    long long ldw_arg = ldw, sw_arg = sw, ldd = call.ldc, stride_d = call.stride_c;
    int splits = args.splits, rows = args.m, cols = args.n, batch = args.batch;
    float alpha = call.alpha, beta = call.beta;
    void* d = call.c;
    void* reduce[] = {&w,        &ldw_arg, &sw_arg, &splits, &d,     &ldd,
                      &stride_d, &rows,    &cols,   &batch,  &alpha, &beta};
    // Blocks of 256 threads along the rows' quads of columns, one row of blocks per row of D (at
    // most 65535, walking the rest).
    const auto blocks_x = static_cast<unsigned>(((cols + 3) / 4 + 255) / 256);
    const auto blocks_y = static_cast<unsigned>(
        std::min<std::int64_t>(static_cast<std::int64_t>(rows) * batch, 65535));
    try {
      kernel.launch(1, blocks_x, blocks_y, 1, 256, 1, 1, 0, stream, reduce);
    } catch (...) {
      detail::scratch_free(partial, stream);
      throw;
    }
    check(detail::scratch_free(partial, stream), "scratch_free");
  }
}

void mma_launch(const Kernel& kernel, const Config& config, const TcCall& call, CUstream stream) {
  const MmaTile t = mma_tile_of(config);
  const View v = view_of(call.m, call.n, call.k);
  Tc80Args args{call.b,
                static_cast<long long>(call.ldb),
                static_cast<long long>(call.stride_b),
                call.a,
                static_cast<long long>(call.lda),
                static_cast<long long>(call.stride_a),
                call.c,
                static_cast<long long>(call.ldc),
                static_cast<long long>(call.stride_c),
                static_cast<int>(v.m),
                static_cast<int>(v.n),
                static_cast<int>(v.k),
                static_cast<int>((v.m + t.bm - 1) / t.bm),
                static_cast<int>((v.n + t.bn - 1) / t.bn),
                call.alpha,
                call.beta,
                static_cast<int>(call.batch)};
  void* params[] = {&args};
  const std::int64_t blocks = static_cast<std::int64_t>(args.tiles_m) * args.tiles_n * call.batch;
  kernel.launch(0, static_cast<unsigned>(blocks), 1, 1, static_cast<unsigned>(t.threads()), 1, 1,
                static_cast<unsigned>(t.smem()), stream, params);
}

}  // namespace

std::string gemm_tc_scale_name(const std::string& out) {
  return "ktune::tc::tc_scale<" + std::to_string(out_code(out)) + ">";
}

void gemm_tc_scale_launch(const Kernel& kernel, const TcCall& call, CUstream stream) {
  const std::int64_t out_bytes = call.out == "f32" ? 4 : 2;
  for (std::int64_t b = 0; b < call.batch; ++b) {  // one launch per matrix of the batch
    void* d = static_cast<char*>(call.c) + b * call.stride_c * out_bytes;
    long long ldd = call.ldc;
    int rows = static_cast<int>(call.n), cols = static_cast<int>(call.m);  // D = C^T
    float beta = call.beta;
    void* params[] = {&d, &ldd, &rows, &cols, &beta};
    kernel.launch(0, 1024, 1, 1, 256, 1, 1, 0, stream, params);
  }
}

CompileRequest gemm_tc_transpose_request(const std::string& arch) {
  CompileRequest r;
  r.source_name = "tc_transpose.cuh";
  r.source = template_source(r.source_name);
  r.name_expressions = {"ktune::tc::tc_transpose32"};
  r.arch = arch;
  return r;
}

void gemm_tc_transpose_launch(const Kernel& kernel, const void* src, std::int64_t lds,
                              std::int64_t src_stride, void* dst, std::int64_t ldd,
                              std::int64_t dst_stride, std::int64_t rows, std::int64_t cols,
                              std::int64_t batch, CUstream stream) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return;
  long long ls = lds, ss = src_stride, ld = ldd, sd = dst_stride, nb = batch;
  int r = static_cast<int>(rows), c = static_cast<int>(cols);
  void* params[] = {&src, &ls, &ss, &dst, &ld, &sd, &r, &c, &nb};
  const auto grid_x = static_cast<unsigned>((rows + 31) / 32);
  const auto grid_y = static_cast<unsigned>(std::min<std::int64_t>((cols + 31) / 32, 65535));
  const auto grid_z = static_cast<unsigned>(std::min<std::int64_t>(batch, 65535));
  kernel.launch(0, grid_x, grid_y, grid_z, 32, 8, 1, 0, stream, params);
}

std::vector<TcShape> gemm_tc_suite() {
  return {{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 2048, 2048},  {1024, 1024, 1024},
          {4095, 4095, 4095}, {8192, 8192, 1024}, {4096, 4096, 16384}, {16384, 1024, 4096}};
}

TcCall gemm_tc_workload_call(const Workload& workload) {
  const auto* w = dynamic_cast<const TcWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, "gemm_tc_workload_call: not a gemm_tc workload");
  return w->call();
}

std::size_t gemm_tc_workload_references(const Workload& workload) {
  const auto* w = dynamic_cast<const TcWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, "gemm_tc_workload_references: not a gemm_tc workload");
  return w->references();
}

void gemm_tc_workload_scale_tolerance(Workload& workload, double scale) {
  auto* w = dynamic_cast<TcWorkload*>(&workload);
  if (!w || !(scale >= 1.0))
    throw Error(ErrorCode::kInternal,
                "gemm_tc_workload_scale_tolerance: not a gemm_tc workload, or a scale below 1");
  w->scale_tolerance(scale);
}

}  // namespace ktune
