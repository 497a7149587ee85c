// Element types. Values equal ONNX TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/float16.h"

namespace onnxllm {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Bytes per element; 0 for kUndefined and kString (not a numeric type).
size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// True when t is a known numeric or bool element type.
bool dtype_is_known(DType t);
bool dtype_is_float(DType t);  // float32/16/64, bfloat16
// Parses names such as "float32", "float", "int64", "bool" (as printed by dtype_name). kUndefined if unknown.
DType dtype_from_name(std::string_view name);

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

template <typename T> inline constexpr DType kDTypeOf = DTypeOf<T>::value;

// True when t is the dtype of one of Ts.
template <typename... Ts>
constexpr bool dtype_is_one_of(DType t) {
  return ((t == kDTypeOf<Ts>) || ...);
}

// Calls fn.template operator()<T>() with T the C++ type of t; returns false when t is not one of
// the types in Ts. Usage: dispatch_dtype<float, int64_t>(t, [&]<typename T>() { ... });
template <typename... Ts, typename Fn>
bool dispatch_dtype(DType t, Fn&& fn) {
  return ((t == kDTypeOf<Ts> ? (fn.template operator()<Ts>(), true) : false) || ...);
}

}  // namespace onnxllm
