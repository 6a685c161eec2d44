// ktune subcommands: devices, tune, query, check, explain.
#include "cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

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
#include "platform/nvrtc.hpp"
#include "runtime/lookup.hpp"
#include "tuner/compilers.hpp"
#include "tuner/progress.hpp"
#include "tuner/replay.hpp"
#include "tuner/space.hpp"
#include "tuner/strategy.hpp"
#include "tuner/thread_pool.hpp"
#include "tuner/tuner.hpp"

namespace ktune::cli {

std::string Common::resolved_db() const { return db.empty() ? database_default_path() : db; }

void report_presets(const Database& db, const PresetSummary& p, bool quiet) {
  if (quiet) return;
  for (const std::string& notice : db.notices()) std::cerr << "ktune: " << notice << "\n";
  if (p.presets == 0) return;
  std::cerr << "ktune: " << (db.created() ? "new database " : "database ") << db.path() << ": "
            << p.rows << " shipped result(s) loaded from " << p.loaded << " of " << p.presets
            << (db.created() ? " preset(s)" : " preset(s) new to it")
            << (p.seeds ? " (" + std::to_string(p.seeds) +
                              " of earlier templates, kept as re-tuning seeds only)"
                        : std::string())
            << "\n";
  for (const std::string& why : p.skipped) std::cerr << "ktune: preset skipped: " << why << "\n";
}

DeviceLimits limits_for_arch_option(const std::string& arch, const std::string& option) {
  const std::vector<int> supported = nvrtc_supported_archs();
  std::string list;
  for (int a : supported) list += (list.empty() ? "" : ", ") + ("sm_" + std::to_string(a));
  int cc = 0;
  const bool form = arch.size() >= 5 && arch.rfind("sm_", 0) == 0 &&
                    arch.find_first_not_of("0123456789", 3) == std::string::npos &&
                    arch.size() <= 6 && (cc = std::stoi(arch.substr(3))) > 0;
  if (!form || std::find(supported.begin(), supported.end(), cc) == supported.end())
    throw Error(ErrorCode::kInvalidArgument,
                option + ": '" + arch + "' is not an architecture this NVRTC (" + nvrtc_version() +
                    ") compiles for; it takes " + list);
  return DeviceLimits::for_arch(cc / 10, cc % 10);
}

Problem build_problem(const ProblemArgs& a) {
  if (a.family == "elementwise") {
    ElementwiseOp op = a.op == "add"            ? ElementwiseOp::kAdd
                       : a.op == "complex_copy" ? ElementwiseOp::kComplexCopy
                                                : ElementwiseOp::kCopy;
    Problem p = elementwise_problem(op, a.dtype, parse_size(a.n, "--n"), a.align);
    find_family("elementwise").validate(p);
    return p;
  }
  if (a.family == "gemm") {
    const auto s = parse_shape(a.shape, 3, "--shape");
    const int widest = a.dtype == "f64" ? 2 : 4;
    const auto m = static_cast<std::int64_t>(s[0]), n = static_cast<std::int64_t>(s[1]),
               k = static_cast<std::int64_t>(s[2]);
    // A shape with m or n at most 16 is the skinny kernels' problem, as in Runtime::gemm.
    Problem p = gemm_call_problem(a.dtype, a.gemm_op[0] == 't', a.gemm_op[1] == 't', m, n, k,
                                  a.gemm_align ? a.gemm_align : widest);
    find_family(p.family).validate(p);
    return p;
  }
  if (a.family == "histogram") {
    Problem p = histogram_problem(parse_histogram_dtype(a.samples), parse_size(a.n, "--n"), a.bins,
                                  a.align);
    find_family("histogram").validate(p);
    return p;
  }
  // A family file's family: axes from the options, the others from its first tuning problem.
  const Family& family = find_family(a.family);
  Problem p = family.default_problems().front();
  std::vector<std::string> given;
  for (const auto& [axis, text] : a.axes) {
    if (p.sizes.count(axis))
      p.sizes[axis] = static_cast<std::int64_t>(parse_size(text, "--" + axis));
    else
      p.attrs[axis] = text;
    given.push_back(axis);
  }
  family.complete_problem(p, given);
  family.validate(p);
  return p;
}

std::string self_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    throw Error(ErrorCode::kInternal,
                "cannot find this executable (/proc/self/exe) to start a tuning worker "
                "(ktune tune --in-process tunes without one)");
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

TuneOptions tune_options(const Common& common, const TuneArgs& targs) {
  TuneOptions options;
  options.strategy = targs.strategy;
  options.seed = targs.seed;
  options.max_evals = targs.max_evals;
  options.max_seconds = targs.max_seconds;
  options.patience = targs.patience;
  options.measure_winners = targs.measure_winners;
  options.reuse_binaries = targs.binary_cache_mb > 0;
  options.binary_cache_bytes = targs.binary_cache_mb << 20;
  options.launch_variants = !targs.no_launch_variants;
  for (const std::string& text : targs.only) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw Error(ErrorCode::kInvalidArgument,
                  "--only: expected NAME=VALUE[,VALUE...], got '" + text + "'");
    auto& values = options.only[text.substr(0, eq)];
    for (const std::string& item : split(std::string_view(text).substr(eq + 1), ',')) {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size())
        throw Error(ErrorCode::kInvalidArgument,
                    "--only: '" + item + "' in '" + text + "' is not an integer");
      values.push_back(v);
    }
  }
  options.compile_threads = targs.jobs;
  if (!targs.compile_in_process) options.compiler_command = {self_executable(), "__compiler"};
  options.timing.repeats = targs.repeats;
  options.timing.warmup = targs.warmup;
  options.timing.budget_ms = targs.timing_budget_ms;
  options.progress = !common.quiet;
  options.worker.floor_s = targs.timeout_floor;
  return options;
}

