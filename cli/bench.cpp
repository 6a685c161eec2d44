// ktune bench: the runtime's tuned kernels against the anchors, verified, in the same process run.
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "db/database.hpp"
#include "ktune/ktune.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/nvrtc.hpp"
#include "runtime/util.hpp"
#include "templates/elementwise.hpp"
#include "templates/family.hpp"
#include "tuner/evaluator.hpp"

#ifdef KTUNE_HAVE_ANCHORS
#include "bench/anchors.hpp"
#endif

namespace ktune::cli {
namespace {

struct Row {
  std::string family, problem, variant;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int repeats = 0;
  double figure = 0;
  std::string unit;
  double ratio = 0;  // figure / anchor figure
  std::string anchor;
  std::string step, config;
  std::string verified;
};

void write_csv(const std::string& path, const std::vector<Row>& rows, const DeviceInfo& device) {
  std::ofstream out(path);
  if (!out) throw Error(ErrorCode::kInvalidArgument, "--csv: cannot write " + path);
  const char* commit = std::getenv("KTUNE_COMMIT");
  out << "date,commit,device,driver,nvrtc,family,problem,variant,median_ms,min_ms,max_ms,repeats,"
         "figure,unit,"
         "ratio,anchor,lookup_step,config,verified\n";
  for (const auto& r : rows)
    out << utc_now() << ',' << (commit ? commit : "unknown") << ",\"" << device.identity() << "\","
        << device.driver_version << ',' << nvrtc_version() << ',' << r.family << ",\"" << r.problem
        << "\"," << r.variant << ',' << r.median_ms << ',' << r.min_ms << ',' << r.max_ms << ','
        << r.repeats << ',' << r.figure << ',' << r.unit << ',' << r.ratio << ',' << r.anchor << ','
        << r.step << ",\"" << r.config << "\"," << r.verified << '\n';
}

}  // namespace

int cmd_bench(const Common& common, const std::string& family_name, const std::string& n_text,
              const std::string& csv, int repeats) {
#ifndef KTUNE_HAVE_ANCHORS
  (void)common, (void)family_name, (void)n_text, (void)csv, (void)repeats;
  throw Error(ErrorCode::kUnsupported,
              "this ktune was built without the anchors (KTUNE_BUILD_BENCH=OFF)");
#else
  const std::uint64_t n = parse_size(n_text, "--n");
  if (n == 0) throw Error(ErrorCode::kInvalidArgument, "--n: must be at least 1");
  Options options;
  options.database = common.resolved_db();
  options.device = common.device;
  Runtime runtime(options);
  Device device(common.device);
  Database cache_db(common.resolved_db());
  KernelCache cache(device, &cache_db);
  detail::Stream stream;
  L2Flusher flusher(device.limits());
  TimingOptions timing;
  timing.repeats = repeats;
  timing.warmup = 5;
  const Family& family = find_family(family_name);
  std::vector<Row> rows;
  bool all_verified = true;

  if (family_name == "elementwise") {
    double memcpy_gbs = 0;
    for (ElementwiseOp op : {ElementwiseOp::kCopy, ElementwiseOp::kAdd}) {
      Problem problem = elementwise_problem(op, "f32", n, 16);
      auto workload = family.make_workload(problem, device, cache);
      const ElementwiseCall call = elementwise_workload_call(*workload);
      auto verify = [&](const char* what) {
        stream.synchronize();
        std::string wrong = workload->verify(stream.get());
        if (!wrong.empty()) {
          std::cerr << "ktune bench: " << what << " computed a wrong result: " << wrong << "\n";
          all_verified = false;
          return std::string("no");
        }
        return std::string("yes");
      };
      auto run_ktune = [&](CUstream s) {
        if (op == ElementwiseOp::kCopy)
          runtime.copy(static_cast<float*>(call.ptr.out0), static_cast<const float*>(call.ptr.in0),
                       n, s);
        else
          runtime.add(static_cast<float*>(call.ptr.out0), static_cast<const float*>(call.ptr.in0),
                      static_cast<const float*>(call.ptr.in1), n, s);
      };
      if (op == ElementwiseOp::kCopy) {
        workload->prepare(11, stream.get());
        anchors::memcpy_d2d(call.ptr.out0, call.ptr.in0, n * sizeof(float), stream.get());
        Row r{"elementwise", problem.key(), "cudaMemcpy"};
        r.verified = verify("cudaMemcpy");
        TimingStats t = time_on_stream(
            [&](CUstream s) {
              anchors::memcpy_d2d(call.ptr.out0, call.ptr.in0, n * sizeof(float), s);
            },
            stream.get(), timing, &flusher);
        r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
        r.figure = metric_of(workload->work(), t.median_ms, "GB/s");
        r.unit = "GB/s";
        r.ratio = 1.0;
        r.anchor = "cudaMemcpy";
        memcpy_gbs = r.figure;
        rows.push_back(r);
      }
      workload->prepare(12, stream.get());
      run_ktune(stream.get());
      Choice choice = runtime.explain("elementwise", problem.key());
      Row r{"elementwise", problem.key(),
            std::string("ktune ") + (op == ElementwiseOp::kCopy ? "copy" : "add")};
      r.verified = verify("ktune");
      TimingStats t = time_on_stream(run_ktune, stream.get(), timing, &flusher);
      r.median_ms = t.median_ms, r.min_ms = t.min_ms, r.max_ms = t.max_ms, r.repeats = t.repeats;
      r.figure = metric_of(workload->work(), t.median_ms, "GB/s");
      r.unit = "GB/s";
      r.ratio = memcpy_gbs > 0 ? r.figure / memcpy_gbs : 0;
      r.anchor = "cudaMemcpy";
      r.step = std::string(to_string(choice.step));
      r.config = choice.config;
      rows.push_back(r);
    }
  }

  Table t({"problem", "variant", "median ms", "figure", "ratio", "anchor", "lookup", "verified",
           "config"});
  for (const auto& r : rows)
    t.add({r.problem, r.variant, fixed(r.median_ms, 4), fixed(r.figure, 1) + " " + r.unit,
           fixed(r.ratio, 3), r.anchor, r.step, r.verified, r.config});
  std::cout << "device: " << device.info().identity() << ", driver " << device.info().driver_version
            << ", " << anchors::versions() << ", NVRTC " << nvrtc_version() << "; median of "
            << repeats << " runs after warm-up, L2 flushed before each\n";
  t.print(std::cout);
  if (!csv.empty()) write_csv(csv, rows, device.info());
  return all_verified ? kExitOk : kExitFailed;
#endif
}

}  // namespace ktune::cli
