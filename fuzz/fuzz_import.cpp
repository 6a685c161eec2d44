// libFuzzer target: JSON import. Every document is either parsed and checked entry by entry or
// rejected with ktune::Error naming the entry and field; nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <string>

#include "db/exchange.hpp"
#include "ktune/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ktune::parse_results(text, "fuzz input");
  } catch (const ktune::Error&) {
    // Rejected with a clear message: the expected answer to bad input.
  }
  return 0;
}