namespace {

std::string metric_text(double v, const std::string& unit) {
  return fixed(v, unit == "TFLOPS" ? 2 : 1) + " " + unit;
}

// The tuning loop with measurements replayed from a recording: no GPU, same database writes.
int tune_replay(const Common& common, const TuneArgs& targs) {
  Database source(targs.replay_from, Database::Mode::kReadOnly);
  const Recording recording = load_recording(source, targs.replay_run);
  const Family& family = find_family(recording.family);
  const Problem problem = family.parse_problem(recording.problem);  // checked by load_recording
  // A replay's database is a test bench: no shipped results in it (they would count as rows).
  Database db(common.resolved_db());
  auto runner = make_replay_runner(recording, targs.replay_delay_ms);
  TuneSummary s = tune(db, *runner, family, problem, tune_options(common, targs));
  std::cout << family.name() << " " << s.problem << " (replayed from " << targs.replay_from
            << " run " << targs.replay_run << "): run " << s.run_id << ", " << s.evaluated
            << " evaluated, " << s.already_done << " from earlier runs, " << s.crashed_recovered
            << " recovered as crashed; stopped: " << s.stop_reason << "\n";
  return s.best ? kExitOk : kExitFailed;
}

// --device of tune: an ordinal, a comma-separated list of ordinals, or "all".
std::vector<int> parse_devices(const std::string& text) {
  if (text == "all") {
    std::vector<int> all(static_cast<std::size_t>(device_count()));  // throws kNoDriver
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }
  std::vector<int> out;
  for (const std::string& part : split(text, ',')) {
    const std::string t = trim(part);
    int v = -1;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "--device: '" + text + "' is not an ordinal, a list like 0,1, or 'all'");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw Error(ErrorCode::kInvalidArgument, "--device: GPU " + t + " is named twice");
    out.push_back(v);
  }
  return out;
}

}  // namespace

int cmd_devices(const Common&) {
  int count = device_count();
  Table t({"#", "name", "arch", "SMs", "memory", "L2", "driver", "uuid"});
  for (int i = 0; i < count; ++i) {
    Device d(i);
    const auto& info = d.info();
    t.add({std::to_string(i), info.name, info.limits.arch(), std::to_string(info.limits.sm_count),
           format_bytes(static_cast<double>(info.total_memory)),
           format_bytes(static_cast<double>(info.limits.l2_bytes)),
           std::to_string(info.driver_version / 1000) + "." +
               std::to_string(info.driver_version % 1000 / 10),
           info.uuid});
  }
  t.print(std::cout);
  return kExitOk;
}

