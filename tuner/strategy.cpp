// The search strategies: exhaustive, random, evolve, anneal, genetic and model.
#include "tuner/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <unordered_map>

#include "ktune/error.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

// Walks a fixed order of the space, skipping what is done.
class OrderedStrategy : public Strategy {
 public:
  OrderedStrategy(std::string name, std::vector<std::size_t> order, const std::vector<bool>& done)
      : name_(std::move(name)), order_(std::move(order)), done_(done) {}
  std::string name() const override { return name_; }
  std::optional<std::size_t> propose() override {
    while (next_ < order_.size()) {
      std::size_t i = order_[next_++];
      if (i < done_.size() && done_[i]) continue;
      return i;
    }
    return std::nullopt;
  }
  void observe(std::size_t, std::optional<double>) override {}
  std::size_t blind_proposals() const override { return order_.size(); }  // a fixed order
  // The order is blind: the preferred go first, the rest keep their order.
  void prefer(const std::vector<std::size_t>& indices) override {
    std::vector<bool> first(done_.size(), false);
    std::vector<std::size_t> order;
    for (std::size_t i : indices)
      if (i < first.size() && !first[i]) first[i] = true, order.push_back(i);
    for (std::size_t k = next_; k < order_.size(); ++k)
      if (order_[k] >= first.size() || !first[order_[k]]) order.push_back(order_[k]);
    order_ = std::move(order);
    next_ = 0;
  }
  void seed(std::size_t index) override {
    if (index < done_.size()) done_[index] = true;
  }

 private:
  std::string name_;
  std::vector<std::size_t> order_;
  std::vector<bool> done_;
  std::size_t next_ = 0;
};

// Evolutionary local search: a random warm-up, then children of the best configurations seen
// (one or two parameters changed to another allowed value), with a share of random picks so the
// search does not settle in one basin. Proposals may run ahead of observations (the compile
// pipeline keeps a window in flight); children then come from what has been observed so far.
class EvolveStrategy : public Strategy {
 public:
  EvolveStrategy(const SearchSpace& space, std::uint64_t seed, const std::vector<bool>& done)
      : space_(space), rng_(seed), taken_(space.size(), false) {
    for (std::size_t i = 0; i < done.size() && i < taken_.size(); ++i)
      if (done[i]) taken_[i] = true, ++taken_count_;
    for (std::size_t p = 0; p < space.names().size(); ++p) {
      auto& values = values_[space.names()[p]];
      for (std::size_t i = 0; i < space.size(); ++i) values.insert(space.values(i)[p]);
    }
    warmup_ = std::min<std::size_t>(16, std::max<std::size_t>(4, space.size() / 50));
  }
  std::string name() const override { return "evolve"; }
  std::size_t blind_proposals() const override { return warmup_; }

  std::optional<std::size_t> propose() override {
    if (taken_count_ >= space_.size()) return std::nullopt;
    if (proposed_ >= warmup_ && !best_.empty() && rng_() % 8 != 0) {
      for (int attempt = 0; attempt < 64; ++attempt) {
        const std::size_t child = mutate(pick_parent());
        if (child != SearchSpace::npos && !taken_[child]) return take(child);
      }
    }
    return random_pick();
  }

  void seed(std::size_t index) override {
    if (index < taken_.size() && !taken_[index]) taken_[index] = true, ++taken_count_;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    if (!time_ms) return;
    best_.emplace_back(*time_ms, index);
    std::sort(best_.begin(), best_.end());
    if (best_.size() > kElite) best_.resize(kElite);
  }
  void prefer(const std::vector<std::size_t>& indices) override { preferred_ = indices; }

 private:
  static constexpr std::size_t kElite = 8;

