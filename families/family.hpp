// The family interface: what a template exposes (parameters, constraints, names, launch, check).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "platform/device.hpp"
#include "platform/nvrtc.hpp"
#include "platform/problem.hpp"

namespace ktune {

// Parameters held to some of their values, by name (a runtime's strict FP32, `ktune tune --only`).
using ParamValues = std::map<std::string, std::vector<std::int64_t>>;
// Whether every parameter `only` names is present in `config` with one of its values.
bool within(const Config& config, const ParamValues& only);

class Kernel;
class KernelCache;

struct Param {
  std::string name;
  std::vector<std::int64_t> values;
  std::string help;  // one line: what the parameter changes in the kernel
};

// One problem's device buffers, for verifying and timing candidates. Made by the family.
class Workload {
 public:
  virtual ~Workload() = default;
  // Fresh random inputs (never zeros) and outputs poisoned (NaN / 0xFF), seeded: the same seed
  // gives the same inputs. The tuner prepares every candidate of a run from one seed, so a
  // workload may keep the reference it verifies against for them (the GEMM workloads do:
  // KeptReference in families/gemm/gemm.hpp), filling the inputs again every time.
  virtual void prepare(std::uint64_t seed, CUstream stream) = 0;
  // Runs the candidate once on the prepared buffers.
  virtual void run(const Kernel& kernel, const Config& config, CUstream stream) = 0;
  // "" when the outputs match the reference, else what is wrong (first mismatch).
  virtual std::string verify(CUstream stream) = 0;
  // Work of one run, in the family's metric: bytes moved (GB/s) or flops (TFLOPS).
  virtual double work() const = 0;
  // Device memory this workload holds, to size the L2 flush and report.
  virtual std::size_t bytes() const = 0;
};

// What a family compiles: its main source, the headers it includes by name, extra NVRTC
// options, and text that the template hash covers besides them (a family file's declarations).
struct SourceSet {
  std::string name;
  std::string text;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> options;
  std::string hashed;
};

// How Runtime::launch runs a family's kernel for one (configuration, problem, device): the
// geometry, and what each argument in the kernel's order is.
struct LaunchPlan {
  struct Argument {
    std::string name;
    bool buffer = true;
    std::uint64_t length = 0;  // a buffer's elements (a null pointer is allowed only for 0)
    int bytes = 0;             // a scalar's size
    bool floating = false, is_signed = false;
  };
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<Argument> arguments;
};

// Family::space_rules: whether a configuration, given as its values in the order of the family's
// params(), passes the family's rules for one problem on one device.
class SpaceRules {
 public:
  virtual ~SpaceRules() = default;
  // The first head_params() values alone can serve (true where the family has no head).
  virtual bool head_ok(const std::int64_t* /*values*/) { return true; }
  // reject_prefix() accepts the first prefix_params() values; asked only of values whose head
  // head_ok() accepted, the last it was asked of.
  virtual bool prefix_ok(const std::int64_t* values) = 0;
  // reject() accepts all of them.
  virtual bool ok(const std::int64_t* values) = 0;
};

// metric = work / time in the family's unit (GB/s: 1e9 bytes per second; TFLOPS: 1e12 flop/s).
double metric_of(double work, double median_ms, const std::string& unit);

class Family {
 public:
  virtual ~Family() = default;

  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::string source_file() const = 0;  // e.g. "elementwise.cuh"
  virtual const std::vector<Param>& params() const = 0;
  virtual std::string metric_unit() const = 0;  // "GB/s" or "TFLOPS"
  // The work of one run of `problem` in the metric's quantity (bytes, flops), known without a GPU:
  // for results measured elsewhere (ktune db import-kerneltuner). nullopt where the family can
  // only say it from its workload.
  virtual std::optional<double> work_of(const Problem& /*problem*/,
                                        const DeviceLimits& /*limits*/) const {
    return std::nullopt;
  }
  // Where the family comes from: "built-in", or the path of its family file.
  virtual std::string origin() const { return "built-in"; }
  // The sources: by default the embedded template source_file() and the headers it includes.
  virtual SourceSet sources() const;
  // Why the family has no kernel for GPUs of these limits (its instructions do not exist there:
  // gemm_tc's wgmma off sm_90), or "" where it has. `ktune check` skips such an architecture and
  // says so instead of failing; reject() refuses every configuration there with this reason.
  virtual std::string unsupported(const DeviceLimits& /*limits*/) const { return {}; }
  // The target NVRTC compiles for on a device of `arch` ("sm_90"): the family's kernels may need
  // the architecture-specific one ("sm_90a", for wgmma), whose CUBIN runs on that device only.
  virtual std::string compile_arch(const std::string& arch) const { return arch; }
  // For `ktune params`: problem axes ("name\trange\thelp") and constraints ("why\trule"), where
  // the family declares them as data.
  virtual std::vector<std::string> describe_axes() const { return {}; }
  virtual std::vector<std::string> describe_constraints() const { return {}; }
  // For Runtime::launch: the plan of the kernel for `config`, or nullopt for a family that
  // launches only through its typed calls (the built-in ones). Throws Error(kInvalidArgument)
  // when the geometry is impossible on the device.
  virtual std::optional<LaunchPlan> launch_plan(const Config&, const Problem&,
                                                const DeviceLimits&) const {
    return std::nullopt;
  }
  // Name expressions of reference kernels in the family's sources, for `ktune check`.
  virtual std::vector<std::string> reference_names(const Problem&) const { return {}; }

