// In-place ops refuse what PyTorch refuses: another input that shares part of the written
// tensor's memory, or a written tensor whose elements share addresses. The answer would depend
// on the order the kernel visits elements (on a GPU, no order at all); fill_ and zero_, which
// write one value everywhere, are the exception, as in PyTorch.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"
#include "runtime/memory/overlap.h"

namespace test_inplace_overlap {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.dtype = kFloat32, .device = kCPU};

Tensor counting(int64_t count) { return arange(0.0, static_cast<double>(count), 1.0, kOnCpu); }

}  // namespace

TEST_CASE("memory_overlap tells full, partial, none and too-hard overlaps apart") {
  const Tensor a = counting(12);
  const Tensor grid = a.view({3, 4});
  CHECK(memory_overlap(a, a) == MemoryOverlap::Full);
  CHECK(memory_overlap(a.slice(0, 0, 6), a.slice(0, 0, 6)) == MemoryOverlap::Full);  // two views, same layout
  CHECK(memory_overlap(a.slice(0, 0, 6), a.slice(0, 3, 9)) == MemoryOverlap::Partial);
  CHECK(memory_overlap(a.slice(0, 0, 6), a.slice(0, 6, 12)) == MemoryOverlap::None);
  CHECK(memory_overlap(a, counting(12)) == MemoryOverlap::None);                    // another storage
  CHECK(memory_overlap(grid.slice(0, 0, 2).t(), grid.slice(0, 1, 3)) == MemoryOverlap::Partial);  // dense either way
  CHECK(memory_overlap(a.view({2, 6}), a.view({6, 2}).t()) == MemoryOverlap::Partial);  // same bytes, other layout
  CHECK(memory_overlap(a.slice(0, 0, 12, 2), a.slice(0, 1, 12, 2)) == MemoryOverlap::TooHard);  // gaps
  CHECK(memory_overlap(a.slice(0, 0, 0), a) == MemoryOverlap::None);
  CHECK(has_internal_overlap(counting(4).view({1, 4}).expand({3, 4})));
  CHECK_FALSE(has_internal_overlap(grid.t()));
}

TEST_CASE("in-place ops refuse partly overlapping inputs and written tensors with repeated elements") {
  Tensor a = counting(10);
  CHECK_THROWS_WITH_AS(a.slice(0, 1, 10).add_(a.slice(0, 0, 9)),
                       doctest::Contains("add_: input 1 (shape [9], strides [1]) partly overlaps input 0 (shape [9], "
                                         "strides [1]), which is written in place; clone() it first"),
                       Error);
  CHECK_THROWS_WITH_AS(a.slice(0, 0, 5).copy_(a.slice(0, 2, 7)), doctest::Contains("copy_: input 1"), Error);
  Tensor square = counting(4).view({2, 2});
  CHECK_THROWS_WITH_AS(square.add_(square.t()), doctest::Contains("partly overlaps"), Error);
  Tensor row = counting(4).view({1, 4});
  Tensor expanded = row.expand({3, 4});
  CHECK_THROWS_WITH_AS(expanded.mul_(2.0), doctest::Contains("mul_scalar_: input 0 (shape [3, 4], strides [0, 1]) "
                                                             "is written in place but several of its elements"),
                       Error);
  // Nothing was written by the refused calls.
  CHECK(a.to_vector<float>() == counting(10).to_vector<float>());
  CHECK(row.to_vector<float>() == std::vector<float>{0, 1, 2, 3});

  // The same tensor, or the same elements through two views, is well defined, as are disjoint
  // parts of one storage and (as in PyTorch) interleaved ones whose overlap is not decided.
  a.add_(a);
  CHECK(a.to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18});
  a.slice(0, 0, 5).add_(a.slice(0, 0, 5));
  a.slice(0, 0, 5).add_(a.slice(0, 5, 10));
  CHECK(a.to_vector<float>() == std::vector<float>{10, 16, 22, 28, 34, 10, 12, 14, 16, 18});
  a.slice(0, 0, 10, 2).add_(a.slice(0, 1, 10, 2));
  CHECK(a.to_vector<float>() == std::vector<float>{26, 16, 50, 28, 44, 10, 26, 14, 34, 18});
}

TEST_CASE("fill_ and zero_ write an expanded tensor, as PyTorch's fill_ does: one value, in any order") {
  Tensor row = counting(4).view({1, 4});
  Tensor expanded = row.expand({3, 4});
  CHECK(expanded.fill_(7.0).is_same(expanded));
  CHECK(row.to_vector<float>() == std::vector<float>{7, 7, 7, 7});
  CHECK(expanded.to_vector<float>() == std::vector<float>(12, 7.0f));
  expanded.zero_();
  CHECK(row.to_vector<float>() == std::vector<float>{0, 0, 0, 0});

  // Repeats in the middle, over a strided view: only the viewed elements change.
  Tensor grid = counting(8).view({2, 4});
  grid.slice(1, 1, 3).unsqueeze(1).expand({2, 3, 2}).fill_(-2.5);
  CHECK(grid.to_vector<float>() == std::vector<float>{0, -2.5, -2.5, 3, 4, -2.5, -2.5, 7});
  Tensor integers = arange(0.0, 6.0, 1.0, {.dtype = kInt64}).view({2, 1, 3});
  integers.expand({2, 5, 3}).fill_(-9.0);
  CHECK(integers.to_vector<int64_t>() == std::vector<int64_t>(6, -9));
  Tensor halves = counting(3).to(kBFloat16).view({3, 1});
  halves.expand({3, 4}).zero_();
  CHECK(halves.to(kFloat64).to_vector<double>() == std::vector<double>{0, 0, 0});

  // Other in-place ops still refuse it, and zero_'s errors name zero_.
  CHECK_THROWS_WITH_AS(expanded.add_(ones({3, 4})), doctest::Contains("add_: input 0 (shape [3, 4], strides [0, 1])"),
                       Error);
  Tensor leaf = counting(3).requires_grad_();
  CHECK_THROWS_WITH_AS(leaf.zero_(), doctest::Contains("zero_: a leaf tensor that requires grad (shape [3])"), Error);
  CHECK_THROWS_WITH_AS(leaf.zero_(), doctest::Contains("test_inplace_overlap.cpp"), Error);
  CHECK(leaf.to_vector<float>() == std::vector<float>{0, 1, 2});
}

TEST_CASE("fill_ of an expanded view while recording: the overwritten elements get no gradient") {
  Tensor weight = arange(1.0, 9.0, 1.0, kOnCpu).view({2, 4}).requires_grad_();
  Tensor scaled = mul(weight, 3.0);
  scaled.slice(0, 0, 1).expand({5, 4}).fill_(0.5);
  scaled.select(1, 3).unsqueeze(0).expand({2, 2}).zero_();  // repeats of a strided view
  CHECK(scaled.to_vector<float>() == std::vector<float>{0.5, 0.5, 0.5, 0, 15, 18, 21, 0});
  // loss = sum(scaled^2): d/dweight = 2 * scaled * 3 where weight still reaches scaled, else 0.
  sum(mul(scaled, scaled)).backward();
  CHECK(weight.grad().to_vector<float>() == std::vector<float>{0, 0, 0, 0, 90, 108, 126, 0});
}

}  // namespace test_inplace_overlap
