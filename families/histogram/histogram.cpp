// Histogram family descriptor: parameters, constraints, names, launch geometry, argument checks,
// and a workload of three input classes verified against counts made on the host.
#include "families/histogram/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "families/family.hpp"
#include "families/file_family.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {

constexpr std::uint64_t kGuard = 16;  // poisoned count words before and after each output
// (The limit on global atomics and the bytes in flight per SM are rules of histogram.family.toml.)
constexpr int kBlockSmemReserve = 1024;  // shared memory the system keeps per resident block
constexpr HistogramInput kInputs[] = {kHistUniform, kHistSkewed, kHistConstant};

const char* cuda_type(HistogramDtype dtype) {
  switch (dtype) {
    case HistogramDtype::kU8:
      return "unsigned char";
    case HistogramDtype::kU16:
      return "unsigned short";
    case HistogramDtype::kI32:
      return "int";
    case HistogramDtype::kF32:
      return "float";
  }
  return "?";
}

std::int64_t get(const Config& c, const char* name) { return config_value(c, name, "histogram"); }

// Bins of the shared histograms: bytes are privatised by value, other samples by output bin.
int privatised_bins(HistogramDtype dtype, int bins) {
  return dtype == HistogramDtype::kU8 ? 256 : bins;
}

std::int64_t smem_bytes(const Config& c, HistogramDtype dtype, int bins) {
  return 4 * static_cast<std::int64_t>(histogram_smem_words(
                 static_cast<int>(get(c, "PRIV")), static_cast<int>(get(c, "R")),
                 static_cast<int>(get(c, "LAYOUT")), static_cast<int>(get(c, "BLOCK")),
                 privatised_bins(dtype, bins), static_cast<int>(get(c, "CLUSTER"))));
}

[[noreturn]] void bad_argument(const char* what, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + message);
}

void check_pointers(const char* what, const void* samples, std::size_t n, int sample_bytes,
                    const std::uint32_t* counts, bool accumulate) {
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    bad_argument(what, "n is too large");
  if (n > 0 && !samples) bad_argument(what, "samples is null");
  if (reinterpret_cast<std::uintptr_t>(samples) % sample_bytes)
    bad_argument(what, "samples is not aligned to its " + std::to_string(sample_bytes) +
                           "-byte sample size");
  // With n = 0 the counts are still overwritten (with zeros) unless the call accumulates.
  if (!counts && (n > 0 || !accumulate)) bad_argument(what, "counts is null");
  if (reinterpret_cast<std::uintptr_t>(counts) % 4)
    bad_argument(what, "counts is not aligned to 4 bytes");
}

void check_bins(const char* what, int bins) {
  if (bins < 1 || bins > kHistogramMaxBins)
    bad_argument(what, "bins must be in [1, " + std::to_string(kHistogramMaxBins) + "], got " +
                           std::to_string(bins));
}

HistogramArgs integer_args(int bins, std::int64_t lower, std::int64_t upper) {
  HistogramArgs a{};
  a.bins = bins;
  a.lower = lower;
  a.upper = upper;
  a.range = static_cast<std::uint64_t>(upper - lower);
  a.inv_range = 1.0 / static_cast<double>(a.range);
  return a;
}

HistogramArgs byte_args() {
  HistogramArgs a = integer_args(256, 0, 256);
  a.identity = 1;
  return a;
}

HistogramArgs float_args(const char* what, int bins, float lower, float upper) {
  if (!std::isfinite(lower) || !std::isfinite(upper))
    bad_argument(what, "lower and upper must be finite, got lower=" + std::to_string(lower) +
                           ", upper=" + std::to_string(upper));
  if (!(lower < upper))
    bad_argument(what, "lower must be less than upper, got lower=" + std::to_string(lower) +
                           ", upper=" + std::to_string(upper));
  // CUB's scale, rounded to float. A range too wide or too narrow for float is refused rather
  // than binned through infinities.
  const float width = upper - lower;
  const float scale = static_cast<float>(bins) / width;
  if (!std::isfinite(width)) bad_argument(what, "upper - lower overflows float");
  if (!std::isfinite(scale))
    bad_argument(what, "the range [lower, upper) is too narrow for " + std::to_string(bins) +
                           " bins in float");
  HistogramArgs a{};
  a.bins = bins;
  a.lower_f = lower;
  a.upper_f = upper;
  a.scale_f = scale;
  return a;
}