int cmd_tune(const Common& common, const ProblemArgs& args, const TuneArgs& targs) {
  if (!targs.replay_from.empty()) return tune_replay(common, targs);
  // Problems first: bad arguments are reported before anything touches the GPU or the database.
  std::vector<std::pair<const Family*, Problem>> problems;
  if (targs.defaults) {
    for (const Family* f : all_families())
      for (const auto& p : f->default_problems()) problems.emplace_back(f, p);
  } else {
    const int widest = args.dtype == "f64" ? 2 : 4;
    const int align = args.gemm_align ? args.gemm_align : widest;
    if (args.family == "gemm" && args.suite) {
      for (const GemmShape& s : gemm_suite())
        problems.emplace_back(&find_family("gemm"),
                              gemm_problem(args.dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, align));
    } else if (args.family == "gemm" && !args.grid.empty()) {
      for (const GemmGridShape& g : gemm_grid()) {
        if (!gemm_grid_class_takes(args.grid, g.kind)) continue;  // small's are chosen below
        const GemmShape& s = g.shape;
        Problem p = gemm_call_problem(args.dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, align);
        problems.emplace_back(&find_family(p.family), std::move(p));
      }
    } else {
      Problem p = build_problem(args);  // gemm: gemm_skinny's problem for a skinny shape
      problems.emplace_back(&find_family(p.family), std::move(p));
    }
  }
  TuneOptions options = tune_options(common, targs);
  for (const auto& [family, problem] : problems) SearchSpace::check_only(*family, options.only);
  const std::vector<int> devices = parse_devices(targs.devices);
  // The GPUs before the database: without one, nothing is created.
  const int count = device_count();  // throws kNoDriver with the reason
  if (count == 0) throw Error(ErrorCode::kNoDevice, "no CUDA device: the driver reports 0 devices");
  for (int d : devices)
    if (d >= count)
      throw Error(ErrorCode::kInvalidArgument, "--device: there is no GPU " + std::to_string(d) +
                                                   " (this machine has " + std::to_string(count) +
                                                   ")");
  {
    // A new database starts with the shipped results; an existing one gets newer presets.
    PresetSummary loaded;
    auto db = open_for_writing(common.resolved_db(), &loaded);
    report_presets(*db, loaded, common.quiet);
  }
  if (!targs.in_process) options.worker.command = {self_executable(), "__worker"};
  if (devices.size() > 1) {
    // One worker per GPU: a redrawn line would be overwritten by the others, so each prints plain
    // lines with its GPU's name; the compile threads are shared out among the workers.
    options.progress_plain = true;
    if (options.compile_threads == 0)
      options.compile_threads =
          std::max(1u, std::thread::hardware_concurrency() / unsigned(devices.size()));
  }

  // Identical GPUs (same name, compute capability and SMs) share their results, so they share
  // the problems too: each problem is tuned once per kind of GPU, by whichever GPU of that kind
  // is free. GPUs of different kinds each tune every problem.
  std::vector<std::unique_ptr<Device>> gpus;
  for (int d : devices) gpus.push_back(std::make_unique<Device>(d));
  if (args.family == "gemm" && args.grid == "small") {
    // The tiled shapes whose space holds the smallest tiles on the first GPU given.
    const int sm_count = gpus.front()->info().limits.sm_count;
    std::erase_if(problems, [&](const auto& entry) {
      const Problem& p = entry.second;
      return !gemm_smallest_tiles_apply(p.size("m"), p.size("n"), sm_count);
    });
  }
  std::map<std::string, std::atomic<std::size_t>> next_problem;
  for (const auto& g : gpus) next_problem[g->info().identity()] = 0;

  std::mutex output;
  struct Worker {
    std::vector<std::vector<std::string>> rows;
    bool any_ok = false, context_lost = false;
    std::exception_ptr error;
  };
  std::vector<Worker> workers(devices.size());
  auto work = [&](std::size_t w) {
    Worker& me = workers[w];
    try {
      const Device& device = *gpus[w];
      Database db(common.resolved_db());
      const std::string who = devices.size() > 1 ? "[GPU " + std::to_string(devices[w]) + "] " : "";
      if (!common.quiet) {
        std::lock_guard lock(output);
        std::cerr << "ktune: " << who << "tuning on " << device.info().identity() << " into "
                  << db.path() << "\n";
      }
      auto& next = next_problem.at(device.info().identity());
      for (std::size_t i; (i = next++) < problems.size();) {
        const auto& [family, problem] = problems[i];
        TuneOptions mine = options;
        mine.progress_label = who;
        TuneSummary s = tune(db, device, *family, problem, mine);
        {
          std::lock_guard lock(output);
          if (!common.quiet) {
            std::cerr << "ktune: " << who << family->name() << " " << s.problem << ": run "
                      << s.run_id << ", " << s.evaluated << " evaluated (" << s.ok << " ok, "
                      << failed_text(s) << "), " << s.already_done
                      << " from earlier runs; stopped: " << s.stop_reason << "; "
                      << fixed(s.seconds, 1) << " s; " << s.compiled << " compiles on "
                      << s.compile_threads
                      << (s.compile_processes ? " compiler processes (" : " threads (")
                      << fixed(s.seconds > 0 ? s.compiled / s.seconds : 0, 1) << " per s, "
                      << fixed(s.compiled ? s.compile_seconds / s.compiled : 0, 2) << " s each), "
                      << s.reused << " from the binary cache, " << s.shared
                      << " sharing another candidate's compile, " << s.launch_variants
                      << " launch variants measured while compiles ran (" << s.given_up
                      << " in place of proposals given up), GPU waited on compiles "
                      << fixed(s.gpu_wait_seconds, 1) << " s ("
                      << fixed(s.seconds > 0 ? 100 * s.gpu_wait_seconds / s.seconds : 0, 0)
                      << "% of the run, " << fixed(s.first_wait_seconds, 1)
                      << " s of it for the first compile)\n";
            if (s.compiler_restarts)
              std::cerr << "ktune: " << who << s.compiler_restarts
                        << " compiler process(es) restarted after NVRTC crashed or hung (those "
                           "candidates are recorded as compile_error)\n";
            if (s.worker_restarts)
              std::cerr << "ktune: " << who << s.worker_restarts
                        << " worker(s) restarted after a fault or a timeout\n";
            if (s.crashed_recovered)
              std::cerr << "ktune: " << who << s.crashed_recovered
                        << " candidate(s) left in flight by an earlier run recorded as crashed\n";
          }
        }
        me.any_ok |= s.best.has_value();
        me.rows.push_back({std::to_string(devices[w]), family->name(), s.problem, s.strategy,
                           std::to_string(s.space_size), std::to_string(s.evaluated),
                           std::to_string(s.ok), std::to_string(s.failed), fixed(s.seconds, 1),
                           s.best ? metric_text(s.best->metric, s.best->unit) : "-",
                           s.best ? s.best->config : "-"});
        if (s.stop_reason.rfind("context lost", 0) == 0) {
          me.context_lost = true;
          return;
        }
      }
    } catch (...) {
      me.error = std::current_exception();
    }
  };
  if (devices.size() == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < devices.size(); ++w) threads.emplace_back(work, w);
    for (auto& t : threads) t.join();
  }

  Table table({"gpu", "family", "problem", "strategy", "space", "evaluated", "ok", "failed",
               "seconds", "best", "config"});
  bool any_ok = false, context_lost = false;
  std::exception_ptr first_error;
  for (std::size_t w = 0; w < workers.size(); ++w) {
    for (auto& row : workers[w].rows) table.add(row);
    any_ok |= workers[w].any_ok;
    context_lost |= workers[w].context_lost;
    if (workers[w].error && !first_error) {
      first_error = workers[w].error;
    } else if (workers[w].error) {
      try {
        std::rethrow_exception(workers[w].error);
      } catch (const std::exception& e) {
        std::cerr << "ktune: GPU " << devices[w] << ": " << e.what() << "\n";
      }
    }
  }
  table.print(std::cout);
  if (first_error) {
    if (devices.size() > 1)
      std::cerr << "ktune: a GPU's worker failed; the others' results are stored\n";
    std::rethrow_exception(first_error);
  }
  if (context_lost) {
    std::cerr << "ktune: the CUDA context was lost to a faulting candidate; run the same command "
                 "again to resume\n";
    return kExitError;
  }
  return any_ok ? kExitOk : kExitFailed;
}

