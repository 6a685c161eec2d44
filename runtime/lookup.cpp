// The lookup chain. Results of another template hash are stale and never used.
#include "runtime/lookup.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "db/database.hpp"
#include "families/family.hpp"

namespace ktune {

std::string_view to_string(LookupStep step) noexcept {
  switch (step) {
    case LookupStep::kCache:
      return "cache";
    case LookupStep::kExact:
      return "exact";
    case LookupStep::kNearest:
      return "nearest";
    case LookupStep::kSameArch:
      return "same-arch";
    case LookupStep::kDefault:
      return "default";
    case LookupStep::kPredicted:
      return "predicted";
  }
  return "?";
}

namespace {

// A stored configuration (parsed and normalized), adapted to `problem`, if valid for it here.
// Measured on `problem` itself (`measured_here`), it is used as it was measured where it is valid:
// what runs is what was timed (adapt had re-split a skinny GEMM's k, for 99 of the 160 shipped
// skinny winners on their own problems).
// Held to `only` (lookup_config's), before and after adapting.
std::optional<Config> usable(const Config& normalized, const Family& family, const Problem& problem,
                             const DeviceLimits& limits, const ParamValues& only,
                             bool measured_here = false) {
  try {
    if (!within(normalized, only)) return std::nullopt;
    family.check_config(normalized);
    Config c = as_measured_or_adapted(family, normalized, measured_here, problem, limits);
    if (!within(c, only) || !family.reject(c, problem, limits).empty()) return std::nullopt;
    return c;
  } catch (const Error&) {
    return std::nullopt;  // a row from an older parameter space: skip it
  }
}

// The configuration of a stored row, if it is valid for `problem` (whose key is `key`) here.
std::optional<Config> usable(const ResultRecord& row, const Family& family, const Problem& problem,
                             const std::string& key, const DeviceLimits& limits,
                             const ParamValues& only) {
  Config c;
  try {
    c = family.normalize(parse_config(row.config));
  } catch (const Error&) {
    return std::nullopt;
  }
  return usable(c, family, problem, limits, only, row.problem == key);
}

// The DRAM bandwidth of the GPU a row was measured on (0 where the database does not know it).
double memory_bandwidth(const DeviceRecord& d) {
  return dram_bandwidth(d.memory_clock_khz, d.memory_bus_bits);
}

LookupResult from_row(LookupStep step, const ResultRecord& row, Config config) {
  LookupResult r;
  r.step = step;
  r.config = std::move(config);
  r.tuned_problem = row.problem;
  r.measured = row.metric;
  r.unit = row.unit;
  r.device = row.device.identity();
  return r;
}

// How far a measurement is from the problem for the predicted step: the log-scale distance of
// their sizes, plus kOtherAttr for each attribute they differ in (GEMM: another op or alignment,
// worth about a factor of four in one size) and kOtherDevice where it was measured on another GPU
// of the architecture.
constexpr double kOtherAttr = 2.0;
constexpr double kOtherDevice = 1.0;
// How many of the measured problems nearest to a problem the step reads. 8 chose what 16 chose
// for 300 random GEMM shapes (150 each on the H200 and the H100) and in a leave-one-out over the
// shipped H200 grid (4 changed 3 of the 300), and reads half the rows: a first call's lookup on
// the host took 2.8 ms instead of 3.4.
constexpr std::size_t kNearestProblems = 8;
// A kernel's prediction blends what its measurements on those problems say of it here, each
// weighed exp(-(its distance - the nearest's) / kBlendDistance): one measurement carries what was
// peculiar to its shape (its waves, its L2, its noise) to every shape near it. The shipped H200
// grid's leave-one-out (test_lookup.cpp, PredictedOnTheShippedGrid), best / answer: 0.926 with
// the nearest measurement alone -> 0.943, 12 -> 7 below 0.8 (on the 92 problems answered by a
// configuration measured there both ways, 0.922 -> 0.941); kBlendDistance 0.5 and 2 (read to any
// distance) read 0.935 and 0.947. Ranking only the configurations measured on each held-out
// problem, the pairs put in their measured order went 0.893 -> 0.918.
constexpr double kBlendDistance = 1.0;
// Measurements farther than the nearest by more than kBlendReach weigh under e^-2 (0.14) and are
// not read: the leave-one-out answered the same without them (one fewer answer measured there).
constexpr double kBlendReach = 2.0 * kBlendDistance;

// Orders configurations by their values first: those of one family have the same names, so a
// comparison ends at a number instead of comparing names, as std::map's own order of Config does.
// A total order all the same (the size, the values, then the names).
struct ValuesFirst {
  bool operator()(const Config& a, const Config& b) const {
    if (a.size() != b.size()) return a.size() < b.size();
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (i->second != j->second) return i->second < j->second;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (const int c = i->first.compare(j->first)) return c < 0;
    return false;
  }
};

// A measured problem near the one looked up: parsed, with its distance (problem_distance with
// kOtherAttr).
struct Nearby {
  Problem problem;
  double distance;
};

// The predicted step over the measurements of this device and the other GPUs of its architecture
// (`other_device` tells them apart; rows of neither are not passed) of the problems `nearby`
// (`keys`: their keys, in the order measurements() was asked); nullopt where the family has no
// model or no row gives a prediction. Which rows measure the problem's kind (GEMM: its dtype) is
// the family's to say (predict_ms returns nullopt): a family file's axes are its own.
//
// A kernel may be measured on many problems (the winners of a grid, each measured on every shape
// of the grid: `ktune tune --measure-winners`). Each is predicted from its measurement nearest to
// the problem (problem_distance with kOtherAttr), not from the most flattering one: a tile that
// won one shape by far can be slow on shapes unlike it, and a measurement there says so. Its
// other measurements on the problems `nearby` correct that prediction by a blend weighed by
// distance (kBlendDistance). Each candidate (an adapted configuration or one of its variants)
// takes the prediction of the nearest measurement it derives from, times that kernel's blend.
template <typename OtherDevice>
std::optional<LookupResult> predicted(const Measurements& measured,
                                      const std::vector<std::string>& keys,
                                      const std::vector<Nearby>& nearby, OtherDevice other_device,
                                      const Family& family, const Problem& problem,
                                      const DeviceInfo& device, const ParamValues& only,
                                      std::size_t shown) {
  using MeasuredRow = Measurements::Row;
  const std::vector<MeasuredRow>& rows = measured.rows;
  struct Measurement {
    double distance;
    const MeasuredRow* row;
    const Problem* tuned;
    const Config* measured;
    double blend;      // what the kernel's measurements say / what the nearest one says
    int measurements;  // how many the blend weighed
  };
  struct Row {
    double distance;
    bool shipped;
    double ms;
    std::size_t index;
    auto operator<=>(const Row&) const = default;
  };
  std::unordered_map<std::string_view, std::vector<Row>> by_config;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const MeasuredRow& row = rows[i];
    if (!(row.time_median_ms > 0)) continue;
    const double d =
        nearby[row.problem].distance + (other_device(*row.device) ? kOtherDevice : 0.0);
    // The nearest first; among measurements of one problem, the user's own before a shipped
    // one, then the fastest (a configuration measured twice).
    by_config[row.config].push_back({d, row.shipped, row.time_median_ms, i});
  }
  // Per kernel: its nearest measurement that the model can use for this problem. A family without
  // a model (or a row its model cannot use) answers nothing here: known before any row is
  // adapted, so such families pay next to nothing for this step. Configurations measured as
  // other texts of one kernel (Family::measurement_key) form one group: a split-K variant
  // measured on a few tiles says less about a full GPU than the same tile unsplit measured on a
  // shape like this one.
  struct Group {
    std::vector<Row> rows;
    std::map<std::string_view, Config> configs;  // each text of the group, parsed
  };
  std::map<Config, Group, ValuesFirst> groups;
  for (auto& [text, measurements] : by_config) {
    Config config;
    try {
      config = family.normalize(parse_config(text));
    } catch (const Error&) {
      continue;
    }
    Group& g = groups[family.measurement_key(config)];
    g.rows.insert(g.rows.end(), measurements.begin(), measurements.end());
    g.configs.emplace(text, std::move(config));
  }
  std::vector<Measurement> nearest;
  std::vector<bool> blended(nearby.size());  // the problems a group's blend has weighed
  std::vector<Family::Measured> blend;       // a group's other measurements that it weighs
  std::vector<double> blend_distance;
  for (auto& [key, g] : groups) {
    std::sort(g.rows.begin(), g.rows.end());
    // The group's nearest measurement the model can use.
    std::size_t at_first = 0;
    double first_ms = 0;
    for (; at_first < g.rows.size(); ++at_first) {
      const MeasuredRow& row = rows[g.rows[at_first].index];
      const Config& config = g.configs.at(row.config);
      const Problem& at = nearby[row.problem].problem;
      const auto ms =
          family.predict_ms({&config, &at, row.time_median_ms, memory_bandwidth(*row.device)},
                            config, problem, device);
      if (!ms) continue;
      nearest.push_back({g.rows[at_first].distance, &row, &at, &config, 1.0, 1});
      first_ms = *ms;
      break;
    }
    if (at_first == g.rows.size()) continue;
    Measurement& first = nearest.back();
    std::fill(blended.begin(), blended.end(), false);
    blended[first.row->problem] = true;
    // Each other problem once: its nearest row (the user's before a shipped one, the fastest),
    // all predicted together (the family shares the candidate's part).
    blend.clear();
    blend_distance.clear();
    for (std::size_t i = at_first + 1; i < g.rows.size(); ++i) {
      const Row& m = g.rows[i];
      const MeasuredRow& row = rows[m.index];
      if (m.distance - first.distance > kBlendReach) break;
      if (blended[row.problem]) continue;
      blended[row.problem] = true;
      blend.push_back({&g.configs.at(row.config), &nearby[row.problem].problem, row.time_median_ms,
                       memory_bandwidth(*row.device)});
      blend_distance.push_back(m.distance);
    }
    double weights = 1, log_sum = std::log(first_ms);
    const std::vector<std::optional<double>> predictions =
        family.predict_ms_from_each(blend, *first.measured, problem, device);
    for (std::size_t i = 0; i < blend.size(); ++i) {
      const auto& ms = predictions[i];
      if (!ms || !(*ms > 0)) continue;
      const double w = std::exp(-(blend_distance[i] - first.distance) / kBlendDistance);
      weights += w;
      log_sum += w * std::log(*ms);
      ++first.measurements;
    }
    first.blend = std::exp(log_sum / weights) / first_ms;
  }

