// reserve_random_attrs: the generator range of one random op call, re-reserved per replay.
#include "runtime/random/random_attrs.h"

#include "runtime/random/generator.h"

namespace ember {

namespace {

void set_range(Attrs& attrs, Device device, uint64_t words) {
  const GeneratorState at = default_generator(device).reserve(words);
  attrs.set("seed", static_cast<int64_t>(at.seed));
  attrs.set("offset", static_cast<int64_t>(at.offset));
}

}  // namespace

void reserve_random_attrs(Attrs& attrs, Device device, uint64_t words) {
  set_range(attrs, device, words);
  // Must stay the last step before the op is dispatched: the mode takes the refresh with it.
  if (dispatch_mode_active()) [[unlikely]]
    set_next_attr_refresh([device, words](Attrs& replayed) { set_range(replayed, device, words); });
}

}  // namespace ember
