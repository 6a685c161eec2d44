// ktune::Runtime: looks up, compiles once, caches and launches tuned kernels on the caller's
// stream.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/util.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/elementwise/elementwise.hpp"
#include "families/family.hpp"
#include "families/file_family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/gemm/gemm_tc.hpp"
#include "families/histogram/histogram.hpp"
#include "families/registry.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"
#include "runtime/first_call_times.hpp"
#include "runtime/lookup.hpp"

namespace ktune {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNoDriver:
      return "no CUDA driver";
    case ErrorCode::kNoDevice:
      return "no CUDA device";
    case ErrorCode::kCuda:
      return "CUDA error";
    case ErrorCode::kCompile:
      return "compile error";
    case ErrorCode::kDatabase:
      return "database error";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "error";
}

std::string default_database_path() { return database_default_path(); }

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

namespace detail {
namespace {
std::mutex miss_times_mutex;  // guards both
MissTimes miss_times;
ConstructTimes construct_times;
}  // namespace

MissTimes last_miss_times() {
  std::lock_guard lock(miss_times_mutex);
  return miss_times;
}

ConstructTimes last_construct_times() {
  std::lock_guard lock(miss_times_mutex);
  return construct_times;
}
}  // namespace detail

struct Runtime::Impl {
  struct Entry {
    LookupResult choice;
    std::shared_ptr<const Kernel> kernel;
    ElementwisePlan elementwise;     // elementwise entries: the launch geometry, computed once
    std::optional<LaunchPlan> plan;  // launch(): a family file's geometry and arguments
  };

  // launch()'s hot map: a call's family and axes, hashed without allocating, and compared in
  // full on a hit.
  struct LaunchHot {
    std::string family;
    ProblemSpec spec;
    const Entry* entry;
  };

  // A call's identity in a few integers: a repeated call finds its entry through this without
  // building a problem key (no allocation; one lock, one hash).
  struct CallKey {
    std::uint64_t tag = 0;  // family and categorical arguments, packed by the caller
    std::int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    bool operator==(const CallKey&) const = default;
  };
  struct CallKeyHash {
    std::size_t operator()(const CallKey& k) const noexcept {
      std::uint64_t h = k.tag * 0x9E3779B97F4A7C15ull;
      for (std::int64_t v : {k.s0, k.s1, k.s2, k.s3})
        h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001B3ull + (h >> 29);
      return static_cast<std::size_t>(h);
    }
  };

  Options options;
  std::unique_ptr<Device> device;
  std::unique_ptr<Database> db;
  std::unique_ptr<KernelCache> kernels;
  // Guards `entries`, `storage` and the hot maps only; never held across a compile, a tuning run
  // or a launch. Entries are never erased, so references to them stay valid: a problem tuned in
  // the background gets a new entry, and the old one stays for the calls still running it.
  std::mutex mutex;
  std::deque<Entry> storage;
  std::unordered_map<std::string, const Entry*> entries;
  std::unordered_map<CallKey, const Entry*, CallKeyHash> hot;
  std::unordered_multimap<std::uint64_t, LaunchHot> launch_hot;
  std::mutex tune_mutex;  // one tune-on-miss at a time per runtime

  // Tuning in the background (Options::tune_in_background): problems queued by resolve(), tuned
  // one at a time by `background`, a thread started at the first miss.
  std::mutex bg_mutex;
  std::condition_variable bg_wake, bg_idle;
  std::deque<std::pair<const Family*, Problem>> bg_queue;
  std::unordered_set<std::string> bg_seen;  // keys queued once: never tuned twice
  bool bg_stop = false, bg_busy = false;
  std::thread background;
  // The built-in families made ready while the runtime is constructed; its destruction waits.
  std::future<void> preparing;
  std::future<void> preparing_scratch;  // detail::scratch_prepare

