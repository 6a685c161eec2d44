// The ktune command: argument parsing (CLI11) and the error boundary (message + exit code).
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "db/exchange.hpp"
#include "families/file_family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "ktune/version.hpp"
#include "runtime/lookup.hpp"
#include "tuner/compilers.hpp"
#include "tuner/worker.hpp"

using namespace ktune::cli;

namespace {

// A whole decimal integer in [lo, hi]: no fraction, exponent, junk or wrap-around (CLI11 alone
// stored 2^64 as 2^64-1). Checked on the text, before CLI11 converts it.
CLI::Validator integer_in(long long lo, unsigned long long hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        const char* begin = text.data();
        const char* end = begin + text.size();
        if (begin != end && *begin == '+') ++begin;
        bool ok = begin != end;
        if (ok && *begin == '-') {
          long long v = 0;
          auto [at, ec] = std::from_chars(begin, end, v);
          ok = ec == std::errc() && at == end && v >= lo;
        } else if (ok) {
          unsigned long long v = 0;
          auto [at, ec] = std::from_chars(begin, end, v);
          ok = ec == std::errc() && at == end && v <= hi &&
               (lo <= 0 || v >= static_cast<unsigned long long>(lo));
        }
        return ok ? std::string() : "'" + text + "' is not an integer in " + range;
      },
      "INT in " + range, "integer");
}

// A finite number in [lo, hi]: NaN and infinities are refused (a NaN passes every range check).
CLI::Validator real_in(double lo, double hi) {
  std::ostringstream r;
  r << "[" << lo << ", " << hi << "]";
  const std::string range = r.str();
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end == text.c_str() + text.size() && errno == 0 &&
                        std::isfinite(v) && v >= lo && v <= hi;
        return ok ? std::string() : "'" + text + "' is not a finite number in " + range;
      },
      "NUMBER in " + range, "real");
}

// Word-wraps text to `width` columns. A paragraph's lines are joined first (its source breaks
// were made for 100 columns), except lines that start with spaces, which stay lines of their own
// (lists, examples); blank lines separate paragraphs.
std::string wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;  // logical lines, each wrapped on its own
  std::istringstream in(text);
  std::string line;
  bool joinable = false;
  while (std::getline(in, line)) {
    const bool indented = !line.empty() && line[0] == ' ';
    if (line.empty()) {
      lines.emplace_back();
      joinable = false;
    } else if (joinable && !indented) {
      lines.back() += ' ' + line;
    } else {
      lines.push_back(line);
      joinable = !indented;
    }
  }
  std::string out;
  for (std::size_t l = 0; l < lines.size(); ++l) {
    if (l) out += '\n';
    const std::string& text_line = lines[l];
    const std::size_t indent = std::min(text_line.find_first_not_of(' '), text_line.size());
    std::istringstream words(text_line);
    std::string word;
    std::size_t column = indent;
    out += std::string(indent, ' ');
    bool first = true;
    while (words >> word) {
      if (!first && column + 1 + word.size() > width) {
        out += '\n' + std::string(indent, ' ');
        column = indent;
      } else if (!first) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      first = false;
    }
  }
  return out;
}

// The terminal's width for help: stdout's columns, else $COLUMNS, else 80.
std::size_t help_width() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::clamp<std::size_t>(ws.ws_col, 60, 200);
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    const long v = std::strtol(c, nullptr, 10);
    if (v > 0) return std::clamp<std::size_t>(static_cast<std::size_t>(v), 60, 200);
  }
  return 80;
}

// CLI11's help with every description wrapped to the terminal (its own lines ran to 260 columns).
class WrappingFormatter : public CLI::Formatter {
 public:
  explicit WrappingFormatter(std::size_t width) : width_(width) { column_width(32); }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(opt->get_description(), text_width());
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap(sub->get_description(), text_width()), get_column_width());
    return out.str();
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string d = app->get_description();
    return d.empty() ? std::string() : wrap(d, width_) + "\n";
  }
  std::string make_footer(const CLI::App* app) const override {
    const std::string f = app->get_footer();
    return f.empty() ? std::string() : wrap(f, width_) + "\n";
  }

 private:
  std::size_t text_width() const { return std::max<std::size_t>(30, width_ - get_column_width()); }
  std::size_t width_;
};

const char* const kExitCodes =
    "Exit codes: 0 ok, 1 a check or verification failed, 2 bad arguments, 3 no CUDA driver or "
    "device, 4 database error, 5 other error (CUDA, compile, writing output, internal).\n\n"
    "Database: --db, else $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db "
    "(~/.cache/ktune/tuning.db). Without a database file, reading commands show the shipped "
    "results.";

const char* const kDbExitCodes =
    "Exit codes: 0 done, 2 bad arguments or an unreadable or invalid JSON file (the message names\n"
    "the entry and field; nothing was written), 4 database error (no such file, not a ktune\n"
    "database, damaged, locked), 5 writing output failed.\n\n"
    "Database: --db, else $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db "
    "(~/.cache/ktune/tuning.db).";

// --family-file is taken out of the arguments before CLI11 parses them (take_family_files): the
// option is declared only so that --help lists it.
void add_family_file_option(CLI::App* app) {
  static std::vector<std::string> unused;
  app->add_option("--family-file", unused,
                  "a family file (NAME.family.toml) making a kernel of your own known like a "
                  "built-in family; repeatable, and anywhere on the line. $KTUNE_FAMILY_PATH "
                  "(folders separated by ':') adds every *.family.toml in them");
}