  // Problems that together instantiate every kernel variant (ktune check), and the problems
  // `ktune tune` tunes when none is named.
  virtual std::vector<Problem> check_problems() const = 0;
  virtual std::vector<Problem> default_problems() const = 0;
  // Throws Error(kInvalidArgument) naming what is wrong when the problem is not one of ours.
  virtual void validate(const Problem& problem) const = 0;
  // A problem built from a default problem with the axes in `given` set by the user (ktune tune
  // FAMILY --axis VALUE): the family may derive the axes not given from those given (gemm_tc's
  // out and align follow dtype). Before validate().
  virtual void complete_problem(Problem& /*problem*/,
                                const std::vector<std::string>& /*given*/) const {}

  // Why `config` cannot serve `problem` on a device with `limits`, or "" when it can.
  // Static constraints only (known before compiling); resource checks come after ptxas.
  virtual std::string reject(const Config& config, const Problem& problem,
                             const DeviceLimits& limits) const = 0;
  // Pruning for a large space: the first prefix_params() parameters (in params() order) can rule
  // out every configuration that shares them. reject_prefix() sees a configuration holding only
  // those and returns why they cannot work, or "". It must refuse nothing that reject() accepts.
  virtual std::size_t prefix_params() const { return 0; }
  // The head of the prefix: its first head_params() parameters, which SpaceRules::head_ok() rules
  // on before the rest of the prefix is walked under them (0: none). head_ok() must refuse nothing
  // that reject_prefix() accepts.
  virtual std::size_t head_params() const { return 0; }
  virtual std::string reject_prefix(const Config&, const Problem&, const DeviceLimits&) const {
    return {};
  }
  // reject_prefix() and reject() for one problem and device, asked of configurations given as
  // their values in params() order: what SearchSpace walks (up to 480k configurations of a GEMM
  // with a huge k). By default a Config updated in place and the two calls above; a family whose
  // reject() reads the problem and looks its parameters up by name on every call reads them once
  // here instead. Refers to `problem` and `limits`, which must outlive it.
  virtual std::unique_ptr<SpaceRules> space_rules(const Problem& problem,
                                                  const DeviceLimits& limits) const;
  // Reason the compiled kernel cannot run (registers, shared memory), or "".
  virtual std::string reject_compiled(const Config&, const Problem&, const DeviceLimits&,
                                      const FunctionResources&) const {
    return {};
  }
  // The configurations `ktune check` compiles for one of check_problems(): by default all of
  // `space`. A family whose space is too large to compile in CI returns a covering subset: every
  // tile shape and every code path (`ktune check --exhaustive` still compiles everything).
  virtual std::vector<Config> check_configs(const std::vector<Config>& space) const {
    return space;
  }
  // A configuration tuned for another problem, made fit for this one where the family knows how
  // (a narrower vector width for a less aligned problem, say). The lookup chain checks the result.
  virtual Config adapt(const Config& config, const Problem&, const DeviceLimits&) const {
    return config;
  }
  // How far the winner of `tuned` is from `target` as a first candidate of the tuner (its
  // transfer seeds go nearest first): by default problem_distance, which keeps problems of other
  // attributes out (infinite). A family whose kernels behave alike across an attribute says so
  // (gemm_tc: bf16 and fp16 run the same tiles at the same speed).
  virtual double transfer_distance(const Problem& target, const Problem& tuned) const {
    return problem_distance(target, tuned);
  }
  // How far a tuned problem is from `target` for the lookup's nearest steps (the nearest tuned
  // problem answers one nobody tuned): by default problem_distance, which needs the same
  // attributes. A family whose problems spell one kernel in several ways says so (gemm_tc_skinny:
  // m = 1 with op nt runs the kernel of n = 1 with op nn).
  virtual double nearest_distance(const Problem& target, const Problem& tuned) const {
    return problem_distance(target, tuned);
  }
  // The lookup's predicted step ranks the winners of tuned problems on a problem nobody tuned by
  // the time a model gives them. A measurement: a configuration, the problem it was timed on, its
  // time, and the DRAM bandwidth of the GPU that timed it (bytes a second; 0 where unknown: the
  // target's), which a model carrying it to another GPU of the architecture reads.
  struct Measured {
    const Config* config;
    const Problem* tuned;
    double ms;
    double memory_bandwidth = 0;
  };
  // predict_ms: the time `candidate` would take on `target`, from `measured` (candidate is its
  // configuration or a variant of it), on `device`; nullopt where the family has no model (the
  // nearest tuned problem answers then). variants: configurations worth ranking besides an
  // adapted winner (GEMM: its other split-K counts); the lookup checks each against reject().
  virtual std::optional<double> predict_ms(const Measured& /*measured*/,
                                           const Config& /*candidate*/, const Problem& /*target*/,
                                           const DeviceInfo& /*device*/) const {
    return std::nullopt;
  }
  // predict_ms of each of `candidates` from one measurement: the same times, where a family
  // shares the measurement's part of the work between them (a first call of a GEMM shape nobody
  // tuned asks this of each of a few hundred measurements, for its adapted winner and the
  // winner's other split counts).
  virtual std::vector<std::optional<double>> predict_ms_each(
      const Measured& measured, const std::vector<const Config*>& candidates, const Problem& target,
      const DeviceInfo& device) const {
    std::vector<std::optional<double>> out;
    out.reserve(candidates.size());
    for (const Config* c : candidates) out.push_back(predict_ms(measured, *c, target, device));
    return out;
  }
  // predict_ms of one candidate from each of several measurements: the same times, where a
  // family shares the candidate's part of the work between them (the lookup blends what each of
  // a kernel's measurements near the problem says of it).
  virtual std::vector<std::optional<double>> predict_ms_from_each(
      const std::vector<Measured>& measured, const Config& candidate, const Problem& target,
      const DeviceInfo& device) const {
    std::vector<std::optional<double>> out;
    out.reserve(measured.size());
    for (const Measured& m : measured) out.push_back(predict_ms(m, candidate, target, device));
    return out;
  }
  virtual std::vector<Config> variants(const Config&, const Problem&, const DeviceLimits&) const {
    return {};
  }
  // Which measurements describe one kernel for the predicted step: configurations with the same
  // key differ only in what adapt() and variants() change for a problem (GEMM: split-K count and
  // rasterisation), and the step predicts from the measurement of such a group nearest to the
  // problem. By default the configuration itself.
  virtual Config measurement_key(const Config& config) const { return config; }
  // Threads per block the candidate launches with (0: chosen at launch, e.g. by the occupancy
  // API). The tuner checks it against what the loaded kernel allows before running it.
  virtual int block_threads(const Config&, const Problem&) const { return 0; }
  virtual std::vector<std::string> name_expressions(const Config& config,
                                                    const Problem& problem) const = 0;
  // Valid for every problem on every device: the last step of the lookup chain.
  virtual Config default_config(const Problem& problem, const DeviceLimits& limits) const = 0;
  // The same within `only` (parameters held to some of their values): by default the default
  // configuration with each held parameter at its first allowed value. Throws
  // Error(kInvalidArgument) where that is not valid for the problem.
  virtual Config default_config_within(const Problem& problem, const DeviceLimits& limits,
                                       const ParamValues& only) const;
  // The parameter values whose kernels compute in the problem's own precision throughout, where
  // some configurations do not (gemm_skinny's f32 on the tensor cores as 3xTF32: MMA 0 only);
  // empty where every configuration does. A runtime with Options::strict_fp32 holds its lookups
  // to them.
  virtual ParamValues strict_precision(const Problem& /*problem*/) const { return {}; }