  explicit Impl(Options o) : options(std::move(o)) {
    if (options.tune_in_background && !options.tune_on_miss)
      throw Error(ErrorCode::kInvalidArgument,
                  "Options::tune_in_background needs a tuner in Options::tune_on_miss");
    if (options.tune_on_miss && !options.use_database)
      throw Error(ErrorCode::kInvalidArgument,
                  "Options::tune_on_miss needs a writable database, and use_database is false");
    if (options.strict_fp32 && options.allow_tf32)
      throw Error(ErrorCode::kInvalidArgument,
                  "Options::strict_fp32 and Options::allow_tf32 exclude each other: TF32 rounds "
                  "every input to 10 bits of mantissa");
    // The database opens on another thread while the device is read: each took about 0.9 ms of
    // an H200's Runtime construction (the device's two clock rates alone 0.88 ms of the driver's
    // time; Device now reads them on a thread of its own, for the first lookup). Not before the
    // device is known to exist: a machine without one gets its error with no database touched.
    double open_ms = 0;  // written by the opening thread, read after its future's get()
    {
      std::lock_guard lock(detail::miss_times_mutex);
      detail::construct_times = {};
    }
    const int devices = device_count();
    if (devices == 0 || options.device < 0 || options.device >= devices)
      device = std::make_unique<Device>(options.device);  // throws what is wrong
    // The open's warnings, given on this thread. A future of std::async waits for its thread as
    // it is destroyed: an error thrown below leaves no thread writing these or reading `options`.
    std::vector<std::string> notices;
    auto open = [this, &notices, &open_ms] {
      const auto t = Clock::now();
      auto db =
          open_for_runtime(options.database.empty() ? database_default_path() : options.database,
                           options.tune_on_miss != nullptr,
                           [&notices](const std::string& message) { notices.push_back(message); });
      open_ms = ms_between(t, Clock::now());
      return db;
    };
    std::future<std::unique_ptr<Database>> opening;
    if (options.use_database) {
      try {
        opening = std::async(std::launch::async, open);
      } catch (const std::system_error&) {
        // no thread to spare: opened below, after the device
      }
    }
    // The built-in families on a third thread: a family's first use parses its family file and
    // hashes its sources twice, for its results and for its binaries' keys (together gemm's
    // 1.3 ms of an H200's first GEMM call), which the constructing threads' 0.9 ms each leave
    // time for. A call that needs a family before it is ready makes it
    // itself or waits for it (each is made once per process).
    try {
      preparing = std::async(std::launch::async, [] {
        const auto t = Clock::now();
        for (const char* name : {"gemm", "gemm_skinny", "elementwise", "histogram",
                                 "gemm_tc_skinny", "gemm_tc", "gemm_tc80"}) {
          try {
            const Family& family = find_family(name);
            (void)family.template_hash();
            (void)family.sources_hash();
          } catch (const std::exception&) {
            // a call that uses the family meets its error itself
          }
        }
        std::lock_guard lock(detail::miss_times_mutex);
        detail::construct_times.families_ms = ms_between(t, Clock::now());
      });
    } catch (const std::system_error&) {
      // no thread to spare: each family is made at its first use
    }
    const auto device_started = Clock::now();
    if (!device) device = std::make_unique<Device>(options.device);
    const double device_ms = ms_between(device_started, Clock::now());
    // The stream-ordered allocator's first allocation in the process, on a thread of its own: it
    // took 7 to 10 ms of an H200's first call of any shape with split-K partial sums. Calls
    // meanwhile allocate plainly (cuMemAlloc, 0.1 ms).
    if (detail::scratch_prepare_begin()) {
      const CUcontext context = device->context();
      try {
        preparing_scratch = std::async(std::launch::async, [context] {
          const ContextRestorer restore;
          detail::scratch_prepare(context);
        });
      } catch (const std::system_error&) {
        detail::scratch_prepare(context);  // no thread to spare: here (the context is current)
      }
    }
    for (const auto& file : options.family_files) add_family_file(file);
    const auto waited = Clock::now();
    if (opening.valid())
      db = opening.get();
    else if (options.use_database)
      db = open();
    const double open_wait_ms = ms_between(waited, Clock::now());
    for (const auto& message : notices) warn(message);
    // The binaries compiled here are stored in the database for the next process (not where it
    // is read-only): why open_for_runtime opens a writable file for writing even without
    // tune-on-miss (76db277 did not, and every first call compiled again).
    kernels = std::make_unique<KernelCache>(*device, db.get());
    std::lock_guard lock(detail::miss_times_mutex);
    detail::ConstructTimes& times = detail::construct_times;
    times.device_ms = device_ms;
    times.open_ms = open_ms;
    times.open_wait_ms = open_wait_ms;
  }

  // Stops the background tuning: the run in progress finishes (its budget bounds it), the queue
  // is dropped.
  ~Impl() {
    {
      std::lock_guard lock(bg_mutex);
      bg_stop = true;
      bg_queue.clear();
    }
    bg_wake.notify_all();
    if (background.joinable()) background.join();
    // Plain scratch allocations freed after the allocator was ready wait for their streams here.
    if (preparing_scratch.valid()) preparing_scratch.wait();
    if (device) {
      try {
        const ContextScope scope(*device);
        detail::scratch_release_held();
      } catch (const Error&) {
      }
    }
  }

  void queue_for_tuning(const std::string& key, const Family& family, const Problem& problem) {
    {
      std::lock_guard lock(bg_mutex);
      if (bg_stop || !bg_seen.insert(key).second) return;
      bg_queue.emplace_back(&family, problem);
      if (!background.joinable()) background = std::thread([this] { background_loop(); });
    }
    bg_wake.notify_one();
  }

  void background_loop() {
    for (;;) {
      const Family* family = nullptr;
      Problem problem;
      {
        std::unique_lock lock(bg_mutex);
        bg_wake.wait(lock, [&] { return bg_stop || !bg_queue.empty(); });
        if (bg_stop) break;
        family = bg_queue.front().first;
        problem = std::move(bg_queue.front().second);
        bg_queue.pop_front();
        bg_busy = true;
      }
      try {
        tune_and_switch(*family, problem);
      } catch (const std::exception& e) {
        warn(std::string("tuning ") + family->name() + " " + problem.key() +
             " in the background failed; the runtime keeps its earlier answer: " + e.what());
      }
      {
        std::lock_guard lock(bg_mutex);
        bg_busy = false;
      }
      bg_idle.notify_all();
    }
    {
      std::lock_guard lock(bg_mutex);
      bg_busy = false;
    }
    bg_idle.notify_all();
  }

  // Tunes `problem` unless another runtime's run stored it meanwhile, then makes the tuned
  // configuration the entry of its calls.
  void tune_and_switch(const Family& family, const Problem& problem) {
    device->make_current();
    LookupResult choice;
    {
      std::lock_guard lock(tune_mutex);
      choice = lookup(family, problem);
      if (choice.step != LookupStep::kExact) {
        options.tune_on_miss->tune(options.device, db->path(), family.name(), problem.key());
        device->make_current();
        choice = lookup(family, problem);
      }
    }
    Entry fresh = make_entry(family, problem, std::move(choice));
    const std::string key = family.name() + "|" + problem.key();
    std::lock_guard lock(mutex);
    const Entry* old = entries[key];
    const Entry* now = &storage.emplace_back(std::move(fresh));
    entries[key] = now;
    for (auto& [call, entry] : hot)
      if (entry == old) entry = now;
    for (auto& [hash, launch] : launch_hot)
      if (launch.entry == old) launch.entry = now;
  }

