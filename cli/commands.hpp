// The ktune subcommands; each returns the process exit code (see exit_codes below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ktune {
struct KernelTunerImport;
class Database;
struct Problem;
struct DeviceLimits;
struct PresetSummary;
struct TuneOptions;
}  // namespace ktune

namespace ktune::cli {

// Documented exit codes of the ktune command.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,    // the command ran and found a failure (compile error, wrong result)
  kExitUsage = 2,     // bad arguments: the message names the argument
  kExitNoDevice = 3,  // no CUDA driver or no CUDA device
  kExitDatabase = 4,  // the database could not be opened, read or written
  kExitError = 5,     // any other error (CUDA, compile, internal)
};

struct Common {
  std::string db;  // empty: default path
  int device = 0;
  bool quiet = false;
  std::string resolved_db() const;
};

// Prints what opening a database for writing noted (a network filesystem) and which shipped
// presets went in, unless quiet.
void report_presets(const Database& db, const PresetSummary& loaded, bool quiet);
// The limits of an architecture named on the command line ("sm_90"), checked against the ones
// NVRTC compiles for: Error(kInvalidArgument) naming `option` and listing them.
DeviceLimits limits_for_arch_option(const std::string& arch, const std::string& option);

struct ProblemArgs {
  std::string family;
  // elementwise
  std::string op = "copy";
  std::string dtype = "f32";
  std::string n = "256M";
  int align = 16;
  // gemm (also dtype): MxNxK, ops of A and B, alignment class in elements (0: the widest)
  std::string shape = "4096x4096x4096";
  std::string gemm_op = "nn";
  int gemm_align = 0;
  bool suite = false;  // tune the benchmark suite instead of one shape
  std::string grid;    // tune the preset grid (all, tiled or skinny) instead of one shape
  // histogram (also n and align)
  std::string samples = "u8";
  int bins = 256;
  // a family file's family: its axes as given on the command line (the rest take defaults)
  std::map<std::string, std::string> axes;
};

struct TuneArgs {
  std::string strategy = "auto";
  std::uint64_t seed = 1;
  std::size_t max_evals = 400;
  double max_seconds = 0;
  std::size_t patience = 0;
  bool measure_winners = false;
  std::vector<std::string> only;  // NAME=V[,V...]
  int repeats = 20;
  int warmup = 3;
  double timing_budget_ms = 200;  // a long candidate timed fewer times (TimingOptions::budget_ms)
  unsigned jobs = 0;
  // MiB of compiled candidates kept in the database (0: compile every candidate, keep nothing)
  std::uint64_t binary_cache_mb = 1024;
  bool no_launch_variants = false;  // no launch variants while compiles run
  bool in_process = false;          // measure in this process, not in a worker
  bool compile_in_process = false;  // NVRTC on threads of this process, not in child processes
  double timeout_floor = 1.0;       // seconds, host-side limit per launch at least
  std::string devices = "0";        // an ordinal, a list "0,1" or "all": one worker per GPU
  bool defaults = false;            // tune every family's default problems
  // Replay instead of the GPU: the recorded outcomes of run `replay_run` in `replay_from`.
  std::string replay_from;
  std::int64_t replay_run = 0;
  double replay_delay_ms = 0;
};

// The tuner's options as `ktune tune` takes them (--only checked: Error(kInvalidArgument)).
TuneOptions tune_options(const Common& common, const TuneArgs& targs);
// This executable, to start tuning workers with (`ktune __worker <fd>`).
std::string self_executable();

// ktune bench gemm --random-shapes N: shapes drawn by gemm_random_shapes, the runtime against
// cuBLAS in stages, in a database of its own (never the user's).
struct RandomShapesArgs {
  std::size_t count = 0;              // shapes per dtype, >= 1
  std::optional<std::uint64_t> seed;  // none: one from the clock (printed, and in the CSV)
  std::string stages = "both";        // a list of presets, nearest, tuned; both = presets,tuned
  std::string keep_db;                // create the database here and keep it ("": a temporary one)
  TuneArgs tune;                      // the budget of each shape's tuning (--max-evals ...)
  std::string shard;  // "K/N": the K-th of N consecutive parts of the draw ("": all)
  bool list = false;  // print the drawn shapes (of the shard) and stop: no GPU needed
};
int cmd_bench_random_gemm(const Common& common, const RandomShapesArgs& args,
                          const std::string& csv, int repeats, const std::string& dtype);

// ktune params NAME: a family's parameters, constraints and problem axes.
int cmd_params(const std::string& family);

int cmd_devices(const Common& common);
int cmd_tune(const Common& common, const ProblemArgs& problem, const TuneArgs& tune);
int cmd_query(const Common& common, const std::string& family, const std::string& problem, bool all,
              bool json);
// ktune check's options.
struct CheckArgs {
  std::string arch = "sm_90";
  std::string family;  // empty: every family
  unsigned jobs = 0;
  bool compile_in_process = false;  // NVRTC on threads of this process, not in child processes
  bool verbose = false;
  bool exhaustive = false;
  // At most this many kernels of each check problem, drawn by `seed` (0: all of them).
  std::size_t sample = 0;
  std::uint64_t seed = 1;
};
int cmd_check(const CheckArgs& args, bool quiet = false);
// Without `gpu` and `arch`: the Runtime on --device answers. With either: the lookup chain for a
// GPU the database knows by name, or for an architecture, without a GPU. `strict_fp32`: as a
// runtime with Options::strict_fp32 answers. `candidates`: how many ranked candidates to list (0:
// all).
int cmd_explain(const Common& common, const std::string& family, const std::string& problem,
                const std::string& gpu, const std::string& arch, bool strict_fp32,
                std::size_t candidates);
int cmd_bench_runtime(const Common& common, const std::string& csv);
// ktune bench NAME for a family file's family: its tuned configuration against its default one,
// and, for a GB/s metric, cudaMemcpy moving the same bytes.
int cmd_bench_family(const Common& common, const ProblemArgs& problem, const std::string& csv,
                     int repeats);
// The problem the options name (checked by its family); throws Error(kInvalidArgument).
Problem build_problem(const ProblemArgs& a);
int cmd_bench(const Common& common, const std::string& family, const std::string& n,
              const std::string& csv, int repeats, const std::string& dtype = "all",
              const std::vector<std::string>& shapes = {}, const std::string& op = "nn",
              std::int64_t batch = 1, const std::string& tc_family = "");

// ktune strategies --replay RUN: strategies compared on a recorded run (no GPU).
// Writes an SVG of run `run` (best so far against evaluations and wall time) to `output`
// (default run-<id>.svg) and prints a summary.
int cmd_report(const Common& common, std::int64_t run, const std::string& output);
int cmd_strategies(const Common& common, std::int64_t run, std::size_t seeds,
                   const std::vector<std::size_t>& budgets, std::size_t lag,
                   const std::string& csv);

// ktune db ... (cli/db_commands.cpp)
int cmd_db_export(const Common& common, const std::string& family, bool all, bool best, bool own,
                  bool compact, const std::string& output);
int cmd_db_import(const Common& common, const std::string& file, bool shipped);
int cmd_db_import_kerneltuner(const Common& common, const std::string& file,
                              const KernelTunerImport& options);
int cmd_db_merge(const Common& common, const std::string& other);
int cmd_db_prune(const Common& common, bool stale);
int cmd_db_check(const Common& common);

}  // namespace ktune::cli
