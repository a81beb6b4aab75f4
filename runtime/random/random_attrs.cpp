// reserve_random_attrs: the generator range of one random op call, re-reserved per replay; and
// randint's bounds check.
#include "runtime/random/random_attrs.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "runtime/error.h"
#include "runtime/random/generator.h"

namespace ember {

namespace {

void set_range(Attrs& attrs, Device device, uint64_t words) {
  const GeneratorState at = default_generator(device).reserve(words);
  attrs.set("seed", static_cast<int64_t>(at.seed));
  attrs.set("offset", static_cast<int64_t>(at.offset));
}

// The integers `dtype` holds exactly.
std::pair<int64_t, int64_t> exact_integers(DType dtype) {
  switch (dtype) {
    case kBool: return {0, 1};
    case kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case kInt64: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    case kFloat32: return {-(int64_t{1} << 24), int64_t{1} << 24};
    case kFloat64: return {-(int64_t{1} << 53), int64_t{1} << 53};
    case kBFloat16: return {-(int64_t{1} << 8), int64_t{1} << 8};
    case kFloat16: return {-(int64_t{1} << 11), int64_t{1} << 11};
  }
  return {0, 0};
}

}  // namespace

void check_randint_range(int64_t low, int64_t high, DType dtype) {
  check(low < high, "randint: low ({}) must be less than high ({})", low, high);
  const auto [least, most] = exact_integers(dtype);
  check(low >= least && high - 1 <= most,
        "randint: [low, high) = [{}, {}) does not fit {}, which holds the integers of [{}, {}] exactly", low, high,
        dtype, least, most);
}

void reserve_random_attrs(Attrs& attrs, Device device, uint64_t words) {
  set_range(attrs, device, words);
  // Must stay the last step before the op is dispatched: the mode takes the refresh with it.
  if (dispatch_mode_active()) [[unlikely]]
    set_next_attr_refresh([device, words](Attrs& replayed) { set_range(replayed, device, words); });
}

}  // namespace ember
