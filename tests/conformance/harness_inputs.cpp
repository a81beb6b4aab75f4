// Random inputs in chosen memory layouts, float64 host copies of tensors, and output comparison.
// Tensors are assembled directly from storage (no ops), so the harness does not depend on the
// ops it tests.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <random>

#include "harness.h"

namespace conformance {

using ember::TensorImpl;

Domain real(double low, double high) { return {.low = low, .high = high}; }
Domain positive(double low, double high) { return {.low = low, .high = high}; }
Domain avoiding(std::vector<double> points, double low, double high) {
  return {.low = low, .high = high, .avoid = std::move(points)};
}
Domain indices(int64_t low, int64_t high) {
  return {.kind = Domain::Kind::Index, .low = static_cast<double>(low), .high = static_cast<double>(high)};
}
Domain integers(int64_t low, int64_t high) {
  return {.kind = Domain::Kind::Integer, .low = static_cast<double>(low), .high = static_cast<double>(high)};
}
Domain booleans() { return {.kind = Domain::Kind::Boolean}; }
Domain distinct() { return {.kind = Domain::Kind::Distinct}; }
InputSpec undefined_input() { return {.defined = false}; }

Case& with_half(Case& c, double bfloat16_tolerance) {
  c.bfloat16 = Tolerance{bfloat16_tolerance, bfloat16_tolerance};
  c.float16 = Tolerance{bfloat16_tolerance / 4, bfloat16_tolerance / 4};
  return c;
}

std::vector<CaseFamily>& case_families() {
  static std::vector<CaseFamily> families;
  return families;
}

// EMBER_CONFORMANCE_DEVICES=cuda runs the cases on CUDA only (tools/gpu_check.sh's per-op table);
// then a missing GPU is a failure, not a skip.
std::vector<Device> test_devices() {
  const char* only = std::getenv("EMBER_CONFORMANCE_DEVICES");
  const bool cuda_only = only != nullptr && std::string(only) == "cuda";
  std::vector<Device> devices;
  if (!cuda_only) devices.push_back(ember::kCPU);
  std::string why_not;
  if (ember::cuda_is_available(&why_not)) {
    devices.push_back(Device(ember::DeviceType::CUDA, 0));
  } else if (cuda_only) {
    FAIL("EMBER_CONFORMANCE_DEVICES=cuda but CUDA is unavailable: " << why_not);
  } else {
    static const bool reported = [&] {
      MESSAGE("CUDA cases skipped (not counted as passed): " << why_not);
      return true;
    }();
    (void)reported;
  }
  return devices;
}

bool op_selected(const std::string& op) {
  const char* only = std::getenv("EMBER_CONFORMANCE_OPS");
  if (only == nullptr || only[0] == '\0') return true;
  const std::string list = std::string(",") + only + ",";
  return list.find("," + op + ",") != std::string::npos;
}

DType input_dtype(const InputSpec& spec, DType tested) {
  if (spec.dtype) return *spec.dtype;
  if (spec.domain.kind == Domain::Kind::Index) return ember::kInt64;
  if (spec.domain.kind == Domain::Kind::Boolean) return ember::kBool;
  if (spec.statistic && ember::element_size(tested) == 2) return ember::kFloat32;
  return tested;
}

std::vector<double> random_values(const InputSpec& spec, uint64_t seed) {
  std::mt19937_64 generator(seed);
  const Domain& domain = spec.domain;
  const int64_t count = spec.sizes.product();
  std::vector<double> values(static_cast<size_t>(count));
  if (domain.kind == Domain::Kind::Distinct) {
    // Multiples of 1/8 centred on 0, exact in bf16 for up to 512 elements.
    for (int64_t i = 0; i < count; ++i) values[i] = static_cast<double>(i - count / 2) / 8.0;
    std::shuffle(values.begin(), values.end(), generator);
    return values;
  }
  std::uniform_real_distribution<double> uniform(domain.low, domain.high);
  for (double& value : values) {
    switch (domain.kind) {
      case Domain::Kind::Index:
      case Domain::Kind::Integer:
        value = std::floor(domain.low + (domain.high - domain.low) * std::generate_canonical<double, 53>(generator));
        break;
      case Domain::Kind::Boolean: value = (generator() & 1) ? 1.0 : 0.0; break;
      default: {
        auto near_kink = [&](double x) {
          return std::any_of(domain.avoid.begin(), domain.avoid.end(),
                             [&](double point) { return std::abs(x - point) < domain.margin; });
        };
        do value = uniform(generator); while (near_kink(value));
      }
    }
  }
  return values;
}

namespace {

struct Geometry {
  Dims strides;
  int64_t offset = 0;
  int64_t storage_elements = 0;
};

Geometry geometry_of(const Dims& sizes, Layout layout) {
  Geometry geometry{Dims::filled(sizes.size(), 0), 0, 0};
  int64_t running = 1;
  switch (layout) {
    case Layout::Contiguous:
    case Layout::Expanded:
      for (int i = sizes.size() - 1; i >= 0; --i) geometry.strides[i] = running, running *= sizes[i];
      break;
    case Layout::Transposed:
      for (int i = 0; i < sizes.size(); ++i) geometry.strides[i] = running, running *= sizes[i];
      break;
    case Layout::Strided:
      for (int i = sizes.size() - 1; i >= 0; --i) geometry.strides[i] = 2 * running, running *= 2 * sizes[i];
      geometry.offset = 3;
      break;
  }
  if (layout == Layout::Expanded) {
    for (int i = 0; i < sizes.size(); ++i)
      if (sizes[i] > 1) { geometry.strides[i] = 0; break; }
  }
  int64_t last = 0;
  for (int i = 0; i < sizes.size(); ++i) last += (sizes[i] - 1) * geometry.strides[i];
  geometry.storage_elements = geometry.offset + (sizes.product() > 0 ? last + 1 : 0);
  return geometry;
}

// Storage position of the row-major element `flat`.
int64_t position(const Dims& sizes, const Dims& strides, int64_t offset, int64_t flat) {
  int64_t result = offset;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    result += (flat % sizes[i]) * strides[i];
    flat /= sizes[i];
  }
  return result;
}

template <typename T>
void store(T* data, int64_t at, double value) {
  if constexpr (std::is_same_v<T, ember::BFloat16> || std::is_same_v<T, ember::Float16>) {
    data[at] = T(static_cast<float>(value));
  } else {
    data[at] = static_cast<T>(value);
  }
}

}  // namespace