  std::size_t take(std::size_t i) {
    taken_[i] = true;
    ++taken_count_;
    ++proposed_;
    return i;
  }
  std::optional<std::size_t> random_pick() {
    while (next_preferred_ < preferred_.size()) {
      const std::size_t i = preferred_[next_preferred_++];
      if (i < taken_.size() && !taken_[i]) return take(i);
    }
    for (int attempt = 0; attempt < 64; ++attempt) {
      const std::size_t i = rng_() % space_.size();
      if (!taken_[i]) return take(i);
    }
    for (std::size_t i = 0; i < space_.size(); ++i)
      if (!taken_[i]) return take(i);
    return std::nullopt;
  }
  // Rank-weighted choice among the elite: the best is picked most often.
  std::size_t pick_parent() {
    const std::size_t n = best_.size();
    std::size_t r = rng_() % (n * (n + 1) / 2);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t weight = n - i;
      if (r < weight) return best_[i].second;
      r -= weight;
    }
    return best_.front().second;
  }
  std::size_t mutate(std::size_t parent) {
    Config c = space_.at(parent);
    const int changes = 1 + static_cast<int>(rng_() % 2);
    for (int k = 0; k < changes; ++k) {
      auto it = values_.begin();
      std::advance(it, rng_() % values_.size());
      const auto& vals = it->second;
      if (vals.size() < 2) continue;
      auto v = vals.begin();
      std::advance(v, rng_() % vals.size());
      c[it->first] = *v;
    }
    return space_.index_of(c);
  }

  const SearchSpace& space_;
  std::mt19937_64 rng_;
  std::vector<bool> taken_;
  std::size_t taken_count_ = 0;
  std::size_t proposed_ = 0;
  std::size_t warmup_ = 8;
  std::map<std::string, std::set<std::int64_t>> values_;
  std::vector<std::pair<double, std::size_t>> best_;
  std::vector<std::size_t> preferred_;
  std::size_t next_preferred_ = 0;
};

// Every configuration as parameter levels (the rank of each value among the parameter's allowed
// values), with the reverse map, so that neighbours and children are built and looked up without
// strings. A tree split on a level is the same split as on the value or on its log2: for the
// surrogate, ranks are all the numeric treatment a parameter needs.
class LevelSpace {
 public:
  explicit LevelSpace(const SearchSpace& space) : size_(space.size()) {
    // The space stores every configuration's values in one parameter order.
    const std::size_t params = size_ ? space.names().size() : 0;
    std::vector<std::set<std::int64_t>> values(params);
    for (std::size_t i = 0; i < size_; ++i)
      for (std::size_t p = 0; p < params; ++p) values[p].insert(space.values(i)[p]);
    for (const auto& vals : values) {
      sorted_.emplace_back(vals.begin(), vals.end());
      if (vals.size() > 1) varying_.push_back(sorted_.size() - 1);
    }
    stride_.assign(sorted_.size(), 1);
    for (std::size_t p = sorted_.size(); p > 1; --p)
      stride_[p - 2] = stride_[p - 1] * sorted_[p - 1].size();
    levels_.resize(size_ * sorted_.size());
    for (std::size_t i = 0; i < size_; ++i) {
      for (std::size_t p = 0; p < params; ++p) {
        const auto& vals = sorted_[p];
        levels_[i * sorted_.size() + p] = static_cast<std::uint16_t>(
            std::lower_bound(vals.begin(), vals.end(), space.values(i)[p]) - vals.begin());
      }
      index_.emplace(code(at(i)), i);
    }
  }

  std::size_t params() const { return sorted_.size(); }
  std::size_t radix(std::size_t p) const { return sorted_[p].size(); }
  // The parameters with more than one allowed value: the only ones worth changing or splitting on.
  const std::vector<std::size_t>& varying() const { return varying_; }
  const std::uint16_t* at(std::size_t i) const { return &levels_[i * sorted_.size()]; }
  std::vector<std::uint16_t> copy(std::size_t i) const { return {at(i), at(i) + params()}; }
  // Index of the configuration with these levels, or npos when the constraints reject it.
  std::size_t find(const std::vector<std::uint16_t>& levels) const {
    auto it = index_.find(code(levels.data()));
    return it == index_.end() ? SearchSpace::npos : it->second;
  }
  // The index not taken that differs from `levels` in the fewest parameters, the first met from
  // `start` among equals; npos when every index is taken.
  std::size_t nearest_free(const std::vector<std::uint16_t>& levels, const std::vector<bool>& taken,
                           std::size_t start) const {
    std::size_t best = SearchSpace::npos, best_distance = params() + 1;
    for (std::size_t k = 0; k < size_ && best_distance > 0; ++k) {
      const std::size_t i = (start + k) % size_;
      if (taken[i]) continue;
      std::size_t distance = 0;
      for (std::size_t p = 0; p < params(); ++p) distance += at(i)[p] != levels[p];
      if (distance < best_distance) best = i, best_distance = distance;
    }
    return best;
  }