// Loads the family files named by --family-file PATH or --family-file=PATH and removes those
// arguments, so that the families (and the options of their axes) exist before parsing.
std::vector<char*> take_family_files(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string path;
    if (i > 0 && arg == "--family-file") {
      if (i + 1 >= argc)
        throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                           "--family-file: needs the path of a family file");
      path = argv[++i];
    } else if (i > 0 && arg.rfind("--family-file=", 0) == 0) {
      path = arg.substr(14);
    } else {
      rest.push_back(argv[i]);
      continue;
    }
    ktune::add_family_file(path, /*for_child_processes=*/true);
  }
  ktune::user_families();  // $KTUNE_FAMILY_PATH: a broken file is reported before anything runs
  rest.push_back(nullptr);
  return rest;
}

// A family file's problem axes as options (--rows 4096 --dtype f64); those not given take the
// values of the family's first tuning problem. An axis named like an option the command has
// already is left to --problem-less defaults (the option keeps its meaning).
void add_axis_options(CLI::App* cmd, const ktune::Family& family, ProblemArgs& problem) {
  for (const std::string& line : family.describe_axes()) {
    const std::string axis = line.substr(0, line.find('\t'));
    const std::string rest = line.substr(line.find('\t') + 1);
    const std::string option = "--" + axis;
    if (cmd->get_option_no_throw(option)) continue;
    cmd->add_option_function<std::string>(
           option, [&problem, axis](const std::string& v) { problem.axes[axis] = v; },
           "problem axis: " + rest.substr(0, rest.find('\t')) + ". " +
               rest.substr(rest.find('\t') + 1))
        ->type_name("VALUE");
  }
}

void add_common(CLI::App* app, Common& common, bool with_device = true) {
  app->add_option("--db", common.db,
                  "tuning database file (default: $KTUNE_DB or the cache directory)");
  if (with_device)
    app->add_option("--device", common.device, "CUDA device ordinal")->check(integer_in(0, 1023));
  app->add_flag("--quiet,-q", common.quiet, "no progress lines or notes on stderr (errors stay)");
  add_family_file_option(app);
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
      ->check(integer_in(0, 64) & CLI::IsMember({4, 8, 16}))
      ->capture_default_str();
}

