// NVRTC wrapper: source + name expressions + options + arch -> CUBIN, lowered names, ptxas report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune {

// Resources of one kernel as ptxas reports them with -Xptxas=-v.
struct FunctionResources {
  std::string mangled_name;
  int registers = -1;
  int barriers = 0;
  int smem_static = 0;   // bytes of static shared memory
  int stack_frame = 0;   // bytes
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  bool spills() const { return spill_stores > 0 || spill_loads > 0; }
};

struct CompileRequest {
  std::string source_name;  // e.g. "elementwise.cuh"; appears in the log
  std::string source;
  // Headers the source may #include by name (name, text); the templates' common.cuh.
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string>
      name_expressions;              // e.g. "ktune::elementwise_kernel<0, float, 4, 2, 1, 0>"
  std::vector<std::string> options;  // extra NVRTC options
  std::string arch = "sm_90";        // compiled straight to CUBIN for this arch
  // compile_sources_hash(source, headers), where whoever makes the request keeps it (a family
  // hashes its sources once per process): the cache key then reads these 32 digits instead of
  // the texts (77 KB for gemm, 0.15 ms of an H200's first call). Empty: the key hashes the texts.
  // Whoever changes source or headers after setting it clears it.
  std::string sources_hash;
};

struct CompileResult {
  std::vector<char> cubin;
  std::vector<std::string> lowered_names;    // one per name expression, same order
  std::vector<FunctionResources> resources;  // one per name expression, same order
  std::string log;
  double compile_ms = 0;
};

// Compiles; throws Error(kCompile) whose details hold the log, the options and the names.
// Safe to call from several threads at once (one NVRTC program per call).
CompileResult compile(const CompileRequest& request);

// One small kernel compiled for `arch` (sm_90) and thrown away, errors ignored: what NVRTC does
// once a process before its first compile (its builtins loaded, its front end and ptxas paged
// in), done ahead, in a compiler process that has nothing to compile yet (tuner/compilers.hpp).
// Not counted by nvrtc_compile_calls().
void warm_nvrtc(const std::string& arch);

// nvrtcCompileProgram calls made by this process so far (all threads; for tests and benchmarks
// that prove a warm start compiles nothing).
std::uint64_t nvrtc_compile_calls();

// Every kernel's resources from a ptxas -v log, in the order ptxas reported them.
std::vector<FunctionResources> parse_ptxas_log(std::string_view log);

// "13.0"
std::string nvrtc_version();
// The compute capabilities this NVRTC compiles for (90 for sm_90), from nvrtcGetSupportedArchs.
std::vector<int> nvrtc_supported_archs();

// Stable key for the binary cache: hash of source, headers, names, options, arch, NVRTC version.
// The same key whether the request carries its sources_hash or not.
std::string compile_cache_key(const CompileRequest& request);
// The hash of a request's texts that the key is made from (CompileRequest::sources_hash).
std::string compile_sources_hash(std::string_view source,
                                 const std::vector<std::pair<std::string, std::string>>& headers);

// The options every compile gets (besides the request's own).
std::vector<std::string> base_options(const std::string& arch);

}  // namespace ktune
