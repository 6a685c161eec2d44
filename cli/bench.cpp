// ktune bench: the runtime's tuned kernels against the anchors, verified, in the same process run.
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "core/util.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/elementwise/elementwise.hpp"
#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/gemm/gemm_tc.hpp"
#include "families/histogram/histogram.hpp"
#include "families/registry.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "platform/kernel_cache.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/tuner.hpp"

#ifdef KTUNE_HAVE_ANCHORS
#include "bench/anchors.hpp"
#endif

namespace ktune::cli {
namespace {

// The bench's gemm_tc problem of a dtype: C of the input type (f32 for tf32), 16-byte alignment.
Problem gemm_tc_bench_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                              std::int64_t n, std::int64_t k, std::int64_t batch) {
  const bool tf32 = dtype == "tf32";
  return gemm_tc_problem(dtype, tf32 ? "f32" : dtype, trans_a, trans_b, m, n, k,
                         gemm_tc_kernel_align(dtype), batch);
}

struct Row {
  std::string family, problem, variant;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int repeats = 0;
  double figure = 0;
  std::string unit;
  double ratio = 0;  // figure / anchor figure
  std::string anchor;
  std::string step, config;
  std::string verified;
  // ktune bench gemm --random-shapes: which database answered (presets, tuned) and the seed that
  // drew the shapes; empty in other benches.
  std::string stage, seed;
};

[[maybe_unused]] void write_csv(const std::string& path, const std::vector<Row>& rows,
                                const DeviceInfo& device, const std::string& db_path) {
  std::ostringstream out;
  const std::string commit = csv_commit();
  out << "date,commit,device,driver,nvrtc,family,problem,variant,median_ms,min_ms,max_ms,repeats,"
         "figure,unit,"
         "ratio,anchor,lookup_step,config,verified,stage,seed\n";
  for (const auto& r : rows)
    out << utc_now() << ',' << commit << ",\"" << device.identity() << "\","
        << device.driver_version << ',' << nvrtc_version() << ',' << r.family << ",\"" << r.problem
        << "\",\"" << r.variant << "\"," << r.median_ms << ',' << r.min_ms << ',' << r.max_ms << ','
        << r.repeats << ',' << r.figure << ',' << r.unit << ',' << r.ratio << ',' << r.anchor << ','
        << r.step << ",\"" << r.config << "\"," << r.verified << ',' << r.stage << ',' << r.seed
        << '\n';
  write_output(path, out.str(), "--csv", {db_path});
}

#ifdef KTUNE_HAVE_ANCHORS
// A gemm row with no timing of its own: a TFLOPS figure as a ratio to a reference figure.
Row tflops_ratio_row(std::string problem, std::string variant, double tflops, std::string anchor,
                     double reference) {
  Row r{"gemm", std::move(problem), std::move(variant)};
  r.figure = tflops;
  r.unit = "TFLOPS";
  r.anchor = std::move(anchor);
  r.ratio = reference > 0 ? tflops / reference : 0;
  return r;
}

// cuBLASLt held to the FP64 FMA units: the like-for-like anchor of ktune's FMA-unit DGEMM
// (cublasDgemm takes the tensor cores). Every FMA-unit algorithm setting cuBLASLt accepts for the
// problem is screened with a few timed runs; the fastest is verified and timed like any row (the
// next fastest if it computes a wrong result, which still fails the run). The anchor is the best
// the vendor offers on these units, not its heuristic's first guess. Adds its rows and ktune's
// ratio to it; returns its TFLOPS (0: no FMA-unit algorithm).
template <typename Measure, typename Screen>
double bench_lt_fma(std::optional<anchors::CublasLtFmaDgemm>& lt, const GemmCall& call,
                    Measure& measure, Screen& screen_ms, double cublas_figure, double fma_figure,
                    double nominal, const Problem& problem, std::vector<Row>& rows) {
  constexpr int kMaxAlgos = 32;
  if (!lt) return 0;
  const int offered =
      lt->plan(call.trans_a, call.trans_b, static_cast<int>(call.m), static_cast<int>(call.n),
               static_cast<int>(call.k), static_cast<int>(call.lda), static_cast<int>(call.ldb),
               static_cast<int>(call.ldc), kMaxAlgos);
  auto runner = [&](int i) {
    return [&lt, &call, i](CUstream st) {
      lt->run(i, 1.0, static_cast<const double*>(call.a), static_cast<const double*>(call.b), 0.0,
              static_cast<double*>(call.c), st);
    };
  };
  std::vector<std::pair<double, int>> screened;  // (ms, algorithm)
  for (int i = 0; i < offered; ++i) screened.emplace_back(screen_ms(runner(i)), i);
  std::sort(screened.begin(), screened.end());
  Row best;
  for (const auto& [ms, i] : screened) {
    Row r = measure("cublasLt DGEMM (FMA units)", runner(i));
    r.config = lt->describe(i) + " (fastest of " + std::to_string(offered) + " screened)";
    if (r.verified == "yes") {
      best = r;
      break;
    }
  }
  if (best.figure <= 0) {
    std::cout << problem.key() << ": cuBLASLt has no FMA-unit DGEMM for it (" << lt->plan_note()
              << ")\n";
    return 0;
  }
  best.ratio = cublas_figure > 0 ? best.figure / cublas_figure : 0;
  best.step = std::to_string(offered) + " screened";
  rows.push_back(best);
  rows.push_back(tflops_ratio_row(problem.key(), "cublasLt FMA units / FMA peak", best.figure,
                                  "nominal FMA peak", nominal));
  rows.push_back(tflops_ratio_row(problem.key(), "ktune FMA units / cublasLt FMA units", fma_figure,
                                  "cublasLt FMA units", best.figure));
  return best.figure;
}

// What the gemm rows of one run share: the runtime under test, the anchors, the GPU's stream and
// the timing. `db` answers the best FMA-unit configuration (ktune's own binary cache too).
struct GemmBench {
  Runtime& runtime;
  const Device& device;
  Database& db;
  KernelCache& cache;
  detail::Stream& stream;
  L2Flusher& flusher;
  const TimingOptions& timing;
  anchors::Cublas& cublas;
  // The FMA-unit DGEMM anchor, where cuBLASLt started (the suite's f64 rows; else empty).
  std::optional<anchors::CublasLtFmaDgemm>& lt_fma;
  bool& all_verified;
  std::uint64_t seed = 100;  // of each measured row's fresh inputs
};

// One shape of one dtype: cuBLAS, then ktune through the public API, each verified against the
// double-accumulation reference on fresh inputs, then timed; their rows go to `rows`. With
// `nominal` (the FMA units' nominal TFLOPS) > 0, also the FMA-unit rows: ktune's best
// configuration on the FMA units where the runtime chose the tensor cores, and for f64 the
// cuBLASLt FMA-unit anchor. Returns ktune's row (its ratio is to cuBLAS; 0 if cuBLAS measured 0).
Row bench_gemm_shape(GemmBench& b, const std::string& dtype, const GemmShape& s, double nominal,
                     std::vector<Row>& rows) {
  // The family the runtime runs the shape with: the skinny kernels where m or n is at most 16.
  const bool skinny = gemm_is_skinny(s.m, s.n);
  const Problem problem =
      gemm_call_problem(dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, dtype == "f32" ? 4 : 2);
  const Family& family = find_family(problem.family);
  auto workload = family.make_workload(problem, b.device, b.cache);
  const GemmCall call = gemm_workload_call(*workload);
  auto verify = [&](const char* what) {
    b.stream.synchronize();
    std::string wrong = workload->verify(b.stream.get());
    if (!wrong.empty()) {
      std::cerr << "ktune bench: " << what << " " << problem.key()
                << " computed a wrong result: " << wrong << "\n";
      b.all_verified = false;
      return std::string("no");
    }
    return std::string("yes");
  };
  auto run_cublas = [&](CUstream st) {
    const int m = static_cast<int>(call.m), n = static_cast<int>(call.n),
              k = static_cast<int>(call.k);
    if (dtype == "f32")
      b.cublas.sgemm(call.trans_a, call.trans_b, m, n, k, 1.0f, static_cast<const float*>(call.a),
                     static_cast<int>(call.lda), static_cast<const float*>(call.b),
                     static_cast<int>(call.ldb), 0.0f, static_cast<float*>(call.c),
                     static_cast<int>(call.ldc), st);
    else
      b.cublas.dgemm(call.trans_a, call.trans_b, m, n, k, 1.0, static_cast<const double*>(call.a),
                     static_cast<int>(call.lda), static_cast<const double*>(call.b),
                     static_cast<int>(call.ldb), 0.0, static_cast<double*>(call.c),
                     static_cast<int>(call.ldc), st);
  };
  auto run_ktune = [&](CUstream st) {
    const Op oa = call.trans_a ? Op::kT : Op::kN, ob = call.trans_b ? Op::kT : Op::kN;
    if (dtype == "f32")
      b.runtime.gemm(Layout::kColMajor, oa, ob, call.m, call.n, call.k, 1.0f,
                     static_cast<const float*>(call.a), call.lda, static_cast<const float*>(call.b),
                     call.ldb, 0.0f, static_cast<float*>(call.c), call.ldc, st);
    else
      b.runtime.gemm(Layout::kColMajor, oa, ob, call.m, call.n, call.k, 1.0,
                     static_cast<const double*>(call.a), call.lda,
                     static_cast<const double*>(call.b), call.ldb, 0.0,
                     static_cast<double*>(call.c), call.ldc, st);
  };
  auto measure = [&](const char* variant, const std::function<void(CUstream)>& run) {
    workload->prepare(++b.seed, b.stream.get());
    run(b.stream.get());
    Row r{"gemm", problem.key(), variant};
    r.verified = verify(variant);
    TimingStats t = time_on_stream(run, b.stream.get(), b.timing, &b.flusher);
    r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
    r.figure = metric_of(workload->work(), t.median_ms, "TFLOPS");
    r.unit = "TFLOPS";
    r.anchor = "cuBLAS";
    return r;
  };
  Row base = measure(dtype == "f32" ? "cublasSgemm" : "cublasDgemm", run_cublas);
  base.ratio = 1.0;
  rows.push_back(base);
  // Asked before the first call, which would make the answer "cache": the step that chose it.
  const Choice choice = b.runtime.explain(family.name(), problem.key());
  Row r = measure("ktune gemm", run_ktune);
  r.ratio = base.figure > 0 ? r.figure / base.figure : 0;
  r.step = std::string(to_string(choice.step));
  if (skinny) r.step += " (gemm_skinny)";
  r.config = choice.config;
  rows.push_back(r);
  if (nominal <= 0 || skinny) return r;  // FMA-unit rows: the tiled kernels only
  // The figure on the FMA units against their ceiling (nominal; measured in the peak row).
  // f64 may be fastest on the tensor cores (MMA > 0): then the best FMA-unit configuration
  // measured for this problem is launched, verified and timed on its own as well.
  double fma_figure = r.figure;
  const Config chosen = parse_config(r.config);
  if (chosen.at("MMA") != 0) {  // normalized by the lookup: MMA is always there
    fma_figure = 0;
    for (const auto& row : b.db.best_results_for_problem("gemm", family.template_hash(),
                                                         problem.key(), b.device.info(), 1 << 20)) {
      const Config config = parse_config(row.config);
      if (config.at("MMA") != 0) continue;  // rows of the current template have MMA
      auto kernel = b.cache.get(family.compile_request(config, problem, b.device.limits().arch()));
      Row f = measure("ktune gemm (FMA units)", [&](CUstream st) {
        gemm_launch(*kernel, config, b.device.limits(), call, st);
      });
      f.ratio = base.figure > 0 ? f.figure / base.figure : 0;
      f.step = "best MMA=0";
      f.config = row.config;
      rows.push_back(f);
      fma_figure = f.figure;
      break;
    }
  }
  if (fma_figure > 0)
    rows.push_back(tflops_ratio_row(problem.key(), "ktune FMA units / FMA peak", fma_figure,
                                    "nominal FMA peak", nominal));
  if (dtype == "f64" && fma_figure > 0) {
    auto screen_ms = [&](const std::function<void(CUstream)>& run) {
      TimingOptions quick = b.timing;
      quick.warmup = 1;
      quick.repeats = 3;
      return time_on_stream(run, b.stream.get(), quick, &b.flusher).median_ms;
    };
    const double lt_figure = bench_lt_fma(b.lt_fma, call, measure, screen_ms, base.figure,
                                          fma_figure, nominal, problem, rows);
    if (lt_figure > 0)
      std::cout << problem.key() << ": FMA units, ktune " << fixed(fma_figure, 2)
                << " TFLOPS, cuBLASLt " << fixed(lt_figure, 2) << " TFLOPS (x"
                << fixed(fma_figure / lt_figure, 3) << ")\n";
  }
  return r;
}

void print_cublas_mode(const anchors::Cublas& cublas) {
  std::cout << cublas.version() << ", math mode " << cublas.math_mode()
            << ": SGEMM on FP32 FFMA, not TF32 (its results pass the FP32 tolerance, which TF32 "
               "rounding would not)\n";
}

// Tuned ktune GEMM (through the public API) against cuBLAS at its default math mode over the
// suite, both verified against the double-accumulation reference on the same fresh inputs.
// alpha = 1, beta = 0, column-major, operands 16-byte aligned.
void bench_gemm(Runtime& runtime, const Device& device, Database& db, KernelCache& cache,
                detail::Stream& stream, L2Flusher& flusher, const TimingOptions& timing,
                const std::string& dtypes, const std::vector<GemmShape>& shapes,
                std::vector<Row>& rows, bool& all_verified) {
  anchors::Cublas cublas;
  // The FMA-unit DGEMM anchor is an extra: without it (cuBLASLt failing to start) the f64 rows
  // go on, and the table says why that anchor is missing.
  std::optional<anchors::CublasLtFmaDgemm> lt_fma;
  if (dtypes != "f32") {
    try {
      lt_fma.emplace();
    } catch (const std::exception& e) {
      std::cerr << "ktune bench: no cuBLASLt FMA-unit anchor: " << e.what() << "\n";
    }
  }
  print_cublas_mode(cublas);
  GemmBench b{runtime, device, db, cache, stream, flusher, timing, cublas, lt_fma, all_verified};
  std::vector<std::string> types =
      dtypes == "all" ? std::vector<std::string>{"f32", "f64"} : std::vector<std::string>{dtypes};
  for (const std::string& dtype : types) {
    // The FMA ceiling: nominal (units x SMs x max clock) and as sustained on this card now.
    const DeviceInfo& info = device.info();
    const double per_sm_clock = dtype == "f32" ? 128 : 64;  // FMA lanes per SM on sm_90
    const double nominal = 2 * per_sm_clock * info.limits.sm_count * info.clock_khz * 1e3 / 1e12;
    auto peak_row = [&](const char* variant, double tflops) {
      rows.push_back(
          tflops_ratio_row("dtype=" + dtype + " FMA units", variant, tflops, "nominal", nominal));
    };
    const double sustained = anchors::fma_peak_tflops(dtype == "f64", stream.get());
    peak_row("FMA peak (measured)", sustained);
    // The same chains for 3 s: does the clock hold (or fall to the power limit) over seconds?
    const double settled = anchors::fma_peak_tflops(dtype == "f64", stream.get(), 3.0);
    peak_row("FMA peak (3 s)", settled);
    std::cout << dtype << " FMA peak: nominal " << fixed(nominal, 1) << " TFLOPS at "
              << info.clock_khz / 1000 << " MHz, sustained " << fixed(sustained, 1)
              << " TFLOPS, for 3 s " << fixed(settled, 1) << " TFLOPS\n";
    double log_sum = 0;
    int count = 0;
    for (const GemmShape& s : shapes) {
      const Row r = bench_gemm_shape(b, dtype, s, nominal, rows);
      if (r.ratio > 0) {
        log_sum += std::log(r.ratio);
        ++count;
      }
    }
    Row g{"gemm", "dtype=" + dtype + " " + std::to_string(count) + " shapes", "geomean ratio"};
    g.ratio = count ? std::exp(log_sum / count) : 0;
    g.anchor = "cuBLAS";
    rows.push_back(g);
  }
}

// How much wider than ktune's bound cuBLASLt's results may be (see bench_gemm_tc).
constexpr double kAnchorTolerance = 4.0;

// The tensor-core GEMM (family gemm_tc, op tn, C of the input type; f32 for tf32) against cuBLASLt:
// the heuristic's first 8 algorithms screened (each checked, 3 timed runs) and the fastest of
// those with a right result timed like ktune's
// configuration (the runtime's lookup chain chooses it, as `ktune explain` shows), both verified
// against the double reference on fresh inputs (cuBLASLt against kAnchorTolerance times the bound).
void bench_gemm_tc(Runtime& runtime, const Device& device, KernelCache& cache,
                   detail::Stream& stream, L2Flusher& flusher, const TimingOptions& timing,
                   const Family& tc_family, const std::string& dtype,
                   const std::vector<GemmShape>& shapes, std::int64_t batch, std::vector<Row>& rows,
                   bool& all_verified) {
  anchors::CublasLtGemm16 lt;
  std::uint64_t seed = 300;
  double log_sum = 0;
  int count = 0;
  // Where the runtime would answer (this GPU's tensor-core family), a shape the runtime sends to
  // the skinny kernels (gemm_tc_is_skinny) runs there.
  const bool runtime_family = &tc_family == &gemm_tc_family_for(device.limits());
  std::set<std::string> ran;  // the families the shapes ran on, for the geomean row
  for (const GemmShape& s : shapes) {
    const Family& family = runtime_family && gemm_tc_is_skinny(dtype, s.m, s.n, batch)
                               ? gemm_tc_skinny_family()
                               : tc_family;
    Problem problem = gemm_tc_bench_problem(dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, batch);
    problem.family = family.name();
    family.validate(problem);
    ran.insert(family.name());
    auto workload = family.make_workload(problem, device, cache);
    const TcCall call = gemm_tc_workload_call(*workload);
    auto measure = [&](const char* variant, const std::function<void(CUstream)>& run) {
      workload->prepare(++seed, stream.get());
      run(stream.get());
      stream.synchronize();
      Row r{family.name(), problem.key(), variant};
      const std::string wrong = workload->verify(stream.get());
      r.verified = wrong.empty() ? "yes" : "no";
      if (!wrong.empty()) {
        std::cerr << "ktune bench: " << variant << " " << problem.key()
                  << " computed a wrong result: " << wrong << "\n";
        all_verified = false;
      }
      TimingStats t = time_on_stream(run, stream.get(), timing, &flusher);
      r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
      r.figure = metric_of(workload->work(), t.median_ms, "TFLOPS");
      r.unit = "TFLOPS";
      r.anchor = "cuBLASLt";
      return r;
    };
    const int m = static_cast<int>(call.m), n = static_cast<int>(call.n),
              k = static_cast<int>(call.k);
    const int algos =
        lt.plan(dtype, call.out == "f32", call.trans_a, call.trans_b, m, n, k,
                static_cast<int>(call.lda), static_cast<int>(call.ldb), static_cast<int>(call.ldc),
                8, static_cast<int>(call.batch), call.stride_a, call.stride_b, call.stride_c);
    auto run_lt = [&](int i) {
      return [&, i](CUstream st) { lt.run(i, 1.0f, call.a, call.b, 0.0f, call.c, st); };
    };
    Row base{family.name(), problem.key(), "cublasLtMatmul"};
    if (algos > 0) {
      TimingOptions quick = timing;
      quick.warmup = 1;
      quick.repeats = 3;
      workload->prepare(++seed, stream.get());
      // Only an algorithm whose result passes the check competes; if none passes, the fastest
      // stands and its row says it was wrong. cuBLASLt is checked against kAnchorTolerance times
      // ktune's bound: its split-K algorithms with a 16-bit C exceed 1 x on a few elements (on
      // an H100, 20707 of 16.8M at 4095^3 bf16; 1 of 70560 at 735 x 96 x 10192, after the same
      // algorithm had passed on other inputs), a rounding the bound does not allow for, not a
      // wrong product.
      gemm_tc_workload_scale_tolerance(*workload, kAnchorTolerance);
      int best = -1, best_wrong = 0, refused = 0;
      double best_ms = 0, best_wrong_ms = 0;
      for (int i = 0; i < algos; ++i) {
        run_lt(i)(stream.get());
        stream.synchronize();
        const bool right = workload->verify(stream.get()).empty();
        const double ms = time_on_stream(run_lt(i), stream.get(), quick, &flusher).median_ms;
        if (!right) {
          ++refused;
          if (refused == 1 || ms < best_wrong_ms) best_wrong = i, best_wrong_ms = ms;
        } else if (best < 0 || ms < best_ms) {
          best = i, best_ms = ms;
        }
      }
      if (best < 0) best = best_wrong;
      base = measure("cublasLtMatmul", run_lt(best));
      gemm_tc_workload_scale_tolerance(*workload, 1.0);
      base.config = lt.describe(best) + " of " + std::to_string(algos) +
                    (refused ? ", " + std::to_string(refused) + " failed the check" : "");
    } else {
      base.verified = "-";
      base.config = "cuBLASLt offered no algorithm";
    }
    base.ratio = 1.0;
    base.anchor = "cuBLASLt";
    rows.push_back(base);
    const Choice choice = runtime.explain(family.name(), problem.key());
    const Config config = parse_config(choice.config);
    auto kernel = cache.get(family.compile_request(config, problem, device.limits().arch()));
    Row r = measure(("ktune " + family.name()).c_str(),
                    [&](CUstream st) { gemm_tc_launch(family, *kernel, config, call, st); });
    r.ratio = base.figure > 0 ? r.figure / base.figure : 0;
    r.step = std::string(to_string(choice.step));
    r.config = choice.config;
    rows.push_back(r);
    std::cout << problem.key() << ": ktune " << fixed(r.figure, 1) << " TFLOPS, cuBLASLt "
              << fixed(base.figure, 1) << " (x" << fixed(r.ratio, 3) << ")\n";
    if (r.ratio > 0) {
      log_sum += std::log(r.ratio);
      ++count;
    }
  }
  std::string families;
  for (const std::string& name : ran) families += (families.empty() ? "" : "+") + name;
  Row g{families.empty() ? tc_family.name() : families,
        "dtype=" + dtype + " " + std::to_string(count) + " shapes", "geomean ratio"};
  g.ratio = count ? std::exp(log_sum / count) : 0;
  g.anchor = "cuBLASLt";
  rows.push_back(g);
}

// Tuned ktune (through the public API) against CUB's HistogramEven, with the seed's naive and
// two-phase kernels for bytes: 1 GiB and 16 MiB of bytes, and 1 GiB of floats in 1024 bins, in
// each input class. Every row is verified (exact counts) before it is timed.
void bench_histogram(Runtime& runtime, const Device& device, KernelCache& cache,
                     detail::Stream& stream, L2Flusher& flusher, const TimingOptions& timing,
                     std::vector<Row>& rows, bool& all_verified) {
  const Family& family = find_family("histogram");
  anchors::CubHistogram cub;
  struct Case {
    HistogramDtype dtype;
    std::uint64_t n;
    int bins;
  };
  const Case cases[] = {{HistogramDtype::kU8, std::uint64_t(1) << 30, 256},
                        {HistogramDtype::kU8, std::uint64_t(16) << 20, 256},
                        {HistogramDtype::kF32, std::uint64_t(1) << 28, 1024}};
  for (const Case& k : cases) {
    const Problem problem = histogram_problem(k.dtype, k.n, k.bins, 16);
    auto workload = family.make_workload(problem, device, cache);
    workload->prepare(21, stream.get());
    const double bytes = static_cast<double>(k.n) * histogram_sample_bytes(k.dtype);
    for (HistogramInput input : {kHistUniform, kHistSkewed, kHistConstant}) {
      const HistogramCall call = histogram_workload_call(*workload, input);
      const auto* bytes_in = static_cast<const std::uint8_t*>(call.samples);
      const auto* floats_in = static_cast<const float*>(call.samples);
      double cub_figure = 0;
      auto row = [&](const std::string& variant, const std::function<void(CUstream)>& run) {
        Row r{"histogram", problem.key() + ";input=" + histogram_input_name(input), variant};
        histogram_workload_poison(*workload, input, stream.get());
        run(stream.get());
        stream.synchronize();
        std::string wrong = histogram_workload_verify(*workload, input, stream.get());
        r.verified = wrong.empty() ? "yes" : "no";
        if (!wrong.empty()) {
          std::cerr << "ktune bench: " << variant << " counted wrong: " << wrong << "\n";
          all_verified = false;
        }
        TimingStats t = time_on_stream(run, stream.get(), timing, &flusher);
        r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
        r.figure = metric_of(bytes, t.median_ms, "GB/s");
        r.unit = "GB/s";
        if (variant == "CUB") cub_figure = r.figure;
        r.ratio = cub_figure > 0 ? r.figure / cub_figure : 0;
        r.anchor = "CUB";
        rows.push_back(r);
        return rows.size() - 1;
      };
      if (k.dtype == HistogramDtype::kU8) {
        row("CUB", [&](CUstream s) { cub.bytes(bytes_in, k.n, call.counts, s); });
        std::size_t i = row(
            "ktune", [&](CUstream s) { runtime.histogram(bytes_in, k.n, call.counts, false, s); });
        Choice choice = runtime.explain("histogram", problem.key());
        rows[i].step = std::string(to_string(choice.step));
        rows[i].config = choice.config;
        row("seed two-phase",
            [&](CUstream s) { anchors::seed_histogram_two_phase(bytes_in, k.n, call.counts, s); });
        row("seed naive",
            [&](CUstream s) { anchors::seed_histogram_naive(bytes_in, k.n, call.counts, s); });
      } else {
        const float lower = call.args.lower_f, upper = call.args.upper_f;
        row("CUB",
            [&](CUstream s) { cub.floats(floats_in, k.n, k.bins, lower, upper, call.counts, s); });
        std::size_t i = row("ktune", [&](CUstream s) {
          runtime.histogram_even(floats_in, k.n, k.bins, lower, upper, call.counts, false, s);
        });
        Choice choice = runtime.explain("histogram", problem.key());
        rows[i].step = std::string(to_string(choice.step));
        rows[i].config = choice.config;
      }
    }
  }
}
#endif

// The database of a --random-shapes run: a new file in a new folder under $TMPDIR, removed with
// the folder however the run ends, or the new file --keep-db named, kept.
class RunDatabase {
 public:
  explicit RunDatabase(const std::string& keep_path) {
    if (!keep_path.empty()) {
      path_ = keep_path;
      return;
    }
    std::error_code ec;
    const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    std::string pattern =
        ((ec ? std::filesystem::path("/tmp") : tmp) / "ktune-bench-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw Error(ErrorCode::kIo,
                  "cannot create a temporary folder for the benchmark's database (" + pattern +
                      "): " + std::strerror(errno));
    folder_ = pattern;
    path_ = (folder_ / "tuning.db").string();
  }
  ~RunDatabase() {
    std::error_code ec;
    if (!folder_.empty()) std::filesystem::remove_all(folder_, ec);
  }
  RunDatabase(const RunDatabase&) = delete;
  RunDatabase& operator=(const RunDatabase&) = delete;
  const std::string& path() const { return path_; }
  bool kept() const { return folder_.empty(); }