  void wait_for_tuning() {
    std::unique_lock lock(bg_mutex);
    bg_idle.wait(lock, [&] { return bg_queue.empty() && !bg_busy; });
  }

  void warn(const std::string& message) const {
    if (options.on_warning)
      options.on_warning(message);
    else
      std::fprintf(stderr, "ktune: warning: %s\n", message.c_str());
  }

  // The lookup chain under this runtime's options: its predicted step, and with strict_fp32
  // only the configurations that compute in the problem's own precision.
  LookupResult lookup(const Family& family, const Problem& problem,
                      std::size_t shown = kShownCandidates) const {
    return lookup_config(db.get(), device->info(), family, problem, options.predict,
                         options.strict_fp32 ? family.strict_precision(problem) : ParamValues{},
                         shown);
  }

  LookupResult choose(const Family& family, const Problem& problem) {
    LookupResult choice = lookup(family, problem);
    if (choice.step == LookupStep::kExact || !options.tune_on_miss) return choice;
    if (options.tune_in_background) {
      queue_for_tuning(family.name() + "|" + problem.key(), family, problem);
      return choice;  // answered now; tuned by the background thread
    }
    std::lock_guard lock(tune_mutex);
    choice = lookup(family, problem);  // another thread's run?
    if (choice.step == LookupStep::kExact) return choice;
    options.tune_on_miss->tune(options.device, db->path(), family.name(), problem.key());
    device->make_current();
    return lookup(family, problem);
  }

  // `times`, where given, gets where the time went (lookup_ms is the caller's).
  Entry make_entry(const Family& family, const Problem& problem, LookupResult choice,
                   detail::MissTimes* times = nullptr) {
    Entry e;
    e.choice = std::move(choice);
    const auto t0 = Clock::now();
    const CompileRequest request =
        family.compile_request(e.choice.config, problem, device->limits().arch());
    const auto t1 = Clock::now();
    KernelCache::GetTimes got;
    e.kernel = kernels->get(request, &got);
    const auto t2 = Clock::now();
    e.plan = family.launch_plan(e.choice.config, problem, device->limits());
    if (family.name() == "elementwise")
      e.elementwise = elementwise_plan(
          *e.kernel, e.choice.config, device->limits(), problem.attr("dtype") == "f64" ? 8 : 4,
          static_cast<std::uint64_t>(problem.size("n")), static_cast<int>(problem.size("align")));
    if (times) {
      times->request_ms = ms_between(t0, t1);
      times->key_ms = got.key_ms;
      times->binary_ms = got.binary_ms;
      times->load_ms = got.load_ms;
      times->plan_ms = ms_between(t2, Clock::now());
    }
    return e;
  }