template <typename T>
void count_words(const HistogramData& g, std::uint64_t first, std::uint64_t end,
                 const HistogramArgs& a, std::vector<std::uint64_t>& local) {
  constexpr std::uint64_t kSamples = 8 / sizeof(T);
  T v[kSamples];
  for (std::uint64_t w = first / kSamples; w * kSamples < end; ++w) {
    histogram_data_word<T>(g, w, v);
    const std::uint64_t i0 = w * kSamples;
    const bool whole = i0 >= first && i0 + kSamples <= end;
    for (std::uint64_t j = 0; j < kSamples; ++j) {
      if (!whole && (i0 + j < first || i0 + j >= end)) continue;
      const unsigned b = histogram_bin(v[j], a);
      if (b != kHistogramNoBin) ++local[b];
    }
  }
}

template <typename T>
std::vector<std::uint32_t> reference(const HistogramData& g, std::uint64_t first, std::uint64_t n,
                                     const HistogramArgs& a, unsigned threads) {
  constexpr std::uint64_t kSamples = 8 / sizeof(T);
  std::vector<std::uint32_t> out(a.bins, 0);
  if (n == 0) return out;
  if (g.input == kHistConstant) {  // every sample is the same value
    T v[kSamples];
    histogram_data_word<T>(g, 0, v);
    const unsigned b = histogram_bin(v[0], a);
    if (b != kHistogramNoBin) out[b] = static_cast<std::uint32_t>(n);
    return out;
  }
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // Chunks of whole words (no word split between threads), at least 1 Mi samples each.
  const std::uint64_t per =
      std::max<std::uint64_t>((n + threads - 1) / threads, std::uint64_t(1) << 20);
  const std::uint64_t chunk = (per + kSamples - 1) / kSamples * kSamples;
  std::vector<std::vector<std::uint64_t>> local;
  std::vector<std::thread> pool;
  const std::uint64_t end = first + n;
  const std::uint64_t start = first / kSamples * kSamples;
  for (std::uint64_t b = start; b < end; b += chunk) local.emplace_back(a.bins, 0);
  std::size_t k = 0;
  for (std::uint64_t b = start; b < end; b += chunk, ++k)
    pool.emplace_back([&, b, k] {
      count_words<T>(g, std::max(b, first), std::min(b + chunk, end), a, local[k]);
    });
  for (auto& t : pool) t.join();
  for (const auto& l : local)
    for (int i = 0; i < a.bins; ++i) out[i] += static_cast<std::uint32_t>(l[i]);
  return out;
}

// The family's data (axes, parameters, constraints, kernel name, metric, problems) is its family
// file, histogram.family.toml; this class adds what data cannot say, or says once elsewhere: the
// launch, the workload with its three input classes and exact counts, the default configuration,
// a problem's alignment rules, and the shared-memory rules (sized by histogram_math.cuh, which the
// kernels share).
class HistogramFamily final : public BuiltinFileFamily {
 public:
  HistogramFamily() : BuiltinFileFamily("histogram") {}

