// nn::Flatten and nn::Unflatten: their dims checked against the input, naming the module.
#include "runtime/nn/modules/flatten.h"

#include <algorithm>

#include "runtime/functional.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

// A dim counted from the end when negative; a 0-d input takes 0 and -1, as PyTorch's dim wrapping.
bool dim_in_range(int64_t dim, int rank) {
  const int64_t bound = std::max(rank, 1);
  return dim >= -bound && dim < bound;
}
int64_t wrapped(int64_t dim, int rank) { return dim < 0 ? dim + std::max(rank, 1) : dim; }

}  // namespace

Tensor FlattenImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  const auto [start, end] = options_;
  const int rank = input.dim();
  for (const int64_t dim : {start, end})
    check(dim_in_range(dim, rank), "Flatten(start_dim={}, end_dim={}): dim {} is out of range for an input of shape {} "
          "(dims from {} to {})", start, end, dim, input.sizes(), -std::max(rank, 1), std::max(rank, 1) - 1);
  check(wrapped(start, rank) <= wrapped(end, rank),
        "Flatten(start_dim={}, end_dim={}): start_dim comes after end_dim for an input of shape {}", start, end,
        input.sizes());
  return flatten(input, start, end);
}

std::string FlattenImpl::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", options_.start_dim, options_.end_dim);
}

UnflattenImpl::UnflattenImpl(int64_t dim, Dims unflattened_size, Where where)
    : Module("Unflatten"), dim_(dim), unflattened_size_(unflattened_size) {
  CallSiteScope site(where);
  check(!unflattened_size.empty(), "Unflatten(dim={}): unflattened_size must not be empty", dim);
  const auto inferred = std::count(unflattened_size.begin(), unflattened_size.end(), -1);
  check(inferred <= 1, "Unflatten(dim={}): only one size can be -1, got unflattened_size {}", dim, unflattened_size);
  for (const int64_t size : unflattened_size)
    check(size >= -1, "Unflatten(dim={}): invalid size {} in unflattened_size {}", dim, size, unflattened_size);
}

Tensor UnflattenImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  const int rank = input.dim();
  check(rank > 0, "Unflatten(dim={}, unflattened_size={}): the input is 0-d; it has no dim to split", dim_,
        unflattened_size_);
  check(dim_ >= -rank && dim_ < rank, "Unflatten(dim={}, unflattened_size={}): dim {} is out of range for an input "
        "of shape {} (dims from {} to {})", dim_, unflattened_size_, dim_, input.sizes(), -rank, rank - 1);
  const int split = static_cast<int>(dim_ < 0 ? dim_ + rank : dim_);
  const int64_t size = input.size(split);
  Dims given;  // the sizes other than -1
  for (const int64_t part : unflattened_size_)
    if (part != -1) given.push_back(part);
  const bool has_inferred = given.size() < unflattened_size_.size();
  // A product past int64 matches no size; 0 can only be inferred from nothing, so it is refused too.
  const int64_t known = given.checked_product().value_or(-1);
  const bool fits = has_inferred ? known > 0 && size % known == 0 : known == size;
  check(fits, "Unflatten(dim={}, unflattened_size={}): the sizes don't multiply up to the size of dim {} ({}) of the "
        "input, shape {}", dim_, unflattened_size_, dim_, size, input.sizes());
  Dims shape;
  for (int i = 0; i < split; ++i) shape.push_back(input.size(i));
  for (const int64_t part : unflattened_size_) shape.push_back(part == -1 ? size / known : part);
  for (int i = split + 1; i < rank; ++i) shape.push_back(input.size(i));
  return input.view(shape);
}

std::string UnflattenImpl::extra_repr() const {
  return fmt::format("dim={}, unflattened_size={}", dim_, python_tuple(unflattened_size_));
}

}  // namespace ember::nn
