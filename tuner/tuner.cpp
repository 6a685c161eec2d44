// Tuning loop with compiles pipelined ahead of the GPU and one committed row per candidate.
#include "tuner/tuner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>
#include <thread>

#include "core/util.hpp"
#include "families/family.hpp"
#include "ktune/error.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"
#include "platform/nvrtc.hpp"
#include "runtime/lookup.hpp"
#include "tuner/compilers.hpp"
#include "tuner/progress.hpp"
#include "tuner/replay.hpp"
#include "tuner/space.hpp"
#include "tuner/strategy.hpp"
#include "tuner/thread_pool.hpp"
#include "tuner/worker.hpp"

#ifndef KTUNE_VERSION
#define KTUNE_VERSION "dev"
#endif

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;

// The candidates of the runtime's predicted ranking seeded after its answer.
constexpr std::size_t kLookupSeeds = 3;
// Binary-cache candidates: the newest rows read, and the distinct configurations checked.
constexpr std::size_t kCachedRows = 4096;
constexpr std::size_t kCachedChecked = 256;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct CompileOutcome {
  std::optional<CompileResult> result;
  std::string error;
  std::string details;
  std::string key;
  bool reused = false;               // read from the binary cache: nothing to store
  Clock::time_point started, ended;  // of the compile (the trace)
};

struct Pending {
  std::size_t index = 0;
  // Shared: candidates of one kernel (GEMM's split counts, say) wait on one compile.
  std::shared_future<CompileOutcome> outcome;
  Clock::time_point proposed = Clock::now();
  // 's' a seed, 'p' the strategy ('S', 'P' read from the binary cache), 'v' a launch variant of
  // a kernel measured before (the trace)
  char origin = 's';
  bool follower = false;  // waits on the compile of a candidate proposed before it
  std::string key;        // the compile's cache key (empty where the runner does not compile)
  // Set: the compile is not wanted any more (it is skipped where it has not started). Shared by
  // the candidates of one compile; null where nothing compiles (the binary cache's).
  std::shared_ptr<std::atomic<bool>> unwanted;
};

// $KTUNE_TUNE_TRACE names a file that gets one line per candidate of every tuning run (appended):
// when it was proposed, compiled and run, and how long the GPU waited for it, in seconds from the
// loop's start. For finding where a run's time goes; not a stable format.
std::FILE* tune_trace() {
  static std::FILE* file = [] {
    const char* path = std::getenv("KTUNE_TUNE_TRACE");
    return path && *path ? std::fopen(path, "a") : nullptr;
  }();
  return file;
}

// The tuning run's progress line: evaluations, best so far, elapsed time and an estimate.
class Progress {
 public:
  Progress(bool enabled, bool plain, std::string label)
      : line_(enabled, 30, plain), label_(std::move(label)) {}
  void update(std::size_t done, std::size_t planned, const std::optional<ResultRecord>& best,
              double elapsed) {
    std::string best_text = best ? format_metric(best->metric, best->unit) : "-";
    double eta = done ? elapsed / done * (planned - std::min(done, planned)) : 0;
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%s  [%zu/%zu]  best %s  elapsed %.0fs  ETA %.0fs",
                  label_.c_str(), done, planned, best_text.c_str(), elapsed, eta);
    line_.update(buf);
  }
  void finish() { line_.finish(); }
  static std::string format_metric(double v, const std::string& unit) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4g %s", v, unit.c_str());
    return buf;
  }

 private:
  ProgressLine line_;
  std::string label_;
};

