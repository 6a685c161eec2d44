// The ktune command: argument parsing (CLI11) and the error boundary (message + exit code).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"
#include "ktune/error.hpp"
#include "tuner/worker.hpp"

#ifndef KTUNE_VERSION
#define KTUNE_VERSION "dev"
#endif

using namespace ktune::cli;

namespace {

const char* const kExitCodes =
    "Exit codes: 0 ok, 1 a check or verification failed, 2 bad arguments, 3 no CUDA driver or "
    "device,\n"
    "4 database error, 5 other error (CUDA, compile, internal).\n"
    "Database: --db, else $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db "
    "(~/.cache/ktune/tuning.db).";

const char* const kDbExitCodes =
    "Exit codes: 0 done, 2 bad arguments or an unreadable or invalid JSON file (the message names\n"
    "the entry and field; nothing was written), 4 database error (no such file, not a ktune\n"
    "database, damaged, locked).\n"
    "Database: --db, else $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db "
    "(~/.cache/ktune/tuning.db).";

void add_common(CLI::App* app, Common& common, bool with_device = true) {
  app->add_option("--db", common.db,
                  "tuning database file (default: $KTUNE_DB or the cache directory)");
  if (with_device)
    app->add_option("--device", common.device, "CUDA device ordinal")
        ->check(CLI::NonNegativeNumber);
}

void add_elementwise_options(CLI::App* app, ProblemArgs& p) {
  app->add_option("--op", p.op, "operation")
      ->check(CLI::IsMember({"copy", "add", "complex_copy"}))
      ->capture_default_str();
  app->add_option("--dtype", p.dtype, "element type")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  app->add_option("--n", p.n, "number of elements; K, M, G suffixes are powers of 2 (1G = 2^30)")
      ->capture_default_str();
  app->add_option("--align", p.align, "alignment class of the pointers in bytes")
      ->check(CLI::IsMember({4, 8, 16}))
      ->capture_default_str();
}

void add_histogram_options(CLI::App* app, ProblemArgs& p) {
  app->add_option("--dtype", p.samples, "sample type")
      ->check(CLI::IsMember({"u8", "u16", "i32", "f32"}))
      ->capture_default_str();
  app->add_option("--bins", p.bins, "number of bins (256 with u8: one bin per byte value)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--n", p.n, "number of samples; K, M, G suffixes are powers of 2 (1G = 2^30)")
      ->capture_default_str();
  app->add_option("--align", p.align, "alignment class of the sample pointer in bytes")
      ->check(CLI::IsMember({1, 2, 4, 8, 16}))
      ->capture_default_str();
}

void add_gemm_options(CLI::App* app, ProblemArgs& p) {
  app->add_option("--dtype", p.dtype, "element type")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  app->add_option("--shape", p.shape, "MxNxK of C(m x n) = op(A)(m x k) op(B)(k x n)")
      ->capture_default_str();
  app->add_option("--op", p.gemm_op, "op(A) op(B): n = as stored, t = transposed")
      ->check(CLI::IsMember({"nn", "nt", "tn", "tt"}))
      ->capture_default_str();
  app->add_option("--align", p.gemm_align,
                  "alignment class in elements of the operands (pointers and leading "
                  "dimensions); 0 = the widest (16 bytes)")
      ->check(CLI::IsMember({0, 1, 2, 4}))
      ->capture_default_str();
  app->add_flag("--suite", p.suite,
                "tune every shape of the benchmark suite (ktune bench gemm) for --dtype");
}

void add_tune_options(CLI::App* app, TuneArgs& t) {
  app->add_option("--strategy", t.strategy,
                  "search strategy: auto (exhaustive when the space fits --max-evals, else "
                  "model), exhaustive, random, evolve (mutations of the best found so far), "
                  "anneal (simulated annealing), genetic (crossover of the best found so far), "
                  "model (a random forest predicts the time of untried configurations)")
      ->check(
          CLI::IsMember({"auto", "exhaustive", "random", "evolve", "anneal", "genetic", "model"}))
      ->capture_default_str();
  app->add_option("--seed", t.seed, "seed of the strategy and of the random inputs")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--max-evals", t.max_evals, "evaluations at most in this run (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--max-seconds", t.max_seconds, "wall time budget of this run (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--patience", t.patience,
                  "stop after this many evaluations in a row without a new best at least 0.5% "
                  "faster (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option(
      "--only", t.only,
      "hold a parameter to some of its values, NAME=V[,V...] (repeatable), e.g. "
      "--only MMA=0 for f64 GEMM on the FMA units alone (an unknown name lists the parameters)");
  app->add_option("--repeats", t.repeats, "timed runs per candidate (median reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--warmup", t.warmup, "untimed runs before timing")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app->add_option("--jobs", t.jobs, "compile threads (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app->add_flag("--in-process", t.in_process,
                "measure candidates in this process instead of a worker process: no worker "
                "start-up, but a faulting candidate loses the CUDA context and stops the run "
                "(run again to resume) and a hanging one is not stopped");
  app->add_option("--timeout-floor", t.timeout_floor,
                  "seconds a launch of a candidate may take at least before it is killed and "
                  "recorded as timeout; the limit is max(floor, 50 x the best time so far)")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  // A tuning worker started by `tune` (tuner/worker.hpp): not a command for users.
  if (argc == 3 && std::string(argv[1]) == "__worker") {
    try {
      return ktune::run_tuning_worker(std::stoi(argv[2]));
    } catch (const std::exception& e) {
      std::cerr << "ktune worker: " << e.what() << "\n";
      return kExitError;
    }
  }
  CLI::App app{
      "ktune: autotuned CUDA kernels (GEMM, histogram, elementwise) generated with NVRTC.\n"
      "Tune once per GPU, then link ktune::ktune and get the tuned kernels.",
      "ktune"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", KTUNE_VERSION);
  app.require_subcommand(1);

  Common common;
  ProblemArgs problem;
  TuneArgs tune;

  auto* devices = app.add_subcommand("devices", "list the CUDA devices of this machine");

  auto* tune_cmd =
      app.add_subcommand("tune",
                         "tune problems into the database; with no family, tune the default "
                         "problems of every family and print the result table");
  add_common(tune_cmd, common, false);
  tune_cmd
      ->add_option("--device", tune.devices,
                   "CUDA device ordinal, a list (0,1), or 'all': one worker per GPU, all writing "
                   "to the same database")
      ->capture_default_str();
  add_tune_options(tune_cmd, tune);
  tune_cmd->footer(kExitCodes);
  // Options of `tune` (budget, strategy, --db) may also follow the family: tune gemm --max-evals 9.
  tune_cmd->fallthrough();
  auto* replay_from = tune_cmd->add_option(
      "--replay-from", tune.replay_from,
      "tune without a GPU: draw every measurement from a recorded run in this database (tests "
      "strategies and resume; with --replay)");
  tune_cmd->add_option("--replay", tune.replay_run, "the recorded run id (with --replay-from)")
      ->needs(replay_from)
      ->check(CLI::PositiveNumber);
  replay_from->needs("--replay");
  tune_cmd
      ->add_option("--replay-delay-ms", tune.replay_delay_ms,
                   "wait this long per replayed candidate, as if a GPU were timing it")
      ->check(CLI::Range(0.0, 60000.0));
  auto* tune_ew =
      tune_cmd->add_subcommand("elementwise", "tune copy / add / complex_copy for one size");
  add_elementwise_options(tune_ew, problem);
  auto* tune_hist = tune_cmd->add_subcommand(
      "histogram", "tune a histogram for one sample type, bin count and size");
  add_histogram_options(tune_hist, problem);
  tune_hist->fallthrough();  // tune's options (--max-evals...) may follow the family too
  auto* tune_gemm = tune_cmd->add_subcommand(
      "gemm", "tune one GEMM shape (--shape, --op, --dtype) or the benchmark suite (--suite)");
  add_gemm_options(tune_gemm, problem);
  // Test-only: the planted-fault family that proves a run survives faults and hangs. Hidden.
  auto* tune_faults = tune_cmd->add_subcommand("faults", "")->group("");
  tune_cmd->require_subcommand(0, 1);

  std::string query_family, query_problem;
  bool query_all = false, query_json = false;
  auto* query =
      app.add_subcommand("query", "show the best tuned configuration per device and problem");
  add_common(query, common, false);
  query->add_option("--family", query_family, "only this family");
  query->add_option("--problem", query_problem, "only this problem key (as printed)");
  query->add_flag("--all", query_all,
                  "every evaluated candidate with its status, not only the best");
  query->add_flag("--json", query_json, "print JSON instead of a table");

  std::string check_arch = "sm_90", check_family;
  unsigned check_jobs = 0;
  bool check_verbose = false;
  auto* check =
      app.add_subcommand("check",
                         "compile every variant of every family for an architecture with NVRTC "
                         "(no GPU needed); report registers and spills; exit 1 on any failure");
  check->add_option("--arch", check_arch, "target architecture, e.g. sm_90")->capture_default_str();
  check->add_option("--family", check_family, "only this family");
  check->add_option("--jobs", check_jobs, "compile threads (0: one per core)");
  check->add_flag("--verbose,-v", check_verbose, "one line per kernel");
  bool check_exhaustive = false;
  check->add_flag("--exhaustive", check_exhaustive,
                  "compile the whole space; by default a family with a large space (gemm) "
                  "compiles every tile shape and every code path, not every combination");

  std::int64_t report_run = 0;
  std::string report_output;
  auto* report = app.add_subcommand(
      "report", "plot a tuning run as SVG: best so far against evaluations and wall time");
  add_common(report, common, false);
  report->add_option("run", report_run, "run id (printed by ktune tune; ktune query --all --json)")
      ->required()
      ->check(CLI::PositiveNumber);
  report->add_option("-o,--output", report_output, "SVG file to write (default: run-<id>.svg)");

  std::int64_t replay_run = 0;
  std::size_t replay_seeds = 30, replay_lag = 32;
  std::vector<std::size_t> replay_budgets = {25, 50, 100, 200};
  std::string replay_csv;
  auto* strategies = app.add_subcommand(
      "strategies",
      "compare search strategies on a recorded run: each draws the measured times from the "
      "database instead of the GPU (best found / exhaustive best, median over seeds)");
  add_common(strategies, common, false);
  strategies->add_option("--replay", replay_run, "run id (ktune query --all lists runs' rows)")
      ->required()
      ->check(CLI::PositiveNumber);
  strategies->add_option("--seeds", replay_seeds, "seeds per strategy and budget")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  strategies->add_option("--budgets", replay_budgets, "evaluation budgets")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  strategies
      ->add_option("--lag", replay_lag,
                   "proposals in flight before the first result returns (the compile "
                   "pipeline's window: 2 per compile thread)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  strategies->add_option("--csv", replay_csv, "also write the table to this CSV file");

  std::string explain_family, explain_problem;
  auto* explain =
      app.add_subcommand("explain", "which configuration a problem gets, from which lookup step");
  add_common(explain, common);
  explain->add_option("family", explain_family, "family name")->required();
  explain
      ->add_option("problem", explain_problem,
                   "problem key, e.g. 'align=16;dtype=f32;n=1048576;op=copy'")
      ->required();

  std::string bench_family, bench_n = "256M", bench_csv;
  int bench_repeats = 30;
  auto* bench =
      app.add_subcommand("bench",
                         "time the runtime's tuned kernels against the anchors in the same run "
                         "(cudaMemcpy for elementwise, cuBLAS for gemm, CUB for histogram)");
  add_common(bench, common);
  bench
      ->add_option("family", bench_family,
                   "family to benchmark, or 'runtime': the first call of a tuned problem in a new "
                   "process and the host time of a repeated call against a raw cuLaunchKernel")
      ->required()
      ->check(CLI::IsMember({"elementwise", "gemm", "histogram", "runtime"}));
  bench
      ->add_option("--n", bench_n,
                   "elementwise: elements of f32 per array (default 256M = 1 GiB); histogram "
                   "uses its fixed sizes (1 GiB and 16 MiB)")
      ->capture_default_str();
  std::string bench_dtype = "all", bench_shape, bench_op = "nn";
  bench->add_option("--shape", bench_shape,
                    "gemm: one MxNxK shape instead of the suite (with --op)");
  bench->add_option("--op", bench_op, "gemm with --shape: nn, nt, tn or tt")
      ->check(CLI::IsMember({"nn", "nt", "tn", "tt"}))
      ->capture_default_str();
  bench->add_option("--dtype", bench_dtype, "gemm: f32, f64 or all")
      ->check(CLI::IsMember({"f32", "f64", "all"}))
      ->capture_default_str();
  bench->add_option("--csv", bench_csv, "also write the rows to this CSV file");
  bench->add_option("--repeats", bench_repeats, "timed runs per row")
      ->check(CLI::Range(20, 100000))
      ->capture_default_str();

  // ktune db: moving results between machines; binaries never travel (code from elsewhere).
  // Short descriptions for the command list; what each does in detail goes in its own --help.
  auto* db_cmd = app.add_subcommand(
      "db", "export, import, merge, prune or check the tuning database (results, never binaries)");
  db_cmd->require_subcommand(1);
  db_cmd->footer(kDbExitCodes);
  auto db_footer = [](const char* detail) { return std::string(detail) + "\n\n" + kDbExitCodes; };
  std::string db_family, db_output, db_file, db_other;
  bool db_all = false, db_best = false, db_shipped = false, db_stale = false;
  auto* db_export = db_cmd->add_subcommand("export", "write results as JSON, to stdout or a file");
  add_common(db_export, common, false);
  db_export->add_option("--family", db_family, "only this family");
  db_export->add_flag("--all", db_all,
                      "every row: failed candidates and results of older template versions too");
  db_export
      ->add_flag("--best", db_best,
                 "only the best result per device and problem (what lookups answer with; "
                 "the form of the shipped presets)")
      ->excludes("--all");
  db_export->add_option("-o,--output", db_output, "write to this file instead of stdout");
  db_export->footer(db_footer(
      "Each result carries its device (name, compute capability, SMs), family, template hash,\n"
      "problem, configuration (as text and as parameters), status, min/median/max time, repeats,\n"
      "metric, origin and source, tool and NVRTC versions, and when it was measured; never a\n"
      "compiled binary. By default the ok results of the current templates (what a lookup can\n"
      "use); this is the format of the shipped presets (db/presets/)."));
  auto* db_import =
      db_cmd->add_subcommand("import", "import a JSON export, every entry checked first");
  add_common(db_import, common, false);
  db_import->add_option("file", db_file, "the JSON file ('-': stdin)")->required();
  db_import->add_flag("--shipped", db_shipped,
                      "mark the rows as shipped (ranked after your own results), as the presets "
                      "of db/presets/ are");
  db_import->footer(db_footer(
      "Every entry is checked before anything is written: format and version, the type and size\n"
      "of every field, the family, the problem, the configuration against the family's parameter\n"
      "space and its constraints on the entry's device. If one fails, nothing is written and the\n"
      "message names the entry and field, e.g. results[3].config. Entries of another template\n"
      "version are skipped (lookups would ignore them). Per key (device, family, template,\n"
      "problem, configuration) the better row stays: your own results over shipped ones, ok over\n"
      "failed, then the lower median time. Imported rows record the file they came from."));
  auto* db_merge =
      db_cmd->add_subcommand("merge", "merge another ktune database, keeping the better results");
  add_common(db_merge, common, false);
  db_merge->add_option("other", db_other, "the other database file")->required();
  db_merge->footer(db_footer(
      "The other file is opened read-only and its binaries are never taken (a binary from\n"
      "elsewhere is code from elsewhere); every row is checked like an import, devices are\n"
      "matched by name, compute capability and SM count. Per key the better row stays: your own\n"
      "results over shipped ones, ok over failed, then the lower median time; rows taken record\n"
      "the file they came from. Results of another template version and rows still in flight\n"
      "are skipped. All rows are written in one transaction."));
  auto* db_prune = db_cmd->add_subcommand("prune", "delete what the database no longer needs");
  add_common(db_prune, common, false);
  db_prune->add_flag("--stale", db_stale,
                     "delete results of template versions other than the current ones (lookups "
                     "ignore them already), their runs, and the binary cache (rebuilt on use)");
  db_prune->footer(kDbExitCodes);
  auto* db_check = db_cmd->add_subcommand("check", "check the database file's integrity");
  add_common(db_check, common, false);
  db_check->footer(db_footer(
      "Opens the file read-only and runs SQLite's integrity and foreign key checks, then reports\n"
      "the schema version and counts of devices, results (ok, stale, in flight), runs and cached\n"
      "binaries. A damaged file exits 4 with the first problems found."));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    // A misspelt command reaches CLI11 as a missing subcommand; name the word the user typed.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty())
      message = "unknown command '" + std::string(argv[1]) +
                "' (devices, tune, query, check, explain, bench, strategies, report, db)";
    else if (db_cmd->parsed() && db_cmd->get_subcommands().empty())
      message = "db: " + message + " (export, import, merge, prune, check)";
    std::cerr << "ktune: " << message
              << "\nRun 'ktune --help' (or 'ktune <command> --help') for usage.\n";
    return kExitUsage;
  }

  try {
    if (devices->parsed()) return cmd_devices(common);
    if (tune_cmd->parsed()) {
      if (tune_ew->parsed()) {
        problem.family = "elementwise";
      } else if (tune_hist->parsed()) {
        problem.family = "histogram";
      } else if (tune_gemm->parsed()) {
        problem.family = "gemm";
      } else if (tune_faults->parsed()) {
        problem.family = "faults";
      } else {
        tune.defaults = true;
      }
      return cmd_tune(common, problem, tune);
    }
    if (query->parsed())
      return cmd_query(common, query_family, query_problem, query_all, query_json);
    if (check->parsed())
      return cmd_check(check_arch, check_family, check_jobs, check_verbose, check_exhaustive);
    if (explain->parsed()) return cmd_explain(common, explain_family, explain_problem);
    if (report->parsed()) return cmd_report(common, report_run, report_output);
    if (strategies->parsed())
      return cmd_strategies(common, replay_run, replay_seeds, replay_budgets, replay_lag,
                            replay_csv);
    if (bench->parsed() && bench_family == "runtime") return cmd_bench_runtime(common, bench_csv);
    if (bench->parsed())
      return cmd_bench(common, bench_family, bench_n, bench_csv, bench_repeats, bench_dtype,
                       bench_shape, bench_op);
    if (db_export->parsed()) return cmd_db_export(common, db_family, db_all, db_best, db_output);
    if (db_import->parsed()) return cmd_db_import(common, db_file, db_shipped);
    if (db_merge->parsed()) return cmd_db_merge(common, db_other);
    if (db_prune->parsed()) return cmd_db_prune(common, db_stale);
    if (db_check->parsed()) return cmd_db_check(common);
  } catch (const ktune::Error& e) {
    std::cerr << "ktune: " << e.what() << "\n";
    if (!e.details().empty()) std::cerr << e.details() << "\n";
    switch (e.code()) {
      case ktune::ErrorCode::kInvalidArgument:
        return kExitUsage;
      case ktune::ErrorCode::kNoDriver:
      case ktune::ErrorCode::kNoDevice:
        return kExitNoDevice;
      case ktune::ErrorCode::kDatabase:
        return kExitDatabase;
      default:
        return kExitError;
    }
  } catch (const std::exception& e) {
    std::cerr << "ktune: " << e.what() << "\n";
    return kExitError;
  }
  return kExitUsage;
}
