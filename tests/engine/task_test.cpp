#include "engine/task.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ks::engine;

TEST_CASE("every dtype parses back from its canonical name", "[engine][task]") {
  for (dtype type : all_dtypes) {
    CAPTURE(to_string(type));
    REQUIRE(parse_dtype(to_string(type)) == type);
    REQUIRE(spellings_of(type).front() == std::string_view(to_string(type)));
  }
}

TEST_CASE("the long and torch-style dtype names parse as their short ones", "[engine][task]") {
  CHECK(parse_dtype("float32") == dtype::f32);
  CHECK(parse_dtype("float") == dtype::f32);
  CHECK(parse_dtype("float16") == dtype::f16);
  CHECK(parse_dtype("half") == dtype::f16);
  CHECK(parse_dtype("bfloat16") == dtype::bf16);
  CHECK(parse_dtype("float64") == dtype::f64);
  CHECK(parse_dtype("double") == dtype::f64);
  CHECK(parse_dtype("int32") == dtype::i32);
  CHECK(parse_dtype("int64") == dtype::i64);
  CHECK(parse_dtype("uint8") == dtype::u8);
  CHECK(parse_dtype("bool") == dtype::u8);
}

TEST_CASE("an unknown or differently cased dtype does not parse", "[engine][task]") {
  CHECK_FALSE(parse_dtype("f8").has_value());
  CHECK_FALSE(parse_dtype("F32").has_value());
  CHECK_FALSE(parse_dtype("").has_value());
  CHECK_FALSE(parse_dtype("tf32").has_value());
}

TEST_CASE("dtype numbers equal the ABI's codes", "[engine][task]") {
  CHECK(static_cast<int>(dtype::f32) == 0);
  CHECK(static_cast<int>(dtype::f16) == 1);
  CHECK(static_cast<int>(dtype::bf16) == 2);
  CHECK(static_cast<int>(dtype::f64) == 3);
  CHECK(static_cast<int>(dtype::i32) == 4);
  CHECK(static_cast<int>(dtype::i64) == 5);
  CHECK(static_cast<int>(dtype::u8) == 6);
}

TEST_CASE("dtype sizes and floating-ness match their C types", "[engine][task]") {
  CHECK(size_of(dtype::f32) == 4);
  CHECK(size_of(dtype::f16) == 2);
  CHECK(size_of(dtype::bf16) == 2);
  CHECK(size_of(dtype::f64) == 8);
  CHECK(size_of(dtype::i32) == 4);
  CHECK(size_of(dtype::i64) == 8);
  CHECK(size_of(dtype::u8) == 1);
  CHECK(is_floating(dtype::f32));
  CHECK(is_floating(dtype::f16));
  CHECK(is_floating(dtype::bf16));
  CHECK(is_floating(dtype::f64));
  CHECK_FALSE(is_floating(dtype::i32));
  CHECK_FALSE(is_floating(dtype::i64));
  CHECK_FALSE(is_floating(dtype::u8));
}

TEST_CASE("every init kind round-trips through its manifest spelling", "[engine][task]") {
  for (init_kind kind : all_init_kinds) {
    CAPTURE(to_string(kind));
    REQUIRE(parse_init_kind(to_string(kind)) == kind);
  }
  CHECK(std::string(to_string(init_kind::uniform01)) == "uniform01");
  CHECK(std::string(to_string(init_kind::randint)) == "randint");
  CHECK_FALSE(parse_init_kind("gaussian").has_value());
  CHECK_FALSE(parse_init_kind("Normal").has_value());
}

TEST_CASE("a tensor's numel is the product of its shape and a scalar's is 1", "[engine][task]") {
  tensor_spec matrix{.name = "x", .type = dtype::f16, .shape = {4096, 16384}};
  CHECK(matrix.numel() == int64_t{4096} * 16384);
  CHECK(matrix.bytes() == int64_t{4096} * 16384 * 2);

  tensor_spec big{.name = "y", .type = dtype::f64, .shape = {65536, 65536, 4}};
  CHECK(big.numel() == int64_t{65536} * 65536 * 4);
  CHECK(big.bytes() == int64_t{65536} * 65536 * 4 * 8);

  tensor_spec scalar{.name = "s", .type = dtype::i32, .shape = {}};
  CHECK(scalar.numel() == 1);
  CHECK(scalar.bytes() == 4);
}

TEST_CASE("default tolerances tighten with the precision of the dtype", "[engine][task]") {
  tolerance f32 = default_tolerance(dtype::f32);
  CHECK(f32.atol == 1e-5);
  CHECK(f32.rtol == 1e-5);
  CHECK(f32.norm_rel == 1e-5);

  tolerance f16 = default_tolerance(dtype::f16);
  CHECK(f16.atol == 1e-3);
  CHECK(f16.rtol == 1e-3);
  CHECK(f16.norm_rel == 1e-3);

  tolerance bf16 = default_tolerance(dtype::bf16);
  CHECK(bf16.atol == 1e-2);
  CHECK(bf16.rtol == 1e-2);
  CHECK(bf16.norm_rel == 1e-2);

  tolerance f64 = default_tolerance(dtype::f64);
  CHECK(f64.atol == 1e-10);
  CHECK(f64.rtol == 1e-10);
  CHECK(f64.norm_rel == 1e-12);
}

TEST_CASE("integer outputs must match the reference exactly", "[engine][task]") {
  for (dtype type : {dtype::i32, dtype::i64, dtype::u8}) {
    CAPTURE(to_string(type));
    tolerance tol = default_tolerance(type);
    CHECK(tol.atol == 0);
    CHECK(tol.rtol == 0);
    CHECK(tol.norm_rel == 0);
  }
}

TEST_CASE("the roofline floor is the larger of the memory and the compute time", "[engine][task]") {
  // 3.35e12 B/s moves 3.35e9 bytes in 1 ms; 6.7e13 FLOP/s does 6.7e10 flops in 1 ms.
  task_cost memory_bound{.flops = 6.7e9, .bytes = 3.35e9};
  CHECK(roofline_floor_ms(memory_bound, 3350, 67000) == Approx(1.0));

  task_cost compute_bound{.flops = 1.34e11, .bytes = 3.35e8};
  CHECK(roofline_floor_ms(compute_bound, 3350, 67000) == Approx(2.0));
}

TEST_CASE("an unknown peak leaves its term out of the roofline floor", "[engine][task]") {
  task_cost cost{.flops = 1.34e11, .bytes = 3.35e9};
  CHECK(roofline_floor_ms(cost, 0, 67000) == Approx(2.0));
  CHECK(roofline_floor_ms(cost, 3350, -1) == Approx(1.0));
  CHECK(roofline_floor_ms(cost, 0, 0) == 0.0);
}
