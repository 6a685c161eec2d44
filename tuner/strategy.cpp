// Exhaustive and random search.
#include "tuner/strategy.hpp"

#include <algorithm>
#include <numeric>
#include <random>

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

 private:
  std::string name_;
  std::vector<std::size_t> order_;
  std::vector<bool> done_;
  std::size_t next_ = 0;
};

}  // namespace

std::vector<std::string> strategy_names() { return {"exhaustive", "random"}; }

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
  throw Error(ErrorCode::kInvalidArgument, "unknown strategy '" + name + "' (exhaustive, random)");
}

}  // namespace ktune
