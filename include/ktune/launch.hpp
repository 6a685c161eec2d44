// What Runtime::launch takes: a family's problem by its axes, and the kernel's arguments.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

namespace ktune {

// A problem of a family, by the axes its family file declares:
//   ktune::ProblemSpec().set("rows", 8192).set("cols", 4096).set("dtype", "f32")
// Axes not set take the values of the family's first tuning problem; the family checks the rest.
class ProblemSpec {
 public:
  ProblemSpec& set(const std::string& axis, std::int64_t value) {
    sizes_[axis] = value;
    return *this;
  }
  ProblemSpec& set(const std::string& axis, std::string value) {
    attrs_[axis] = std::move(value);
    return *this;
  }
  ProblemSpec& set(const std::string& axis, const char* value) {
    return set(axis, std::string(value));
  }
  const std::map<std::string, std::int64_t>& sizes() const { return sizes_; }
  const std::map<std::string, std::string>& attrs() const { return attrs_; }

 private:
  std::map<std::string, std::int64_t> sizes_;
  std::map<std::string, std::string> attrs_;
};

// One kernel argument: a device pointer for a buffer, a number for a scalar (converted to the
// type the family file declares, range-checked).
class Arg {
 public:
  enum class Kind { kPointer, kInteger, kReal };
  Arg(const void* pointer) : kind_(Kind::kPointer), pointer_(pointer) {}  // NOLINT: implicit
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Arg(T value)  // NOLINT: implicit
      : kind_(Kind::kInteger),
        integer_(static_cast<std::int64_t>(value)),
        unsigned_overflow_(std::is_unsigned_v<T> && sizeof(T) == 8 &&
                           static_cast<std::uint64_t>(value) > 0x7fffffffffffffffull) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Arg(T value) : kind_(Kind::kReal), real_(static_cast<double>(value)) {}  // NOLINT: implicit

  Kind kind() const { return kind_; }
  const void* pointer() const { return pointer_; }
  std::int64_t integer() const { return integer_; }
  double real() const { return real_; }
  // An unsigned 64-bit value above INT64_MAX (no scalar type but u64 takes it).
  bool unsigned_overflow() const { return unsigned_overflow_; }

 private:
  Kind kind_;
  const void* pointer_ = nullptr;
  std::int64_t integer_ = 0;
  double real_ = 0;
  bool unsigned_overflow_ = false;
};

}  // namespace ktune