  // A candidate is kept as its text: several hundred are ranked on a first call, and a Config
  // (a map of a node per parameter) kept twice for each, in the ranking and in the index of those
  // seen, grew the heap by about a megabyte, whose pages the process faulted in.
  struct Ranked {
    double ms;
    double distance;
    const MeasuredRow* row;
    int measurements;
    std::string config;
  };
  std::vector<Ranked> ranked;
  // One entry per candidate: its nearest measurement's.
  std::unordered_map<std::string, std::size_t> seen;
  // In the rows' order, so that ties fall to the same candidate every time.
  std::sort(nearest.begin(), nearest.end(),
            [](const Measurement& a, const Measurement& b) { return a.row < b.row; });
  for (const Measurement* m = nearest.data(); m != nearest.data() + nearest.size(); ++m) {
    auto adapted = usable(*m->measured, family, problem, device.limits, only);
    if (!adapted) continue;
    std::vector<Config> candidates = family.variants(*adapted, problem, device.limits);
    candidates.insert(candidates.begin(), std::move(*adapted));
    std::vector<const Config*> valid;
    for (const Config& c : candidates)
      if (&c == &candidates.front() ||
          (within(c, only) && family.reject(c, problem, device.limits).empty()))
        valid.push_back(&c);
    // All of them from the one measurement at once (the family shares its part of the work).
    const std::vector<std::optional<double>> predictions = family.predict_ms_each(
        {m->measured, m->tuned, m->row->time_median_ms, memory_bandwidth(*m->row->device)}, valid,
        problem, device);
    for (std::size_t i = 0; i < valid.size(); ++i) {
      const Config& c = *valid[i];
      const auto& ms = predictions[i];
      if (!ms) continue;
      Ranked entry{*ms * m->blend, m->distance, m->row, m->measurements, to_string(c)};
      auto [it, fresh] = seen.emplace(entry.config, ranked.size());
      if (fresh) {
        ranked.push_back(std::move(entry));
        continue;
      }
      Ranked& was = ranked[it->second];
      if (entry.distance < was.distance || (entry.distance == was.distance && entry.ms < was.ms))
        was = std::move(entry);
    }
  }
  if (ranked.empty()) return std::nullopt;
  // Ties (equal predictions) to the configuration measured first in the rows' order.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.ms < b.ms; });
  const MeasuredRow& best = *ranked.front().row;
  LookupResult r;
  r.step = LookupStep::kPredicted;
  r.config = parse_config(ranked.front().config);
  r.tuned_problem = keys[best.problem];
  r.measured = best.metric;
  r.unit = best.unit;
  r.device = best.device->identity();
  r.predicted_ms = ranked.front().ms;
  for (std::size_t i = 0; i < ranked.size() && (shown == 0 || i < shown); ++i)
    r.candidates.push_back({ranked[i].config, keys[ranked[i].row->problem],
                            ranked[i].row->device->identity(), ranked[i].row->time_median_ms,
                            ranked[i].ms, ranked[i].measurements});
  return r;
}

}  // namespace