  const Entry& resolve(const Family& family, const Problem& problem) {
    const std::string key = family.name() + "|" + problem.key();
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(key);
      if (it != entries.end()) return *it->second;
    }
    detail::MissTimes times;
    const auto t0 = Clock::now();
    LookupResult choice = choose(family, problem);
    times.lookup_ms = ms_between(t0, Clock::now());
    Entry e = make_entry(family, problem, std::move(choice), &times);
    {
      std::lock_guard lock(detail::miss_times_mutex);
      detail::miss_times = times;
    }
    std::lock_guard lock(mutex);
    auto [it, inserted] = entries.try_emplace(key, nullptr);
    if (inserted) it->second = &storage.emplace_back(std::move(e));
    return *it->second;
  }

  // resolve() behind the hot map: `make_problem` runs only on the first call of `key`.
  template <typename MakeProblem>
  const Entry& resolve(const CallKey& key, const Family& family, MakeProblem&& make_problem) {
    {
      std::lock_guard lock(mutex);
      auto it = hot.find(key);
      if (it != hot.end()) return *it->second;
    }
    const Problem problem = make_problem();
    resolve(family, problem);
    // The entry now current: a tuning run in the background may have replaced the one resolve()
    // returned, and would not find this call in the hot map to switch it.
    const std::string name = family.name() + "|" + problem.key();
    std::lock_guard lock(mutex);
    const Entry* e = entries.at(name);
    hot.emplace(key, e);
    return *e;
  }

  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            double alpha, const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
            double beta, void* c, std::int64_t ldc, int bytes, CUstream stream) {
    const bool row_major = layout == Layout::kRowMajor;
    const bool ta = op_a == Op::kT, tb = op_b == Op::kT;
    validate_gemm_args(bytes == 4 ? "sgemm" : "dgemm", row_major, ta, tb, m, n, k, alpha == 0, a,
                       lda, b, ldb, c, ldc);
    if (m == 0 || n == 0) return;
    GemmCall call;
    call.element_bytes = bytes;
    call.alpha = alpha;
    call.beta = beta;
    if (row_major) {
      // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same storage read
      // as the transposes, so swap the operands and m with n; the ops stay as given.
      call.trans_a = tb, call.trans_b = ta;
      call.m = n, call.n = m, call.k = k;
      call.a = b, call.lda = ldb, call.b = a, call.ldb = lda;
    } else {
      call.trans_a = ta, call.trans_b = tb;
      call.m = m, call.n = n, call.k = k;
      call.a = a, call.lda = lda, call.b = b, call.ldb = ldb;
    }
    call.c = c;
    call.ldc = ldc;
    device->make_current();
    static const Family& family = find_family("gemm");
    if (k == 0 || alpha == 0) {
      Problem p = gemm_problem(bytes == 4 ? "f32" : "f64", false, false, 1, 1, 1, 1);
      CompileRequest r = family.compile_request(family.default_config(p, device->limits()), p,
                                                device->limits().arch());
      r.name_expressions = {gemm_scale_name(bytes)};
      gemm_scale_launch(*kernels->get(r), device->limits(), call, stream);
      return;
    }
    const int align = gemm_alignment(call);
    // n or m at most 16: the skinny kernels, which read the long operand once.
    static const Family& skinny_family = find_family("gemm_skinny");
    const bool skinny = gemm_is_skinny(call.m, call.n);
    const CallKey key{(skinny ? 4u : 1u) << 24 | unsigned(bytes) << 16 |
                          unsigned(call.trans_a) << 12 | unsigned(call.trans_b) << 8 |
                          unsigned(align),
                      call.m, call.n, call.k};
    const Entry& e = resolve(key, skinny ? skinny_family : family, [&] {
      return gemm_call_problem(bytes == 4 ? "f32" : "f64", call.trans_a, call.trans_b, call.m,
                               call.n, call.k, align);
    });
    (skinny ? gemm_skinny_launch : gemm_launch)(*e.kernel, e.choice.config, device->limits(), call,
                                                stream);
  }

  // bf16 / fp16 / tf32 A and B: the tensor-core family gemm_tc; `batch` products of matrices
  // stride_* elements apart.
  void gemm_tc(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const void* a, std::int64_t lda, std::int64_t stride_a, const void* b,
               std::int64_t ldb, std::int64_t stride_b, float beta, void* c, std::int64_t ldc,
               std::int64_t stride_c, std::int64_t batch, const char* dtype, const char* out,
               CUstream stream) {
    const std::string what =
        std::string(batch == 1 ? "gemm (" : "gemm_strided_batched (") + dtype + " -> " + out + ")";
    const bool row_major = layout == Layout::kRowMajor;
    const bool ta = op_a == Op::kT, tb = op_b == Op::kT;
    validate_gemm_args(what.c_str(), row_major, ta, tb, m, n, k, alpha == 0, a, lda, b, ldb, c,
                       ldc);
    if (batch < 0 || batch > std::numeric_limits<int>::max())
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": batch must be in [0, 2^31-1], got " + std::to_string(batch));
    if (stride_a < 0 || stride_b < 0)
      throw Error(ErrorCode::kInvalidArgument, what + ": stride_a and stride_b must be >= 0");
    // The products' C must not overlap: C is m x n (row-major: n wide) with leading dimension ldc.
    if (batch > 1 && stride_c < ldc * (row_major ? m : n))
      throw Error(ErrorCode::kInvalidArgument, what + ": stride_c " + std::to_string(stride_c) +
                                                   " is below one matrix of C (ldc x " +
                                                   (row_major ? "m" : "n") + " = " +
                                                   std::to_string(ldc * (row_major ? m : n)) +
                                                   "): the products would overwrite each other");
    // gemm_tc (wgmma, TMA) on sm_90, gemm_tc80 (mma.sync, cp.async) on sm_80 and later others.
    const Family* family_ptr = nullptr;
    try {
      family_ptr = &gemm_tc_family_for(device->limits());
    } catch (const Error& e) {
      throw Error(e.code(), what + ": " + e.what());
    }
    const Family& family = *family_ptr;
    if (m == 0 || n == 0 || batch == 0) return;
    TcCall call;
    call.dtype = dtype, call.out = out;
    call.alpha = alpha, call.beta = beta;
    call.batch = batch, call.stride_c = stride_c;
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (see gemm()).
    if (row_major) {
      call.trans_a = tb, call.trans_b = ta;
      call.m = n, call.n = m;
      call.a = b, call.lda = ldb, call.b = a, call.ldb = lda;
      call.stride_a = stride_b, call.stride_b = stride_a;
    } else {
      call.trans_a = ta, call.trans_b = tb;
      call.m = m, call.n = n;
      call.a = a, call.lda = lda, call.b = b, call.ldb = ldb;
      call.stride_a = stride_a, call.stride_b = stride_b;
    }
    call.k = k;
    call.c = c;
    call.ldc = ldc;
    const bool tf32 = call.dtype == "tf32";
    const int align = gemm_tc_kernel_align(call.dtype);
    device->make_current();
    if (k == 0 || alpha == 0) {
      Problem p = gemm_tc_problem(dtype, out, true, false, 1, 1, 1, align, batch);
      p.family = family.name();
      CompileRequest r = family.compile_request(family.default_config(p, device->limits()), p,
                                                device->limits().arch());
      r.name_expressions = {gemm_tc_scale_name(out)};
      gemm_tc_scale_launch(*kernels->get(r), call, stream);
      return;
    }
    const unsigned in_code = call.dtype == "bf16" ? 1 : tf32 ? 3 : 2;
    const unsigned out_code = call.out == "f32" ? 0 : in_code;
    if (gemm_tc_is_skinny(call.dtype, call.m, call.n, call.batch)) {
      // m or n at most 4, one product: the skinny kernels, which read the long operand once, in
      // any layout and alignment (nothing transposed or copied first).
      static const Family& skinny = gemm_tc_skinny_family();
      const int skinny_align = gemm_tc_alignment(call);
      const CallKey key{6u << 24 | in_code << 20 | out_code << 16 | unsigned(call.trans_a) << 12 |
                            unsigned(call.trans_b) << 8 | unsigned(skinny_align),
                        call.m, call.n, call.k, 1};
      const Entry& e = resolve(key, skinny, [&] {
        Problem p = gemm_tc_problem(dtype, out, call.trans_a, call.trans_b, call.m, call.n, call.k,
                                    skinny_align, 1);
        p.family = skinny.name();
        return p;
      });
      gemm_tc_launch(skinny, *e.kernel, e.choice.config, call, stream);
      return;
    }
    // Scratch memory of the stream's pool (aligned or transposed operands), returned after the
    // GEMM is queued.
    std::vector<CUdeviceptr> copies;
    const auto release = [&] {
      for (const CUdeviceptr p : copies)
        detail::check(detail::scratch_free(p, stream), "scratch_free (gemm_ex)");
    };
    if (tf32 && (!call.trans_a || call.trans_b)) {
      // The tensor cores read tf32 operands k-major only: an operand stored the other way is
      // first transposed into scratch (k-contiguous, its leading dimension k rounded up to 16
      // bytes, its matrices packed), and the product runs as op tn.
      try {
        const auto kernel = kernels->get(gemm_tc_transpose_request(device->limits().arch()));
        const Kernel& t = *kernel;
        const std::int64_t ldt = (call.k + align - 1) / align * align;
        auto transpose = [&](const void*& ptr, std::int64_t& ld, std::int64_t& stride,
                             std::int64_t mn) {
          const CUdeviceptr dst =
              detail::scratch_alloc(static_cast<std::size_t>(ldt * mn * 4 * call.batch), stream);
          copies.push_back(dst);
          gemm_tc_transpose_launch(t, ptr, ld, stride, reinterpret_cast<void*>(dst), ldt, ldt * mn,
                                   mn, call.k, call.batch, stream);
          ptr = reinterpret_cast<const void*>(dst);
          ld = ldt;
          stride = ldt * mn;
        };
        // A stored m x k (op_a = N) and B stored n x k (op_b = T), column-major.
        if (!call.trans_a) transpose(call.a, call.lda, call.stride_a, call.m);
        if (call.trans_b) transpose(call.b, call.ldb, call.stride_b, call.n);
      } catch (...) {
        release();
        throw;
      }
      call.trans_a = true;
      call.trans_b = false;
    }
    const CallKey key{5u << 24 | in_code << 20 | out_code << 16 | unsigned(call.trans_a) << 12 |
                          unsigned(call.trans_b) << 8 | unsigned(align),
                      call.m, call.n, call.k, call.batch};
    const Entry& e = resolve(key, family, [&] {
      Problem p = gemm_tc_problem(dtype, out, call.trans_a, call.trans_b, call.m, call.n, call.k,
                                  align, call.batch);
      p.family = family.name();
      return p;
    });
    // An operand the TMA cannot read (its pointer, leading dimension or batch stride not a
    // multiple of 16 bytes) is copied first into aligned scratch, its leading dimension rounded up
    // and its matrices packed; the scratch goes back to the stream's pool after the GEMM.
    const std::int64_t elem = tf32 ? 4 : 2;
    auto repack = [&](const void*& ptr, std::int64_t& ld, std::int64_t& stride, std::int64_t rows,
                      std::int64_t cols) {
      if (reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && ld % align == 0 &&
          (call.batch == 1 || stride % align == 0))
        return;
      const std::int64_t ld2 = (rows + align - 1) / align * align;
      const CUdeviceptr dst =
          detail::scratch_alloc(static_cast<std::size_t>(ld2 * cols * elem * call.batch), stream);
      copies.push_back(dst);
      // One 2-D copy of the whole batch when its matrices are packed, else one per matrix.
      const bool packed = call.batch == 1 || stride == ld * cols;
      for (std::int64_t mat = 0; mat < (packed ? 1 : call.batch); ++mat) {
        CUDA_MEMCPY2D cp{};
        cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        cp.srcDevice =
            reinterpret_cast<CUdeviceptr>(ptr) + static_cast<CUdeviceptr>(mat * stride * elem);
        cp.srcPitch = static_cast<std::size_t>(ld * elem);
        cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        cp.dstDevice = dst + static_cast<CUdeviceptr>(mat * ld2 * cols * elem);
        cp.dstPitch = static_cast<std::size_t>(ld2 * elem);
        cp.WidthInBytes = static_cast<std::size_t>(rows * elem);
        cp.Height = static_cast<std::size_t>(packed ? cols * call.batch : cols);
        detail::check(detail::driver().cuMemcpy2DAsync(&cp, stream),
                      "cuMemcpy2DAsync (aligning a gemm_ex operand)");
      }
      ptr = reinterpret_cast<const void*>(dst);
      ld = ld2;
      stride = ld2 * cols;
    };
    try {
      // Column-major A is k x m (op_a = T) or m x k; B is k x n (op_b = N) or n x k.
      repack(call.a, call.lda, call.stride_a, call.trans_a ? call.k : call.m,
             call.trans_a ? call.m : call.k);
      repack(call.b, call.ldb, call.stride_b, call.trans_b ? call.n : call.k,
             call.trans_b ? call.k : call.n);
      gemm_tc_launch(family, *e.kernel, e.choice.config, call, stream);
    } catch (...) {
      release();
      throw;
    }
    release();
  }

  template <typename T>
  void elementwise(ElementwiseOp op, const char* what, ElementwisePointers ptr, std::size_t n,
                   CUstream stream) {
    if (n == 0) return;
    auto require = [&](const void* p, const char* arg) {
      if (!p) throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + arg + " is null");
    };
    if (op == ElementwiseOp::kCopy) {
      require(ptr.out0, "dst");
      require(ptr.in0, "src");
    } else if (op == ElementwiseOp::kAdd) {
      require(ptr.out0, "c");
      require(ptr.in0, "a");
      require(ptr.in1, "b");
    } else {
      require(ptr.out0, "re_out");
      require(ptr.out1, "im_out");
      require(ptr.in0, "re_in");
      require(ptr.in1, "im_in");
    }
    ElementwiseCall call{ptr, n};
    const int align = alignment_of(call);
    if (align < static_cast<int>(sizeof(T)))
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(what) + ": a pointer is not aligned to its element size");
    device->make_current();
    static const Family& family = find_family("elementwise");
    const CallKey key{2u << 24 | unsigned(sizeof(T)) << 16 | unsigned(op) << 8 | unsigned(align),
                      static_cast<std::int64_t>(n)};
    const Entry& e = resolve(key, family, [&] {
      return elementwise_problem(op, sizeof(T) == 4 ? "f32" : "f64", n, align);
    });
    elementwise_launch(*e.kernel, e.elementwise, call, stream);
  }

  static std::uint64_t spec_hash(const std::string& family, const ProblemSpec& spec) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::string_view text) {
      for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
      h = (h ^ 0xff) * 0x100000001b3ull;
    };
    mix(family);
    for (const auto& [axis, value] : spec.sizes()) {
      mix(axis);
      h = (h ^ static_cast<std::uint64_t>(value)) * 0x100000001b3ull;
    }
    for (const auto& [axis, value] : spec.attrs()) {
      mix(axis);
      mix(value);
    }
    return h;
  }

  void launch(const std::string& family_name, const ProblemSpec& spec, const std::vector<Arg>& args,
              CUstream stream) {
    const std::uint64_t hash = spec_hash(family_name, spec);
    const Entry* entry = nullptr;
    {
      std::lock_guard lock(mutex);
      for (auto [it, end] = launch_hot.equal_range(hash); it != end; ++it)
        if (it->second.family == family_name && it->second.spec.sizes() == spec.sizes() &&
            it->second.spec.attrs() == spec.attrs())
          entry = it->second.entry;
    }
    if (!entry) {
      const Family& family = find_family(family_name);
      const Problem problem = family.make_problem(spec.sizes(), spec.attrs());
      device->make_current();
      entry = &resolve(family, problem);
      if (!entry->plan)
        throw Error(ErrorCode::kUnsupported, "launch: family " + family.name() +
                                                 " launches through its own calls (gemm, copy, "
                                                 "histogram...), not launch()");
      const std::string name = family.name() + "|" + problem.key();
      std::lock_guard lock(mutex);
      entry = entries.at(name);  // as in resolve(CallKey): the current one
      launch_hot.emplace(hash, LaunchHot{family_name, spec, entry});
    }
    const LaunchPlan& plan = *entry->plan;
    if (args.size() != plan.arguments.size())
      throw Error(ErrorCode::kInvalidArgument, "launch " + family_name + ": " +
                                                   std::to_string(args.size()) +
                                                   " argument(s) given, the family file declares " +
                                                   std::to_string(plan.arguments.size()));
    // Packed as the kernel takes them: pointers, and scalars in their declared types.
    constexpr std::size_t kMaxArgs = 64;
    if (args.size() > kMaxArgs)
      throw Error(ErrorCode::kInvalidArgument, "launch: more than 64 arguments");
    std::uint64_t storage[kMaxArgs];
    void* pointers[kMaxArgs];
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      const LaunchPlan::Argument& p = plan.arguments[i];
      auto bad = [&](const std::string& what) {
        return Error(ErrorCode::kInvalidArgument, "launch " + family_name + ": argument " +
                                                      std::to_string(i + 1) + " (" + p.name +
                                                      "): " + what);
      };
      storage[i] = 0;
      if (p.buffer) {
        if (a.kind() != Arg::Kind::kPointer) throw bad("a buffer takes a device pointer");
        if (!a.pointer() && p.length > 0) throw bad("null");
        const void* pointer = a.pointer();
        std::memcpy(&storage[i], &pointer, sizeof(void*));
      } else if (p.floating) {
        if (a.kind() == Arg::Kind::kPointer) throw bad("a scalar takes a number, not a pointer");
        const double v = a.kind() == Arg::Kind::kReal ? a.real()
                         : a.unsigned_overflow()
                             ? static_cast<double>(static_cast<std::uint64_t>(a.integer()))
                             : static_cast<double>(a.integer());
        if (p.bytes == 4) {
          const float f = static_cast<float>(v);
          std::memcpy(&storage[i], &f, 4);
        } else {
          std::memcpy(&storage[i], &v, 8);
        }
      } else {
        if (a.kind() != Arg::Kind::kInteger) throw bad("an integer scalar takes an integer");
        const std::int64_t v = a.integer();
        const int bits = p.bytes * 8;
        const bool fits = a.unsigned_overflow() ? (!p.is_signed && bits == 64)
                          : p.is_signed ? (bits == 64 || (v >= -(std::int64_t(1) << (bits - 1)) &&
                                                          v < (std::int64_t(1) << (bits - 1))))
                                        : (v >= 0 && (bits == 64 || v < (std::int64_t(1) << bits)));
        if (!fits) throw bad(std::to_string(v) + " does not fit its type");
        std::memcpy(&storage[i], &v, static_cast<std::size_t>(p.bytes));
      }
      pointers[i] = &storage[i];
    }
    device->make_current();
    if (plan.shared > static_cast<unsigned>(device->limits().smem_per_block))
      entry->kernel->allow_dynamic_smem(0, static_cast<int>(plan.shared));
    entry->kernel->launch(0, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.block[1],
                          plan.block[2], plan.shared, stream, pointers);
  }

  // `call` was checked when it was made (histogram_*_call), before anything touches the GPU.
  void histogram(const HistogramCall& call, CUstream stream) {
    if (call.n == 0 && call.accumulate) return;
    device->make_current();
    if (call.n == 0) return histogram_clear(call, stream);  // no kernel needed to write zeros
    static const Family& family = find_family("histogram");
    const CallKey key{
        3u << 24 | unsigned(call.dtype) << 8 | unsigned(histogram_alignment(call.samples)),
        static_cast<std::int64_t>(call.n), call.args.bins};
    const Entry& e = resolve(key, family, [&] { return histogram_problem(call); });
    histogram_launch(*e.kernel, e.choice.config, device->limits(), call, stream);
  }
};