// The runtime's answer for the problem (the lookup chain: a prediction from the tuned problems, the
// nearest one, the default) and the next kLookupSeeds of the prediction's ranking, as indices of
// the space (those in it), in that order: a tune starts from what the runtime runs untuned, so it
// ends no slower than that, and the runtime's kernel is usually in the binary cache already.
std::vector<std::size_t> lookup_seeds(Database& db, const DeviceInfo& device, const Family& family,
                                      const Problem& problem, const SearchSpace& space) {
  std::vector<std::size_t> out;
  try {
    const LookupResult answer = lookup_config(&db, device, family, problem);
    std::vector<Config> configs = {answer.config};
    for (const auto& c : answer.candidates) {
      if (configs.size() > kLookupSeeds) break;
      configs.push_back(parse_config(c.config));
    }
    for (const Config& c : configs) {
      try {
        const std::size_t i =
            space.index_of(family.adapt(family.normalize(c), problem, device.limits));
        if (i != SearchSpace::npos && std::find(out.begin(), out.end(), i) == out.end())
          out.push_back(i);
      } catch (const Error&) {
        // A candidate this version cannot read: not a seed.
      }
    }
  } catch (const Error&) {
    // No answer to start from (rows it cannot read): the strategy starts alone.
  }
  return out;
}

// Compile each kernel once, and keep the GPU busy from the start: the configurations this GPU
// measured for other problems of the family (the newest kCachedRows ok rows), adapted to this one,
// whose kernels the binary cache holds, up to kCachedChecked distinct ones checked, best of their
// problem first. Neither done nor a seed.
std::vector<std::size_t> cached_candidates(Database& db, std::int64_t device_id,
                                           const Family& family, const Problem& problem,
                                           const DeviceLimits& limits, const SearchSpace& space,
                                           const std::vector<bool>& done,
                                           const std::deque<std::size_t>& seeds) {
  ResultFilter filter;
  filter.family = family.name();
  filter.device_id = device_id;
  filter.ok_only = true;
  filter.newest = kCachedRows;
  const std::string hash = family.template_hash(), key = problem.key(), arch = limits.arch();
  std::vector<ResultRecord> rows;
  for (auto& r : db.results(filter))
    if (r.template_hash == hash && r.problem != key && r.time_median_ms > 0)
      rows.push_back(std::move(r));
  std::map<std::string, double> best_of;
  for (const auto& r : rows) {
    auto [it, fresh] = best_of.emplace(r.problem, r.time_median_ms);
    if (!fresh) it->second = std::min(it->second, r.time_median_ms);
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const ResultRecord& a, const ResultRecord& b) {
    return a.time_median_ms / best_of[a.problem] < b.time_median_ms / best_of[b.problem];
  });
  std::vector<bool> checked(space.size(), false);
  std::size_t checks = 0;
  std::vector<std::size_t> cached;
  for (const auto& r : rows) {
    if (checks >= kCachedChecked) break;
    try {
      const std::size_t i =
          space.index_of(family.adapt(family.normalize(parse_config(r.config)), problem, limits));
      if (i == SearchSpace::npos || done[i] || checked[i]) continue;
      checked[i] = true;
      ++checks;
      if (std::find(seeds.begin(), seeds.end(), i) != seeds.end()) continue;
      if (db.has_binary(compile_cache_key(family.compile_request(space.at(i), problem, arch))))
        cached.push_back(i);
    } catch (const Error&) {
      // A row this version cannot read: not a candidate.
    }
  }
  return cached;
}

}  // namespace

TuneSummary tune(Database& db, const Device& device, const Family& family, const Problem& problem,
                 const TuneOptions& options) {
  family.validate(problem);
  device.make_current();
  if (!options.worker.command.empty()) {
    auto runner = make_worker_runner(device.info(), family, problem, db.path(), options.worker,
                                     options.timing, options.seed);
    return tune(db, *runner, family, problem, options);
  }
  auto runner = make_gpu_runner(&db, device, family, problem, options.timing, options.seed, {});
  return tune(db, *runner, family, problem, options);
}