 private:
  // Mixed radix over the parameters: below the size of the cartesian product, so no collision.
  std::uint64_t code(const std::uint16_t* levels) const {
    std::uint64_t c = 0;
    for (std::size_t p = 0; p < params(); ++p) c += levels[p] * stride_[p];
    return c;
  }

  std::size_t size_;
  std::vector<std::vector<std::int64_t>> sorted_;
  std::vector<std::size_t> varying_;
  std::vector<std::uint64_t> stride_;
  std::vector<std::uint16_t> levels_;
  std::unordered_map<std::uint64_t, std::size_t> index_;
};

// What the adaptive strategies share: what is taken (done, seeded or proposed), the random
// engine, and a random untaken index whenever a strategy's own choice finds none, so that each
// can exhaust the space. Draws use the engine's raw output: the standard distributions differ
// between standard libraries.
class AdaptiveStrategy : public Strategy {
 public:
  AdaptiveStrategy(const SearchSpace& space, std::uint64_t seed, const std::vector<bool>& done)
      : levels_(space), rng_(seed), taken_(space.size(), false) {
    for (std::size_t i = 0; i < done.size() && i < taken_.size(); ++i)
      if (done[i]) mark(i);
  }

  std::optional<std::size_t> propose() final {
    if (taken_count_ >= taken_.size()) return std::nullopt;
    std::size_t i = choose();
    if (!available(i)) i = random_free();
    mark(i);
    ++proposed_;
    return i;
  }
  void seed(std::size_t index) override {
    if (index < taken_.size()) mark(index);
  }
  void prefer(const std::vector<std::size_t>& indices) override { preferred_ = indices; }

 protected:
  // An untaken index, or npos to propose a random one.
  virtual std::size_t choose() = 0;

  std::size_t draw(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  bool available(std::size_t i) const { return i < taken_.size() && !taken_[i]; }
  // Moves one varying parameter to another of its values.
  void change(std::vector<std::uint16_t>& levels) {
    const auto& varying = levels_.varying();
    if (varying.empty()) return;
    const std::size_t p = varying[draw(varying.size())];
    const std::size_t radix = levels_.radix(p);
    levels[p] = static_cast<std::uint16_t>((levels[p] + 1 + draw(radix - 1)) % radix);
  }
  // A configuration one or two parameters away from `from`; npos when the constraints reject it.
  std::size_t neighbour(std::size_t from) {
    auto levels = levels_.copy(from);
    for (std::size_t k = 1 + draw(2); k > 0; --k) change(levels);
    return levels_.find(levels);
  }

  const LevelSpace levels_;
  std::mt19937_64 rng_;
  std::vector<bool> taken_;
  std::size_t proposed_ = 0;

 private:
  void mark(std::size_t i) {
    if (!taken_[i]) taken_[i] = true, ++taken_count_;
  }
  std::size_t random_free() {
    while (next_preferred_ < preferred_.size()) {
      const std::size_t i = preferred_[next_preferred_++];
      if (available(i)) return i;
    }
    for (int attempt = 0; attempt < 64; ++attempt) {
      const std::size_t i = draw(taken_.size());
      if (!taken_[i]) return i;
    }
    const std::size_t start = draw(taken_.size());
    for (std::size_t k = 0;; ++k)  // propose() checked that one is free
      if (!taken_[(start + k) % taken_.size()]) return (start + k) % taken_.size();
  }

  std::size_t taken_count_ = 0;
  std::vector<std::size_t> preferred_;
  std::size_t next_preferred_ = 0;
};

// Simulated annealing on log(time): proposals are neighbours of the current configuration; a
// result replaces it when faster, or when slower with probability exp(-slowdown / temperature).
// Each result cools the temperature; after a run of results without a new best, the walk restarts,
// reheated, from the best seen. The first proposals are random (the pipeline's first window is
// blind anyway). With proposals in flight, a result is judged against the current configuration
// when it arrives, not the one it was a neighbour of.
class AnnealStrategy : public AdaptiveStrategy {
 public:
  using AdaptiveStrategy::AdaptiveStrategy;
  std::string name() const override { return "anneal"; }
  std::size_t blind_proposals() const override { return kWarmup; }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    // A failure is infinitely slow: never accepted, and it counts toward a restart.
    const double cost = time_ms && *time_ms > 0 ? std::log(*time_ms) : kInfinity;
    if (cost < best_cost_)
      best_ = index, best_cost_ = cost, since_best_ = 0;
    else
      ++since_best_;
    if (cost < current_cost_ ||
        (cost < kInfinity && uniform() < std::exp((current_cost_ - cost) / temperature_)))
      current_ = index, current_cost_ = cost;
    temperature_ = std::max(kMinTemperature, temperature_ * kCooling);
    if (since_best_ >= kPatience) restart();
  }

