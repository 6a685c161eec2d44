// A synthetic exhaustive recording of an elementwise space, standing in for GPU measurements in
// host tests of replay and resume (it tests the tuner's machinery, not the kernels).
#pragma once

#include <cmath>
#include <functional>
#include <string>

#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "tuner/space.hpp"

namespace ktune::testing {

// Every configuration gets a time from a bowl in the parameters plus fixed roughness; about one
// in 17 is recorded as a wrong result. Returns the run id.
inline std::int64_t record_synthetic(Database& db, const std::string& problem_key) {
  const Family& f = find_family("elementwise");
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.limits = DeviceLimits::for_arch(9, 0);
  d.limits.sm_count = 132;
  const std::int64_t device = db.ensure_device(d);
  RunRecord run;
  run.device_id = device;
  run.family = "elementwise";
  run.template_hash = f.template_hash();
  run.problem = problem_key;
  run.strategy = "exhaustive";
  const std::int64_t id = db.begin_run(run);
  SearchSpace space(f, Problem::parse("elementwise", problem_key), d.limits);
  for (const auto& c : space.configs()) {
    ResultRecord r;
    r.run_id = id;
    r.device_id = device;
    r.family = "elementwise";
    r.template_hash = run.template_hash;
    r.problem = problem_key;
    r.config = to_string(c);
    const std::size_t h = std::hash<std::string>{}(r.config);
    r.status = h % 17 == 0 ? "wrong_result" : "ok";
    r.time_median_ms = 1.0 + std::fabs(std::log2(static_cast<double>(c.at("UNROLL"))) - 2) +
                       (c.at("VEC") == 4 ? 0 : 1) + 0.3 * static_cast<double>(c.at("CACHE")) +
                       0.1 * static_cast<double>(h % 100) / 100;
    r.metric = 1000.0 / r.time_median_ms;  // as if GB/s of a 1 MB transfer
    r.unit = "GB/s";
    db.put_result(r);
  }
  db.finish_run(id, "completed");
  return id;
}

}  // namespace ktune::testing