namespace {

// A problem key as a user typed it: validated by its family and made canonical (sorted names,
// plain integers), so that 'op=copy;n=1024;...' finds what `ktune query` prints as
// 'align=16;dtype=f32;n=1024;op=copy'. Without --family, the families whose problems it fits.
std::vector<std::pair<const Family*, std::string>> canonical_problems(const std::string& family,
                                                                      const std::string& key) {
  std::vector<std::pair<const Family*, std::string>> out;
  if (!family.empty()) {
    const Family& f = find_family(family);
    try {
      out.emplace_back(&f, f.parse_problem(key).key());
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, std::string("--problem: ") + e.what());
    }
    return out;
  }
  std::string reasons;
  for (const Family* f : all_families()) {
    try {
      out.emplace_back(f, f->parse_problem(key).key());
    } catch (const Error& e) {
      reasons += std::string("\n  ") + f->name() + ": " + e.what();
    }
  }
  if (out.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "--problem: '" + key + "' is a problem of no family:" + reasons);
  return out;
}

}  // namespace

int cmd_query(const Common& common, const std::string& family, const std::string& problem, bool all,
              bool json) {
  if (!family.empty()) find_family(family);  // a typo gets a clear error, not an empty table
  std::vector<std::pair<const Family*, std::string>> problems;
  if (!problem.empty()) problems = canonical_problems(family, problem);
  auto wanted = [&](const std::string& fam, const std::string& key) {
    if (!family.empty() && fam != family) return false;
    if (problems.empty()) return true;
    return std::any_of(problems.begin(), problems.end(),
                       [&](const auto& p) { return p.first->name() == fam && p.second == key; });
  };
  const std::string path = common.resolved_db();
  auto db = open_for_reading(path);
  if (db->in_memory() && !common.quiet)
    std::cerr << "ktune: no database at " << path
              << ": showing the shipped results (ktune tune creates it)\n";
  std::vector<ResultRecord> rows;
  if (all) {
    ResultFilter f;
    f.family = family;
    rows = db->results(f);
  } else {
    for (const Family* fam : all_families()) {
      if (!family.empty() && fam->name() != family) continue;
      for (auto& r : db->best_results(fam->name(), fam->template_hash()))
        rows.push_back(std::move(r));
    }
  }
  std::erase_if(rows, [&](const ResultRecord& r) { return !wanted(r.family, r.problem); });
  // Problems in the order of their sizes (k=256 before k=2048), not of their text.
  std::stable_sort(rows.begin(), rows.end(), [](const ResultRecord& a, const ResultRecord& b) {
    return std::tie(a.family, a.device.name) < std::tie(b.family, b.device.name) ||
           (std::tie(a.family, a.device.name) == std::tie(b.family, b.device.name) &&
            natural_less(a.problem, b.problem));
  });
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      out.push_back({{"device", r.device.identity()},
                     {"family", r.family},
                     {"template_hash", r.template_hash},
                     {"problem", r.problem},
                     {"config", r.config},
                     {"status", r.status},
                     {"time_median_ms", r.time_median_ms},
                     {"time_min_ms", r.time_min_ms},
                     {"time_max_ms", r.time_max_ms},
                     {"repeats", r.repeats},
                     {"metric", r.metric},
                     {"unit", r.unit},
                     {"registers", r.registers},
                     {"spill_bytes", r.spill_bytes},
                     {"origin", r.origin},
                     {"run_id", r.run_id},
                     {"created_at", r.created_at},
                     {"message", r.message}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    check_stdout("query");
    return kExitOk;
  }
  if (rows.empty()) {
    std::cout << "no " << (all ? "results" : "tuned results for the current templates")
              << (problems.empty() ? "" : " of that problem") << " in " << db->path()
              << (all ? "" : " (ktune query --all lists every row, stale ones included)") << "\n";
    check_stdout("query");
    return kExitOk;
  }
  Table t({"device", "family", "problem", "status", "median ms", "figure", "config", "origin"});
  for (const auto& r : rows)
    t.add({r.device.identity(), r.family, r.problem, r.status,
           r.status == "ok" ? fixed(r.time_median_ms, 4) : "-",
           r.status == "ok" ? metric_text(r.metric, r.unit) : "-", r.config, r.origin});
  t.print(std::cout);
  check_stdout("query");
  return kExitOk;
}

namespace {

// --sample's draw from a check problem's kernel names (sorted): `default_names` (the default
// configuration's) and `references` where `names` has them, then others drawn without
// replacement up to `most` in all, by a generator seeded from `seed` and the problem's text (a
// stable hash: the same draw on every build and library). In the names' order.
std::vector<std::string> check_sample(const std::vector<std::string>& names, std::size_t most,
                                      std::uint64_t seed, const std::string& problem,
                                      const std::vector<std::string>& default_names,
                                      const std::vector<std::string>& references) {
  std::set<std::string> kept;
  for (const auto* group : {&default_names, &references})
    for (const auto& n : *group)
      if (std::binary_search(names.begin(), names.end(), n)) kept.insert(n);
  std::vector<std::string> rest;
  for (const auto& n : names)
    if (!kept.count(n)) rest.push_back(n);
  std::uint64_t state = seed;
  for (const char ch : problem) state = (state ^ static_cast<unsigned char>(ch)) * 0x100000001b3ULL;
  std::mt19937_64 rng(state);
  // A partial Fisher-Yates shuffle (std::shuffle's and std::sample's draws differ between
  // standard libraries; this one is the same everywhere).
  const std::size_t want = most > kept.size() ? std::min(most - kept.size(), rest.size()) : 0;
  for (std::size_t i = 0; i < want; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(rng() % (rest.size() - i));
    std::swap(rest[i], rest[j]);
    kept.insert(rest[i]);
  }
  return {kept.begin(), kept.end()};
}

}  // namespace

int cmd_check(const CheckArgs& args, bool quiet) {
  const std::string& arch = args.arch;
  const DeviceLimits limits = limits_for_arch_option(arch, "--arch");
  auto t0 = std::chrono::steady_clock::now();
  // One compiler process a thread (tuner/compilers.hpp): NVRTC gets the cores it does not get as
  // threads of one process.
  std::unique_ptr<Compilers> compilers;
  if (!args.compile_in_process)
    compilers = std::make_unique<Compilers>(
        std::vector<std::string>{self_executable(), "__compiler"}, args.jobs);
  auto compile = [&compilers](const CompileRequest& request) {
    return compilers ? compilers->compile(request) : ktune::compile(request);
  };
  ThreadPool pool(compilers ? compilers->size() : args.jobs);
  ProgressLine progress(!quiet);
  Table summary({"family", "problem", "configs", "kernels", "failed", "spilling", "max regs",
                 "usable configs"});
  Table detail({"family", "kernel", "regs", "smem", "spill bytes", "status"});
  bool any_failed = false;
  constexpr std::size_t kBatch = 24;  // name expressions per NVRTC program

  const std::vector<const Family*> families =
      args.family.empty() ? all_families() : std::vector<const Family*>{&find_family(args.family)};
  std::size_t sampled_problems = 0;
  for (const Family* family : families) {
    // A family whose instructions this architecture lacks: nothing to compile, nothing wrong.
    if (const std::string why = family->unsupported(limits); !why.empty()) {
      std::cout << family->name() << ": no kernels for " << arch << ": " << why << "\n";
      continue;
    }
    for (const Problem& problem : family->check_problems()) {
      SearchSpace space(*family, problem, limits);
      std::map<std::string, std::vector<const Config*>> by_name;
      const std::vector<Config> configs =
          args.exhaustive ? space.configs() : family->check_configs(space.configs());
      for (const auto& c : configs)
        for (const auto& n : family->name_expressions(c, problem)) by_name[n].push_back(&c);
      // The default configuration serves every problem: the lookup chain's last step.
      const Config fallback = family->default_config(problem, limits);
      if (const std::string why = family->reject(fallback, problem, limits); !why.empty()) {
        std::cerr << "ktune check: " << family->name() << " " << problem.key()
                  << ": the default configuration " << to_string(fallback)
                  << " is rejected: " << why << "\n";
        any_failed = true;
      }
      // Reference kernels compile too (a family file's); no configuration uses them.
      const std::vector<std::string> references = family->reference_names(problem);
      for (const auto& n : references) by_name[n];
      std::vector<std::string> names;
      for (const auto& [n, _] : by_name) names.push_back(n);
      if (args.sample > 0 && names.size() > args.sample) {
        names = check_sample(names, args.sample, args.seed, family->name() + " " + problem.key(),
                             family->name_expressions(fallback, problem), references);
        ++sampled_problems;
      }

      struct Outcome {
        std::optional<FunctionResources> res;
        std::string error;
      };
      auto compile_batch = [&, family, problem](std::vector<std::string> batch) {
        std::map<std::string, Outcome> out;
        const auto& users = by_name.at(batch[0]);
        CompileRequest r =
            family->compile_request(users.empty() ? fallback : *users.front(), problem, arch);
        r.name_expressions = batch;
        try {
          CompileResult c = compile(r);
          for (std::size_t i = 0; i < batch.size(); ++i) out[batch[i]].res = c.resources[i];
        } catch (const Error& e) {
          if (batch.size() == 1) {
            out[batch[0]].error = std::string(e.what()) + "\n" + e.details();
          } else {
            // Find which kernels fail: compile each alone.
            for (const auto& n : batch) {
              CompileRequest one = r;
              one.name_expressions = {n};
              try {
                out[n].res = compile(one).resources[0];
              } catch (const Error& e1) {
                out[n].error = std::string(e1.what()) + "\n" + e1.details();
              }
            }
          }
        }
        return out;
      };
      // Every thread busy where the problem has fewer than kBatch kernels a thread (a sample).
      const std::size_t batch = std::clamp<std::size_t>(
          (names.size() + pool.size() - 1) / std::max(1u, pool.size()), 1, kBatch);
      std::vector<std::future<std::map<std::string, Outcome>>> futures;
      for (std::size_t i = 0; i < names.size(); i += batch)
        futures.push_back(pool.submit([&, i] {
          return compile_batch(std::vector<std::string>(
              names.begin() + i, names.begin() + std::min(names.size(), i + batch)));
        }));
      std::map<std::string, Outcome> outcomes;
      std::size_t done = 0;
      for (auto& f : futures) {
        outcomes.merge(f.get());
        done = std::min(names.size(), done + batch);
        progress.update(
            "ktune check: " + family->name() + " " + problem.key() + ": " + std::to_string(done) +
            "/" + std::to_string(names.size()) + " kernels compiled, " +
            fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0) +
            " s");
      }

      int failed = 0, spilling = 0, max_regs = 0;
      std::size_t usable = 0;
      for (const auto& [name, outcome] : outcomes) {
        if (!outcome.res) {
          ++failed;
          std::cerr << "ktune check: " << family->name() << " " << name << " failed to compile:\n"
                    << outcome.error << "\n";
          detail.add({family->name(), name, "-", "-", "-", "compile error"});
          continue;
        }
        const FunctionResources& r = *outcome.res;
        max_regs = std::max(max_regs, r.registers);
        if (r.spills()) ++spilling;
        for (const Config* c : by_name.at(name))
          if (family->reject_compiled(*c, problem, limits, r).empty()) ++usable;
        detail.add({family->name(), name, std::to_string(r.registers),
                    std::to_string(r.smem_static), std::to_string(r.spill_stores + r.spill_loads),
                    r.spills() ? "spills" : "ok"});
      }
      any_failed |= failed > 0;
      summary.add({family->name(), problem.key(), std::to_string(space.size()),
                   std::to_string(names.size()), std::to_string(failed), std::to_string(spilling),
                   std::to_string(max_regs), std::to_string(usable)});
    }
  }
  progress.finish();
  if (args.verbose) {
    detail.print(std::cout);
    std::cout << "\n";
  }
  summary.print(std::cout);
  if (args.sample > 0)
    std::cout << "\nsampled: at most " << args.sample << " kernels of each problem (--sample "
              << args.sample << " --seed " << args.seed << "), " << sampled_problems
              << " problem(s) with more; without --sample every one is compiled\n";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "\ncompiled for " << arch << " with NVRTC " << nvrtc_version() << " in "
            << fixed(seconds, 1) << " s: " << (any_failed ? "FAILED" : "all kernels compile")
            << "\n";
  return any_failed ? kExitFailed : kExitOk;
}