  // The file's rules, then the C++'s (in the order reject() applies them).
  std::vector<std::string> describe_constraints() const override {
    std::vector<std::string> out = BuiltinFileFamily::describe_constraints();
    out.push_back(
        "the replicas need more shared memory than a block may have\t"
        "smem <= device.shared_per_block_optin (in C++: smem from histogram_math.cuh)");
    out.push_back(
        "GRID blocks of BLOCK threads cannot be resident on one SM\t"
        "GRID * BLOCK <= device.max_threads_per_sm && GRID <= device.max_blocks_per_sm "
        "(in C++)");
    out.push_back(
        "the shared memory of GRID blocks exceeds the SM's\t"
        "GRID * (smem + 1024) <= device.shared_per_sm (in C++)");
    return out;
  }
  void validate(const Problem& p) const override {
    BuiltinFileFamily::validate(p);
    const HistogramDtype dtype = parse_histogram_dtype(p.attr("dtype"));
    const std::int64_t align = p.size("align");
    if (align != 1 && align != 2 && align != 4 && align != 8 && align != 16)
      throw Error(ErrorCode::kInvalidArgument,
                  "histogram: align must be 1, 2, 4, 8 or 16 bytes, got " + std::to_string(align));
    if (align < histogram_sample_bytes(dtype))
      throw Error(ErrorCode::kInvalidArgument, "histogram: align " + std::to_string(align) +
                                                   " is below the " +
                                                   std::to_string(histogram_sample_bytes(dtype)) +
                                                   "-byte size of " + p.attr("dtype") + " samples");
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    if (std::string why = BuiltinFileFamily::reject(c, p, limits); !why.empty()) return why;
    const HistogramDtype dtype = parse_histogram_dtype(p.attr("dtype"));
    const std::int64_t block = get(c, "BLOCK"), grid = get(c, "GRID");
    const std::int64_t smem = smem_bytes(c, dtype, static_cast<int>(p.size("bins")));
    if (smem > limits.smem_per_block_optin)
      return "the replicas need " + std::to_string(smem) +
             " bytes of shared memory, more than a block may have";
    if (grid * block > limits.max_threads_per_sm || grid > limits.max_blocks_per_sm)
      return "GRID blocks of BLOCK threads cannot be resident on one SM";
    if (grid * (smem + kBlockSmemReserve) > limits.smem_per_sm)
      return "the shared memory of GRID blocks exceeds the SM's";
    return {};
  }

  std::string reject_compiled(const Config& c, const Problem&, const DeviceLimits& limits,
                              const FunctionResources& res) const override {
    if (res.registers <= 0) return {};
    const std::int64_t block = get(c, "BLOCK"), grid = get(c, "GRID");
    // Registers are allocated per warp in units of 256 (8 per thread).
    const std::int64_t per_block = (block + 31) / 32 * ((res.registers * 32 + 255) / 256 * 256);
    if (per_block > limits.regs_per_block)
      return std::to_string(res.registers) + " registers per thread do not fit " +
             std::to_string(block) + " threads in one block";
    if (grid * per_block > limits.regs_per_sm)
      return std::to_string(res.registers) + " registers per thread leave room for fewer than " +
             std::to_string(grid) + " resident blocks per SM";
    if (res.smem_static > 0) return "the kernel uses static shared memory (only dynamic expected)";
    return {};
  }

  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(get(c, "BLOCK"));
  }

  // Every code path (load width x privatisation x layout x aggregation) at one block shape, and
  // every block shape (threads x items) on one code path: the kernels `ktune check` compiles
  // by default (--exhaustive compiles the whole space).
  std::vector<Config> check_configs(const std::vector<Config>& space) const override {
    if (space.empty()) return space;
    auto has = [&](const Config& c, std::int64_t block, std::int64_t items) {
      return c.at("BLOCK") == block && c.at("ITEMS") == items;
    };
    std::int64_t block = space.front().at("BLOCK"), items = space.front().at("ITEMS");
    for (const auto& c : space)
      if (has(c, 512, 4)) block = 512, items = 4;
    const Config& path = space.front();
    std::vector<Config> out;
    for (const auto& c : space) {
      const bool same_path = c.at("VEC") == path.at("VEC") && c.at("PRIV") == path.at("PRIV") &&
                             c.at("LAYOUT") == path.at("LAYOUT") && c.at("AGG") == path.at("AGG");
      if (has(c, block, items) || same_path) out.push_back(c);
    }
    return out;
  }

  Config default_config(const Problem& p, const DeviceLimits& limits) const override {
    // As many interleaved replicas as fit 32 KB (a block may have 48 KB without opt-in on every
    // device), so that a warp's lanes spread over banks (all 32 for bytes: measured at the memory
    // roofline on an H200 for all three input classes); 16-byte loads, four in flight per stage,
    // which is 64 KiB per SM even at one block per SM; runs aggregated; no clusters.
    const HistogramDtype dtype = parse_histogram_dtype(p.attr("dtype"));
    const int pbins = privatised_bins(dtype, static_cast<int>(p.size("bins")));
    Config c = {{"BLOCK", 512}, {"GRID", 1},   {"ITEMS", 4}, {"VEC", 16},   {"PRIV", kHistBlock},
                {"R", 1},       {"LAYOUT", 0}, {"AGG", 1},   {"CLUSTER", 1}};
    for (int r : {32, 16, 8, 4, 2})
      if (r * pbins * 4 <= 32 * 1024) {
        c["PRIV"] = kHistLanes;
        c["R"] = r;
        c["LAYOUT"] = kHistInterleaved;
        break;
      }
    const std::int64_t smem = smem_bytes(c, dtype, static_cast<int>(p.size("bins")));
    for (int g : {4, 2, 1})
      if (g * 512 <= limits.max_threads_per_sm && g <= limits.max_blocks_per_sm &&
          g * (smem + kBlockSmemReserve) <= limits.smem_per_sm) {
        c["GRID"] = g;
        break;
      }
    return c;
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override;
};