namespace {
// A moved-from Runtime has no implementation: every call says so instead of crashing.
[[noreturn]] void moved_from() {
  throw Error(ErrorCode::kInvalidArgument, "ktune::Runtime: used after it was moved from");
}
}  // namespace

// Each entry point leaves the calling thread's CUDA context as it found it (ContextScope).
Runtime::Runtime(Options options) {
  const ContextRestorer restore;  // making the device's context binds it to this thread
  impl_ = std::make_unique<Impl>(std::move(options));
}
Runtime::~Runtime() {
  const ContextRestorer restore;  // unloading modules and releasing the context may bind it
  impl_.reset();
}
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&& other) noexcept {
  const ContextRestorer restore;  // the runtime replaced here is destroyed (see ~Runtime)
  impl_ = std::move(other.impl_);
  return *this;
}

void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                   float beta, float* c, std::int64_t ldc, CUstream stream) {
  const ContextScope scope(*impl().device);
  if (impl().options.allow_tf32 && impl().device->limits().cc_major >= 8) {
    impl().gemm_tc(layout, op_a, op_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1,
                   "tf32", "f32", stream);
    return;
  }
  impl().gemm(layout, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 4, stream);
}
void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const __nv_bfloat16* a, std::int64_t lda, const __nv_bfloat16* b,
                   std::int64_t ldb, float beta, __nv_bfloat16* c, std::int64_t ldc,
                   CUstream stream) {
  gemm_ex(layout, op_a, op_b, m, n, k, alpha, DataType::kBF16, a, lda, b, ldb, beta,
          DataType::kBF16, c, ldc, stream);
}
void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const __nv_bfloat16* a, std::int64_t lda, const __nv_bfloat16* b,
                   std::int64_t ldb, float beta, float* c, std::int64_t ldc, CUstream stream) {
  gemm_ex(layout, op_a, op_b, m, n, k, alpha, DataType::kBF16, a, lda, b, ldb, beta, DataType::kF32,
          c, ldc, stream);
}
void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const __half* a, std::int64_t lda, const __half* b,
                   std::int64_t ldb, float beta, __half* c, std::int64_t ldc, CUstream stream) {
  gemm_ex(layout, op_a, op_b, m, n, k, alpha, DataType::kF16, a, lda, b, ldb, beta, DataType::kF16,
          c, ldc, stream);
}
void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const __half* a, std::int64_t lda, const __half* b,
                   std::int64_t ldb, float beta, float* c, std::int64_t ldc, CUstream stream) {
  gemm_ex(layout, op_a, op_b, m, n, k, alpha, DataType::kF16, a, lda, b, ldb, beta, DataType::kF32,
          c, ldc, stream);
}
void Runtime::gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   double alpha, const double* a, std::int64_t lda, const double* b,
                   std::int64_t ldb, double beta, double* c, std::int64_t ldc, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().gemm(layout, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 8, stream);
}

