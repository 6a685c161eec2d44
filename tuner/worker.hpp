// Candidates measured in a worker process, so that a fault or a hang ends the worker, not the run.
//
// The tuner (parent) compiles, keeps the database and watches the clock; the worker holds the
// CUDA context and the problem's buffers, loads each candidate's binary, verifies and times it.
// They talk over a socket pair in length-prefixed frames. The worker reports each phase of an
// evaluation (run once, verify, time n launches) so that the parent's limit follows what the GPU
// is doing: a launch may take max(floor, factor x best time so far). Past the limit the parent
// kills the worker and records `timeout`; a worker that dies (or reports a sticky CUDA error,
// after which its context is useless) is recorded as `fault`. The next candidate starts a new
// worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "platform/device.hpp"
#include "platform/problem.hpp"
#include "tuner/runner.hpp"

namespace ktune {

class Family;

// Runs candidates in workers started with worker.command (+ the descriptor number), timed as
// `timing` says, inputs drawn from `seed`. `db_path` is opened by the worker for its helper
// kernels' binary cache ("" for none).
std::unique_ptr<CandidateRunner> make_worker_runner(const DeviceInfo& device, const Family& family,
                                                    const Problem& problem,
                                                    const std::string& db_path,
                                                    const WorkerOptions& worker,
                                                    const TimingOptions& timing,
                                                    std::uint64_t seed);

// The worker's side: serves the parent on descriptor `fd` until it closes; returns the exit
// status. Dies with the parent (PR_SET_PDEATHSIG), so a killed tuner leaves no worker behind.
int run_tuning_worker(int fd);

}  // namespace ktune
