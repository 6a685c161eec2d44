// Search strategies behind one interface: propose candidates, observe their results.
#pragma once

#include <algorithm>
#include <cmath>
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
  // How many first proposals depend on no result (a random warm-up, a fixed order): the tuner
  // may have them all in flight at once without costing the strategy any information.
  virtual std::size_t blind_proposals() const { return 0; }
  // Candidates that cost no compile (their kernels are in the binary cache), best first: where the
  // strategy would pick at random (its warm-up, a random share, a fixed order's start), it takes
  // these first, so that the GPU has work while the first compiles run. Called before propose().
  virtual void prefer(const std::vector<std::size_t>& indices) { (void)indices; }
};

// "exhaustive", "random", "evolve", "anneal", "genetic", "model" or "hybrid"; `done` are indices
// already evaluated (never proposed again).
// Deterministic for a given seed. Throws Error(kInvalidArgument) for an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space,
                                        std::uint64_t seed, const std::vector<bool>& done);
std::vector<std::string> strategy_names();

// Candidates the tuner keeps proposed ahead of the results (compiling or queued; those waiting on
// another candidate's compile of their kernel are not counted: they hold no compile thread): all of
// `full` (2 per compile thread) while the strategy makes its blind proposals, so that the compile
// pool starts at full speed; then 8, growing with the results, so that an adaptive strategy sees
// results before it proposes much, up to `full` so that the compile pool keeps the GPU fed.
// And never fewer than keep a compile finishing per candidate the GPU runs (Little's law):
// compile_s, a compile's mean time, over per_candidate_s, the loop's mean time per candidate
// besides waiting on compiles, plus one (both 0 before they are known), up to `full`.
inline std::size_t pipeline_window(std::size_t full, std::size_t results, std::size_t proposed,
                                   std::size_t blind, double compile_s = 0,
                                   double per_candidate_s = 0) {
  if (proposed < blind) return std::max<std::size_t>(1, full);
  constexpr std::size_t kFirst = 8;
  std::size_t window = kFirst + results / 4;
  if (compile_s > 0 && per_candidate_s > 0) {
    const double fed = std::ceil(std::min(compile_s / per_candidate_s, 1e6)) + 1;
    window = std::max(window, static_cast<std::size_t>(fed));
  }
  return std::max<std::size_t>(1, std::min(full, window));
}

}  // namespace ktune
