// Specific checks for ops whose values no reference can predict: empty (shape, dtype, device
// only) and the Philox-driven rand, randn, randint and dropout (range, moments, determinism in
// seed and offset). The coverage test lists these ops as covered here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "reference.h"

namespace conformance::cases_random {
namespace {

using ember::kFloat32;
using ember::kFloat64;
using ember::kInt64;

// The op these checks are for, or null: not registered (said once), or not among the ops
// EMBER_CONFORMANCE_OPS selects (tools/op_table.sh runs one op per process, and a random op's
// checks must not pass or fail in every other op's line).
const ember::OpDef* find_or_report(const char* name) {
  if (!op_selected(name)) return nullptr;
  const ember::OpDef* op = ember::registry().find(name);
  if (op == nullptr) MESSAGE("op '" << name << "' is not registered yet; its specific checks were not run");
  return op;
}

Attrs random_attrs(const Dims& sizes, DType dtype, Device device, int64_t seed, int64_t offset) {
  return Attrs{{"sizes", sizes}, {"dtype", dtype}, {"device", device}, {"seed", seed}, {"offset", offset}};
}

RefTensor draw(const ember::OpDef& op, const Attrs& attrs) { return to_reference(run_op(op, {}, attrs)[0]); }

double variance_of(const std::vector<double>& values) {
  const double mean = mean_of(values);
  double squares = 0.0;
  for (double value : values) squares += (value - mean) * (value - mean);
  return squares / static_cast<double>(values.size());
}

TEST_CASE("conformance: empty allocates the requested shape, dtype and device") {
  const ember::OpDef* op = find_or_report("empty");
  if (op == nullptr) return;
  for (Device device : test_devices()) {
    for (DType dtype : {kFloat32, kFloat64, ember::kBFloat16, kInt64, ember::kBool}) {
      for (const Dims& sizes : {Dims{3, 4}, Dims{}, Dims{0, 5}}) {
        const Tensor out = run_op(*op, {}, {{"sizes", sizes}, {"dtype", dtype}, {"device", device}})[0];
        CHECK(out.sizes() == sizes);
        CHECK(out.dtype() == dtype);
        CHECK(out.device() == device);
        CHECK(out.is_contiguous());
      }
    }
  }
}

TEST_CASE("conformance: rand is uniform between 0 and 1 and a pure function of seed and offset") {
  const ember::OpDef* op = find_or_report("rand");
  if (op == nullptr) return;
  for (Device device : test_devices()) {
    for (DType dtype : {kFloat32, kFloat64, ember::kBFloat16, ember::kFloat16}) {
      INFO("rand " << ember::dtype_name(dtype) << " on " << device.str());
      const RefTensor values = draw(*op, random_attrs({64, 128}, dtype, device, 7, 0));
      CHECK(values.dtype == dtype);
      // 1.0 is excluded in every dtype, also where rounding to 16 bits could reach it.
      CHECK(std::all_of(values.values.begin(), values.values.end(), [](double v) { return v >= 0.0 && v < 1.0; }));
      // 8192 draws: the mean's standard error is 0.0032, the variance's about 0.0009.
      CHECK(mean_of(values.values) == doctest::Approx(0.5).epsilon(0.03));
      CHECK(variance_of(values.values) == doctest::Approx(1.0 / 12.0).epsilon(0.05));
      CHECK(draw(*op, random_attrs({64, 128}, dtype, device, 7, 0)).values == values.values);
      CHECK(draw(*op, random_attrs({64, 128}, dtype, device, 7, 1 << 20)).values != values.values);
      CHECK(draw(*op, random_attrs({64, 128}, dtype, device, 8, 0)).values != values.values);
    }
    CHECK(draw(*op, random_attrs({0, 3}, kFloat32, device, 7, 0)).sizes == Dims{0, 3});
    CHECK(draw(*op, random_attrs({}, kFloat32, device, 7, 0)).numel() == 1);
  }
}

TEST_CASE("conformance: randn has mean 0 and variance 1 and is a pure function of seed and offset") {
  const ember::OpDef* op = find_or_report("randn");
  if (op == nullptr) return;
  for (Device device : test_devices()) {
    for (DType dtype : {kFloat32, kFloat64, ember::kBFloat16}) {
      INFO("randn " << ember::dtype_name(dtype) << " on " << device.str());
      const RefTensor values = draw(*op, random_attrs({16384}, dtype, device, 11, 4096));
      CHECK(values.dtype == dtype);
      CHECK(std::all_of(values.values.begin(), values.values.end(), [](double v) { return std::isfinite(v); }));
      // 16384 draws: standard errors 0.008 (mean) and 0.011 (variance); bounds are 5 sigma.
      CHECK(std::abs(mean_of(values.values)) < 0.04);
      CHECK(variance_of(values.values) == doctest::Approx(1.0).epsilon(0.06));
      CHECK(draw(*op, random_attrs({16384}, dtype, device, 11, 4096)).values == values.values);
      CHECK(draw(*op, random_attrs({16384}, dtype, device, 11, 0)).values != values.values);
    }
  }
}

TEST_CASE("conformance: randint draws every value from low to high - 1 and nothing else") {
  const ember::OpDef* op = find_or_report("randint");
  if (op == nullptr) return;
  for (Device device : test_devices()) {
    for (DType dtype : {kInt64, ember::kInt32, kFloat32}) {
      INFO("randint " << ember::dtype_name(dtype) << " on " << device.str());
      Attrs attrs = random_attrs({2000}, dtype, device, 5, 0);
      attrs.set("low", int64_t{-3});
      attrs.set("high", int64_t{4});
      const RefTensor values = draw(*op, attrs);
      CHECK(values.dtype == dtype);
      std::vector<int64_t> counts(7, 0);
      bool in_range = true;
      for (double value : values.values) {
        in_range = in_range && value >= -3 && value < 4 && value == std::floor(value);
        if (in_range) ++counts[static_cast<size_t>(value + 3)];
      }
      CHECK(in_range);
      // About 286 of each value expected; 200 is more than 5 sigma below.
      CHECK(std::all_of(counts.begin(), counts.end(), [](int64_t count) { return count > 200; }));
      CHECK(draw(*op, attrs).values == values.values);
    }
  }
}

TEST_CASE("conformance: dropout zeroes about p of the elements and scales the rest by 1 / (1 - p)") {
  const ember::OpDef* op = find_or_report("dropout");
  if (op == nullptr) return;
  for (Device device : test_devices()) {
    for (DType dtype : {kFloat32, kFloat64, ember::kBFloat16}) {
      INFO("dropout " << ember::dtype_name(dtype) << " on " << device.str());
      const InputSpec spec{{64, 160}, avoiding({0.0}), Layout::Strided};
      const Tensor input = make_input(spec, dtype, device, 3);
      const double p = 0.3;
      const Attrs attrs{{"p", p}, {"seed", int64_t{42}}, {"offset", int64_t{128}}};
      ember::TensorList outputs = run_op(*op, {input}, attrs);
      const RefTensor x = to_reference(input), y = to_reference(outputs[0]), mask = to_reference(outputs[1]);
      REQUIRE(y.sizes == x.sizes);
      REQUIRE(mask.numel() == x.numel());
      int64_t kept = 0;
      int64_t wrong = 0;
      const Tolerance tolerance = dtype == kFloat64 ? Tolerance{1e-12, 0} : Tolerance{1e-2, 0};
      for (int64_t i = 0; i < x.numel(); ++i) {
        const bool keep = mask.values[i] != 0.0;
        kept += keep;
        const double expected = keep ? x.values[i] / (1.0 - p) : 0.0;
        if (std::abs(y.values[i] - expected) > tolerance.rtol * std::abs(expected)) ++wrong;
      }
      CHECK(wrong == 0);
      // 10240 elements: the kept fraction's standard error is 0.0045.
      CHECK(static_cast<double>(kept) / static_cast<double>(x.numel()) == doctest::Approx(0.7).epsilon(0.035));
      CHECK(to_reference(run_op(*op, {input}, attrs)[0]).values == y.values);
      const Attrs moved{{"p", p}, {"seed", int64_t{42}}, {"offset", int64_t{1 << 20}}};
      CHECK(to_reference(run_op(*op, {input}, moved)[1]).values != mask.values);
    }
  }
}

}  // namespace
}  // namespace conformance::cases_random