 private:
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();
  // On log(time): at first a neighbour 5% slower is accepted about one time in three.
  static constexpr double kStartTemperature = 0.05;
  static constexpr double kMinTemperature = 0.002;
  static constexpr double kCooling = 0.97;
  static constexpr std::size_t kPatience = 24;
  static constexpr std::size_t kWarmup = 8;

  std::size_t choose() override {
    if (proposed_ < kWarmup || current_ == SearchSpace::npos) return SearchSpace::npos;
    while (true) {
      for (int attempt = 0; attempt < 64; ++attempt) {
        const std::size_t i = neighbour(current_);
        if (available(i)) return i;
      }
      // The neighbourhood is used up: go on from the best seen, or from a random pick.
      if (current_ == best_) return SearchSpace::npos;
      restart();
    }
  }
  void restart() {
    current_ = best_, current_cost_ = best_cost_, since_best_ = 0;
    temperature_ = kStartTemperature;
  }

  std::size_t current_ = SearchSpace::npos, best_ = SearchSpace::npos;
  double current_cost_ = kInfinity, best_cost_ = kInfinity;
  double temperature_ = kStartTemperature;
  std::size_t since_best_ = 0;
};

// A steady-state genetic algorithm: the population is the fastest configurations observed; a
// child takes each parameter from one of two parents chosen by tournament, then mutates. A child
// outside the space or already taken is drawn again, and after that repaired to the nearest
// untaken configuration. The first proposals are random: they seed the population.
class GeneticStrategy : public AdaptiveStrategy {
 public:
  using AdaptiveStrategy::AdaptiveStrategy;
  std::string name() const override { return "genetic"; }
  std::size_t blind_proposals() const override { return kPopulation; }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    if (!time_ms || *time_ms <= 0) return;
    const std::pair<double, std::size_t> member(std::log(*time_ms), index);
    population_.insert(std::upper_bound(population_.begin(), population_.end(), member), member);
    if (population_.size() > kPopulation) population_.pop_back();
  }

 private:
  static constexpr std::size_t kPopulation = 16;
  static constexpr std::size_t kTournament = 4;

  std::size_t choose() override {
    if (proposed_ < kPopulation || population_.size() < 2) return SearchSpace::npos;
    std::vector<std::uint16_t> child;
    for (int attempt = 0; attempt < 32; ++attempt) {
      const std::size_t a = population_[tournament()].second;
      std::size_t b = population_[tournament()].second;
      for (int retry = 0; retry < 4 && b == a; ++retry) b = population_[tournament()].second;
      child = levels_.copy(a);
      const std::uint16_t* other = levels_.at(b);
      for (std::size_t p = 0; p < child.size(); ++p)
        if (rng_() & 1) child[p] = other[p];
      // Each varying parameter mutates with probability 1 / their count; a copy of a parent (two
      // close parents) always does.
      const std::size_t varying = levels_.varying().size();
      for (std::size_t k = 0; k < varying; ++k)
        if (draw(varying) == 0) change(child);
      if (same(child, a) || same(child, b)) change(child);
      const std::size_t i = levels_.find(child);
      if (available(i)) return i;
    }
    return levels_.nearest_free(child, taken_, draw(taken_.size()));
  }
  // The best of kTournament members drawn at random: the lowest position, as the population is
  // sorted.
  std::size_t tournament() {
    std::size_t winner = draw(population_.size());
    for (std::size_t k = 1; k < kTournament; ++k)
      winner = std::min(winner, draw(population_.size()));
    return winner;
  }
  bool same(const std::vector<std::uint16_t>& levels, std::size_t i) const {
    return std::equal(levels.begin(), levels.end(), levels_.at(i));
  }

  std::vector<std::pair<double, std::size_t>> population_;  // (log time, index), fastest first
};

// A random forest of regression trees on parameter levels: each tree fits a bootstrap sample and
// splits on the best of a random half of the parameters. The spread of the trees' predictions
// stands for the model's uncertainty.
class Forest {
 public:
  struct Prediction {
    double mean = 0;
    double spread = 0;
  };