// The three input classes in one buffer each, on the device; their exact counts on the host.
class HistogramWorkload final : public Workload {
 public:
  HistogramWorkload(const HistogramFamily& family, const Problem& p, const Device& device,
                    KernelCache& cache)
      : device_(device),
        dtype_(parse_histogram_dtype(p.attr("dtype"))),
        sample_bytes_(histogram_sample_bytes(dtype_)),
        n_(static_cast<std::uint64_t>(p.size("n"))),
        bins_(static_cast<int>(p.size("bins"))),
        offset_(p.size("align") == 16 ? 0 : static_cast<int>(p.size("align"))),
        args_(histogram_workload_args(dtype_, bins_)),
        work_(*family.work_of(p, device.limits())) {
    words_ = (offset_ + n_ * sample_bytes_ + 7) / 8 + 1;
    for (int i = 0; i < 3; ++i) {
      inputs_[i] = detail::DeviceBuffer(words_ * 8);
      counts_[i] = detail::DeviceBuffer((bins_ + 2 * kGuard) * 4);
    }
    CompileRequest r = family.compile_request(family.default_config(p, device.limits()), p,
                                              device.limits().arch());
    r.name_expressions = {std::string("ktune::histogram_fill<") + cuda_type(dtype_) + ">"};
    fill_ = cache.get(r);
  }

  void prepare(std::uint64_t seed, CUstream stream) override {
    for (HistogramInput input : kInputs) {
      data_[input] = histogram_input_data(dtype_, input, seed, args_);
      CUdeviceptr p = inputs_[input].get();
      std::uint64_t count = words_;
      HistogramData g = data_[input];
      void* params[] = {&p, &count, &g};
      fill_->launch(0, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, params);
      poison(input, stream);
    }
    // The host counts while the device writes, once per seed: the tuner prepares every
    // candidate of a run from one, and the counts are of the seed's data alone (host memory, which
    // no candidate writes).
    if (counted_ && counted_seed_ == seed) return;
    counted_ = false;
    for (HistogramInput input : kInputs)
      expected_[input] =
          histogram_reference(dtype_, data_[input], offset_ / sample_bytes_, n_, args_);
    counted_ = true, counted_seed_ = seed;
  }

  void run(const Kernel& kernel, const Config& config, CUstream stream) override {
    for (HistogramInput input : kInputs)
      histogram_launch(kernel, config, device_.limits(), call(input), stream);
  }

  std::string verify(CUstream stream) override {
    for (HistogramInput input : kInputs) {
      std::string wrong = verify(input, stream);
      if (!wrong.empty()) return wrong;
    }
    return {};
  }