namespace {

const char* type_name(DataType t) {
  switch (t) {
    case DataType::kF32:
      return "f32";
    case DataType::kF64:
      return "f64";
    case DataType::kBF16:
      return "bf16";
    case DataType::kF16:
      return "f16";
    case DataType::kTF32:
      return "tf32";
  }
  return "?";
}

// The tensor-core calls' element types, checked: A and B of bf16, f16 or tf32; C f32 or (16-bit
// inputs) of the type of A and B.
void check_tc_types(const char* what, DataType ab_type, DataType c_type) {
  if (ab_type != DataType::kBF16 && ab_type != DataType::kF16 && ab_type != DataType::kTF32)
    throw Error(ErrorCode::kUnsupported,
                std::string(what) + ": A and B of type " + type_name(ab_type) +
                    ": it takes bf16, f16 and tf32 so far (gemm() takes f32 and f64)");
  if (ab_type == DataType::kTF32 && c_type != DataType::kF32)
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": C of type " + type_name(c_type) +
                                             " with A and B of tf32: C is f32 (float)");
  if (c_type != ab_type && c_type != DataType::kF32)
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": C of type " + type_name(c_type) +
                                             " with A and B of " + type_name(ab_type) +
                                             ": C is f32 or the type of A and B");
}

}  // namespace

