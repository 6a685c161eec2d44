// Host tests: a family described in C++ (ktune::FamilyBuilder) is the family its family file
// describes: same checks, same parameters, same template hash; its errors name the family and
// the key; it compiles with NVRTC for sm_90 without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "families/file_family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "ktune/family_builder.hpp"
#include "platform/nvrtc.hpp"
#include "temp_dir.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(KTUNE_SOURCE_DIR) + "/examples/transpose";

// examples/transpose/transpose.family.toml, written in C++.
FamilyBuilder transpose_in_code(const std::string& name, const std::string& source) {
  FamilyBuilder b(name);
  b.description("tiled out-of-place matrix transpose through shared memory")
      .source_file(source)
      .kernel("transpose<{T}, {TILE}, {ROWS}, {PAD}>")
      .axis("rows", 1, 1048576, 8192, "rows of the input matrix")
      .axis("cols", 1, 1048576, 8192, "columns of the input matrix")
      .axis("dtype", {"f32", "f64"}, "f32", "element type")
      .derived("T", "dtype == \"f32\" ? \"float\" : \"double\"")
      .parameter("TILE", {16, 32, 64}, "side of the square tile one block moves")
      .parameter("ROWS", {1, 2, 4, 8, 16, 32}, "rows of the tile each thread moves")
      .parameter("PAD", {0, 1}, "1 = one extra column in the shared tile against bank conflicts")
      .constraint("TILE % ROWS == 0", "ROWS must divide TILE")
      .constraint("TILE * (TILE / ROWS) <= device.max_threads_per_block",
                  "the block has more threads than the device allows")
      .constraint("TILE * (TILE + PAD) * sizeof(dtype) <= device.shared_per_block",
                  "the tile does not fit in static shared memory")
      .launch({"cdiv(cols, TILE)", "cdiv(rows, TILE)"}, {"TILE", "TILE / ROWS"})
      .buffer("out", "dtype", "rows * cols", Role::kOut)
      .buffer("in", "dtype", "rows * cols", Role::kIn, Fill::uniform(-1.0, 1.0))
      .scalar("rows", "i32", "rows")
      .scalar("cols", "i32", "cols")
      .reference("transpose_reference<{T}>", {"cdiv(cols, 16)", "cdiv(rows, 16)"}, {"16", "16"},
                 Tolerance::exact())
      .metric("2 * rows * cols * sizeof(dtype)", "GB/s")
      .default_config({{"TILE", 32}, {"ROWS", 8}, {"PAD", 1}})
      .check_problem(ProblemSpec().set("rows", 1000).set("cols", 777).set("dtype", "f64"))
      .tune_problem(ProblemSpec().set("rows", 8192).set("cols", 8192).set("dtype", "f32"));
  return b;
}

TEST(FamilyBuilder, TheExampleInCodeIsTheExampleFile) {
  add_family(transpose_in_code("transpose", kExample + "/transpose.cuh"));
  const Family& built = find_family("transpose");
  auto file = load_family_file(kExample + "/transpose.family.toml");
  // The same kernel and parameters under the same name: the same hash, so the same results.
  EXPECT_EQ(built.template_hash(), file->template_hash());
  EXPECT_NE(built.origin(), file->origin());
  ASSERT_EQ(built.params().size(), file->params().size());
  for (std::size_t i = 0; i < built.params().size(); ++i) {
    EXPECT_EQ(built.params()[i].name, file->params()[i].name);
    EXPECT_EQ(built.params()[i].values, file->params()[i].values);
  }
  const Problem p = built.parse_problem("cols=777;dtype=f64;rows=1000");
  const DeviceLimits limits = DeviceLimits::for_arch(9, 0);
  EXPECT_EQ(built.reject({{"TILE", 16}, {"ROWS", 32}, {"PAD", 0}}, p, limits),
            "ROWS must divide TILE");
  EXPECT_EQ(built.reject({{"TILE", 64}, {"ROWS", 1}, {"PAD", 1}}, p, limits),
            "the block has more threads than the device allows");  // 64 x 64 threads
  EXPECT_EQ(built.reject({{"TILE", 64}, {"ROWS", 8}, {"PAD", 1}}, p, limits), "");
  EXPECT_EQ(built.name_expressions({{"TILE", 32}, {"ROWS", 8}, {"PAD", 1}}, p),
            file->name_expressions({{"TILE", 32}, {"ROWS", 8}, {"PAD", 1}}, p));
  EXPECT_EQ(built.check_problems().front().key(), "cols=777;dtype=f64;rows=1000");
}