int cmd_params(const std::string& family_name) {
  const Family& family = find_family(family_name);
  std::cout << family.name() << ": " << family.description() << "\n"
            << "from: " << family.origin() << "  metric: " << family.metric_unit()
            << "  template hash: " << family.template_hash() << "\n\n";
  Table params({"parameter", "values", "help"});
  for (const Param& p : family.params()) {
    std::string values;
    for (auto v : p.values) values += (values.empty() ? "" : ", ") + std::to_string(v);
    params.add({p.name, values, p.help});
  }
  params.print(std::cout);
  auto columns = [](const std::string& line) {
    std::vector<std::string> cells;
    std::size_t start = 0;
    while (true) {
      std::size_t tab = line.find('\t', start);
      cells.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    return cells;
  };
  if (const auto axes = family.describe_axes(); !axes.empty()) {
    Table t({"axis", "values", "help"});
    for (const auto& a : axes) t.add(columns(a));
    std::cout << "\n";
    t.print(std::cout);
  }
  if (const auto rules = family.describe_constraints(); !rules.empty()) {
    Table t({"constraint (rejection reason)", "rule"});
    for (const auto& c : rules) t.add(columns(c));
    std::cout << "\n";
    t.print(std::cout);
  }
  std::cout << "\nproblems `ktune tune " << family.name() << "` tunes by default:";
  for (const Problem& p : family.default_problems()) std::cout << " " << p.key();
  std::cout << "\n";
  return kExitOk;
}

namespace {
// The family the runtime's typed call runs for a problem of `family`, where that is another one
// (the skinny families take GEMM calls with a short side); "" otherwise.
std::string runtime_family_of(const Family& family, const Problem& p) {
  try {
    if (family.name() == "gemm" && gemm_is_skinny(p.size("m"), p.size("n"))) return "gemm_skinny";
    if ((family.name() == "gemm_tc" || family.name() == "gemm_tc80") &&
        gemm_tc_is_skinny(p.attr("dtype"), p.size("m"), p.size("n"),
                          p.sizes.count("batch") ? p.size("batch") : 1))
      return "gemm_tc_skinny";
  } catch (const Error&) {
  }
  return {};
}
}  // namespace

int cmd_explain(const Common& common, const std::string& family_name,
                const std::string& problem_key, const std::string& gpu, const std::string& arch,
                bool strict_fp32, std::size_t candidates) {
  // The problem is checked before the GPU is touched, so a typo is a usage error everywhere.
  const Family& family = find_family(family_name);
  const Problem problem = family.parse_problem(problem_key);
  std::optional<DeviceLimits> arch_limits;
  if (!arch.empty()) arch_limits = limits_for_arch_option(arch, "--arch");
  Choice c;
  std::string answered_from;
  std::string memory;    // --gpu: the memory the model was given
  double lookup_ms = 0;  // the chain's walk, this process's first (as a program's first call)
  auto timed = [&lookup_ms](auto&& lookup) {
    const auto start = std::chrono::steady_clock::now();
    Choice choice = lookup();
    lookup_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return choice;
  };
  if (!gpu.empty() || arch_limits) {
    // No GPU needed: the lookup chain for a named GPU (as the database knows it) or architecture.
    const std::string path = common.resolved_db();
    auto db = open_for_reading(path);
    answered_from = db->path();
    DeviceInfo device;
    if (!gpu.empty()) {
      std::string known;
      std::optional<DeviceRecord> found;
      for (const DeviceRecord& d : db->devices()) {
        if (d.name == gpu) found = d;
        known += (known.empty() ? "" : ", ") + ("'" + d.name + "'");
      }
      if (!found)
        throw Error(
            ErrorCode::kInvalidArgument,
            "--gpu: no results for a GPU named '" + gpu + "' in " + db->path() +
                (known.empty() ? std::string(" (it holds none)") : " (it has " + known + ")"));
      device.name = found->name;
      device.limits = DeviceLimits::for_arch(found->cc_major, found->cc_minor);
      device.limits.sm_count = found->sm_count;
      // The memory as the GPU gave it where it was measured: a model of memory-bound time reads
      // its bandwidth (without it, gemm's takes an H100's, and answered 98 of 610 shapes
      // otherwise than the runtime on an H200).
      device.memory_clock_khz = found->memory_clock_khz;
      device.memory_bus_bits = found->memory_bus_bits;
      memory =
          found->memory_clock_khz > 0 && found->memory_bus_bits > 0
              ? std::to_string(found->memory_clock_khz / 1000) + " MHz, " +
                    std::to_string(found->memory_bus_bits) + "-bit bus (" +
                    fixed(2.0 * found->memory_clock_khz * 1e3 * found->memory_bus_bits / 8 / 1e12,
                          2) +
                    " TB/s), as the database records this GPU"
              : "not recorded for this GPU: a model of memory-bound time assumes its own "
                "bandwidth, and may answer otherwise than the runtime on it";
    } else {
      device.limits = *arch_limits;  // no GPU of this name: the same-arch step answers
    }
    c = timed([&] {
      return to_choice(
          lookup_config(db.get(), device, family, problem, true,
                        strict_fp32 ? family.strict_precision(problem) : ParamValues{}, candidates),
          family, problem);
    });
  } else {
    Options options;
    options.database = common.resolved_db();
    options.device = common.device;
    options.strict_fp32 = strict_fp32;
    Runtime runtime(options);
    c = timed([&] { return runtime.explain(family_name, problem_key, candidates); });
    answered_from = runtime.database_path();
  }
  Table t({"field", "value"});
  t.add({"family", c.family});
  t.add({"problem", c.problem});
  t.add({"answered by", std::string(to_string(c.step))});
  t.add({"config", c.config});
  if (!c.tuned_problem.empty()) t.add({"tuned problem", c.tuned_problem});
  if (!c.device.empty()) t.add({"measured on", c.device});
  if (c.measured) t.add({"measured", metric_text(*c.measured, c.unit)});
  if (c.predicted_ms) t.add({"predicted", fixed(*c.predicted_ms, 4) + " ms on this problem"});
  t.add({"database", answered_from.empty() ? "none" : answered_from});
  if (!memory.empty()) t.add({"memory", memory});
  t.add({"lookup time", fixed(lookup_ms, 2) +
                            " ms (this process's first lookup, as a new program's "
                            "first call of this problem)"});
  t.print(std::cout);
  if (!c.candidates.empty()) {
    std::cout << "\ncandidates ranked by the model (the winners of tuned problems, adapted; each "
                 "predicted from its measurements near the problem, the nearest shown):\n";
    Table ranked({"predicted ms", "measured ms", "tuned problem", "measurements", "config"});
    for (const auto& k : c.candidates)
      ranked.add({fixed(k.predicted_ms, 4), fixed(k.measured_ms, 4), k.tuned_problem,
                  std::to_string(k.measurements), k.config});
    ranked.print(std::cout);
  }
  // A call of these sizes goes elsewhere in the runtime: say so, and where to look.
  if (const std::string routed = runtime_family_of(family, problem); !routed.empty())
    std::cout << "\nnote: the runtime runs this call on " << routed << " ("
              << (routed == "gemm_skinny" ? "m or n at most 16" : "m or n at most 4, one product")
              << "), not on " << family.name() << ": ktune explain " << routed << " '"
              << problem_key << "'\n";
  check_stdout("explain");
  return kExitOk;
}

}  // namespace ktune::cli