void Runtime::gemm_ex(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, DataType ab_type, const void* a,
                      std::int64_t lda, const void* b, std::int64_t ldb, float beta,
                      DataType c_type, void* c, std::int64_t ldc, CUstream stream) {
  check_tc_types("gemm_ex", ab_type, c_type);
  const ContextScope scope(*impl().device);
  impl().gemm_tc(layout, op_a, op_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1,
                 type_name(ab_type), type_name(c_type), stream);
}

void Runtime::gemm_strided_batched_ex(Layout layout, Op op_a, Op op_b, std::int64_t m,
                                      std::int64_t n, std::int64_t k, float alpha, DataType ab_type,
                                      const void* a, std::int64_t lda, std::int64_t stride_a,
                                      const void* b, std::int64_t ldb, std::int64_t stride_b,
                                      float beta, DataType c_type, void* c, std::int64_t ldc,
                                      std::int64_t stride_c, std::int64_t batch, CUstream stream) {
  check_tc_types("gemm_strided_batched_ex", ab_type, c_type);
  const ContextScope scope(*impl().device);
  impl().gemm_tc(layout, op_a, op_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                 ldc, stride_c, batch, type_name(ab_type), type_name(c_type), stream);
}

void Runtime::copy(float* dst, const float* src, std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<float>(ElementwiseOp::kCopy, "copy", {dst, nullptr, src, nullptr}, n, stream);
}
void Runtime::copy(double* dst, const double* src, std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<double>(ElementwiseOp::kCopy, "copy", {dst, nullptr, src, nullptr}, n, stream);
}
void Runtime::add(float* c, const float* a, const float* b, std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<float>(ElementwiseOp::kAdd, "add", {c, nullptr, a, b}, n, stream);
}
void Runtime::add(double* c, const double* a, const double* b, std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<double>(ElementwiseOp::kAdd, "add", {c, nullptr, a, b}, n, stream);
}
void Runtime::complex_copy(float* re_out, float* im_out, const float* re_in, const float* im_in,
                           std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<float>(ElementwiseOp::kComplexCopy, "complex_copy",
                            {re_out, im_out, re_in, im_in}, n, stream);
}
void Runtime::complex_copy(double* re_out, double* im_out, const double* re_in, const double* im_in,
                           std::size_t n, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().elementwise<double>(ElementwiseOp::kComplexCopy, "complex_copy",
                             {re_out, im_out, re_in, im_in}, n, stream);
}

