// cuBLAS for the bench anchors is loaded on first use, not linked (bench/cublas_dyn.hpp): every
// function the anchors call is in this toolkit's libraries, and a ktune command that does not
// benchmark GEMM does not load them.
#include <gtest/gtest.h>

#include <string>

#include "bench/cublas_dyn.hpp"
#include "run_cli.hpp"

namespace {

using ktune::cublas_dyn::Library;

TEST(CublasDyn, EveryFunctionTheAnchorsCallResolves) {
  const auto functions = ktune::cublas_dyn::functions();
  EXPECT_GE(functions.size(), 27u);
  int lt = 0;
  for (const auto& f : functions) {
    EXPECT_NE(ktune::cublas_dyn::symbol(f.lib, f.name), nullptr) << f.name;
    lt += f.lib == Library::kCublasLt;
  }
  EXPECT_GT(lt, 0);
  // A name the library lacks is an error naming it, not a null pointer.
  try {
    ktune::cublas_dyn::symbol(Library::kCublas, "cublasNoSuchFunction");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cublasNoSuchFunction"), std::string::npos) << e.what();
  }
}

TEST(CublasDyn, TheCommandStartsWithoutLoadingCublas) {
  // The dynamic loader's trace (glibc) names every library it loads.
  auto r = ktune::testing::run_cli({"--version"}, "LD_DEBUG=libs");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("libnvrtc"), std::string::npos) << "no loader trace:\n" << r.err;
  EXPECT_EQ(r.err.find("libcublas"), std::string::npos) << r.err;
}

}  // namespace