 private:
  std::filesystem::path folder_;  // empty: the file is kept
  std::string path_;
};

// "nt 4096x16x1024 (skinny)": a drawn shape as the summary and the progress lines name it.
[[maybe_unused]] std::string shape_label(const RandomGemmShape& r) {
  const GemmShape& s = r.shape;
  return std::string(s.trans_a ? "t" : "n") + (s.trans_b ? "t" : "n") + " " + std::to_string(s.m) +
         "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " (" + r.kind +
         (r.capped ? ", capped" : "") + ")";
}

}  // namespace

int cmd_bench(const Common& common, const std::string& family_name, const std::string& n_text,
              const std::string& csv, int repeats, const std::string& dtype,
              const std::vector<std::string>& shape_texts, const std::string& op,
              std::int64_t batch, const std::string& tc_family) {
  // Bad arguments first (exit 2), then a missing device (exit 3), whatever the build.
  const std::uint64_t n = parse_size(n_text, "--n");
  if (n == 0) throw Error(ErrorCode::kInvalidArgument, "--n: must be at least 1");
  std::vector<GemmShape> shapes;
  for (const std::string& text : shape_texts) {
    // MxNxK, or MxNxK:OP with an op of its own.
    const std::size_t colon = text.find(':');
    const std::string dims = text.substr(0, colon);
    const std::string shape_op = colon == std::string::npos ? op : text.substr(colon + 1);
    if (shape_op != "nn" && shape_op != "nt" && shape_op != "tn" && shape_op != "tt")
      throw Error(ErrorCode::kInvalidArgument,
                  "--shape " + text + ": the op after ':' must be nn, nt, tn or tt");
    const auto s = parse_shape(dims, 3, "--shape");
    for (int d = 0; d < 3; ++d)
      if (s[d] < 1 || s[d] > 0x7fffffffull)
        throw Error(ErrorCode::kInvalidArgument, "--shape: each dimension must be in [1, 2^31-1]");
    shapes.push_back({static_cast<std::int64_t>(s[0]), static_cast<std::int64_t>(s[1]),
                      static_cast<std::int64_t>(s[2]), shape_op[0] == 't', shape_op[1] == 't'});
  }
  if (shapes.empty()) shapes = gemm_suite();
  const bool tc = dtype == "bf16" || dtype == "f16" || dtype == "tf32";
  if (!tc_family.empty() && !(family_name == "gemm" && tc))
    throw Error(ErrorCode::kInvalidArgument,
                "--tc-family: takes --dtype bf16, f16 or tf32 (the tensor-core GEMM)");
  if (batch != 1 && !(family_name == "gemm" && tc))
    throw Error(ErrorCode::kInvalidArgument,
                "--batch: strided batches are benchmarked for --dtype bf16, f16 or tf32 only");
  if (tc_family == "gemm_tc_skinny" && shape_texts.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "--tc-family gemm_tc_skinny: needs --shape with m or n at most 16 (the suite's "
                "shapes run on the tensor-core tiles)");
  if (family_name == "gemm" && tc && !shape_texts.empty()) {
    // Checked by the family that will run each: the skinny one where the runtime sends the call
    // (any op, tf32 included) or where --tc-family names it, else the tensor-core one.
    for (const GemmShape& s : shapes) {
      const bool skinny = tc_family == "gemm_tc_skinny" ||
                          (tc_family.empty() && gemm_tc_is_skinny(dtype, s.m, s.n, batch));
      Problem p = gemm_tc_bench_problem(dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, batch);
      if (skinny) p.family = gemm_tc_skinny_family().name();
      (skinny ? gemm_tc_skinny_family() : gemm_tc_family()).validate(p);
    }
  }
#ifndef KTUNE_HAVE_ANCHORS
  (void)family_name, (void)csv, (void)repeats, (void)dtype, (void)shapes, (void)tc_family;
  Device device(common.device);
  throw Error(ErrorCode::kUnsupported,
              "this ktune was built without the anchors (KTUNE_BUILD_BENCH=OFF)");
#else
  Options options;
  options.database = common.resolved_db();
  options.device = common.device;
  Runtime runtime(options);
  Device device(common.device);
  Database cache_db(common.resolved_db());
  KernelCache cache(device, &cache_db);
  detail::Stream stream;
  L2Flusher flusher(device.limits());
  TimingOptions timing;
  timing.repeats = repeats;
  timing.warmup = 5;
  const Family& family = find_family(family_name);
  std::vector<Row> rows;
  bool all_verified = true;

  if (family_name == "elementwise") {
    double memcpy_gbs = 0;
    for (ElementwiseOp op : {ElementwiseOp::kCopy, ElementwiseOp::kAdd}) {
      Problem problem = elementwise_problem(op, "f32", n, 16);
      auto workload = family.make_workload(problem, device, cache);
      const ElementwiseCall call = elementwise_workload_call(*workload);
      auto verify = [&](const char* what) {
        stream.synchronize();
        std::string wrong = workload->verify(stream.get());
        if (!wrong.empty()) {
          std::cerr << "ktune bench: " << what << " computed a wrong result: " << wrong << "\n";
          all_verified = false;
          return std::string("no");
        }
        return std::string("yes");
      };
      auto run_ktune = [&](CUstream s) {
        if (op == ElementwiseOp::kCopy)
          runtime.copy(static_cast<float*>(call.ptr.out0), static_cast<const float*>(call.ptr.in0),
                       n, s);
        else
          runtime.add(static_cast<float*>(call.ptr.out0), static_cast<const float*>(call.ptr.in0),
                      static_cast<const float*>(call.ptr.in1), n, s);
      };
      if (op == ElementwiseOp::kCopy) {
        workload->prepare(11, stream.get());
        anchors::memcpy_d2d(call.ptr.out0, call.ptr.in0, n * sizeof(float), stream.get());
        Row r{"elementwise", problem.key(), "cudaMemcpy"};
        r.verified = verify("cudaMemcpy");
        TimingStats t = time_on_stream(
            [&](CUstream s) {
              anchors::memcpy_d2d(call.ptr.out0, call.ptr.in0, n * sizeof(float), s);
            },
            stream.get(), timing, &flusher);
        r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
        r.figure = metric_of(workload->work(), t.median_ms, "GB/s");
        r.unit = "GB/s";
        r.ratio = 1.0;
        r.anchor = "cudaMemcpy";
        memcpy_gbs = r.figure;
        rows.push_back(r);
      }
      workload->prepare(12, stream.get());
      run_ktune(stream.get());
      Choice choice = runtime.explain("elementwise", problem.key());
      Row r{"elementwise", problem.key(),
            std::string("ktune ") + (op == ElementwiseOp::kCopy ? "copy" : "add")};
      r.verified = verify("ktune");
      TimingStats t = time_on_stream(run_ktune, stream.get(), timing, &flusher);
      r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
      r.figure = metric_of(workload->work(), t.median_ms, "GB/s");
      r.unit = "GB/s";
      r.ratio = memcpy_gbs > 0 ? r.figure / memcpy_gbs : 0;
      r.anchor = "cudaMemcpy";
      r.step = std::string(to_string(choice.step));
      r.config = choice.config;
      rows.push_back(r);
    }
  }
  if (family_name == "gemm" && tc) {
    std::vector<GemmShape> tc_shapes;
    if (shape_texts.empty())
      for (const TcShape& s : gemm_tc_suite()) tc_shapes.push_back({s.m, s.n, s.k, true, false});
    const Family& tc_fam =
        tc_family.empty() ? gemm_tc_family_for(device.limits()) : find_family(tc_family);
    bench_gemm_tc(runtime, device, cache, stream, flusher, timing, tc_fam, dtype,
                  shape_texts.empty() ? tc_shapes : shapes, batch, rows, all_verified);
  } else if (family_name == "gemm") {
    bench_gemm(runtime, device, cache_db, cache, stream, flusher, timing, dtype, shapes, rows,
               all_verified);
  }
  if (family_name == "histogram")
    bench_histogram(runtime, device, cache, stream, flusher, timing, rows, all_verified);

  Table t({"problem", "variant", "median ms", "figure", "ratio", "anchor", "lookup", "verified",
           "config"});
  for (const auto& r : rows)
    t.add({r.problem, r.variant, fixed(r.median_ms, 4), fixed(r.figure, 1) + " " + r.unit,
           fixed(r.ratio, 3), r.anchor, r.step, r.verified, r.config});
  std::cout << "device: " << device.info().identity() << ", driver " << device.info().driver_version
            << ", " << anchors::versions() << ", NVRTC " << nvrtc_version() << "; median of "
            << repeats << " runs after warm-up, L2 flushed before each\n";
  t.print(std::cout);
  check_stdout("bench");
  if (!csv.empty()) write_csv(csv, rows, device.info(), common.resolved_db());
  return all_verified ? kExitOk : kExitFailed;
#endif
}

int cmd_bench_random_gemm(const Common& common, const RandomShapesArgs& args,
                          const std::string& csv, int repeats, const std::string& dtype) {
  // Bad arguments first (exit 2), then a missing device (exit 3), whatever the build.
  if (args.count == 0)
    throw Error(ErrorCode::kInvalidArgument, "--random-shapes: must be at least 1");
  std::set<std::string> stages;
  for (const std::string& s : split(args.stages == "both" ? "presets,tuned" : args.stages, ','))
    if (s == "presets" || s == "nearest" || s == "tuned")
      stages.insert(s);
    else
      throw Error(ErrorCode::kInvalidArgument,
                  "--stages: '" + s + "' is not presets, nearest or tuned (or both)");
  // bf16, f16 and tf32: the tensor-core family of the GPU against cuBLASLt (bench_gemm_tc).
  const bool tc = dtype == "bf16" || dtype == "f16" || dtype == "tf32";
  if (!tc && dtype != "f32" && dtype != "f64" && dtype != "all")
    throw Error(ErrorCode::kInvalidArgument,
                "--dtype: '" + dtype + "' is not f32, f64, all, bf16, f16 or tf32");
  std::error_code ec;
  if (!args.keep_db.empty() &&
      std::filesystem::exists(std::filesystem::symlink_status(args.keep_db, ec)))
    throw Error(ErrorCode::kInvalidArgument,
                "--keep-db: " + args.keep_db +
                    " exists; name a new file (the run's database starts with the shipped "
                    "presets alone)");
  // --shard K/N: shapes [(K-1) count / N, K count / N) of the draw, numbered as in the whole draw.
  std::size_t shard_k = 1, shard_n = 1;
  if (!args.shard.empty()) {
    const auto parts = split(args.shard, '/');
    auto number = [&](const std::string& text) -> std::size_t {
      std::size_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return 0;
      return value;
    };
    if (parts.size() == 2) shard_k = number(parts[0]), shard_n = number(parts[1]);
    if (parts.size() != 2 || shard_k < 1 || shard_n < 1 || shard_k > shard_n)
      throw Error(ErrorCode::kInvalidArgument,
                  "--shard: '" + args.shard + "' is not K/N with 1 <= K <= N (e.g. 2/4)");
    if (shard_n > args.count)
      throw Error(ErrorCode::kInvalidArgument, "--shard: " + args.shard + " parts more than the " +
                                                   std::to_string(args.count) + " shapes drawn");
  }
  const std::size_t shard_first = (shard_k - 1) * args.count / shard_n,
                    shard_end = shard_k * args.count / shard_n;
  TuneOptions tuning = tune_options(common, args.tune);
  // No seed given: one from the clock, printed and written to the CSV, so the run can be repeated.
  const std::uint64_t seed =
      args.seed
          ? *args.seed
          : static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  const std::vector<std::string> dtypes =
      dtype == "all" ? std::vector<std::string>{"f32", "f64"} : std::vector<std::string>{dtype};
  // Each dtype draws from the same seed: the same shapes, except where the memory cap (3 GiB of
  // its elements) scales one down differently.
  auto element_bytes = [](const std::string& d) {
    return d == "f64" ? 8 : d == "f32" || d == "tf32" ? 4 : 2;
  };
  // The part of the draw a shard runs, as the output says it ("" for a whole run).
  const std::string shard_text = shard_n > 1 ? ", shard " + args.shard + ": shapes " +
                                                   std::to_string(shard_first + 1) + " to " +
                                                   std::to_string(shard_end) + " of them"
                                             : std::string();
  std::map<std::string, std::vector<RandomGemmShape>> shapes;
  for (const std::string& d : dtypes) {
    std::vector<RandomGemmShape> drawn = gemm_random_shapes(args.count, seed, element_bytes(d));
    shapes[d].assign(drawn.begin() + static_cast<std::ptrdiff_t>(shard_first),
                     drawn.begin() + static_cast<std::ptrdiff_t>(shard_end));
    // The tf32 kernels read both operands k-contiguous: every shape in op tn (gemm_ex transposes
    // the others first, which this benchmark does not time).
    if (d == "tf32")
      for (RandomGemmShape& r : shapes[d]) r.shape.trans_a = true, r.shape.trans_b = false;
  }
  if (args.list) {
    // The draw as the stages would time it, numbered as in the whole draw: to plan a sharded run.
    Table t({"dtype", "shape", "op", "m", "n", "k", "class", "GFLOP", "GiB (A, B, C)"});
    for (const std::string& d : dtypes) {
      const int bytes = element_bytes(d);
      for (std::size_t i = 0; i < shapes.at(d).size(); ++i) {
        const RandomGemmShape& r = shapes.at(d)[i];
        const GemmShape& g = r.shape;
        const double gib = static_cast<double>(g.m * g.k + g.k * g.n + g.m * g.n) * bytes /
                           static_cast<double>(1 << 30);
        t.add({d, std::to_string(shard_first + i + 1),
               std::string(g.trans_a ? "t" : "n") + (g.trans_b ? "t" : "n"), std::to_string(g.m),
               std::to_string(g.n), std::to_string(g.k), r.kind + (r.capped ? ", capped" : ""),
               fixed(2.0 * g.m * g.n * g.k / 1e9, 1), fixed(gib, 3)});
      }
    }
    std::cout << "random shapes: seed " << seed << ", " << args.count << " per dtype (" << dtype
              << ")" << shard_text << "\n";
    t.print(std::cout);
    check_stdout("bench");
    return kExitOk;
  }
  const bool presets_stage = stages.count("presets"), nearest_stage = stages.count("nearest"),
             tuned_stage = stages.count("tuned");
#ifndef KTUNE_HAVE_ANCHORS
  (void)csv, (void)repeats, (void)tuning, (void)presets_stage, (void)nearest_stage,
      (void)tuned_stage;
  Device device(common.device);
  throw Error(ErrorCode::kUnsupported,
              "this ktune was built without the anchors (KTUNE_BUILD_BENCH=OFF)");
#else
  Device device(common.device);  // no GPU: exit 3 before anything is created
  RunDatabase run_db(args.keep_db);
  const std::string& db_path = run_db.path();
  {
    // The same opening as `ktune tune` gives a new database: the shipped presets, nothing else.
    PresetSummary loaded;
    auto db = open_for_writing(db_path, &loaded);
    report_presets(*db, loaded, common.quiet);
  }
  std::cout << "random shapes: seed " << seed << " (--seed " << seed << " draws them again), "
            << args.count << " per dtype (" << dtype << ")" << shard_text << ", stages "
            << args.stages << "; database " << db_path
            << (run_db.kept() ? " (kept)" : " (temporary, removed at the end)") << "\n";
  const std::string seed_text = std::to_string(seed);
  detail::Stream stream;
  L2Flusher flusher(device.limits());
  TimingOptions timing;
  timing.repeats = repeats;
  timing.warmup = 5;
  anchors::Cublas cublas;
  print_cublas_mode(cublas);
  std::vector<Row> rows;
  bool all_verified = true;

  struct Outcome {
    std::string stage, dtype;
    const RandomGemmShape* shape;
    double ratio;
    bool verified;
  };
  std::vector<Outcome> outcomes;
  // The drawn shapes (every one, or the one `only` names: its dtype's index and its index in the
  // draw's part) through bench_gemm_shape, with a runtime opened on the run's database now (what
  // it holds at this stage answers). No FMA-unit rows: the question is the runtime's answer
  // against cuBLAS.
  using ShapeAt = std::pair<std::size_t, std::size_t>;
  auto time_stage = [&](const std::string& stage, std::optional<ShapeAt> only = std::nullopt) {
    Options options;
    options.database = db_path;
    options.device = common.device;
    options.predict = stage != "nearest";
    Runtime runtime(options);
    Database db(db_path);
    KernelCache cache(device, &db);
    std::optional<anchors::CublasLtFmaDgemm> no_lt;
    GemmBench b{runtime, device, db, cache, stream, flusher, timing, cublas, no_lt, all_verified};
    for (std::size_t di = 0; di < dtypes.size(); ++di) {
      const std::string& d = dtypes[di];
      const auto& drawn = shapes.at(d);
      for (std::size_t i = 0; i < drawn.size(); ++i) {
        if (only && *only != ShapeAt{di, i}) continue;
        if (!common.quiet)
          std::cerr << "ktune bench: " << stage << " " << d << " shape " << shard_first + i + 1
                    << " of " << args.count << ": " << shape_label(drawn[i]) << "\n";
        const std::size_t first = rows.size();
        Row r;
        if (tc) {
          // ktune's tensor-core kernel as the runtime chooses it against cuBLASLt's best of its
          // heuristic's first 8 (each checked); the one-shape geomean row dropped.
          bench_gemm_tc(runtime, device, cache, stream, flusher, timing,
                        gemm_tc_family_for(device.limits()), d, {drawn[i].shape}, 1, rows,
                        all_verified);
          rows.pop_back();
          r = rows.back();
        } else {
          // Each shape's inputs from its place in the whole draw: every stage, and every part
          // of a sharded run, times the same inputs as a whole run.
          b.seed = 100 + di * args.count + shard_first + i;
          r = bench_gemm_shape(b, d, drawn[i].shape, 0, rows);
        }
        for (std::size_t j = first; j < rows.size(); ++j) {
          rows[j].stage = stage;
          rows[j].seed = seed_text;
        }
        outcomes.push_back({stage, d, &drawn[i], r.ratio, r.verified == "yes"});
      }
    }
    // The rows so far, after each stage (and each tuned shape): a run stopped later (a long
    // tuning) keeps them.
    if (!csv.empty()) write_csv(csv, rows, device.info(), db_path);
  };

  // As `ktune tune gemm --shape MxNxK --op OP --dtype D` tunes: the tuner library in this
  // process, each candidate measured in a worker process (a faulting or hanging one ends the
  // worker, not the run), into the run's database.
  tuning.worker.command = {self_executable(), "__worker"};
  auto tune_shape = [&](Database& db, const std::string& d, std::size_t i) {
    const auto& drawn = shapes.at(d);
    const GemmShape& s = drawn[i].shape;
    // The family the runtime runs the shape with (gemm_skinny where m or n <= 16; for bf16,
    // f16 and tf32 gemm_tc_skinny where gemm_tc_is_skinny, else the GPU's tensor-core family).
    Problem problem;
    if (tc) {
      problem = gemm_tc_bench_problem(d, s.trans_a, s.trans_b, s.m, s.n, s.k, 1);
      problem.family = gemm_tc_is_skinny(d, s.m, s.n, 1)
                           ? gemm_tc_skinny_family().name()
                           : gemm_tc_family_for(device.limits()).name();
    } else {
      problem = gemm_call_problem(d, s.trans_a, s.trans_b, s.m, s.n, s.k, d == "f32" ? 4 : 2);
    }
    const Family& family = find_family(problem.family);
    if (!common.quiet)
      std::cerr << "ktune bench: tuning " << d << " shape " << shard_first + i + 1 << " of "
                << args.count << ": " << shape_label(drawn[i]) << "\n";
    const TuneSummary t = tune(db, device, family, problem, tuning);
    if (t.stop_reason.rfind("context lost", 0) == 0)
      throw Error(ErrorCode::kCuda, "tuning " + problem.key() + ": " + t.stop_reason);
    if (!common.quiet)
      std::cerr << "ktune bench: tuned " << problem.key() << ": " << t.evaluated << " evaluated ("
                << t.ok << " ok, " << failed_text(t) << "); stopped: " << t.stop_reason << "; "
                << fixed(t.seconds, 1) << " s; " << t.compiled << " compiled, " << t.reused
                << " from the binary cache, " << t.shared << " sharing another's compile, "
                << t.launch_variants << " launch variants while compiles ran (" << t.given_up
                << " in place of proposals given up); GPU waited on compiles "
                << fixed(t.gpu_wait_seconds, 1) << " s ("
                << fixed(t.seconds > 0 ? 100 * t.gpu_wait_seconds / t.seconds : 0, 0) << "%; "
                << fixed(t.first_wait_seconds, 1) << " s of it for the first compile; "
                << t.cached_first << " compiled kernels of other problems offered first)"
                << (t.best ? "" : "; no configuration passed, the lookup chain answers") << "\n";
  };

  if (presets_stage) time_stage("presets");
  if (nearest_stage) time_stage("nearest");
  if (tuned_stage) {
    // Each shape timed as soon as it is tuned: a run stopped in a long tune keeps the shapes
    // tuned before it, with their rows.
    Database db(db_path);
    for (std::size_t di = 0; di < dtypes.size(); ++di)
      for (std::size_t i = 0; i < shapes.at(dtypes[di]).size(); ++i) {
        tune_shape(db, dtypes[di], i);
        time_stage("tuned", ShapeAt{di, i});
      }
  }

  // Per stage and dtype: the geometric mean of ktune / cuBLAS, the worst shape, the shares below.
  Table summary(
      {"stage", "dtype", "shapes", "geomean", "min", "min at", "< 0.80", "< 0.90", "ktune wrong"});
  for (const std::string stage : {"presets", "nearest", "tuned"}) {
    for (const std::string& d : dtypes) {
      double log_sum = 0;
      int count = 0, below_80 = 0, below_90 = 0, wrong = 0;
      const Outcome* worst = nullptr;
      for (const Outcome& o : outcomes) {
        if (o.stage != stage || o.dtype != d) continue;
        wrong += !o.verified;
        if (o.ratio <= 0) continue;
        log_sum += std::log(o.ratio);
        ++count;
        below_80 += o.ratio < 0.80;
        below_90 += o.ratio < 0.90;
        if (!worst || o.ratio < worst->ratio) worst = &o;
      }
      if (!worst) continue;  // the stage did not run
      const double geomean = std::exp(log_sum / count);
      summary.add({stage, d, std::to_string(count), fixed(geomean, 3), fixed(worst->ratio, 3),
                   shape_label(*worst->shape), std::to_string(below_80), std::to_string(below_90),
                   std::to_string(wrong)});
      Row g{"gemm",
            "dtype=" + d + " " + std::to_string(count) + " random shapes" +
                (shard_n > 1 ? " (shard " + args.shard + " of " + std::to_string(args.count) + ")"
                             : std::string()),
            "geomean ratio"};
      g.ratio = geomean;
      g.anchor = tc ? "cuBLASLt" : "cuBLAS";
      g.stage = stage;
      g.seed = seed_text;
      rows.push_back(g);
    }
  }

  Table t({"stage", "problem", "variant", "median ms", "figure", "ratio", "lookup", "verified",
           "config"});
  for (const auto& r : rows)
    t.add({r.stage, r.problem, r.variant, fixed(r.median_ms, 4), fixed(r.figure, 1) + " " + r.unit,
           fixed(r.ratio, 3), r.step, r.verified, r.config});
  std::cout << "device: " << device.info().identity() << ", driver " << device.info().driver_version
            << ", " << anchors::versions() << ", NVRTC " << nvrtc_version() << "; median of "
            << repeats << " runs after warm-up, L2 flushed before each\n";
  t.print(std::cout);
  std::cout << "\nktune / " << (tc ? "cuBLASLt" : "cuBLAS") << " per shape (TFLOPS ratio), seed "
            << seed << ":\n";
  summary.print(std::cout);
  check_stdout("bench");
  if (!csv.empty()) write_csv(csv, rows, device.info(), db_path);
  return all_verified ? kExitOk : kExitFailed;
#endif
}

int cmd_bench_family(const Common& common, const ProblemArgs& args, const std::string& csv,
                     int repeats) {
  const Family& family = find_family(args.family);
  const Problem problem = build_problem(args);  // bad arguments first: exit 2
#ifndef KTUNE_HAVE_ANCHORS
  (void)family, (void)csv, (void)repeats;
  Device device(common.device);
  throw Error(ErrorCode::kUnsupported,
              "this ktune was built without the anchors (KTUNE_BUILD_BENCH=OFF)");
#else
  Options options;
  options.database = common.resolved_db();
  options.device = common.device;
  Runtime runtime(options);
  Device device(common.device);
  Database cache_db(common.resolved_db());
  KernelCache cache(device, &cache_db);
  detail::Stream stream;
  L2Flusher flusher(device.limits());
  TimingOptions timing;
  timing.repeats = repeats;
  timing.warmup = 5;
  auto workload = family.make_workload(problem, device, cache);
  const std::string unit = family.metric_unit();
  std::vector<Row> rows;
  bool all_verified = true;

  // A configuration of the family, verified on fresh inputs, then timed.
  auto measure = [&](const std::string& variant, const Config& config, const std::string& step) {
    auto kernel = cache.get(family.compile_request(config, problem, device.limits().arch()));
    Row r{family.name(), problem.key(), variant};
    workload->prepare(21, stream.get());
    workload->run(*kernel, config, stream.get());
    stream.synchronize();
    const std::string wrong = workload->verify(stream.get());
    r.verified = wrong.empty() ? "yes" : "no";
    if (!wrong.empty()) {
      std::cerr << "ktune bench: " << variant << " computed a wrong result: " << wrong << "\n";
      all_verified = false;
    }
    TimingStats t = time_on_stream([&](CUstream s) { workload->run(*kernel, config, s); },
                                   stream.get(), timing, &flusher);
    r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
    r.figure = metric_of(workload->work(), t.median_ms, unit);
    r.unit = unit;
    r.step = step;
    r.config = to_string(config);
    return r;
  };
  Row fallback =
      measure("default configuration", family.default_config(problem, device.limits()), "default");
  fallback.ratio = 1.0;
  fallback.anchor = "default";
  rows.push_back(fallback);
  const Choice choice = runtime.explain(family.name(), problem.key());
  Row tuned = measure("ktune " + std::string(to_string(choice.step)), parse_config(choice.config),
                      std::string(to_string(choice.step)));
  tuned.ratio = fallback.figure > 0 ? tuned.figure / fallback.figure : 0;
  tuned.anchor = "default";
  rows.push_back(tuned);
  if (unit == "GB/s") {
    // The copy roofline: cudaMemcpy moving the bytes the family reads and writes.
    const auto bytes = static_cast<std::size_t>(workload->work() / 2);
    detail::DeviceBuffer src(std::max<std::size_t>(bytes, 1)), dst(std::max<std::size_t>(bytes, 1));
    Row m{family.name(), problem.key(), "cudaMemcpy (same bytes)"};
    TimingStats t = time_on_stream(
        [&](CUstream s) {
          anchors::memcpy_d2d(reinterpret_cast<void*>(dst.get()),
                              reinterpret_cast<const void*>(src.get()), bytes, s);
        },
        stream.get(), timing, &flusher);
    m.median_ms = t.median_ms, m.min_ms = t.min_ms, m.max_ms = t.max_ms, m.repeats = t.repeats;
    m.figure = metric_of(workload->work(), t.median_ms, unit);
    m.unit = unit;
    m.ratio = 1.0;
    m.anchor = "cudaMemcpy";
    m.verified = "-";
    rows.push_back(m);
    Row derived{family.name(), problem.key(), "ktune vs cudaMemcpy"};
    derived.figure = tuned.figure;
    derived.unit = unit;
    derived.ratio = m.figure > 0 ? tuned.figure / m.figure : 0;
    derived.anchor = "cudaMemcpy";
    derived.verified = tuned.verified;
    rows.push_back(derived);
  }
  Table t({"problem", "variant", "median ms", "figure", "ratio", "anchor", "lookup", "verified",
           "config"});
  for (const auto& r : rows)
    t.add({r.problem, r.variant, fixed(r.median_ms, 4), fixed(r.figure, 1) + " " + r.unit,
           fixed(r.ratio, 3), r.anchor, r.step, r.verified, r.config});
  std::cout << "device: " << device.info().identity() << ", driver " << device.info().driver_version
            << ", NVRTC " << nvrtc_version() << "; family " << family.name() << " from "
            << family.origin() << "; median of " << repeats
            << " runs after warm-up, L2 flushed before each\n";
  t.print(std::cout);
  check_stdout("bench");
  if (!csv.empty()) write_csv(csv, rows, device.info(), common.resolved_db());
  return all_verified ? kExitOk : kExitFailed;
#endif
}

}  // namespace ktune::cli