  // Fits y[k], the target of configuration rows[k].
  void fit(const LevelSpace& levels, const std::vector<std::size_t>& rows,
           const std::vector<double>& y, std::size_t trees, std::mt19937_64& rng) {
    levels_ = &levels;
    features_ = std::max<std::size_t>(1, (levels.varying().size() + 1) / 2);
    trees_.assign(trees, {});
    for (auto& tree : trees_) {
      std::vector<std::size_t> sample(rows.size());
      for (auto& s : sample) s = static_cast<std::size_t>(rng() % rows.size());
      tree.emplace_back();
      grow(tree, 0, rows, y, sample, 0, sample.size(), 0, rng);
    }
  }

  // The mean and spread of the trees' predictions for each of `indices`.
  std::vector<Prediction> predict(const std::vector<std::size_t>& indices) const {
    std::vector<Prediction> out(indices.size());
    // Tree by tree: one tree stays in cache, and the walks of consecutive indices overlap.
    for (const auto& tree : trees_)
      for (std::size_t k = 0; k < indices.size(); ++k) {
        const std::uint16_t* x = levels_->at(indices[k]);
        std::uint32_t n = 0;
        while (tree[n].feature != kLeaf)
          n = tree[n].left + (x[tree[n].feature] <= tree[n].threshold ? 0 : 1);
        out[k].mean += tree[n].value;
        out[k].spread += tree[n].value * tree[n].value;  // the sum of squares, for now
      }
    const double count = static_cast<double>(trees_.size());
    for (auto& p : out) {
      p.mean /= count;
      p.spread = std::sqrt(std::max(0.0, p.spread / count - p.mean * p.mean));
    }
    return out;
  }

 private:
  static constexpr std::uint16_t kLeaf = 0xffff;
  static constexpr std::size_t kMinLeaf = 2;
  static constexpr std::size_t kMaxDepth = 12;
  struct Node {
    std::uint16_t feature = kLeaf;
    std::uint16_t threshold = 0;  // levels up to the threshold go left
    std::uint32_t left = 0;       // the right child follows the left one
    double value = 0;
  };
  using Tree = std::vector<Node>;

  // Makes tree[node] fit sample[lo, hi): a leaf with their mean, or the least-squares split.
  void grow(Tree& tree, std::size_t node, const std::vector<std::size_t>& rows,
            const std::vector<double>& y, std::vector<std::size_t>& sample, std::size_t lo,
            std::size_t hi, std::size_t depth, std::mt19937_64& rng) {
    double sum = 0;
    for (std::size_t k = lo; k < hi; ++k) sum += y[sample[k]];
    const std::size_t n = hi - lo;
    tree[node].value = sum / static_cast<double>(n);
    if (n < 2 * kMinLeaf || depth >= kMaxDepth) return;

    // Least squares: the split maximising sum_left^2 / n_left + sum_right^2 / n_right, which
    // must beat no split by more than rounding.
    double best_score = sum * sum / static_cast<double>(n) + 1e-9;
    std::uint16_t best_feature = kLeaf, best_threshold = 0;
    std::vector<std::size_t> order = levels_->varying();
    std::vector<double> level_sum;
    std::vector<std::size_t> level_count;
    for (std::size_t f = 0; f < features_ && f < order.size(); ++f) {
      std::swap(order[f], order[f + static_cast<std::size_t>(rng() % (order.size() - f))]);
      const std::size_t p = order[f];
      level_sum.assign(levels_->radix(p), 0);
      level_count.assign(levels_->radix(p), 0);
      for (std::size_t k = lo; k < hi; ++k) {
        const std::uint16_t l = levels_->at(rows[sample[k]])[p];
        level_sum[l] += y[sample[k]];
        ++level_count[l];
      }
      double left_sum = 0;
      std::size_t left_count = 0;
      for (std::size_t t = 0; t + 1 < level_sum.size(); ++t) {
        left_sum += level_sum[t];
        left_count += level_count[t];
        if (level_count[t] == 0 || left_count < kMinLeaf || n - left_count < kMinLeaf) continue;
        const double right_sum = sum - left_sum;
        const double score = left_sum * left_sum / static_cast<double>(left_count) +
                             right_sum * right_sum / static_cast<double>(n - left_count);
        if (score > best_score)
          best_score = score, best_feature = static_cast<std::uint16_t>(p),
          best_threshold = static_cast<std::uint16_t>(t);
      }
    }
    if (best_feature == kLeaf) return;
    // Stable: each side keeps its order, so its sums round the same with every standard library.
    const auto mid = std::stable_partition(
        sample.begin() + static_cast<std::ptrdiff_t>(lo),
        sample.begin() + static_cast<std::ptrdiff_t>(hi),
        [&](std::size_t s) { return levels_->at(rows[s])[best_feature] <= best_threshold; });
    const std::size_t split = static_cast<std::size_t>(mid - sample.begin());
    const std::size_t left = tree.size();
    tree[node].feature = best_feature;
    tree[node].threshold = best_threshold;
    tree[node].left = static_cast<std::uint32_t>(left);
    tree.resize(left + 2);
    grow(tree, left, rows, y, sample, lo, split, depth + 1, rng);
    grow(tree, left + 1, rows, y, sample, split, hi, depth + 1, rng);
  }

