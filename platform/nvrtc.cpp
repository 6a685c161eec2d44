// NVRTC compiles to CUBIN for an explicit arch (no GPU needed) and reports ptxas resources.
#include "platform/nvrtc.hpp"

#include <nvrtc.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <memory>

#include "core/util.hpp"
#include "ktune/error.hpp"

namespace ktune {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

std::string options_text(const std::vector<std::string>& options) {
  std::string text;
  for (const auto& o : options) text += (text.empty() ? "" : " ") + o;
  return text;
}

// First integer that follows `marker` in `line`, or -1.
int int_before(std::string_view line, std::string_view suffix) {
  // Finds "<number> <suffix>" and returns number.
  size_t pos = line.find(suffix);
  if (pos == std::string_view::npos || pos < 2) return -1;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int v = -1;
  std::from_chars(line.data() + begin, line.data() + end, v);
  return v;
}

std::string_view quoted_or_word_after(std::string_view line, std::string_view marker) {
  size_t pos = line.find(marker);
  if (pos == std::string_view::npos) return {};
  std::string_view rest = line.substr(pos + marker.size());
  if (!rest.empty() && rest[0] == '\'') {
    size_t end = rest.find('\'', 1);
    return rest.substr(1, end == std::string_view::npos ? rest.npos : end - 1);
  }
  size_t end = rest.find_first_of(" \t\r");
  return rest.substr(0, end);
}

}  // namespace

std::vector<FunctionResources> parse_ptxas_log(std::string_view log) {
  std::vector<FunctionResources> out;
  std::string properties_for;  // name from the last "Function properties for" line
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    start = end + 1;
    if (line.find("Compiling entry function") != std::string_view::npos) {
      FunctionResources r;
      r.mangled_name = std::string(quoted_or_word_after(line, "Compiling entry function "));
      out.push_back(std::move(r));
    } else if (line.find("Function properties for") != std::string_view::npos) {
      properties_for = std::string(quoted_or_word_after(line, "Function properties for "));
    } else if (line.find("bytes stack frame") != std::string_view::npos) {
      for (auto& r : out) {
        if (r.mangled_name != properties_for) continue;
        r.stack_frame = std::max(0, int_before(line, "bytes stack frame"));
        r.spill_stores = std::max(0, int_before(line, "bytes spill stores"));
        r.spill_loads = std::max(0, int_before(line, "bytes spill loads"));
      }
    } else if (line.find("Used ") != std::string_view::npos &&
               line.find(" registers") != std::string_view::npos && !out.empty()) {
      FunctionResources& r = out.back();
      r.registers = int_before(line, "registers");
      r.barriers = std::max(0, int_before(line, "barriers"));
      r.smem_static = std::max(0, int_before(line, "bytes smem"));
    }
  }
  return out;
}

std::vector<int> nvrtc_supported_archs() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> base_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17", "-Xptxas=-v", "-DKTUNE_NVRTC=1"};
}

std::string compile_sources_hash(std::string_view source,
                                 const std::vector<std::pair<std::string, std::string>>& headers) {
  Hasher h;
  h.add(source);
  for (const auto& [name, text] : headers) h.add(name).add(text);
  return h.hex();
}

std::string compile_cache_key(const CompileRequest& request) {
  Hasher h;
  h.add("ktune-cubin-v2")
      .add(request.sources_hash.empty() ? compile_sources_hash(request.source, request.headers)
                                        : request.sources_hash)
      .add(request.arch)
      .add(nvrtc_version());
  for (const auto& n : request.name_expressions) h.add(n);
  for (const auto& o : request.options) h.add(o);
  return h.hex();
}

namespace {
std::atomic<std::uint64_t> g_nvrtc_compiles{0};
}

std::uint64_t nvrtc_compile_calls() { return g_nvrtc_compiles.load(); }

void warm_nvrtc(const std::string& arch) {
  static const char* const kSource =
      "extern \"C\" __global__ void ktune_warm(float* p) { p[threadIdx.x] *= 2.0f; }";
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, kSource, "warm.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return;
  const std::vector<std::string> options = base_options(arch);
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());
  nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  nvrtcDestroyProgram(&program);
}

CompileResult compile(const CompileRequest& request) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : request.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram(nullptr));
  nvrtcResult r = nvrtcCreateProgram(
      program.get(), request.source.c_str(), request.source_name.c_str(),
      static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
  if (r != NVRTC_SUCCESS)
    throw Error(ErrorCode::kCompile,
                std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(r));
  for (const auto& name : request.name_expressions) {
    r = nvrtcAddNameExpression(*program, name.c_str());
    if (r != NVRTC_SUCCESS)
      throw Error(ErrorCode::kCompile,
                  "nvrtcAddNameExpression(" + name + ") failed: " + nvrtcGetErrorString(r));
  }
  std::vector<std::string> options = base_options(request.arch);
  options.insert(options.end(), request.options.begin(), request.options.end());
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());

  ++g_nvrtc_compiles;
  nvrtcResult compiled =
      nvrtcCompileProgram(*program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  CompileResult out;
  size_t log_size = 0;
  nvrtcGetProgramLogSize(*program, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(*program, out.log.data());
    out.log.resize(log_size - 1);
  }
  std::string names;
  for (const auto& n : request.name_expressions) names += "\n  " + n;
  if (compiled != NVRTC_SUCCESS) {
    throw Error(
        ErrorCode::kCompile,
        "NVRTC could not compile " + request.source_name + " for " + request.arch + ": " +
            nvrtcGetErrorString(compiled),
        "options: " + options_text(options) + "\nname expressions:" + names + "\nlog:\n" + out.log);
  }
  size_t cubin_size = 0;
  nvrtcGetCUBINSize(*program, &cubin_size);
  out.cubin.resize(cubin_size);
  nvrtcGetCUBIN(*program, out.cubin.data());

  std::vector<FunctionResources> reported = parse_ptxas_log(out.log);
  for (const auto& name : request.name_expressions) {
    const char* lowered = nullptr;
    r = nvrtcGetLoweredName(*program, name.c_str(), &lowered);
    if (r != NVRTC_SUCCESS || !lowered)
      throw Error(ErrorCode::kCompile,
                  "nvrtcGetLoweredName(" + name + ") failed: " + nvrtcGetErrorString(r));
    out.lowered_names.emplace_back(lowered);
    FunctionResources res;
    res.mangled_name = lowered;
    for (const auto& f : reported)
      if (f.mangled_name == lowered) res = f;
    out.resources.push_back(res);
  }
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ktune
