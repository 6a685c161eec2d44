// Search strategies behind one interface: propose candidates, observe their results.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ktune {

class SearchSpace;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // The next candidate to evaluate (an index into the space), or nullopt when the strategy has
  // nothing more to propose. Never proposes an index twice, nor one marked done.
  virtual std::optional<std::size_t> propose() = 0;
  // The tuner evaluates `index` on its own (a configuration that won a neighbouring problem):
  // never propose it; its outcome arrives through observe() like any other.
  virtual void seed(std::size_t index) = 0;
  // The outcome of a proposed candidate: its median time, or nullopt if it failed.
  virtual void observe(std::size_t index, std::optional<double> time_ms) = 0;
};

// "exhaustive", "random", "evolve", "anneal", "genetic" or "model"; `done` are indices already
// evaluated (never proposed again).
// Deterministic for a given seed. Throws Error(kInvalidArgument) for an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space,
                                        std::uint64_t seed, const std::vector<bool>& done);
std::vector<std::string> strategy_names();

// Candidates the tuner keeps proposed ahead of the results (compiling or queued): small at first,
// so that an adaptive strategy sees results early, growing to `full` (2 per compile thread) once
// it has some, so that the compile pool keeps the GPU fed.
inline std::size_t pipeline_window(std::size_t full, std::size_t results) {
  constexpr std::size_t kFirst = 8;
  return std::max<std::size_t>(1, std::min(full, kFirst + results / 8));
}

}  // namespace ktune