  const LevelSpace* levels_ = nullptr;
  std::size_t features_ = 1;
  std::vector<Tree> trees_;
};

// Model-based search: after a random warm-up, a random forest learns log(time) from the
// parameters, and every untaken configuration is ranked by its expected improvement on the best
// seen (from the forest's mean and spread). Proposals walk down that ranking; the forest is
// refitted every few results, and a share of random picks covers what the model has not seen.
// Targets are capped at the median result, and a failure is learnt at that cap: the model steers
// away from what does not compile or fit without spending its splits on how slow the slow are.
// "hybrid" gives one proposal in `neighbour_share` (after the warm-up) to the best configuration
// seen's untaken one-parameter neighbour that the forest predicts fastest: a model-guided search
// of a few hundred evaluations in a space of 10^5 can measure a tile with one vector width, split
// or stage count only and never try the best kernel with the next value (docs/GEMM.md, the tuned
// stage's spread).
class ModelStrategy : public AdaptiveStrategy {
 public:
  ModelStrategy(const SearchSpace& space, std::uint64_t seed, const std::vector<bool>& done,
                std::size_t neighbour_share = 0)
      : AdaptiveStrategy(space, seed, done), neighbour_share_(neighbour_share) {}
  std::string name() const override { return neighbour_share_ ? "hybrid" : "model"; }
  std::size_t blind_proposals() const override { return kWarmup; }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    rows_.push_back(index);
    const bool ok = time_ms && *time_ms > 0;
    log_time_.push_back(ok ? std::log(*time_ms) : std::numeric_limits<double>::quiet_NaN());
    ok_ += ok;
  }

 private:
  static constexpr std::size_t kWarmup = 16;
  static constexpr std::size_t kRandomShare = 10;  // one proposal in this many is random
  static constexpr std::size_t kRefitEvery = 4;
  static constexpr std::size_t kRefitShare = 16;  // refit after results grow by 1 / this share
  static constexpr std::size_t kRanked = 64;      // the ranking keeps the best this many
  static constexpr std::size_t kTrees = 24;
  static constexpr double kCapQuantile = 0.5;  // of the results: the cap on the targets
  static constexpr double kInverseSqrt2Pi = 0.3989422804014327;

  std::size_t choose() override {
    if (proposed_ < kWarmup || ok_ < 2 || draw(kRandomShare) == 0) return SearchSpace::npos;
    // Refits grow rarer as results pile up (each costs a prediction per untaken configuration).
    if (rows_.size() >= fitted_ + std::max(kRefitEvery, rows_.size() / kRefitShare) ||
        next_ >= ranking_.size())
      refit();
    if (neighbour_share_ && draw(neighbour_share_) == 0)
      if (const std::size_t i = best_neighbour(); i != SearchSpace::npos) return i;
    while (next_ < ranking_.size()) {
      const std::size_t i = ranking_[next_++];
      if (available(i)) return i;
    }
    return SearchSpace::npos;
  }

  void refit() {
    std::vector<double> ok;
    for (double y : log_time_)
      if (!std::isnan(y)) ok.push_back(y);
    std::sort(ok.begin(), ok.end());
    const double best = ok.front();
    const double cap =
        ok[static_cast<std::size_t>(kCapQuantile * static_cast<double>(ok.size() - 1))];
    std::vector<double> y = log_time_;
    for (double& v : y) v = std::isnan(v) ? cap : std::min(v, cap);
    forest_.fit(levels_, rows_, y, kTrees, rng_);
    fitted_ = rows_.size();

    // Expected improvement on `best` of a normal with the forest's mean and spread; equal scores
    // (configurations the trees do not tell apart) are ordered by a random key.
    struct Scored {
      double improvement;
      std::uint64_t key;
      std::size_t index;
    };
    std::vector<std::size_t> untaken;
    for (std::size_t i = 0; i < taken_.size(); ++i)
      if (!taken_[i]) untaken.push_back(i);
    const auto predictions = forest_.predict(untaken);
    std::vector<Scored> scored;
    for (std::size_t k = 0; k < untaken.size(); ++k) {
      const auto [mean, spread] = predictions[k];
      double ei = std::max(0.0, best - mean);
      if (spread > 0) {
        const double z = (best - mean) / spread;
        ei = (best - mean) * 0.5 * std::erfc(-z / std::sqrt(2.0)) +
             spread * std::exp(-0.5 * z * z) * kInverseSqrt2Pi;
      }
      scored.push_back({ei, rng_(), untaken[k]});
    }
    const auto ranked =
        scored.begin() + static_cast<std::ptrdiff_t>(std::min(kRanked, scored.size()));
    std::partial_sort(scored.begin(), ranked, scored.end(), [](const Scored& a, const Scored& b) {
      if (a.improvement != b.improvement) return a.improvement > b.improvement;
      return a.key != b.key ? a.key < b.key : a.index < b.index;
    });
    ranking_.clear();
    for (auto it = scored.begin(); it != ranked; ++it) ranking_.push_back(it->index);
    next_ = 0;
  }

  // The untaken configuration one parameter away from the fastest seen that the forest (fitted
  // by choose()) predicts fastest; npos where every such neighbour is taken or refused.
  std::size_t best_neighbour() {
    std::size_t best = SearchSpace::npos;
    double best_log = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < rows_.size(); ++k)
      if (log_time_[k] < best_log) best_log = log_time_[k], best = rows_[k];
    if (best == SearchSpace::npos) return best;
    std::vector<std::size_t> free;
    const auto from = levels_.copy(best);
    for (const std::size_t p : levels_.varying()) {
      auto levels = from;
      for (std::uint16_t l = 0; l < levels_.radix(p); ++l) {
        if (l == from[p]) continue;
        levels[p] = l;
        const std::size_t i = levels_.find(levels);
        if (available(i)) free.push_back(i);
      }
    }
    if (free.empty()) return SearchSpace::npos;
    const auto predictions = forest_.predict(free);
    std::size_t pick = 0;
    for (std::size_t k = 1; k < free.size(); ++k)
      if (predictions[k].mean < predictions[pick].mean) pick = k;
    return free[pick];
  }

  std::size_t neighbour_share_;
  std::vector<std::size_t> rows_;  // observed indices
  std::vector<double> log_time_;   // their log(time); NaN for a failure
  std::size_t ok_ = 0;
  Forest forest_;
  std::size_t fitted_ = 0;  // results the forest was fitted on
  std::vector<std::size_t> ranking_;
  std::size_t next_ = 0;
};

