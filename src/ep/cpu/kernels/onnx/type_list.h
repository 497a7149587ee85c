// Element-type lists for kernels: one list gives both the dtypes a KernelDef advertises and the
// C++ types its compute() dispatches over, so the two cannot drift apart.
#pragma once

#include <type_traits>
#include <vector>

#include "core/dtype.h"

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

}  // namespace onnxllm
