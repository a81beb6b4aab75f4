// The aliasing pattern a compiled entry is guarded on (graph/compile_internal.h): every pair of a
// graph input and an earlier input or a state tensor that share memory, and how they share it.
#include <algorithm>
#include <tuple>

#include "graph/compile_internal.h"
#include "runtime/memory/overlap.h"

namespace ember::graph {

namespace {

// A tensor of the sweep: its storage, the bytes of it it can touch, and its number (a graph input,
// or a state tensor numbered after the inputs).
struct Member {
  const Storage* storage = nullptr;
  ByteExtent bytes;
  int index = 0;
  bool operator<(const Member& other) const {
    return std::tie(storage, bytes.begin, bytes.end, index) <
           std::tie(other.storage, other.bytes.begin, other.bytes.end, other.index);
  }
};

Member member_of(const TensorImpl& impl, int index) {
  return {impl.storage.get(), byte_extent(impl.sizes, impl.strides, impl.offset, impl.dtype), index};
}

bool same_bytes(const TensorImpl& a, const TensorImpl& b) {
  return a.storage == b.storage && a.offset == b.offset && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

}  // namespace

void memory_sharing(const std::vector<Tensor>& inputs, const std::vector<std::shared_ptr<TensorImpl>>& states,
                    std::vector<SharedMemory>& pattern) {
  // Only tensors on one storage can share bytes: the inputs sorted by storage, each state looked up
  // among them, then one sweep per storage in the order of the bytes each tensor starts at, which
  // compares a tensor only with those whose bytes reach past its start. Disjoint parts of one
  // buffer (the gradients a replay installs as slices of one arena) cost O(n log n), not n x n.
  thread_local std::vector<Member> members, state_members;
  thread_local std::vector<size_t> reaching;  // members whose bytes reach past the current start
  members.clear();
  state_members.clear();
  pattern.clear();
  const int count = static_cast<int>(inputs.size());
  for (int i = 0; i < count; ++i)
    if (const TensorImpl& impl = *inputs[i].impl(); impl.storage) members.push_back(member_of(impl, i));
  std::sort(members.begin(), members.end());
  for (size_t k = 0; k < states.size(); ++k) {
    const Storage* storage = states[k]->storage.get();
    const auto found = std::lower_bound(members.begin(), members.end(), storage,
                                        [](const Member& m, const Storage* s) { return m.storage < s; });
    if (storage != nullptr && found != members.end() && found->storage == storage)
      state_members.push_back(member_of(*states[k], count + static_cast<int>(k)));
  }
  members.insert(members.end(), state_members.begin(), state_members.end());
  std::sort(members.begin(), members.end());
  const auto impl_of = [&](int index) -> const std::shared_ptr<TensorImpl>& {
    return index < count ? inputs[index].impl_ptr() : states[index - count];
  };
  const auto relate = [&](const Member& a, const Member& b) {
    const int low = std::min(a.index, b.index), high = std::max(a.index, b.index);
    if (low >= count) return;  // two states: fixed since the capture (Graph::shared_buffers)
    const std::shared_ptr<TensorImpl>& first = impl_of(low);
    const std::shared_ptr<TensorImpl>& second = impl_of(high);
    Sharing how = Sharing::Overlap;
    if (first == second) {
      how = Sharing::Same;
    } else if (same_bytes(*first, *second)) {
      how = Sharing::SameBytes;
    } else if (memory_overlap(Tensor(first), Tensor(second)) == MemoryOverlap::None) {
      return;
    }
    // An input pairs with an earlier input, or with a state.
    pattern.push_back(high < count ? SharedMemory{high, low, how} : SharedMemory{low, high, how});
  };
  reaching.clear();
  for (size_t p = 0; p < members.size(); ++p) {
    const Member& member = members[p];
    if (p > 0 && members[p - 1].storage != member.storage) reaching.clear();
    std::erase_if(reaching, [&](size_t q) { return members[q].bytes.end <= member.bytes.begin; });
    for (const size_t q : reaching) relate(members[q], member);
    if (member.bytes.begin < member.bytes.end) {
      reaching.push_back(p);
      continue;
    }
    // No elements: no bytes to share, but one tensor passed twice is still the same tensor.
    const auto same_place = [&](const Member& other) {
      return other.storage == member.storage && other.bytes.begin == member.bytes.begin &&
             other.bytes.end == member.bytes.end;
    };
    for (size_t q = p; q-- > 0 && same_place(members[q]);) relate(members[q], member);
  }
  std::sort(pattern.begin(), pattern.end());
}

}  // namespace ember::graph