void add_histogram_options(CLI::App* app, ProblemArgs& p) {
  app->add_option("--dtype", p.samples, "sample type")
      ->check(CLI::IsMember({"u8", "u16", "i32", "f32"}))
      ->capture_default_str();
  app->add_option("--bins", p.bins, "number of bins (256 with u8: one bin per byte value)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  app->add_option("--n", p.n, "number of samples; K, M, G suffixes are powers of 2 (1G = 2^30)")
      ->capture_default_str();
  app->add_option("--align", p.align, "alignment class of the sample pointer in bytes")
      ->check(integer_in(0, 64) & CLI::IsMember({1, 2, 4, 8, 16}))
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
      ->check(integer_in(0, 64) & CLI::IsMember({0, 1, 2, 4}))
      ->capture_default_str();
  app->add_flag("--suite", p.suite,
                "tune every shape of the benchmark suite (ktune bench gemm) for --dtype");
  // The classes are in the text: the list as a type would run past the help's 100 columns.
  CLI::Validator grid_classes = CLI::IsMember(std::vector<std::string>(
      std::begin(ktune::kGemmGridClasses), std::end(ktune::kGemmGridClasses)));
  grid_classes.description("");
  app->add_option("--grid", p.grid,
                  "tune the shape grid the shipped presets were tuned on (docs/GEMM.md, \"The "
                  "preset grid\") for --dtype: all of it, the tiled shapes alone, the small "
                  "tiled ones (fewer than four waves of 64 x 64 tiles on the first --device: "
                  "where the smallest tiles are in the space), or one part of it: square, "
                  "general, tall-wide, small-k, huge-k or skinny (m or n at most 16); with "
                  "--max-evals/--max-seconds per shape")
      ->expected(0, 1)
      ->default_str("all")
      ->type_name("CLASS")
      ->check(grid_classes);
}

void add_tune_options(CLI::App* app, TuneArgs& t) {
  app->add_option("--strategy", t.strategy,
                  "search strategy: auto (exhaustive when the space fits --max-evals, else "
                  "model), exhaustive, random, evolve (mutations of the best found so far), "
                  "anneal (simulated annealing), genetic (crossover of the best found so far), "
                  "model (a random forest predicts the time of untried configurations), hybrid "
                  "(model, with one proposal in four the best kernel's one-parameter neighbour "
                  "that the forest predicts fastest)")
      ->check(CLI::IsMember(
          {"auto", "exhaustive", "random", "evolve", "anneal", "genetic", "model", "hybrid"}))
      ->capture_default_str();
  app->add_option("--seed", t.seed,
                  "seed of the strategy and of the random inputs (one set for every candidate of "
                  "the run, so that a GEMM reference is made once)")
      ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()))
      ->capture_default_str();
  app->add_option("--max-evals", t.max_evals, "evaluations at most in this run (0: no limit)")
      ->check(integer_in(0, 1'000'000'000))
      ->capture_default_str();
  app->add_option("--max-seconds", t.max_seconds,
                  "wall time budget of this run in seconds (0: no limit)")
      ->check(real_in(0, 1e9))
      ->capture_default_str();
  app->add_option("--patience", t.patience,
                  "stop after this many evaluations in a row without a new best at least 0.5% "
                  "faster (0: no limit)")
      ->check(integer_in(0, 1'000'000'000))
      ->capture_default_str();
  app->add_flag("--measure-winners", t.measure_winners,
                "measure the winners of the family's other problems on this GPU's architecture "
                "(GEMM: every tuned shape of the dtype, any op) on this one, adapted, and "
                "nothing else: what the runtime ranks untuned problems from; a pair that a "
                "row of this GPU measures already, shipped ones included, is skipped "
                "(--max-evals and --max-seconds still cap it)");
  app->add_option(
      "--only", t.only,
      "hold a parameter to some of its values, NAME=V[,V...] (repeatable), e.g. "
      "--only MMA=0 for f64 GEMM on the FMA units alone (an unknown name lists the parameters)");
  app->add_option("--repeats", t.repeats, "timed runs per candidate (median reported)")
      ->check(integer_in(1, 100000))
      ->capture_default_str();
  app->add_option("--warmup", t.warmup, "untimed runs before timing")
      ->check(integer_in(0, 1000))
      ->capture_default_str();
  app->add_option("--timing-budget-ms", t.timing_budget_ms,
                  "a long candidate is timed fewer times: as many runs as fit in this many ms of "
                  "its own time (its first warm-up run tells), at least 5, after one warm-up; "
                  "0: always --repeats")
      ->type_name("MS")
      ->check(real_in(0, 1e9))
      ->capture_default_str();
  app->add_option("--jobs", t.jobs,
                  "compile threads, each with a compiler process of its own (0: one per core)")
      ->check(integer_in(0, 1024))
      ->capture_default_str();
  app->add_flag("--compile-in-process", t.compile_in_process,
                "compile with NVRTC on threads of this process instead of one child process "
                "(ktune __compiler) a thread: fewer kernels a second where there are many cores "
                "(one process of NVRTC does not use them all), and a crash of NVRTC ends the run");
  app->add_option(
         "--binary-cache-mb", t.binary_cache_mb,
         "compile each kernel once: candidates compiled by an earlier run (of any problem) "
         "are read from the database's binary cache, and this run's are kept there, within "
         "this many MiB of code, the oldest dropped first (0: compile all, keep none)")
      ->check(integer_in(0, 1'000'000))
      ->capture_default_str();
  app->add_flag(
      "--no-launch-variants", t.no_launch_variants,
      "do not measure, while every candidate in flight still compiles, the launch "
      "variants of the kernels measured so far (configurations that differ in "
      "parameters passed at launch alone, GEMM's SPLITK and SWIZZLE: no compile), "
      "fastest kernel first; by default they fill the GPU's wait (--max-evals counts them; "
      "once the budget is all proposed, a proposal still compiling gives its place to one)");
  app->add_flag("--in-process", t.in_process,
                "measure candidates in this process instead of a worker process: no worker "
                "start-up, but a faulting candidate loses the CUDA context and stops the run "
                "(run again to resume) and a hanging one is not stopped");
  app->add_option("--timeout-floor", t.timeout_floor,
                  "seconds a launch of a candidate may take at least before it is killed and "
                  "recorded as timeout; the limit is max(floor, 50 x the best time so far)")
      ->check(real_in(0.01, 3600.0))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  // The tuner's child processes, started by `tune` (and `check`) on a socket's descriptor: not
  // commands for users. A tuning worker (tuner/worker.hpp) and a compiler (tuner/compilers.hpp).
  struct Child {
    const char* command;
    const char* name;
    int (*serve)(int fd);
  };
  for (const Child& child : {Child{"__worker", "worker", &ktune::run_tuning_worker},
                             Child{"__compiler", "compiler", &ktune::run_compiler}}) {
    if (argc != 3 || std::string(argv[1]) != child.command) continue;
    try {
      return child.serve(std::stoi(argv[2]));
    } catch (const std::exception& e) {
      std::cerr << "ktune " << child.name << ": " << e.what() << "\n";
      return kExitError;
    }
  }
  // A file size limit (ulimit -f) makes writes fail with EFBIG, reported with the file's name,
  // instead of killing the process with SIGXFSZ halfway through a write.
  signal(SIGXFSZ, SIG_IGN);

  std::vector<char*> args;
  try {
    args = take_family_files(argc, argv);
  } catch (const ktune::Error& e) {
    std::cerr << "ktune: " << e.what() << "\n";
    return kExitUsage;
  }
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();

  CLI::App app{
      "ktune: autotuned CUDA kernels (GEMM, histogram, elementwise) generated with NVRTC.\n"
      "Tune once per GPU, then link ktune::ktune and get the tuned kernels.",
      "ktune"};
  app.formatter(std::make_shared<WrappingFormatter>(help_width()));
  app.footer(kExitCodes);
  app.set_version_flag("--version", ktune::version_text());
  // 0 or 1 here, so that an unknown option is named ("--bogus") instead of CLI11 asking for a
  // command first; no command at all is reported below.
  app.require_subcommand(0, 1);

  Common common;
  ProblemArgs problem;
  TuneArgs tune;

  auto* devices = app.add_subcommand("devices", "list the CUDA devices of this machine");

  auto* tune_cmd =
      app.add_subcommand("tune",
                         "tune problems into the database; with no family, tune the default "
                         "problems of every family and print the result table");
  add_common(tune_cmd, common, false);
  auto add_device_list = [&](CLI::App* cmd) {
    cmd->add_option("--device", tune.devices,
                    "CUDA device ordinal, a list (0,1), or 'all': one worker per GPU, all "
                    "writing to the same database")
        ->capture_default_str();
  };
  add_device_list(tune_cmd);
  add_tune_options(tune_cmd, tune);
  tune_cmd->footer(kExitCodes);
  auto* replay_from = tune_cmd->add_option(
      "--replay-from", tune.replay_from,
      "tune without a GPU: draw every measurement from a recorded run in this database (tests "
      "strategies and resume; with --replay; the family and problem are the run's)");
  tune_cmd->add_option("--replay", tune.replay_run, "the recorded run id (with --replay-from)")
      ->needs(replay_from)
      ->check(integer_in(1, std::numeric_limits<std::int64_t>::max()));
  replay_from->needs("--replay");
  tune_cmd
      ->add_option("--replay-delay-ms", tune.replay_delay_ms,
                   "wait this long per replayed candidate, as if a GPU were timing it")
      ->check(real_in(0.0, 60000.0));
  // The options of `tune` are the family's too, so that they may follow it (tune gemm
  // --max-evals 9) and its --help lists them.
  auto add_family = [&](const char* name, const char* help) {
    auto* cmd = tune_cmd->add_subcommand(name, help);
    add_common(cmd, common, false);
    add_device_list(cmd);
    add_tune_options(cmd, tune);
    cmd->footer(kExitCodes);
    return cmd;
  };
  auto* tune_ew = add_family("elementwise", "tune copy / add / complex_copy for one size");
  add_elementwise_options(tune_ew, problem);
  auto* tune_hist =
      add_family("histogram", "tune a histogram for one sample type, bin count and size");
  add_histogram_options(tune_hist, problem);
  auto* tune_gemm = add_family(
      "gemm",
      "tune one GEMM shape (--shape, --op, --dtype), the benchmark suite (--suite) or the "
      "preset grid (--grid); a shape with m or n at most 16 tunes the skinny kernels (family "
      "gemm_skinny), which the runtime runs for it");
  add_gemm_options(tune_gemm, problem);
  // The suite has its own shapes and ops.
  tune_gemm->get_option("--suite")->excludes("--shape")->excludes("--op");
  tune_gemm->get_option("--grid")->excludes("--shape")->excludes("--op")->excludes("--suite");
  // Families of family files, and the built-in families described by their axes alone
  // (gemm_tc, gemm_tc80, gemm_tc_skinny): one option per problem axis.
  std::vector<std::pair<CLI::App*, std::string>> tune_user;
  std::vector<const ktune::Family*> by_axes = {&ktune::find_family("gemm_tc"),
                                               &ktune::find_family("gemm_tc80"),
                                               &ktune::find_family("gemm_tc_skinny")};
  for (const ktune::Family* family : ktune::user_families()) by_axes.push_back(family);
  for (const ktune::Family* family : by_axes) {
    auto* cmd = add_family(family->name().c_str(),
                           (family->description() + " (" + family->origin() + ")").c_str());
    add_axis_options(cmd, *family, problem);
    tune_user.emplace_back(cmd, family->name());
  }
  tune_cmd->require_subcommand(0, 1);

  std::string query_family, query_problem;
  bool query_all = false, query_json = false;
  auto* query =
      app.add_subcommand("query", "show the best tuned configuration per device and problem");
  add_common(query, common, false);
  query->add_option("--family", query_family, "only this family");
  query->add_option("--problem", query_problem,
                    "only this problem key, in any order of its fields (checked, and matched as "
                    "'ktune query' prints it)");
  query->add_flag("--all", query_all,
                  "every evaluated candidate with its status, not only the best");
  query->add_flag("--json", query_json, "print JSON instead of a table");
  query->footer(kExitCodes);

  CheckArgs check_args;
  std::string params_family;
  auto* params = app.add_subcommand(
      "params", "list a family's tuning parameters, constraints and problem axes");
  params->add_option("family", params_family, "family name")->required();
  add_family_file_option(params);

  auto* check =
      app.add_subcommand("check",
                         "compile every variant of every family for an architecture with NVRTC "
                         "(no GPU needed); report registers and spills; exit 1 on any failure");
  check
      ->add_option("--arch", check_args.arch,
                   "target architecture, e.g. sm_90 (one NVRTC supports)")
      ->capture_default_str();
  check->add_option("--family", check_args.family, "only this family");
  check
      ->add_option("--jobs", check_args.jobs,
                   "compile threads, each with a compiler process of its own (0: one per core)")
      ->check(integer_in(0, 1024))
      ->capture_default_str();
  check->add_flag("--compile-in-process", check_args.compile_in_process,
                  "compile with NVRTC on threads of this process instead of one child process "
                  "(ktune __compiler) a thread");
  check->add_flag("--verbose,-v", check_args.verbose, "one line per kernel");
  add_family_file_option(check);
  check->add_flag("--quiet,-q", common.quiet, "no progress lines on stderr");
  auto* check_exhaustive =
      check->add_flag("--exhaustive", check_args.exhaustive,
                      "compile the whole space; by default a family with a large space (gemm) "
                      "compiles every tile shape and every code path, not every combination");
  check
      ->add_option("--sample", check_args.sample,
                   "a quick check: at most N kernels of each problem, drawn at random by --seed "
                   "(the default configuration's and the reference kernels always among them); "
                   "0 compiles them all (the whole check of every family takes about 15 minutes "
                   "on 2 cores)")
      ->check(integer_in(0, 1'000'000'000))
      ->excludes(check_exhaustive)
      ->capture_default_str();
  check->add_option("--seed", check_args.seed, "seed of --sample's draw")
      ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()))
      ->capture_default_str();

  std::int64_t report_run = 0;
  std::string report_output;
  auto* report = app.add_subcommand(
      "report", "plot a tuning run as SVG: best so far against evaluations and wall time");
  add_common(report, common, false);
  report->add_option("run", report_run, "run id (printed by ktune tune; ktune query --all --json)")
      ->required()
      ->check(integer_in(1, std::numeric_limits<std::int64_t>::max()));
  report->add_option("-o,--output", report_output,
                     "SVG file to write (default: run-<id>.svg; '-' for stdout)");

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
      ->check(integer_in(1, std::numeric_limits<std::int64_t>::max()));
  strategies->add_option("--seeds", replay_seeds, "seeds per strategy and budget")
      ->check(integer_in(1, 10000))
      ->capture_default_str();
  strategies->add_option("--budgets", replay_budgets, "evaluation budgets")
      ->delimiter(',')
      ->check(integer_in(1, 1'000'000))
      ->capture_default_str();
  strategies
      ->add_option("--lag", replay_lag,
                   "proposals in flight before the first result returns (the compile "
                   "pipeline's window: 2 per compile thread)")
      ->check(integer_in(1, 1024))
      ->capture_default_str();
  strategies->add_option("--csv", replay_csv, "also write the table to this CSV file");

  std::string explain_family, explain_problem, explain_gpu, explain_arch;
  bool explain_strict = false;
  std::size_t explain_candidates = ktune::kShownCandidates;
  auto* explain =
      app.add_subcommand("explain", "which configuration a problem gets, from which lookup step");
  add_common(explain, common);
  explain->add_option("family", explain_family, "family name")->required();
  explain
      ->add_option("problem", explain_problem,
                   "problem key, e.g. 'align=16;dtype=f32;n=1048576;op=copy'")
      ->required();
  auto* explain_gpu_opt = explain->add_option(
      "--gpu", explain_gpu,
      "answer for this GPU by name, as the database knows it (e.g. 'NVIDIA H200'), without a "
      "GPU here");
  auto* explain_arch_opt = explain->add_option(
      "--arch", explain_arch,
      "answer for a GPU of this architecture (e.g. sm_90) without a GPU here: the best of the "
      "same architecture, else the default");
  explain->add_flag("--strict-fp32", explain_strict,
                    "answer as a runtime with Options::strict_fp32 does: f32 GEMM on the FMA "
                    "units only (no 3xTF32 kernel for 9 to 16 columns)");
  explain
      ->add_option("--candidates", explain_candidates,
                   "how many of the model's ranked candidates to list, fastest first (0: every "
                   "one it ranked)")
      ->check(integer_in(0, 1000000))
      ->capture_default_str();
  explain_gpu_opt->excludes(explain_arch_opt)->excludes("--device");
  explain_arch_opt->excludes("--device");
  explain->footer(kExitCodes);

  // ktune bench FAMILY: one subcommand per family, each with the options that apply to it.
  std::string bench_n = "256M", bench_csv;
  int bench_repeats = 30;
  std::string bench_dtype = "all", bench_op = "nn";
  std::vector<std::string> bench_shapes;
  std::int64_t bench_batch = 1;
  std::string bench_tc_family;
  auto* bench =
      app.add_subcommand("bench",
                         "time the runtime's tuned kernels against the anchors in the same run "
                         "(cudaMemcpy for elementwise, cuBLAS for gemm, CUB for histogram)");
  bench->require_subcommand(1);
  auto add_bench = [&](const char* name, const char* help, bool with_repeats = true) {
    auto* cmd = bench->add_subcommand(name, help);
    add_common(cmd, common);
    cmd->add_option("--csv", bench_csv, "also write the rows to this CSV file");
    if (with_repeats)
      cmd->add_option("--repeats", bench_repeats, "timed runs per row")
          ->check(integer_in(20, 100000))
          ->capture_default_str();
    cmd->footer(kExitCodes);
    return cmd;
  };
  auto* bench_ew = add_bench("elementwise", "copy and add against cudaMemcpy");
  bench_ew
      ->add_option("--n", bench_n,
                   "elements of f32 per array; K, M, G suffixes are powers of 2 (default 256M = "
                   "1 GiB)")
      ->capture_default_str();
  auto* bench_hist = add_bench(
      "histogram", "byte and float histograms against CUB HistogramEven (1 GiB and 16 MiB)");
  auto* bench_gemm = add_bench(
      "gemm",
      "the GEMM suite (or the --shape shapes, or --random-shapes N drawn at random) against "
      "cuBLAS, and the suite's f64 against cuBLASLt on the FP64 FMA units");
  bench_gemm
      ->add_option("--shape", bench_shapes,
                   "MxNxK shapes instead of the suite, each in --op or in the op its :OP suffix "
                   "names (e.g. 1x4096x4096:nt); several after one --shape, or --shape again")
      ->type_name("MxNxK[:OP]");
  bench_gemm
      ->add_option("--op", bench_op, "with --shape: nn, nt, tn or tt, where a shape names none")
      ->check(CLI::IsMember({"nn", "nt", "tn", "tt"}))
      ->capture_default_str();
  bench_gemm
      ->add_option("--dtype", bench_dtype,
                   "f32, f64 or all (FMA units and FP64 tensor cores, against cuBLAS), or bf16, "
                   "f16 or tf32 (the tensor-core family gemm_tc, C of the same type, f32 for tf32, "
                   "op tn unless --op, against cuBLASLt)")
      ->check(CLI::IsMember({"f32", "f64", "all", "bf16", "f16", "tf32"}))
      ->capture_default_str();
  bench_gemm
      ->add_option("--batch", bench_batch,
                   "with --dtype bf16, f16 or tf32: strided batches of this many products of each "
                   "shape, against cuBLASLt's strided batch")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(65535)))
      ->capture_default_str();
  bench_gemm
      ->add_option(
          "--tc-family", bench_tc_family,
          "with --dtype bf16, f16 or tf32: the tensor-core family to time, gemm_tc (wgmma and TMA, "
          "sm_90) or gemm_tc80 (mma.sync and cp.async, sm_80 and later: the A100 and L40 fallback, "
          "which runs on sm_90 too), or gemm_tc_skinny (the FMA-unit kernels for m or n at most "
          "16, with --shape); default: the one the runtime runs on this GPU (gemm_tc_skinny for m "
          "or n at most 4)")
      ->check(CLI::IsMember({"gemm_tc", "gemm_tc80", "gemm_tc_skinny"}));
  // The any-shape benchmark: its own database, so that neither stage sees the user's results.
  RandomShapesArgs bench_random;
  std::uint64_t bench_seed = 0;
  auto* random_opt =
      bench_gemm
          ->add_option(
              "--random-shapes", bench_random.count,
              "instead of the suite, N shapes per dtype drawn at random (docs/GEMM.md, \"Random "
              "shapes for the any-shape benchmark\"): ops uniform among nn, nt, tn, tt; 50% "
              "general (m, n, k log-uniform in [64, 16384]), 15% skinny (m or n in [1, 16], the "
              "others in [256, 16384]), 5% matrix-vector (m or n = 1, the others in [1024, "
              "16384]), 15% huge k (k in [32768, 1048576], m and n in [16, 1024]), 15% small k "
              "(k in [16, 256], m and n in [256, 16384]); the largest dimension scaled down "
              "where A, B and C exceed 3 GiB; f32 and f64 draw from the same seed. Timed "
              "against cuBLAS, verified, in a new database of the run's own (never --db's). "
              "With --dtype bf16, f16 or tf32: the GPU's tensor-core family against cuBLASLt "
              "(tf32 in op tn)")
          ->type_name("N")
          ->check(integer_in(1, 100000));
  auto* seed_opt =
      bench_gemm
          ->add_option("--seed", bench_seed,
                       "with --random-shapes: the seed of the draw (default: from the clock; "
                       "printed and written to the CSV, to draw the same shapes again)")
          ->type_name("S")
          ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()));
  bench_gemm
      ->add_option("--stages", bench_random.stages,
                   "with --random-shapes, a comma-separated list of: presets (the runtime "
                   "answering from a new database holding the shipped presets alone), nearest "
                   "(the same, with the model's ranking off: each shape gets the nearest tuned "
                   "problem's winner, as before it), tuned (after tuning each shape into it as "
                   "'ktune tune gemm' does, in worker processes); both = presets,tuned")
      ->capture_default_str();
  bench_gemm
      ->add_option("--keep-db", bench_random.keep_db,
                   "with --random-shapes: create the run's database at PATH (a new file) "
                   "and keep it, instead of a temporary one removed at the end")
      ->type_name("PATH");
  bench_gemm
      ->add_option("--max-evals", bench_random.tune.max_evals,
                   "with --random-shapes and the tuned stage: evaluations at most per shape, as "
                   "in 'ktune tune' (0: no limit)")
      ->check(integer_in(0, 1'000'000'000))
      ->capture_default_str();
  bench_gemm
      ->add_option("--max-seconds", bench_random.tune.max_seconds,
                   "with --random-shapes and the tuned stage: seconds of tuning at most per "
                   "shape (0: no limit)")
      ->check(real_in(0, 1e9))
      ->capture_default_str();
  bench_gemm
      ->add_option("--shard", bench_random.shard,
                   "with --random-shapes: run the K-th of N consecutive parts of the draw (K/N, "
                   "e.g. 2/4: shapes 17 to 32 of 64), the same shapes a whole run times; a long "
                   "tuned stage split over several runs, each in a database of its own")
      ->type_name("K/N");
  bench_gemm->add_flag("--list-shapes", bench_random.list,
                       "with --random-shapes: print the drawn shapes (of --shard's part) with "
                       "their work and memory, time nothing and stop (no GPU needed)");
  bench_gemm->add_flag("--no-launch-variants", bench_random.tune.no_launch_variants,
                       "with --random-shapes and the tuned stage: no launch variants while "
                       "compiles run, as in 'ktune tune'");
  random_opt->excludes("--shape")
      ->excludes("--op")
      ->excludes("--db")
      ->excludes("--batch")
      ->excludes("--tc-family");
  for (const char* name : {"--seed", "--stages", "--keep-db", "--max-evals", "--max-seconds",
                           "--no-launch-variants", "--shard", "--list-shapes"})
    bench_gemm->get_option(name)->needs(random_opt);
  auto* bench_rt = add_bench(
      "runtime",
      "the first call of a tuned problem in a new process and the host time of a repeated "
      "call against a raw cuLaunchKernel",
      false);
  std::vector<std::pair<CLI::App*, std::string>> bench_user;
  for (const ktune::Family* family : ktune::user_families()) {
    auto* cmd = add_bench(family->name().c_str(),
                          (family->description() +
                           ": the tuned configuration against the default one (and cudaMemcpy "
                           "for a GB/s metric)")
                              .c_str());
    add_axis_options(cmd, *family, problem);
    bench_user.emplace_back(cmd, family->name());
  }

  // ktune db: moving results between machines; binaries never travel (code from elsewhere).
  // Short descriptions for the command list; what each does in detail goes in its own --help.
  auto* db_cmd = app.add_subcommand(
      "db", "export, import, merge, prune or check the tuning database (results, never binaries)");
  db_cmd->require_subcommand(1);
  db_cmd->footer(kDbExitCodes);
  auto db_footer = [](const char* detail) { return std::string(detail) + "\n\n" + kDbExitCodes; };
  std::string db_family, db_output, db_file, db_other;
  bool db_all = false, db_best = false, db_shipped = false, db_stale = false;
  bool db_own = false, db_compact = false;
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
  db_export->add_flag("--own", db_own,
                      "only the database's own measurements, not the shipped presets it loaded");
  db_export->add_flag("--compact", db_compact,
                      "one result per line with its configuration text and times alone (no "
                      "parameters object, resources or versions): for large sets of "
                      "measurements such as db/presets/*-cross.json");
  db_export->add_option("-o,--output", db_output,
                        "write to this file instead of stdout (replaced whole, or left as it was "
                        "if the export fails)");
  db_export->footer(db_footer(
      "Each result carries its device (name, compute capability, SMs), family, template hash,\n"
      "problem, configuration (as text and as parameters), status, min/median/max time, repeats,\n"
      "metric, origin and source, tool and NVRTC versions, and when it was measured; never a\n"
      "compiled binary. By default the ok results of the current templates (what a lookup can\n"
      "use); this is the format of the shipped presets (db/presets/). Without a database file,\n"
      "the shipped results are exported."));
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
      "space and its constraints on the entry's device. If one fails, nothing is written (no\n"
      "database is created) and the message names the entry and field, e.g. results[3].config.\n"
      "Entries of another template version are skipped (lookups would ignore them). Per key\n"
      "(device, family, template, problem, configuration) the better row stays: your own\n"
      "results over shipped ones, ok over failed, then the lower median time. Imported rows\n"
      "record the file they came from."));
  auto* db_kt = db_cmd->add_subcommand(
      "import-kerneltuner",
      "import a Kernel Tuner cache file (tune_kernel(..., cache=FILE)) or T4 results file "
      "(store_output_file) as results of a family whose parameters match");
  add_common(db_kt, common, false);
  ktune::KernelTunerImport kt;
  std::string kt_cc;
  std::vector<std::string> kt_rename;
  db_kt->add_option("file", db_file, "the Kernel Tuner cache file, or T4 results file (JSON)")
      ->required();
  db_kt->add_option("--family", kt.family, "the ktune family (with --family-file for your own)")
      ->required();
  db_kt
      ->add_option("--problem", kt.problem,
                   "the family's problem the cache was tuned on, as a key "
                   "(ktune params FAMILY lists the axes), e.g. 'cols=8192;dtype=f32;rows=8192'")
      ->required();
  db_kt
      ->add_option("--cc", kt_cc,
                   "the GPU's compute capability, e.g. 9.0 (Kernel Tuner does not "
                   "record it)")
      ->required();
  db_kt->add_option("--sms", kt.sm_count, "the GPU's SM count, e.g. 132 for an H100 SXM")
      ->required()
      ->check(CLI::Range(1, 100000));
  db_kt->add_option("--gpu", kt.device_name,
                    "the GPU's name as ktune devices prints it (default: the cache's device_name; "
                    "needed for T4 results, which do not name it)");
  db_kt
      ->add_option("--rename", kt_rename,
                   "KT=OURS: the cache's parameter KT is the family's OURS (repeatable)")
      ->allow_extra_args(false);
  db_kt->footer(db_footer(
      "Each configuration of the cache becomes a result of the family's current template for the\n"
      "problem on that GPU: its times (the \"times\" list: min, median, max) and the family's\n"
      "metric from them; InvalidConfig, CompilationFailedConfig and RuntimeFailedConfig become\n"
      "invalid, compile_error and launch_error (those the family refuses anyway are not\n"
      "recorded). Every result is checked like a JSON import (parameters and values, the family's\n"
      "constraints on that GPU) before anything is written; the first failure names the cache key\n"
      "and field. Lookups then answer with the best of them on that GPU (Runtime::launch)."));
  auto* db_merge =
      db_cmd->add_subcommand("merge", "merge another ktune database, keeping the better results");
  add_common(db_merge, common, false);
  db_merge->add_option("other", db_other, "the other database file")->required();
  db_merge->footer(db_footer(
      "The other file is opened read-only and its binaries are never taken (a binary from\n"
      "elsewhere is code from elsewhere); it must be a ktune database (no views or triggers)\n"
      "within the limits of an import, and every row is checked like an import before this\n"
      "database is opened. Devices are matched by name, compute capability and SM count. Per\n"
      "key the better row stays: your own results over shipped ones, ok over failed, then the\n"
      "lower median time; rows taken record the file they came from. Results of another\n"
      "template version and rows still in flight are skipped. All rows are written in one\n"
      "transaction."));
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

  const char* const kCommands =
      "devices, tune, query, check, params, explain, bench, strategies, report, db";
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty())
      throw CLI::ParseError(std::string("a command is required (") + kCommands + ")",
                            CLI::ExitCodes::RequiredError);
    // The family and problem of a replay are the recorded run's: a family given too would be
    // ignored.
    if (!tune.replay_from.empty() && !tune_cmd->get_subcommands().empty())
      throw CLI::ParseError(
          "--replay-from: the family and problem come from the recorded run; "
          "leave out '" +
              tune_cmd->get_subcommands().front()->get_name() + "' and its options",
          CLI::ExitCodes::ExcludesError);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    // A misspelt command reaches CLI11 as an extra argument; name the word the user typed.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty())
      message = "unknown command '" + std::string(argv[1]) + "' (" + kCommands + ")";
    else if (db_cmd->parsed() && db_cmd->get_subcommands().empty())
      message = "db: " + message + " (export, import, merge, prune, check)";
    else if (bench->parsed() && bench->get_subcommands().empty()) {
      // The word after `bench` that is no option: the family the user meant.
      std::string word;
      for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "bench" && argv[i + 1][0] != '-') word = argv[i + 1];
      message = word.empty() ? "bench: which family? (elementwise, gemm, histogram, runtime)"
                             : "bench: unknown family '" + word +
                                   "' (elementwise, gemm, histogram, runtime)";
    }
    std::cerr << "ktune: " << message
              << "\nRun 'ktune --help' (or 'ktune <command> --help') for usage.\n";
    return kExitUsage;
  }

  int code = kExitUsage;
  try {
    if (devices->parsed()) {
      code = cmd_devices(common);
    } else if (tune_cmd->parsed()) {
      if (tune_ew->parsed()) {
        problem.family = "elementwise";
      } else if (tune_hist->parsed()) {
        problem.family = "histogram";
      } else if (tune_gemm->parsed()) {
        problem.family = "gemm";
      } else if (auto it = std::find_if(tune_user.begin(), tune_user.end(),
                                        [](const auto& u) { return u.first->parsed(); });
                 it != tune_user.end()) {
        problem.family = it->second;
      } else {
        tune.defaults = true;
      }
      code = cmd_tune(common, problem, tune);
    } else if (query->parsed()) {
      code = cmd_query(common, query_family, query_problem, query_all, query_json);
    } else if (params->parsed()) {
      code = cmd_params(params_family);
    } else if (check->parsed()) {
      code = cmd_check(check_args, common.quiet);
    } else if (explain->parsed()) {
      code = cmd_explain(common, explain_family, explain_problem, explain_gpu, explain_arch,
                         explain_strict, explain_candidates);
    } else if (report->parsed()) {
      code = cmd_report(common, report_run, report_output);
    } else if (strategies->parsed()) {
      code =
          cmd_strategies(common, replay_run, replay_seeds, replay_budgets, replay_lag, replay_csv);
    } else if (auto b = std::find_if(bench_user.begin(), bench_user.end(),
                                     [](const auto& u) { return u.first->parsed(); });
               b != bench_user.end()) {
      problem.family = b->second;
      code = cmd_bench_family(common, problem, bench_csv, bench_repeats);
    } else if (bench_rt->parsed()) {
      code = cmd_bench_runtime(common, bench_csv);
    } else if (bench_gemm->parsed() && random_opt->count() > 0) {
      if (seed_opt->count() > 0) bench_random.seed = bench_seed;
      code = cmd_bench_random_gemm(common, bench_random, bench_csv, bench_repeats, bench_dtype);
    } else if (bench_ew->parsed() || bench_hist->parsed() || bench_gemm->parsed()) {
      const std::string family = bench_ew->parsed()     ? "elementwise"
                                 : bench_hist->parsed() ? "histogram"
                                                        : "gemm";
      // The tensor-core suite is op tn (x @ w.T): that is the default op of their --shape.
      const bool tc = bench_dtype == "bf16" || bench_dtype == "f16" || bench_dtype == "tf32";
      if (tc && bench_gemm->get_option("--op")->count() == 0) bench_op = "tn";
      code = cmd_bench(common, family, bench_n, bench_csv, bench_repeats, bench_dtype, bench_shapes,
                       bench_op, bench_batch, bench_tc_family);
    } else if (db_export->parsed()) {
      code = cmd_db_export(common, db_family, db_all, db_best, db_own, db_compact, db_output);
    } else if (db_import->parsed()) {
      code = cmd_db_import(common, db_file, db_shipped);
    } else if (db_kt->parsed()) {
      const auto dot = kt_cc.find('.');
      auto digits = [](const std::string& t) {
        return !t.empty() && t.size() <= 2 &&
               t.find_first_not_of("0123456789") == std::string::npos;
      };
      if (dot == std::string::npos || !digits(kt_cc.substr(0, dot)) ||
          !digits(kt_cc.substr(dot + 1)) || kt_cc.size() - dot - 1 != 1)
        throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                           "--cc: '" + kt_cc + "' is not a compute capability like 9.0");
      kt.cc_major = std::stoi(kt_cc.substr(0, dot));
      kt.cc_minor = std::stoi(kt_cc.substr(dot + 1));
      if (kt.cc_major < 1)
        throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                           "--cc: '" + kt_cc + "' is not a compute capability like 9.0");
      for (const auto& r : kt_rename) {
        const auto eq = r.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == r.size())
          throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                             "--rename: '" + r + "' is not KT=OURS");
        if (!kt.rename.emplace(r.substr(0, eq), r.substr(eq + 1)).second)
          throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                             "--rename: " + r.substr(0, eq) + " renamed twice");
      }
      code = cmd_db_import_kerneltuner(common, db_file, kt);
    } else if (db_merge->parsed()) {
      code = cmd_db_merge(common, db_other);
    } else if (db_prune->parsed()) {
      code = cmd_db_prune(common, db_stale);
    } else if (db_check->parsed()) {
      code = cmd_db_check(common);
    }
    // What was written to stdout must have arrived (a full disk, a closed terminal).
    check_stdout("ktune");
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
  return code;
}