Tensor build_input(const InputSpec& spec, const std::vector<double>& values, DType dtype, Device device) {
  if (!spec.defined) return Tensor();
  const Geometry geometry = geometry_of(spec.sizes, spec.layout);
  Tensor storage = ember::make_tensor({geometry.storage_elements}, dtype, ember::kCPU);
  ember::dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = storage.data_ptr<T>();
    // Skipped storage elements hold NaN (floats) or an invalid index, so wrong reads show.
    const double filler = ember::is_floating(dtype) ? std::numeric_limits<double>::quiet_NaN() : -7777.0;
    for (int64_t i = 0; i < geometry.storage_elements; ++i) store(data, i, dtype == ember::kBool ? 1.0 : filler);
    for (size_t i = 0; i < values.size(); ++i)
      store(data, position(spec.sizes, geometry.strides, geometry.offset, static_cast<int64_t>(i)), values[i]);
  });
  if (!device.is_cpu()) storage = storage.to(device);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage.impl()->storage;
  impl->sizes = spec.sizes;
  impl->strides = geometry.strides;
  impl->offset = geometry.offset;
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

Tensor make_input(const InputSpec& spec, DType dtype, Device device, uint64_t seed) {
  return build_input(spec, random_values(spec, seed), dtype, device);
}

RefTensor to_reference(const Tensor& tensor) {
  if (!tensor.defined()) return RefTensor{.defined = false};
  Tensor host = tensor.device().is_cpu() ? tensor : tensor.to(ember::kCPU);
  RefTensor result{.sizes = host.sizes(), .values = std::vector<double>(static_cast<size_t>(host.numel())),
                   .dtype = host.dtype()};
  ember::dispatch_dtype(host.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* base = static_cast<const T*>(host.impl()->storage->data());
    for (int64_t i = 0; i < host.numel(); ++i) {
      const T& element = base[position(host.sizes(), host.strides(), host.storage_offset(), i)];
      result.values[i] = static_cast<double>(static_cast<ember::compute_t<T>>(element));
    }
  });
  return result;
}

std::string compare(const Tensor& actual, const RefTensor& expected, DType tested, Tolerance tolerance) {
  const DType expected_dtype = expected.dtype.value_or(tested);
  if (!actual.defined()) return "the output is undefined";
  if (actual.dtype() != expected_dtype)
    return fmt::format("dtype is {}, expected {}", actual.dtype(), expected_dtype);
  if (actual.sizes() != expected.sizes)
    return fmt::format("shape is {}, expected {}", actual.sizes(), expected.sizes);
  const RefTensor got = to_reference(actual);
  const bool exact = !ember::is_floating(expected_dtype);
  int64_t mismatches = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.values[i];
    const double e = expected.values[i];
    bool ok;
    if (std::isnan(e)) ok = std::isnan(a);
    else if (std::isinf(e) || exact) ok = a == e;
    else ok = std::abs(a - e) <= tolerance.atol + tolerance.rtol * std::abs(e);  // NaN fails too
    if (!ok && mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return "";
  return fmt::format("{} of {} elements differ; first at flat index {}: got {:.10g}, expected {:.10g} "
                     "(rtol {}, atol {})", mismatches, got.numel(), first, got.values[first],
                     expected.values[first], tolerance.rtol, tolerance.atol);
}

ember::TensorList run_op(const ember::OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  return ember::dispatch(ember::OpCall{op, std::span<const Tensor>(inputs), attrs});
}

}  // namespace conformance