namespace ktune::cli {

int cmd_strategies(const Common& common, std::int64_t run, std::size_t seeds,
                   const std::vector<std::size_t>& budgets, std::size_t lag,
                   const std::string& csv) {
  Database db(common.resolved_db(), Database::Mode::kReadOnly);
  const Recording rec = load_recording(db, run);
  const double coverage = rec.space.size() ? 100.0 * rec.measured / rec.space.size() : 0;
  std::cout << "replay of run " << run << ": " << rec.family << " " << rec.problem << " on "
            << rec.device << "\n  space " << rec.space.size() << " configurations, " << rec.measured
            << " measured (" << fixed(coverage, 1) << "%), exhaustive best "
            << fixed(rec.best_ms, 4) << " ms; " << seeds << " seeds, " << lag
            << " proposals in flight\n";
  if (coverage < 95)
    std::cout
        << "  note: the recording is not exhaustive; the 'optimum' is the best measured so far\n";
  const std::size_t target =
      std::min<std::size_t>(200, std::max<std::size_t>(1, rec.space.size() / 10));
  std::vector<std::size_t> all_budgets = budgets;
  if (std::find(all_budgets.begin(), all_budgets.end(), target) == all_budgets.end())
    all_budgets.push_back(target);
  std::sort(all_budgets.begin(), all_budgets.end());
  // Exhaustive is the reference itself: every other strategy is compared.
  std::vector<std::string> names = strategy_names();
  names.erase(std::remove(names.begin(), names.end(), "exhaustive"), names.end());
  const auto scores = compare_strategies(rec, names, all_budgets, seeds, lag);
  Table t({"strategy", "budget", "median best/optimum", "seeds >= 0.97"});
  for (const auto& s : scores)
    t.add({s.strategy, std::to_string(s.budget) + (s.budget == target ? " (target)" : ""),
           fixed(s.median_ratio, 4), fixed(100 * s.share_within_3pct, 0) + "%"});
  t.print(std::cout);
  check_stdout("strategies");
  if (!csv.empty()) {
    std::ostringstream out;
    out << "family,problem,device,space,measured,strategy,budget,seeds,lag,median_ratio,share_"
           "097\n";
    for (const auto& s : scores)
      out << rec.family << ",\"" << rec.problem << "\",\"" << rec.device << "\","
          << rec.space.size() << ',' << rec.measured << ',' << s.strategy << ',' << s.budget << ','
          << seeds << ',' << lag << ',' << s.median_ratio << ',' << s.share_within_3pct << '\n';
    write_output(csv, out.str(), "--csv", {common.resolved_db()});
  }
  return kExitOk;
}

}  // namespace ktune::cli