// "hybrid": one proposal in this many a neighbour of the best seen.
constexpr std::size_t kNeighbourShare = 4;

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "evolve", "anneal", "genetic", "model", "hybrid"};
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space,
                                        std::uint64_t seed, const std::vector<bool>& done) {
  std::vector<std::size_t> order(space.size());
  std::iota(order.begin(), order.end(), 0);
  if (name == "exhaustive") return std::make_unique<OrderedStrategy>(name, std::move(order), done);
  if (name == "random") {
    std::mt19937_64 rng(seed);
    // Fisher-Yates with our own index draw: std::shuffle's use of the engine is not specified,
    // so its order could differ between standard libraries.
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    return std::make_unique<OrderedStrategy>(name, std::move(order), done);
  }
  if (name == "evolve") return std::make_unique<EvolveStrategy>(space, seed, done);
  if (name == "anneal") return std::make_unique<AnnealStrategy>(space, seed, done);
  if (name == "genetic") return std::make_unique<GeneticStrategy>(space, seed, done);
  if (name == "model") return std::make_unique<ModelStrategy>(space, seed, done);
  if (name == "hybrid") return std::make_unique<ModelStrategy>(space, seed, done, kNeighbourShare);
  throw Error(
      ErrorCode::kInvalidArgument,
      "unknown strategy '" + name +
          "' (exhaustive, random, evolve, anneal, genetic, model, hybrid)");
}

}  // namespace ktune
