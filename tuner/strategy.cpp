// Exhaustive and random search.
#include "tuner/strategy.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

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
    for (const auto& c : space.configs())
      for (const auto& [name, value] : c) values_[name].insert(value);
    warmup_ = std::min<std::size_t>(16, std::max<std::size_t>(4, space.size() / 50));
  }
  std::string name() const override { return "evolve"; }

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

 private:
  static constexpr std::size_t kElite = 8;

  std::size_t take(std::size_t i) {
    taken_[i] = true;
    ++taken_count_;
    ++proposed_;
    return i;
  }
  std::optional<std::size_t> random_pick() {
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
    return space_.index_of(to_string(c));
  }

  const SearchSpace& space_;
  std::mt19937_64 rng_;
  std::vector<bool> taken_;
  std::size_t taken_count_ = 0;
  std::size_t proposed_ = 0;
  std::size_t warmup_ = 8;
  std::map<std::string, std::set<std::int64_t>> values_;
  std::vector<std::pair<double, std::size_t>> best_;
};

}  // namespace

std::vector<std::string> strategy_names() { return {"exhaustive", "random", "evolve"}; }

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
  throw Error(ErrorCode::kInvalidArgument,
              "unknown strategy '" + name + "' (exhaustive, random, evolve)");
}

}  // namespace ktune
