#include "engine/task.hpp"
#include "kernelskill/abi.h"

#include <catch2/catch.hpp>

#include <cstddef>

TEST_CASE("the ABI's dtype codes equal the engine's and never move", "[abi]") {
  using ks::engine::dtype;
  CHECK(KS_F32 == static_cast<int>(dtype::f32));
  CHECK(KS_F16 == static_cast<int>(dtype::f16));
  CHECK(KS_BF16 == static_cast<int>(dtype::bf16));
  CHECK(KS_F64 == static_cast<int>(dtype::f64));
  CHECK(KS_I32 == static_cast<int>(dtype::i32));
  CHECK(KS_I64 == static_cast<int>(dtype::i64));
  CHECK(KS_U8 == static_cast<int>(dtype::u8));
  // Stored numbers: a change here breaks every persisted result.
  CHECK(KS_F32 == 0);
  CHECK(KS_U8 == 6);
}

TEST_CASE("the ABI's element sizes match the engine's", "[abi]") {
  for (int code = KS_F32; code <= KS_U8; ++code)
    CHECK(ks_dtype_size(code) == ks::engine::size_of(static_cast<ks::engine::dtype>(code)));
  CHECK(ks_dtype_size(99) == 0);
}

TEST_CASE("ks_tensor has the C layout candidates compile against", "[abi]") {
  // void* data; int32 dtype; int32 ndim; int64 shape[8]; int64 stride[8]
  CHECK(offsetof(ks_tensor, dtype) == 8);
  CHECK(offsetof(ks_tensor, ndim) == 12);
  CHECK(offsetof(ks_tensor, shape) == 16);
  CHECK(offsetof(ks_tensor, stride) == 16 + 8 * 8);
  CHECK(sizeof(ks_tensor) == 16 + 16 * 8);
  ks_tensor t{};
  t.ndim = 3;
  t.shape[0] = 2;
  t.shape[1] = 3;
  t.shape[2] = 4;
  CHECK(ks_numel(&t) == 24);
  t.ndim = 0;
  CHECK(ks_numel(&t) == 1);
}