  virtual std::unique_ptr<Workload> make_workload(const Problem& problem, const Device& device,
                                                  KernelCache& cache) const = 0;

  // A problem key read from a database, a file or a caller: parsed and validated, so that no
  // key reaches a family's arithmetic unchecked. Throws Error(kInvalidArgument).
  Problem parse_problem(std::string_view key) const;
  // A problem from axis values (sizes and categorical ones); axes not given take the values of
  // the first of default_problems(). Validated; throws Error(kInvalidArgument).
  Problem make_problem(const std::map<std::string, std::int64_t>& sizes,
                       const std::map<std::string, std::string>& attrs) const;

  // Template hash: a changed template (or descriptor version) makes old results stale.
  std::string template_hash() const;
  // compile_sources_hash of sources(), once per process: compile_request's sources_hash.
  const std::string& sources_hash() const;
  CompileRequest compile_request(const Config& config, const Problem& problem,
                                 const std::string& arch) const;
  // Every parameter present with an allowed value; throws Error(kInvalidArgument) otherwise.
  void check_config(const Config& config) const;
  // Fills parameters missing from a stored configuration with their first value: a parameter
  // added to a family lists first the value that matches the kernel's behaviour before it.
  Config normalize(Config config) const;
  // params() in a Config's order (by name), made once: normalize and check_config walk a
  // configuration beside it instead of finding each parameter by name (a first call's lookup of
  // a GEMM shape nobody tuned normalizes and checks a few hundred configurations).
  const std::vector<const Param*>& params_by_name() const;

