// Element-type lists for kernels: one list gives both the dtypes a KernelDef advertises and the
// C++ types its compute() dispatches over, so the two cannot drift apart.
#pragma once

#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/fast_math.h"

namespace onnxllm {

template <typename... Ts>
struct TypeList {
  static std::vector<DType> dtypes() { return {kDTypeOf<Ts>...}; }
  static bool contains(DType t) { return dtype_is_one_of<Ts...>(t); }
  // Calls fn.template operator()<T>() for the C++ type of t; false when t is not in the list.
  template <typename Fn>
  static bool dispatch(DType t, Fn&& fn) {
    return dispatch_dtype<Ts...>(t, fn);
  }
};

using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using SignedTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t>;
using NumericTypes = TypeList<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t,
                              int64_t, uint64_t>;
using AllTypes = TypeList<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t,
                          int64_t, uint64_t, bool>;

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T is done in: float for the 16-bit floats, T itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<kIsHalf<T>, float, T>;

// x as ComputeType<T>, and back to T: the 16-bit floats through core/fast_math's branch-free
// conversions (the values of Float16's and BFloat16's own, which do not vectorize), anything else
// as it is. Always inlined, so loops in per-ISA functions vectorize them with their instructions.
template <typename T>
[[gnu::always_inline]] inline ComputeType<T> to_compute(T x) {
  if constexpr (kIsHalf<T>)
    return to_float_fast(x);
  else
    return x;
}
template <typename T>
[[gnu::always_inline]] inline T from_compute(ComputeType<T> x) {
  if constexpr (kIsHalf<T>)
    return from_float_fast<T>(x);
  else
    return static_cast<T>(x);
}

}  // namespace onnxllm