std::string failed_text(const TuneSummary& summary) {
  std::string text = std::to_string(summary.failed) + " failed";
  std::vector<std::pair<std::string, std::size_t>> by(summary.failed_by_status.begin(),
                                                      summary.failed_by_status.end());
  std::stable_sort(by.begin(), by.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (std::size_t i = 0; i < by.size(); ++i)
    text += (i ? ", " : ": ") + std::to_string(by[i].second) + " " + by[i].first;
  return text;
}

Config seed_config(const Family& family, const ResultRecord& row, const Problem& problem,
                   const DeviceLimits& limits) {
  return as_measured_or_adapted(family, family.normalize(parse_config(row.config)),
                                row.problem == problem.key(), problem, limits);
}

TuneSummary tune(Database& db, CandidateRunner& runner, const Family& family,
                 const Problem& problem, const TuneOptions& options) {
  const auto started = Clock::now();
  family.validate(problem);
  TuneSummary summary;
  summary.problem = problem.key();
  const DeviceLimits& limits = runner.device().limits;
  const std::string hash = family.template_hash();
  const std::string key = problem.key();
  const std::string unit = family.metric_unit();

  // The compiler processes first, before the pool (the pool's last jobs, joined as it goes, may
  // still use them): they start and load NVRTC while the space, the rows done and the seeds are
  // read here, instead of in the first candidates' compiles.
  const unsigned compile_threads = options.compile_threads
                                       ? options.compile_threads
                                       : std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<Compilers> compilers;
  if (runner.compiles() && !options.compiler_command.empty())
    compilers = std::make_unique<Compilers>(options.compiler_command, compile_threads);

  SearchSpace space(family, problem, limits, options.only);
  summary.space_size = space.size();
  const std::int64_t device_id = db.ensure_device(runner.device());
  summary.crashed_recovered = db.mark_crashed(device_id, family.name(), hash, key);
  std::vector<bool> done(space.size(), false);
  // Measuring winners, a pair that this GPU's shipped or imported rows measure is measured.
  for (const auto& text :
       db.evaluated_configs(device_id, family.name(), hash, key, options.measure_winners)) {
    std::size_t i = SearchSpace::npos;
    try {
      i = space.index_of(to_string(family.normalize(parse_config(text))));
    } catch (const Error&) {
      // A stored configuration this version cannot read: it is not one of ours to skip.
    }
    if (i != SearchSpace::npos) {
      done[i] = true;
      ++summary.already_done;
    }
  }
  std::string strategy_name = options.strategy;
  if (strategy_name == "auto")
    strategy_name =
        options.max_evals == 0 || space.size() <= options.max_evals ? "exhaustive" : "model";
  summary.strategy = strategy_name;
  auto strategy = make_strategy(strategy_name, space, options.seed, done);

  // Transfer: the winners of this device's other problems with the same attributes (nearest
  // first, adapted to this problem) are evaluated before the strategy's own proposals, after
  // this problem's winners on other GPUs of the architecture. A tile
  // that won at 4096^3 is a strong candidate at 8192^3, and the strategy builds on it. Before
  // them come this problem's winners under earlier versions of the template: after a template
  // change the old winner is usually still near the top, and re-tuning starts from it.
  std::deque<std::size_t> seeds;
  {
    std::vector<std::pair<double, std::size_t>> ranked;
    // One read of the best row per device, template version and problem. Of this device: this
    // problem under earlier versions (ranked first), other problems under this one (ranked by
    // distance). Of the other GPUs of this architecture: this problem (any version), next after
    // its own earlier winners, so that an H100 tuning a problem the shipped H200 presets hold
    // starts from the H200's winner.
    for (const auto& r : db.best_results(family.name(), "")) {
      double distance = -0.5;
      if (r.device_id != device_id) {
        if (r.problem != key || r.device.cc_major != limits.cc_major ||
            r.device.cc_minor != limits.cc_minor)
          continue;
      }
      try {
        if (r.device_id == device_id) {
          const bool earlier = r.problem == key && r.template_hash != hash;
          if (!earlier && (r.problem == key || r.template_hash != hash)) continue;
          distance =
              earlier ? -1.0 : family.transfer_distance(problem, family.parse_problem(r.problem));
          if (!std::isfinite(distance)) continue;
        }
        const std::size_t i = space.index_of(to_string(seed_config(family, r, problem, limits)));
        if (i != SearchSpace::npos && !done[i]) ranked.emplace_back(distance, i);
      } catch (const Error&) {
        // A row this version cannot read (or a parameter it no longer has): not a seed.
      }
    }
    // The runtime's answer for this problem, after this problem's own winners.
    if (options.start_from_lookup) {
      const auto from_lookup = lookup_seeds(db, runner.device(), family, problem, space);
      for (std::size_t k = 0; k < from_lookup.size(); ++k)
        if (!done[from_lookup[k]])
          ranked.emplace_back(-0.25 + 0.01 * static_cast<double>(k), from_lookup[k]);
    }
    if (options.measure_winners) {
      // Every winner of this architecture (this GPU's and the shipped presets' of its kind) and
      // template version whose measurement the family's model can carry to this problem,
      // whatever its distance.
      ranked.clear();
      for (const auto& r : db.best_results(family.name(), hash)) {
        if (r.problem == key || !(r.time_median_ms > 0)) continue;
        if (r.device.cc_major != limits.cc_major || r.device.cc_minor != limits.cc_minor) continue;
        try {
          const Problem tuned = family.parse_problem(r.problem);
          const Config measured = family.normalize(parse_config(r.config));
          const Config c = family.adapt(measured, problem, limits);
          const double bandwidth =
              dram_bandwidth(r.device.memory_clock_khz, r.device.memory_bus_bits);
          if (!family.predict_ms({&measured, &tuned, r.time_median_ms, bandwidth}, c, problem,
                                 runner.device()))
            continue;
          const std::size_t i = space.index_of(to_string(c));
          if (i != SearchSpace::npos && !done[i])
            ranked.emplace_back(problem_distance(problem, tuned, 2.0), i);
        } catch (const Error&) {
        }
      }
    }
    std::sort(ranked.begin(), ranked.end());
    for (const auto& [distance, i] : ranked) {
      if (!options.measure_winners && seeds.size() >= options.transfer_seeds) break;
      if (std::find(seeds.begin(), seeds.end(), i) != seeds.end()) continue;
      seeds.push_back(i);
      strategy->seed(i);
    }
  }
  summary.seeded = seeds.size();

  // Kernels compiled before: what the strategy takes first where it would pick at random.
  if (runner.compiles() && options.reuse_binaries && !options.measure_winners) {
    const std::vector<std::size_t> cached =
        cached_candidates(db, device_id, family, problem, limits, space, done, seeds);
    summary.cached_first = cached.size();
    strategy->prefer(cached);
  }

  RunRecord run;
  run.device_id = device_id;
  run.family = family.name();
  run.template_hash = hash;
  run.problem = key;
  run.strategy = strategy_name;
  run.seed = static_cast<std::int64_t>(options.seed);
  run.budget = "max_evals=" + std::to_string(options.max_evals) +
               ",max_seconds=" + std::to_string(options.max_seconds) +
               (options.patience ? ",patience=" + std::to_string(options.patience) : "");
  run.gpu_ordinal = runner.compiles() ? runner.device().ordinal : -1;
  run.gpu_uuid = runner.device().uuid;
  summary.run_id = db.begin_run(run);
  // A run left by an exception is over: its rows in flight may be declared crashed.
  struct RunGuard {
    Database& db;
    std::int64_t id;
    bool finished = false;
    ~RunGuard() {
      if (finished) return;
      try {
        db.finish_run(id, "aborted");
      } catch (...) {
      }
    }
  } run_guard{db, summary.run_id};

  ThreadPool pool(compile_threads);
  const std::string arch = limits.arch();
  std::deque<Pending> queue;
  // Compiles not yet stored in the binary cache, by cache key (candidates of one kernel share one).
  struct InFlight {
    std::shared_future<CompileOutcome> outcome;
    std::shared_ptr<std::atomic<bool>> unwanted;
  };
  std::map<std::string, InFlight> in_flight;
  // Candidates given up for launch variants (below): their compiles, stored where they end in time.
  std::deque<Pending> given_up;
  // Followers in the queue: they hold no compile thread, so the window does not count them (else
  // a space of many split counts keeps fewer compiles running), up to a window's worth.
  std::size_t followers = 0;
  const std::size_t window = pool.size() * 2;
  const std::size_t remaining = space.size() - summary.already_done;
  std::size_t planned = options.max_evals ? std::min(options.max_evals, remaining) : remaining;
  if (options.measure_winners) planned = std::min(planned, seeds.size());
  std::size_t proposed = 0, strategy_proposed = 0;
  // Every index queued or measured by this run, or by an earlier one: a launch variant (below)
  // is one of none of them.
  std::vector<bool> taken = done;
  for (const std::size_t i : seeds) taken[i] = true;
  // The kernels this run measured, by cache key: the best of their configurations, its time, and
  // the compile the configurations differing from it in launch parameters alone can run on
  // (GEMM's split count and rasterisation are kernel arguments). While every candidate in the
  // window still compiles, the GPU measures one of those instead of waiting: the best kernel's
  // first. Such a variant is an evaluation like any other (it counts against max_evals) that the
  // tuner proposes instead of the strategy (it is seeded to it, and observed by it).
  struct Kernel {
    double ms = 0;
    std::size_t index = 0;
    std::shared_future<CompileOutcome> outcome;
    // Of `index`, left to measure; listed when first needed, again for each new best.
    std::optional<std::vector<std::size_t>> variants;
  };
  std::map<std::string, Kernel> kernels;
  const bool fill = options.launch_variants && runner.compiles() && !options.measure_winners;
  std::atomic<double> compile_seconds{0};
  std::atomic<std::size_t> compiled{0};
  std::size_t stored_binaries = 0;
  // The first of the candidates sharing a compile stores its binary; from there the binary
  // cache serves the kernel (where the database keeps none, candidates proposed later compile
  // it again, as without sharing).
  auto keep_binary = [&](const CompileOutcome& outcome) {
    const bool first_of_compile = !outcome.reused && in_flight.erase(outcome.key) > 0;
    if (outcome.result && first_of_compile && db.accepts_binaries()) {
      db.put_binary(outcome.key, arch, to_cached_binary(*outcome.result));
      ++stored_binaries;
    }
  };

  Clock::time_point loop_started;  // set as the loop starts, before the first refill
  auto refill = [&] {
    // A compile's mean time, and the loop's per candidate besides waiting on compiles.
    const std::size_t done_compiles = compiled.load();
    const double compile_mean = done_compiles ? compile_seconds.load() / done_compiles : 0;
    const double per_candidate =
        summary.evaluated ? std::max(0.0, seconds_since(loop_started) - summary.gpu_wait_seconds) /
                                summary.evaluated
                          : 0;
    while (queue.size() - followers < pipeline_window(window, summary.evaluated, strategy_proposed,
                                                      strategy->blind_proposals(), compile_mean,
                                                      per_candidate) &&
           followers < window && proposed < planned) {
      std::optional<std::size_t> next;
      const char origin = seeds.empty() ? 'p' : 's';
      if (!seeds.empty()) {
        next = seeds.front();
        seeds.pop_front();
      } else {
        next = strategy->propose();
        strategy_proposed += next.has_value();
      }
      if (!next) break;
      ++proposed;
      taken[*next] = true;
      if (!runner.compiles()) {
        std::promise<CompileOutcome> ready;
        ready.set_value(CompileOutcome{});
        queue.push_back({*next, ready.get_future().share(), Clock::now(), origin});
        continue;
      }
      CompileRequest request = family.compile_request(space.at(*next), problem, arch);
      std::string cache_key = compile_cache_key(request);
      // The same kernel compiling for a candidate still in the window: wait on that compile.
      if (auto it = in_flight.find(cache_key); it != in_flight.end()) {
        ++summary.shared;
        ++followers;
        queue.push_back({*next, it->second.outcome, Clock::now(), origin, true, cache_key,
                         it->second.unwanted});
        continue;
      }
      if (options.reuse_binaries) {
        // The store is read here, on the loop's thread, which alone uses the database.
        CompileOutcome out;
        CompileResult stored;
        if (auto binary = db.find_binary(cache_key);
            binary && from_cached_binary(std::move(*binary), stored)) {
          out.key = std::move(cache_key);
          out.result = std::move(stored);
          out.reused = true;
          ++summary.reused;
          std::promise<CompileOutcome> ready;
          ready.set_value(std::move(out));
          queue.push_back({*next, ready.get_future().share(), Clock::now(),
                           origin == 's' ? 'S' : 'P', false, cache_key});
          continue;
        }
      }
      auto unwanted = std::make_shared<std::atomic<bool>>(false);
      std::shared_future<CompileOutcome> compiling =
          pool.submit([request = std::move(request), cache_key, unwanted, &compile_seconds,
                       &compiled, compilers = compilers.get()] {
                CompileOutcome out;
                out.key = cache_key;
                if (unwanted->load()) {
                  out.error = "not compiled: the candidate was given up before its compile began";
                  return out;
                }
                auto t0 = Clock::now();
                try {
                  out.result = compilers ? compilers->compile(request) : compile(request);
                } catch (const Error& e) {
                  // The candidate's: NVRTC refused it, crashed on it or never finished. Anything
                  // else (no compiler process could be started) ends the run, not the candidate.
                  if (e.code() != ErrorCode::kCompile) throw;
                  out.error = e.what();
                  out.details = e.details();
                }
                out.started = t0;
                out.ended = Clock::now();
                // Not a compile: one killed because it was no longer wanted (abandoned).
                if (!out.result && unwanted->load()) return out;
                double s = seconds_since(t0);
                double cur = compile_seconds.load();
                while (!compile_seconds.compare_exchange_weak(cur, cur + s)) {
                }
                ++compiled;  // after its time: the loop's mean never counts a compile without it
                return out;
              })
              .share();
      if (options.reuse_binaries) in_flight.emplace(cache_key, InFlight{compiling, unwanted});
      queue.push_back(
          {*next, std::move(compiling), Clock::now(), origin, false, cache_key, unwanted});
    }
  };

  Progress progress(options.progress, options.progress_plain,
                    options.progress_label + family.name() + " " + key);
  std::optional<ResultRecord> best_this_run;
  std::size_t since_improvement = 0;  // evaluations since the best of this run last improved
  summary.stop_reason = "space exhausted";
  loop_started = Clock::now();
  bool first_compile_seen = false;
  // The next launch variant to measure: of the fastest kernel measured that has one left, among
  // those within kVariantReach of the best (the variants of a slow kernel are slow, and a long
  // measurement holds up the candidates whose compiles end meanwhile).
  constexpr double kVariantReach = 1.5;
  const std::vector<Param>& params = family.params();
  auto is_ready = [](const Pending& p) {
    return p.outcome.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  };
  // Where the whole budget is proposed and nothing in the window is ready, the strategy's newest
  // proposal still compiling gives its place to a launch variant: the GPU measures instead of
  // waiting, and the run ends when its budget is measured, not when its last compiles end. Not
  // a seed (the winners of other problems, the runtime's answer: the candidates a short tune is
  // for). Its compile goes on where another candidate in the window shares it; else it is
  // skipped if it has not begun, and its binary is stored if it ends before the run does.
  auto give_up_newest = [&]() -> bool {
    for (auto it = queue.rbegin(); it != queue.rend(); ++it) {
      if (it->origin != 'p' || is_ready(*it)) continue;
      Pending p = std::move(*it);
      queue.erase(std::next(it).base());
      --proposed;
      followers -= p.follower;
      ++summary.given_up;
      const bool shared =
          std::any_of(queue.begin(), queue.end(), [&](const Pending& q) { return q.key == p.key; });
      if (!shared && p.unwanted) p.unwanted->store(true);
      given_up.push_back(std::move(p));
      return true;
    }
    return false;
  };
  auto launch_variant = [&]() -> std::optional<Pending> {
    if (proposed >= planned &&
        std::none_of(queue.begin(), queue.end(), [](const Pending& p) { return p.origin == 'p'; }))
      return std::nullopt;
    std::vector<Kernel*> order;
    for (auto& [cache_key, k] : kernels) order.push_back(&k);
    std::sort(order.begin(), order.end(), [](const Kernel* a, const Kernel* b) {
      return a->ms != b->ms ? a->ms < b->ms : a->index < b->index;
    });
    for (Kernel* k : order) {
      if (k->ms > kVariantReach * order.front()->ms) break;
      if (!k->variants) {
        // The configurations one parameter away from the kernel's best whose compile is the
        // kernel's: launch parameters. Listed once per best (a variant that beats it lists its
        // own, so that two launch parameters are walked one after the other).
        k->variants.emplace();
        const Config best = space.at(k->index);
        const std::string& key = k->outcome.get().key;
        for (const Param& param : params) {
          for (const std::int64_t v : param.values) {
            Config c = best;
            auto it = c.find(param.name);
            if (it == c.end() || it->second == v) continue;
            it->second = v;
            const std::size_t i = space.index_of(c);
            if (i == SearchSpace::npos || taken[i]) continue;
            if (compile_cache_key(family.compile_request(c, problem, arch)) == key)
              k->variants->push_back(i);
          }
        }
        std::reverse(k->variants->begin(), k->variants->end());  // taken from the back
      }
      std::vector<std::size_t>& left = *k->variants;
      while (!left.empty() && taken[left.back()]) left.pop_back();
      if (left.empty()) continue;
      if (proposed >= planned && !give_up_newest()) return std::nullopt;
      const std::size_t i = left.back();
      left.pop_back();
      taken[i] = true;
      ++proposed;
      strategy->seed(i);
      return Pending{i, k->outcome, Clock::now(), 'v', false, k->outcome.get().key};
    }
    return std::nullopt;
  };

  refill();
  while (!queue.empty()) {
    if (options.max_seconds > 0 && seconds_since(started) > options.max_seconds) {
      summary.stop_reason = "time budget";
      break;
    }
    // The first candidate whose compile is done (or read from the binary cache) runs first: the
    // GPU waits on a compile only when none in the window is ready. In proposal order otherwise,
    // after a launch variant of a kernel measured before, where one is left.
    std::optional<Pending> variant;
    if (fill && std::none_of(queue.begin(), queue.end(), is_ready)) variant = launch_variant();
    Pending pending;
    if (variant) {
      // (launch_variant may have given a candidate of the queue up: no iterator into it is kept)
      pending = std::move(*variant);
      ++summary.launch_variants;
    } else {
      auto ready = std::find_if(queue.begin(), queue.end(), is_ready);
      if (ready == queue.end()) ready = queue.begin();
      pending = std::move(*ready);
      queue.erase(ready);
      followers -= pending.follower;
    }
    auto wait_start = Clock::now();
    // A reference: the outcome (its binary) may be shared with other candidates of its kernel.
    const CompileOutcome& outcome = pending.outcome.get();
    const double waited = seconds_since(wait_start);
    summary.gpu_wait_seconds += waited;
    // The wait until the first kernel this run compiled (the cache's and the seeds' aside).
    if (!outcome.reused && runner.compiles() && !first_compile_seen) {
      first_compile_seen = true;
      summary.first_wait_seconds = summary.gpu_wait_seconds;
    }
    refill();
    keep_binary(outcome);

    const Config& config = space.at(pending.index);
    ResultRecord row;
    row.run_id = summary.run_id;
    row.device_id = device_id;
    row.family = family.name();
    row.template_hash = hash;
    row.problem = key;
    row.config = to_string(config);
    row.unit = unit;
    row.tool_version = KTUNE_VERSION;
    row.nvrtc_version = nvrtc_version();
    row.driver_version = runner.device().driver_version;
    std::optional<double> observed;
    if (runner.compiles() && !outcome.result) {
      row.status = status::kCompileError;
      row.message = outcome.error + "\n" + outcome.details;
      db.put_result(row);
    } else {
      const CompileResult* compiled = outcome.result ? &*outcome.result : nullptr;
      std::string invalid;
      if (compiled) {
        const FunctionResources& res = compiled->resources.front();
        row.registers = res.registers;
        row.spill_bytes = res.spill_stores + res.spill_loads;
        row.smem_bytes = res.smem_static;
        row.compile_ms = compiled->compile_ms;
        invalid = family.reject_compiled(config, problem, limits, res);
      }
      if (!invalid.empty()) {
        row.status = status::kInvalid;
        row.message = invalid;
        db.put_result(row);
      } else {
        // Committed as in flight before the GPU runs it: a crash here is recorded, not repeated.
        row.id = db.mark_in_flight(row);
        const Measurement m = runner.measure(pending.index, config, compiled, outcome.key, row);
        row.status = m.status;
        row.message = m.message;
        row.time_min_ms = m.timing.min_ms;
        row.time_median_ms = m.timing.median_ms;
        row.time_max_ms = m.timing.max_ms;
        row.repeats = m.timing.repeats;
        row.metric = m.metric;
        db.store_result(row);
        if (m.status == status::kOk) observed = m.timing.median_ms;
        if (observed && fill && compiled) {
          Kernel& k = kernels[outcome.key];
          if (!k.outcome.valid() || *observed < k.ms) {
            k.ms = *observed;
            k.index = pending.index;
            k.outcome = pending.outcome;
            k.variants.reset();
          }
        }
        if (m.context_lost) {
          summary.stop_reason = "context lost (" + m.message + "); run again to resume";
          ++summary.evaluated;
          ++summary.failed;
          ++summary.failed_by_status[row.status];
          break;
        }
      }
    }
    if (std::FILE* trace = tune_trace()) {
      auto at = [&](Clock::time_point t) {
        return t == Clock::time_point{} ? -1.0
                                        : std::chrono::duration<double>(t - loop_started).count();
      };
      std::fprintf(trace,
                   "%s %s %zu %c proposed %.3f compile %.3f %.3f wait %.3f %.3f done %.3f "
                   "queue %zu %s\n",
                   family.name().c_str(), key.c_str(), summary.evaluated, pending.origin,
                   at(pending.proposed), at(outcome.started), at(outcome.ended), at(wait_start),
                   waited, at(Clock::now()), queue.size(), row.status.c_str());
      std::fflush(trace);
    }
    strategy->observe(pending.index, observed);
    ++summary.evaluated;
    ++since_improvement;
    if (observed) {
      ++summary.ok;
      // Timing noise is not progress: only a new best faster by 0.5% resets the patience.
      if (!best_this_run || row.time_median_ms < best_this_run->time_median_ms * 0.995)
        since_improvement = 0;
      if (!best_this_run || row.time_median_ms < best_this_run->time_median_ms) best_this_run = row;
    } else {
      ++summary.failed;
      ++summary.failed_by_status[row.status];
    }
    progress.update(summary.evaluated, planned, best_this_run, seconds_since(started));
    if (queue.empty() && proposed >= planned && planned < remaining)
      summary.stop_reason = "evaluation budget";
    if (options.patience > 0 && since_improvement >= options.patience) {
      summary.stop_reason =
          "no improvement in " + std::to_string(options.patience) + " evaluations";
      break;
    }
  }
  progress.finish();
  // Compiles left (candidates given up, or a run stopped by its patience or time budget): none
  // of them is measured any more. Those not begun are skipped; those in compiler processes are
  // abandoned (on threads of this process they run to their end); the pool and the queue go
  // only after. What ended in time is kept in the binary cache, as if its candidate had run.
  for (const std::deque<Pending>* left : {&queue, &given_up})
    for (const Pending& p : *left)
      if (p.unwanted) p.unwanted->store(true);
  if (compilers) compilers->abandon();
  for (const std::deque<Pending>* left : {&queue, &given_up})
    for (const Pending& p : *left) {
      const CompileOutcome* outcome = nullptr;
      try {
        outcome = &p.outcome.get();
      } catch (const Error&) {
        continue;  // a compile that could not run (no compiler process): nothing to keep
      }
      keep_binary(*outcome);
    }
  if (stored_binaries) db.limit_binaries(options.binary_cache_bytes);
  db.finish_run(summary.run_id,
                summary.stop_reason.rfind("context lost", 0) == 0 ? "aborted" : "completed");
  run_guard.finished = true;
  for (const auto& r : db.best_results(family.name(), hash, device_id))
    if (r.problem == key) summary.best = r;
  summary.seconds = seconds_since(started);
  summary.compile_seconds = compile_seconds.load();
  summary.compiled = compiled.load();
  summary.compile_threads = pool.size();
  summary.compile_processes = compilers != nullptr;
  summary.worker_restarts = runner.restarts();
  if (compilers) summary.compiler_restarts = compilers->restarts();
  return summary;
}

}  // namespace ktune