 protected:
  // Bumped when the descriptor changes meaning (launch geometry, parameter semantics).
  virtual int descriptor_version() const { return 1; }

 private:
  mutable std::once_flag hash_once_;  // the template hash is computed once per process
  mutable std::string hash_;
  // The default sources(), read once: finding the includes scans the whole source with a regex
  // (0.5 ms of gemm.cuh), which a runtime's first call paid for its compile key.
  mutable std::once_flag sources_once_;
  mutable SourceSet sources_;
  mutable std::once_flag sources_hash_once_;
  mutable std::string sources_hash_;
  mutable std::once_flag by_name_once_;
  mutable std::vector<const Param*> by_name_;
};

// A configuration measured on some problem, for `problem`: as it was measured where that was this
// very problem (`measured_here`) and the configuration is valid for it, else adapted
// (Family::adapt). adapt re-derives what follows from the problem (a skinny GEMM's split of k),
// which for the problem itself can differ from what won and was timed there.
Config as_measured_or_adapted(const Family& family, const Config& measured, bool measured_here,
                              const Problem& problem, const DeviceLimits& limits);

// Why a compiled kernel that spills registers or keeps a stack frame is refused, or "".
std::string local_memory_reason(const FunctionResources& res);

// Text of an embedded template file ("common.cuh"); throws Error(kInternal) if unknown.
std::string template_source(const std::string& file);

}  // namespace ktune