  std::string verify(HistogramInput input, CUstream stream) {
    std::vector<std::uint32_t> host(bins_ + 2 * kGuard);
    check(driver().cuMemcpyDtoHAsync(host.data(), counts_[input].get(), host.size() * 4, stream),
          "cuMemcpyDtoHAsync");
    check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
    const std::string where = std::string(histogram_input_name(input)) + " input: ";
    for (std::uint64_t i = 0; i < kGuard; ++i) {
      if (host[i] != 0xFFFFFFFFu)
        return where + "a write before the counts (guard word " + std::to_string(kGuard - i) +
               " before bin 0)";
      if (host[kGuard + bins_ + i] != 0xFFFFFFFFu)
        return where + "a write after the counts (guard word " + std::to_string(i) +
               " after the last bin)";
    }
    const std::vector<std::uint32_t>& want = expected_[input];
    int wrong = 0, first = -1;
    for (int b = 0; b < bins_; ++b)
      if (host[kGuard + b] != want[b] && wrong++ == 0) first = b;
    if (!wrong) return {};
    return where + std::to_string(wrong) + " wrong bin(s), first bin " + std::to_string(first) +
           ": counted " + std::to_string(host[kGuard + first]) + ", expected " +
           std::to_string(want[first]);
  }

  void poison(HistogramInput input, CUstream stream) {
    check(driver().cuMemsetD32Async(counts_[input].get(), 0xFFFFFFFFu, bins_ + 2 * kGuard, stream),
          "cuMemsetD32Async");
  }

  HistogramCall call(HistogramInput input) const {
    HistogramCall c;
    c.dtype = dtype_;
    c.samples = reinterpret_cast<const void*>(inputs_[input].get() + offset_);
    c.n = n_;
    c.counts = reinterpret_cast<std::uint32_t*>(counts_[input].get() + kGuard * 4);
    c.args = args_;
    return c;
  }

  double work() const override { return work_; }
  std::size_t bytes() const override {
    std::size_t b = 0;
    for (int i = 0; i < 3; ++i) b += inputs_[i].size() + counts_[i].size();
    return b;
  }

 private:
  const Device& device_;
  HistogramDtype dtype_;
  int sample_bytes_;
  std::uint64_t n_;
  int bins_;
  int offset_;  // bytes from the allocation's start to the first sample: the alignment class
  HistogramArgs args_;
  double work_;  // bytes read per run (the family file's metric)
  std::uint64_t words_ = 0;
  detail::DeviceBuffer inputs_[3], counts_[3];
  HistogramData data_[3]{};
  std::vector<std::uint32_t> expected_[3];
  bool counted_ = false;  // expected_ holds the counts of counted_seed_'s data
  std::uint64_t counted_seed_ = 0;
  std::shared_ptr<const Kernel> fill_;
};

std::unique_ptr<Workload> HistogramFamily::make_workload(const Problem& p, const Device& device,
                                                         KernelCache& cache) const {
  return std::make_unique<HistogramWorkload>(*this, p, device, cache);
}

HistogramWorkload& workload_of(const Workload& workload, const char* what) {
  auto* w = dynamic_cast<const HistogramWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, std::string(what) + ": not a histogram workload");
  return const_cast<HistogramWorkload&>(*w);
}

}  // namespace

const Family& histogram_family() {
  static const HistogramFamily instance;
  return instance;
}

const char* histogram_dtype_name(HistogramDtype dtype) {
  switch (dtype) {
    case HistogramDtype::kU8:
      return "u8";
    case HistogramDtype::kU16:
      return "u16";
    case HistogramDtype::kI32:
      return "i32";
    case HistogramDtype::kF32:
      return "f32";
  }
  return "?";
}

HistogramDtype parse_histogram_dtype(const std::string& name) {
  for (auto d :
       {HistogramDtype::kU8, HistogramDtype::kU16, HistogramDtype::kI32, HistogramDtype::kF32})
    if (name == histogram_dtype_name(d)) return d;
  throw Error(ErrorCode::kInvalidArgument,
              "histogram: unknown dtype '" + name + "' (u8, u16, i32, f32)");
}

