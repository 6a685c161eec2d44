// How the C API reaches the tuner without depending on it (the runtime never does): the tuner
// library sets the hook when it is linked in (tuner/tune_on_miss.cpp; libktune.so holds both),
// and the hook stays null in a program linked without it.
#pragma once

#include <cstddef>
#include <memory>

namespace ktune {

class MissTuner;

namespace detail {

// A tuner for Options::tune_on_miss with a budget (0: the default of each); throws
// Error(kInvalidArgument) for a budget that is negative or not finite.
using MissTunerFactory = std::shared_ptr<MissTuner> (*)(std::size_t max_evals, double max_seconds);
extern MissTunerFactory c_api_miss_tuner;

}  // namespace detail
}  // namespace ktune