TEST(FamilyBuilder, ItsFamilyFileReadsBackToTheSameFamily) {
  testing::TempDir dir;
  fs::copy_file(kExample + "/transpose.cuh", dir.file("transpose.cuh"));
  const FamilyBuilder b = transpose_in_code("transpose", dir.file("transpose.cuh"));
  std::ofstream(dir.file("transpose.family.toml")) << b.family_file();
  auto reread = load_family_file(dir.file("transpose.family.toml"));
  auto original = load_family_file(kExample + "/transpose.family.toml");
  EXPECT_EQ(reread->template_hash(), original->template_hash());
  EXPECT_EQ(reread->name(), "transpose");
}

TEST(FamilyBuilder, ASourceInMemoryCompilesForSm90WithoutAGpu) {
  FamilyBuilder b("scale_in_memory");
  b.source_text("scale.cuh", R"cuda(
template <int BLOCK, typename T>
__global__ void scale(T* out, const T* in, unsigned long long n, T a) {
  unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = a * in[i];
}
template <typename T>
__global__ void scale_reference(T* out, const T* in, unsigned long long n, T a) {
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    out[i] = a * in[i];
}
)cuda")
      .kernel("scale<{BLOCK}, float>")
      .axis("n", 1, 1 << 30, 1 << 20, "elements")
      .parameter("BLOCK", {128, 256, 512, 1024, 2048}, "threads per block")
      .constraint("BLOCK <= device.max_threads_per_block", "too many threads per block")
      .launch({"cdiv(n, BLOCK)"}, {"BLOCK"})
      .buffer("out", "f32", "n", Role::kOut)
      .buffer("in", "f32", "n", Role::kIn)
      .scalar("n", "u64", "n")
      .scalar("a", "f32", "3")
      .reference("scale_reference<float>", {"min(cdiv(n, 256), 4096)"}, {"256"},
                 Tolerance::within_ulps(0))
      .metric("8 * n", "GB/s")
      .default_config({{"BLOCK", 256}});
  add_family(b);
  const Family& f = find_family("scale_in_memory");
  const Problem p = f.parse_problem("n=1000");
  EXPECT_EQ(f.reject({{"BLOCK", 2048}}, p, DeviceLimits::for_arch(9, 0)),
            "too many threads per block");
  const CompileResult c = compile(f.compile_request({{"BLOCK", 512}}, p, "sm_90"));
  EXPECT_FALSE(c.cubin.empty());
  ASSERT_EQ(c.lowered_names.size(), 1u);
  EXPECT_NE(c.lowered_names[0].find("scale"), std::string::npos);
}

void expect_refused(const FamilyBuilder& b, const std::string& says) {
  try {
    add_family(b);
    ADD_FAILURE() << "accepted; expected: " << says;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(FamilyBuilder)"), std::string::npos) << e.what();
  }
}

TEST(FamilyBuilder, AWrongFamilyIsRefusedNamingTheFamilyAndThePart) {
  const std::string src = kExample + "/transpose.cuh";
  expect_refused(transpose_in_code("t1", src).constraint("TILE % ROWZ == 0", "typo"),
                 "'ROWZ' is not a parameter, problem axis or derived value");
  expect_refused(transpose_in_code("t2", src).parameter("EMPTY", {}, "no values"),
                 "key 'parameter.EMPTY.values': lists no value");
  expect_refused(transpose_in_code("t3", src).default_config({{"TILE", 32}, {"ROWS", 3}, {"PAD", 1}}),
                 "key 'default.ROWS': 3 is not one of its values");
  expect_refused(transpose_in_code("gemm", src), "is a built-in family's");
  expect_refused(FamilyBuilder("t4").kernel("k"), "no source");
  // Text that TOML would misread arrives intact: quotes, backslashes, newlines in help.
  FamilyBuilder odd = transpose_in_code("t5", src);
  odd.parameter("X", {1}, "a \"quoted\" help \\ with\na newline")
      .default_config({{"TILE", 32}, {"ROWS", 8}, {"PAD", 1}, {"X", 1}});
  EXPECT_NO_THROW(add_family(odd));
  const Family& f = find_family("t5");
  EXPECT_EQ(f.params().back().help, "a \"quoted\" help \\ with\na newline");
  // The same name twice: the first stays.
  expect_refused(transpose_in_code("t5", src), "already defined");
}

}  // namespace
}  // namespace ktune