int histogram_sample_bytes(HistogramDtype dtype) {
  return dtype == HistogramDtype::kU8 ? 1 : dtype == HistogramDtype::kU16 ? 2 : 4;
}

const char* histogram_input_name(HistogramInput input) {
  return input == kHistUniform ? "uniform" : input == kHistSkewed ? "skewed" : "constant";
}

HistogramCall histogram_bytes_call(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                                   bool accumulate) {
  check_pointers("histogram", data, n, 1, counts, accumulate);
  HistogramCall c;
  c.dtype = HistogramDtype::kU8;
  c.samples = data;
  c.n = n;
  c.counts = counts;
  c.args = byte_args();
  c.accumulate = accumulate;
  return c;
}

HistogramCall histogram_even_call(HistogramDtype dtype, const void* samples, std::size_t n,
                                  int bins, std::int64_t lower, std::int64_t upper,
                                  std::uint32_t* counts, bool accumulate) {
  const char* what = "histogram_even";
  if (dtype == HistogramDtype::kF32)
    throw Error(ErrorCode::kInternal, "histogram_even_call: float samples take float bounds");
  check_bins(what, bins);
  if (lower >= upper)
    bad_argument(what, "lower must be less than upper, got lower=" + std::to_string(lower) +
                           ", upper=" + std::to_string(upper));
  check_pointers(what, samples, n, histogram_sample_bytes(dtype), counts, accumulate);
  HistogramCall c;
  c.dtype = dtype;
  c.samples = samples;
  c.n = n;
  c.counts = counts;
  c.args = integer_args(bins, lower, upper);
  c.accumulate = accumulate;
  return c;
}

HistogramCall histogram_even_call(const float* samples, std::size_t n, int bins, float lower,
                                  float upper, std::uint32_t* counts, bool accumulate) {
  const char* what = "histogram_even";
  check_bins(what, bins);
  HistogramArgs args = float_args(what, bins, lower, upper);
  check_pointers(what, samples, n, 4, counts, accumulate);
  HistogramCall c;
  c.dtype = HistogramDtype::kF32;
  c.samples = samples;
  c.n = n;
  c.counts = counts;
  c.args = args;
  c.accumulate = accumulate;
  return c;
}

int histogram_alignment(const void* samples) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(samples) | 16;
  return static_cast<int>(bits & (~bits + 1));  // lowest set bit, at most 16
}

Problem histogram_problem(HistogramDtype dtype, std::uint64_t n, int bins, int align) {
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw Error(ErrorCode::kInvalidArgument, "histogram: n is too large");
  Problem p;
  p.family = "histogram";
  p.attrs = {{"dtype", histogram_dtype_name(dtype)}};
  p.sizes = {{"n", static_cast<std::int64_t>(n)}, {"bins", bins}, {"align", align}};
  return p;
}

Problem histogram_problem(const HistogramCall& call) {
  return histogram_problem(call.dtype, call.n, call.args.bins, histogram_alignment(call.samples));
}

void histogram_clear(const HistogramCall& call, CUstream stream) {
  if (!call.accumulate)
    check(driver().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(call.counts), 0,
                                    static_cast<std::size_t>(call.args.bins), stream),
          "cuMemsetD32Async");
}

void histogram_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                      const HistogramCall& call, CUstream stream) {
  histogram_clear(call, stream);
  if (call.n == 0) return;
  const int block = static_cast<int>(get(config, "BLOCK"));
  const int vec = static_cast<int>(get(config, "VEC"));
  const int items = static_cast<int>(get(config, "ITEMS"));
  const int cluster = static_cast<int>(get(config, "CLUSTER"));
  const std::uint64_t loads = call.n / (vec / histogram_sample_bytes(call.dtype));
  const std::uint64_t tile = static_cast<std::uint64_t>(block) * items;
  // Blocks that get at least one whole tile, at most GRID per SM; whole clusters.
  std::uint64_t grid = std::max<std::uint64_t>(1, (loads + tile - 1) / tile);
  grid = std::min<std::uint64_t>(grid, get(config, "GRID") * limits.sm_count);
  grid = (grid + cluster - 1) / cluster * cluster;
  const unsigned smem = static_cast<unsigned>(smem_bytes(config, call.dtype, call.args.bins));
  const void* samples = call.samples;
  std::uint64_t n = call.n;
  std::uint32_t* counts = call.counts;
  HistogramArgs args = call.args;
  int lane_replicas = static_cast<int>(get(config, "R"));
  void* params[] = {&samples, &n, &counts, &args, &lane_replicas};
  if (cluster > 1)
    kernel.launch_cluster(0, static_cast<unsigned>(grid), static_cast<unsigned>(block),
                          static_cast<unsigned>(cluster), smem, stream, params);
  else
    kernel.launch(0, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, smem,
                  stream, params);
}