LookupResult lookup_config(Database* db, const DeviceInfo& device, const Family& family,
                           const Problem& problem, bool predict, const ParamValues& only,
                           std::size_t shown) {
  const DeviceLimits& limits = device.limits;
  if (db) {
    const std::string hash = family.template_hash();
    const std::string key = problem.key();
    auto same_gpu = [&](const DeviceRecord& d) {
      return d.name == device.name && d.cc_major == limits.cc_major &&
             d.cc_minor == limits.cc_minor && d.sm_count == limits.sm_count;
    };
    auto same_device = [&](const ResultRecord& r) { return same_gpu(r.device); };
    // The problems measured with this template (in key order), which every step starts from.
    const std::vector<std::string> measured_keys = db->measured_problems(family.name(), hash);
    // 1. exact problem on this device: the best usable row, through the index (a first call's
    //    whole lookup costs well under a millisecond this way). Asked only of a problem measured
    //    on some GPU: the query's plan alone (a join) took 0.15 to 0.35 ms of a host's first call
    //    of every shape nobody tuned, which it answered with no row.
    if (std::binary_search(measured_keys.begin(), measured_keys.end(), key))
      for (const auto& row : db->best_results_for_problem(family.name(), hash, key, device, 16))
        if (same_device(row))
          if (auto c = usable(row, family, problem, key, limits, only))
            return from_row(LookupStep::kExact, row, *c);
    // The usable row nearest to the problem (the family's nearest_distance: by default the same
    // attributes and a log-scale distance in sizes, in doublings) among the best rows of this
    // device and the other GPUs of its architecture, these kOtherDevice farther: a problem tuned
    // exactly on a sibling GPU (an H100's tf32 winner on an H200) answers before another size
    // tuned here (one tf32 row of 1024^3 tuned on the H200 had answered every other size with its
    // small tile, at 0.61 to 0.69 x cuBLASLt). Equal distances go to the row of the lower device
    // id, then problem.
    //
    // The measured problems are taken nearest first, and each one's best rows read only while
    // they can still beat the row found: reading and ranking every best row of the family took
    // 3.6 ms of a host's first lookup of an untuned gemm_skinny shape.
    auto nearest = [&]() -> std::optional<LookupResult> {
      std::vector<std::pair<double, std::string_view>> order;
      for (const std::string& tuned : measured_keys) {
        try {
          const double d = family.nearest_distance(problem, family.parse_problem(tuned));
          if (std::isfinite(d)) order.emplace_back(d, tuned);
        } catch (const Error&) {
        }
      }
      std::sort(order.begin(), order.end());
      std::optional<ResultRecord> found;
      std::optional<Config> config;
      double best_distance = std::numeric_limits<double>::infinity();
      // Each problem's best row per device; held to `only`, every row, best first (the best row
      // alone may be one outside it).
      const int per_problem = only.empty() ? 1 : 0;
      for (const auto& [base, tuned] : order) {
        if (base > best_distance) break;
        for (ResultRecord& row :
             db->best_results(family.name(), hash, 0, std::string(tuned), per_problem)) {
          if (row.device.cc_major != limits.cc_major || row.device.cc_minor != limits.cc_minor)
            continue;
          const double d = base + (same_device(row) ? 0.0 : kOtherDevice);
          // (Equal: a slower row of the same problem and device.)
          if (d > best_distance ||
              (d == best_distance && found &&
               std::tie(found->device_id, found->problem) <= std::tie(row.device_id, row.problem)))
            continue;
          if (auto c = usable(row, family, problem, key, limits, only)) {
            best_distance = d;
            found = std::move(row);
            config = std::move(c);
          }
        }
      }
      if (!found) return std::nullopt;
      return from_row(same_device(*found) ? LookupStep::kNearest : LookupStep::kSameArch, *found,
                      *config);
    };
    // 2. predicted: every configuration measured on this device or another GPU of its
    //    architecture, adapted, with its variants, ranked by the family's model.
    // A family whose model cannot carry the problem to itself has none for it (gemm_skinny, a
    // family file without a model): nothing to rank.
    const Config probe = predict ? family.default_config(problem, limits) : Config{};
    auto has_model = [&] {
      try {
        return family.predict_ms({&probe, &problem, 1.0}, probe, problem, device).has_value();
      } catch (const Error&) {
        return false;
      }
    };
    if (predict && has_model()) {
      // The measurements of the kNearestProblems problems nearest to this one that the model
      // can use (judged with the family's default configuration for this one): a kernel is
      // predicted from its measurements nearest to the problem, weighed by their distance, so
      // the farther ones would weigh next to nothing. Reading every row (3978 of the shipped
      // GEMM presets) took 3 ms of a first call; these are a few hundred.
      // Each key's distance read off its text, nearest first (ties by key), and only the nearest
      // parsed and checked, until kNearestProblems are found: the same problems as parsing every
      // key (a few hundred Problems) and keeping the nearest that parse and that the model uses.
      std::vector<std::pair<double, std::string_view>> order;
      order.reserve(measured_keys.size());
      for (const std::string& key : measured_keys)
        if (const auto d = key_distance(problem, family.name(), key, kOtherAttr);
            d && std::isfinite(*d))
          order.emplace_back(*d, key);
      std::sort(order.begin(), order.end());
      std::vector<std::pair<std::string_view, Nearby>> near;  // the key as stored, its problem
      for (const auto& [d, key] : order) {
        if (near.size() == kNearestProblems) break;
        try {
          Problem tuned = family.parse_problem(key);
          if (!family.predict_ms({&probe, &tuned, 1.0}, probe, problem, device)) continue;
          near.push_back({key, Nearby{std::move(tuned), d}});
        } catch (const Error&) {
        }
      }
      std::vector<std::string> keys;
      std::vector<Nearby> nearby;
      for (auto& [key, n] : near) {
        keys.emplace_back(key);
        nearby.push_back(std::move(n));
      }
      Measurements measured = db->measurements(family.name(), hash, keys);
      std::erase_if(measured.rows, [&](const Measurements::Row& row) {
        return row.device->cc_major != limits.cc_major || row.device->cc_minor != limits.cc_minor;
      });
      auto other_device = [&](const DeviceRecord& d) { return !same_gpu(d); };
      if (auto r =
              predicted(measured, keys, nearby, other_device, family, problem, device, only, shown))
        return *r;
    }
    // 3. and 4. the nearest tuned problem of this device (nearest), or of another GPU of its
    //    compute capability (same-arch), that one kOtherDevice farther
    if (auto r = nearest()) return *r;
  }
  // 5. built-in default, valid for every problem
  LookupResult r;
  r.step = LookupStep::kDefault;
  r.config = only.empty() ? family.default_config(problem, limits)
                          : family.default_config_within(problem, limits, only);
  r.unit = family.metric_unit();
  return r;
}

Choice to_choice(const LookupResult& r, const Family& family, const Problem& problem) {
  Choice c;
  c.step = r.step;
  c.family = family.name();
  c.problem = problem.key();
  c.tuned_problem = r.tuned_problem;
  c.config = to_string(r.config);
  c.measured = r.measured;
  c.unit = r.unit;
  c.device = r.device;
  c.predicted_ms = r.predicted_ms;
  c.candidates = r.candidates;
  return c;
}

}  // namespace ktune