void Runtime::histogram(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                        bool accumulate, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().histogram(histogram_bytes_call(data, n, counts, accumulate), stream);
}
void Runtime::histogram_even(const std::uint8_t* samples, std::size_t n, int bins,
                             std::uint8_t lower, std::uint8_t upper, std::uint32_t* counts,
                             bool accumulate, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().histogram(
      histogram_even_call(HistogramDtype::kU8, samples, n, bins, lower, upper, counts, accumulate),
      stream);
}
void Runtime::histogram_even(const std::uint16_t* samples, std::size_t n, int bins,
                             std::uint16_t lower, std::uint16_t upper, std::uint32_t* counts,
                             bool accumulate, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().histogram(
      histogram_even_call(HistogramDtype::kU16, samples, n, bins, lower, upper, counts, accumulate),
      stream);
}
void Runtime::histogram_even(const std::int32_t* samples, std::size_t n, int bins,
                             std::int32_t lower, std::int32_t upper, std::uint32_t* counts,
                             bool accumulate, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().histogram(
      histogram_even_call(HistogramDtype::kI32, samples, n, bins, lower, upper, counts, accumulate),
      stream);
}
void Runtime::histogram_even(const float* samples, std::size_t n, int bins, float lower,
                             float upper, std::uint32_t* counts, bool accumulate, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().histogram(histogram_even_call(samples, n, bins, lower, upper, counts, accumulate), stream);
}

void Runtime::launch(const std::string& family, const ProblemSpec& problem,
                     const std::vector<Arg>& args, CUstream stream) {
  const ContextScope scope(*impl().device);
  impl().launch(family, problem, args, stream);
}

Choice Runtime::explain(const std::string& family_name, const std::string& problem_key) {
  return explain(family_name, problem_key, kShownCandidates);
}

Choice Runtime::explain(const std::string& family_name, const std::string& problem_key,
                        std::size_t candidates) {
  if (!impl_) moved_from();
  const Family& family = find_family(family_name);
  const Problem problem = family.parse_problem(problem_key);
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->entries.find(family.name() + "|" + problem.key());
    if (it != impl_->entries.end()) {
      Choice c = to_choice(it->second->choice, family, problem);
      c.step = LookupStep::kCache;
      return c;
    }
  }
  return to_choice(impl_->lookup(family, problem, candidates), family, problem);
}

void Runtime::wait_for_tuning() { impl().wait_for_tuning(); }

std::uint64_t Runtime::compile_count() const { return impl().kernels->compile_count(); }

std::string Runtime::database_path() const {
  const Database* db = impl().db.get();
  if (!db) return {};
  return db->path() + (db->read_only() ? " (read-only)" : "");
}

Runtime::Impl& Runtime::impl() const {
  if (!impl_) moved_from();
  return *impl_;
}

}  // namespace ktune