HistogramArgs histogram_workload_args(HistogramDtype dtype, int bins) {
  switch (dtype) {
    case HistogramDtype::kU8:
      if (bins == 256) return byte_args();
      return integer_args(bins, 4, 251);
    case HistogramDtype::kU16:
      return integer_args(bins, 256, 65280);
    case HistogramDtype::kI32:
      // A range of almost 2^32 values: the 64-bit products of the bin computation are exercised.
      return integer_args(bins, std::numeric_limits<std::int32_t>::min() + (1 << 25),
                          std::numeric_limits<std::int32_t>::max() - (1 << 25) + 1);
    case HistogramDtype::kF32:
      return float_args("histogram_workload_args", bins, -1.0f, 1.0f);
  }
  throw Error(ErrorCode::kInternal, "histogram_workload_args: unknown dtype");
}

HistogramData histogram_input_data(HistogramDtype dtype, HistogramInput input, std::uint64_t seed,
                                   const HistogramArgs& args) {
  HistogramData g{};
  g.seed = histogram_mix64(seed * 3 + static_cast<std::uint64_t>(input) + 0x5eed);
  g.input = input;
  // The range in units (sample values, or multiples of 2^-24 for floats).
  std::int64_t lower = args.lower, range = static_cast<std::int64_t>(args.range);
  if (dtype == HistogramDtype::kF32) {
    lower = std::llround(static_cast<double>(args.lower_f) * 16777216.0);
    range = std::max<std::int64_t>(
        1, std::llround((static_cast<double>(args.upper_f) - args.lower_f) * 16777216.0));
  }
  g.mid = lower + range / 2;
  g.width = std::max<std::int64_t>(1, range / args.bins);
  // Floats: an even number of units (a multiple of 2^-23), like the uniform samples.
  const std::uint64_t step = dtype == HistogramDtype::kF32 ? 2 : 1;
  g.value =
      lower + static_cast<std::int64_t>(
                  histogram_mix64(g.seed ^ 0xc0ffee) %
                  std::max<std::uint64_t>(1, static_cast<std::uint64_t>(range) / step) * step);
  return g;
}

std::vector<std::uint32_t> histogram_reference(HistogramDtype dtype, const HistogramData& data,
                                               std::uint64_t first, std::uint64_t n,
                                               const HistogramArgs& args, unsigned threads) {
  switch (dtype) {
    case HistogramDtype::kU8:
      return reference<unsigned char>(data, first, n, args, threads);
    case HistogramDtype::kU16:
      return reference<unsigned short>(data, first, n, args, threads);
    case HistogramDtype::kI32:
      return reference<int>(data, first, n, args, threads);
    case HistogramDtype::kF32:
      return reference<float>(data, first, n, args, threads);
  }
  throw Error(ErrorCode::kInternal, "histogram_reference: unknown dtype");
}

HistogramCall histogram_workload_call(const Workload& workload, HistogramInput input) {
  return workload_of(workload, "histogram_workload_call").call(input);
}

void histogram_workload_poison(Workload& workload, HistogramInput input, CUstream stream) {
  workload_of(workload, "histogram_workload_poison").poison(input, stream);
}

std::string histogram_workload_verify(Workload& workload, HistogramInput input, CUstream stream) {
  return workload_of(workload, "histogram_workload_verify").verify(input, stream);
}

}  // namespace ktune
