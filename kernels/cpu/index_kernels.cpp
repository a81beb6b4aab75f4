// CPU gathers and scatters (see index_kernels.h for what each computes and why it is deterministic).
#include "kernels/cpu/index_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/copy_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/functor_math.h"
#include "runtime/dispatch.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

// A strided input is copied once (outside autograd) where a kernel wants flat rows.
Tensor dense(const Tensor& tensor) {
  if (tensor.is_contiguous()) return tensor;
  NoGradGuard no_grad;
  return tensor.contiguous();
}

// Index lists as contiguous int64 (int32 indices are widened once).
Tensor dense_indices(const Tensor& index) {
  NoGradGuard no_grad;
  return index.to(kInt64).contiguous();
}

// Position of the first index outside [0, limit), or -1.
int64_t first_out_of_range(const int64_t* indices, int64_t count, int64_t limit) {
  for (int64_t k = 0; k < count; ++k)
    if (indices[k] < 0 || indices[k] >= limit) return k;
  return -1;
}

int dim_of(const OpCall& call, int rank) {
  return rank == 0 ? 0 : wrap_dim(call.attrs.get<int64_t>("dim"), rank, call.op.name);
}
// A 0-d tensor behaves as one element along dim 0.
int64_t size_along(const Tensor& tensor, int dim) { return tensor.dim() == 0 ? 1 : tensor.sizes()[dim]; }
int64_t stride_along(const Tensor& tensor, int dim) { return tensor.dim() == 0 ? 0 : tensor.strides()[dim]; }

// A contiguous tensor seen as [outer, size, inner] around `dim`.
struct Split {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};
Split split_at(const Dims& sizes, int dim) {
  Split split;
  if (sizes.empty()) return split;
  for (int d = 0; d < dim; ++d) split.outer *= sizes[d];
  split.size = sizes[dim];
  for (int d = dim + 1; d < sizes.size(); ++d) split.inner *= sizes[d];
  return split;
}

// target + value for the scatter-adds: integers wrap (fn::detail::wrapping_add) as the binary ops
// do, instead of overflowing (undefined); 16-bit floats add in float.
template <typename T> T accumulated(T target, T value) {
  if constexpr (fn::detail::wraps<T>) {
    return fn::detail::wrapping_add(target, value);
  } else {
    using C = compute_t<T>;
    return static_cast<T>(static_cast<C>(target) + static_cast<C>(value));
  }
}

// select_slices with rows of one element (inner == 1) of `Word`'s size: a typed loop per o, where
// a memcpy call per element costs several times the copy (the convolutions' window gathers of a
// one-channel image, unfold, pooling).
template <typename Word>
void select_elements(const Tensor& out, const Tensor& source, const int64_t* indices, int64_t count, Split split) {
  Word* to = static_cast<Word*>(out.raw_data_ptr());
  const Word* from = static_cast<const Word*>(source.raw_data_ptr());
  parallel_for(split.outer, split.outer * count >= kParallelGrain, [&](int64_t o) {
    const Word* row = from + o * split.size;
    Word* target = to + o * count;
    for (int64_t k = 0; k < count; ++k) target[k] = row[indices[k]];
  });
}

// out[o, k, :] = source[o, indices[k], :] for the rows [first, last) of out seen as [outer * count,
// inner], elements of `Word`'s size copied by a typed loop. Rows are often short (a convolution's
// window gather copies C channels, 64 bytes for 16 floats), and a memcpy call and two divisions per
// row had cost ~10% more than the copy.
template <typename Word>
void select_rows(Word* to, const Word* from, const int64_t* indices, int64_t count, Split split, int64_t first,
                 int64_t last) {
  int64_t o = first / count, k = first % count;  // then stepped, never divided
  for (int64_t row = first; row < last; ++row) {
    const Word* source = from + (o * split.size + indices[k]) * split.inner;
    Word* target = to + row * split.inner;
    for (int64_t i = 0; i < split.inner; ++i) target[i] = source[i];
    if (++k == count) {
      k = 0;
      ++o;
    }
  }
}

template <typename Word>
void select_typed(const Tensor& out, const Tensor& source, const int64_t* indices, int64_t count, Split split) {
  if (split.inner == 1) return select_elements<Word>(out, source, indices, count, split);
  Word* to = static_cast<Word*>(out.raw_data_ptr());
  const Word* from = static_cast<const Word*>(source.raw_data_ptr());
  const int64_t rows = split.outer * count;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kParallelGrain / split.inner);
  const int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  parallel_for(chunks, chunks > 1 && get_num_threads() > 1, [&](int64_t chunk) {
    const int64_t first = chunk * rows_per_chunk;
    select_rows<Word>(to, from, indices, count, split, first, std::min(rows, first + rows_per_chunk));
  });
}

// out[o, k, :] = source[o, indices[k], :]: whole rows of `inner` elements, any dtype.
void select_slices(const Tensor& out, const Tensor& source, const int64_t* indices, int64_t count, Split split) {
  if (count == 0 || split.outer == 0 || split.inner == 0) return;
  switch (source.element_size()) {
    case 1:
      return select_typed<uint8_t>(out, source, indices, count, split);
    case 2:
      return select_typed<uint16_t>(out, source, indices, count, split);
    case 4:
      return select_typed<uint32_t>(out, source, indices, count, split);
    case 8:
      return select_typed<uint64_t>(out, source, indices, count, split);
    default:
      break;
  }
  char* to = static_cast<char*>(out.raw_data_ptr());
  const char* from = static_cast<const char*>(source.raw_data_ptr());
  const size_t row_bytes = static_cast<size_t>(split.inner) * source.element_size();
  const int64_t rows = split.outer * count;
  parallel_for(rows, rows * split.inner >= kParallelGrain, [&](int64_t row) {
    const int64_t o = row / count;
    const int64_t source_row = o * split.size + indices[row % count];
    std::memcpy(to + row * row_bytes, from + source_row * row_bytes, row_bytes);
  });
}

// out[o, indices[k], i] += source[o, k, i]. A work item is one o and a fixed chunk of i, so a
// thread owns whole output columns and each element receives its additions in k order.
template <typename T>
void add_slices(T* out, const T* source, const int64_t* indices, int64_t count, Split split) {
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (split.inner + kChunk - 1) / kChunk;
  const int64_t items = split.outer * chunks;
  const bool parallel = items > 1 && split.outer * count * split.inner >= kParallelGrain;
  parallel_for(items, parallel, [&](int64_t item) {
    const int64_t o = item / chunks;
    const int64_t begin = (item % chunks) * kChunk;
    const int64_t end = std::min(split.inner, begin + kChunk);
    for (int64_t k = 0; k < count; ++k) {
      T* target = out + (o * split.size + indices[k]) * split.inner;
      const T* from = source + (o * count + k) * split.inner;
      for (int64_t i = begin; i < end; ++i)
        target[i] = accumulated(target[i], from[i]);
    }
  });
}

// The lines of a shape along `dim`: one per combination of the other dims' coordinates.
// start(line) gives each operand's element offset of that line's first element.
template <int N>
struct Lines {
  Dims sizes;  // the shape without dim
  std::array<Dims, N> strides;
  int64_t count = 1;

  std::array<int64_t, N> start(int64_t line) const {
    std::array<int64_t, N> offsets{};
    for (int d = sizes.size() - 1; d >= 0; --d) {
      const int64_t coordinate = line % sizes[d];
      line /= sizes[d];
      for (int k = 0; k < N; ++k) offsets[k] += coordinate * strides[k][d];
    }
    return offsets;
  }

  // Calls visit(offsets) for the lines [begin, end) in order: start() once, then an odometer over
  // the coordinates. A gather along a short dim (pooling's windows) has a line per few elements,
  // where start()'s divisions per line cost more than the copies.
  template <typename Visit>
  void for_each(int64_t begin, int64_t end, Visit&& visit) const {
    if (begin >= end) return;
    std::array<int64_t, N> offsets = start(begin);
    Dims coordinate = Dims::filled(sizes.size(), 0);
    int64_t rest = begin;
    for (int d = sizes.size() - 1; d >= 0; --d) {
      coordinate[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    for (int64_t line = begin; line < end; ++line) {
      visit(offsets);
      for (int d = sizes.size() - 1; d >= 0; --d) {
        if (++coordinate[d] < sizes[d]) {
          for (int k = 0; k < N; ++k) offsets[k] += strides[k][d];
          break;
        }
        coordinate[d] = 0;
        for (int k = 0; k < N; ++k) offsets[k] -= (sizes[d] - 1) * strides[k][d];
      }
    }
  }

  // Runs for_each over chunks of lines of about kParallelGrain elements (lines of `length`), over
  // the threads when `parallel` and there are several chunks.
  template <typename Visit>
  void for_each_parallel(int64_t length, bool parallel, Visit&& visit) const {
    const int64_t per_chunk = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(length, 1));
    const int64_t chunks = (count + per_chunk - 1) / per_chunk;
    parallel_for(chunks, parallel && chunks > 1, [&](int64_t chunk) {
      for_each(chunk * per_chunk, std::min(count, (chunk + 1) * per_chunk), visit);
    });
  }
};

template <int N>
Lines<N> lines_of(const Dims& shape, int dim, const std::array<Dims, N>& strides) {
  Lines<N> lines;
  for (int d = 0; d < shape.size(); ++d) {
    if (d == dim) continue;
    lines.sizes.push_back(shape[d]);
    for (int k = 0; k < N; ++k) lines.strides[k].push_back(strides[k][d]);
    lines.count *= shape[d];
  }
  return lines;
}

// Checks every value of a strided index tensor (operand 1 of `lines`) against [0, limit).
void check_line_indices(const OpCall& call, const Lines<3>& lines, const int64_t* index, int64_t length,
                        int64_t step, int64_t limit, int dim) {
  lines.for_each(0, lines.count, [&](const std::array<int64_t, 3>& first) {
    for (int64_t j = 0; j < length; ++j) {
      const int64_t value = index[first[1] + j * step];
      if (value < 0 || value >= limit)
        fail("{}: index {} is out of range for dim {} of size {} (input {}, index {})", call.op.name, value,
             dim, limit, call.input(0).sizes(), call.input(1).sizes());
    }
  });
}

}  // namespace

void embedding_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor weight = dense(call.input(0));
  const Tensor indices = dense_indices(call.input(1));
  const int64_t* index = indices.data_ptr<int64_t>();
  const int64_t bad = first_out_of_range(index, indices.numel(), weight.size(0));
  if (bad >= 0)
    fail("embedding: index {} is out of range for a weight with {} rows (weight {}, indices {})", index[bad],
         weight.size(0), weight.sizes(), indices.sizes());
  select_slices(outputs[0], weight, index, indices.numel(), Split{1, weight.size(0), weight.size(1)});
}

void embedding_backward_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor grad = dense(call.input(0));
  const Tensor indices = dense_indices(call.input(1));
  const Tensor& out = outputs[0];
  const int64_t* index = indices.data_ptr<int64_t>();
  const int64_t bad = first_out_of_range(index, indices.numel(), out.size(0));
  if (bad >= 0)
    fail("embedding_backward: index {} is out of range for num_weights {} (indices {})", index[bad],
         out.size(0), indices.sizes());
  std::memset(out.raw_data_ptr(), 0, out.nbytes());  // all-zero bytes are 0 in every dtype
  dispatch_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    add_slices<T>(out.data_ptr<T>(), grad.data_ptr<T>(), index, indices.numel(),
                  Split{1, out.size(0), out.size(1)});
  });
}

void index_select_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor a = dense(call.input(0));
  const Tensor indices = dense_indices(call.input(1));
  const int dim = dim_of(call, a.dim());
  const Split split = split_at(a.sizes(), dim);
  const int64_t* index = indices.data_ptr<int64_t>();
  const int64_t bad = first_out_of_range(index, indices.numel(), split.size);
  if (bad >= 0)
    fail("index_select: index {} is out of range for dim {} of size {} (input {})", index[bad], dim,
         split.size, a.sizes());
  select_slices(outputs[0], a, index, indices.numel(), split);
}

void index_add_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& self = call.input(0);
  const Tensor indices = dense_indices(call.input(1));
  const Tensor source = dense(call.input(2));
  const int dim = dim_of(call, self.dim());
  const Split split = split_at(self.sizes(), dim);
  const int64_t* index = indices.data_ptr<int64_t>();
  const int64_t bad = first_out_of_range(index, indices.numel(), split.size);
  if (bad >= 0)
    fail("index_add: index {} is out of range for dim {} of size {} (self {})", index[bad], dim, split.size,
         self.sizes());
  convert_into(outputs[0], self);
  dispatch_dtype(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    add_slices<T>(outputs[0].data_ptr<T>(), source.data_ptr<T>(), index, indices.numel(), split);
  });
}

void gather_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;  // an empty index may be of any dtype (gather_shape)
  const int dim = dim_of(call, a.dim());
  const Lines<3> lines = lines_of<3>(index.sizes(), dim, {out.strides(), index.strides(), a.strides()});
  const int64_t length = size_along(index, dim);
  const int64_t out_step = stride_along(out, dim);
  const int64_t index_step = stride_along(index, dim);
  const int64_t a_step = stride_along(a, dim);
  const int64_t* indices = index.data_ptr<int64_t>();
  check_line_indices(call, lines, indices, length, index_step, size_along(a, dim), dim);
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* to = out.data_ptr<T>();
    const T* from = a.data_ptr<T>();
    lines.for_each_parallel(length, out.numel() >= kParallelGrain, [&](const std::array<int64_t, 3>& first) {
      for (int64_t j = 0; j < length; ++j)
        to[first[0] + j * out_step] = from[first[2] + indices[first[1] + j * index_step] * a_step];
    });
  });
}

void scatter_add_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& self = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& source = call.input(2);
  const Tensor& out = outputs[0];
  const int dim = dim_of(call, self.dim());
  const Lines<3> lines = lines_of<3>(index.sizes(), dim, {out.strides(), index.strides(), source.strides()});
  const int64_t length = size_along(index, dim);
  const int64_t out_step = stride_along(out, dim);
  const int64_t index_step = stride_along(index, dim);
  const int64_t source_step = stride_along(source, dim);
  convert_into(out, self);
  if (index.numel() == 0) return;  // adds nothing; an empty index may be of any dtype (scatter_add_shape)
  const int64_t* indices = index.data_ptr<int64_t>();
  check_line_indices(call, lines, indices, length, index_step, size_along(self, dim), dim);
  dispatch_dtype(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* to = out.data_ptr<T>();
    const T* from = source.data_ptr<T>();
    // Lines differ in their non-dim coordinates, so two lines never write one output element.
    lines.for_each_parallel(length, index.numel() >= kParallelGrain, [&](const std::array<int64_t, 3>& first) {
      for (int64_t j = 0; j < length; ++j) {
        T& target = to[first[0] + indices[first[1] + j * index_step] * out_step];
        target = accumulated(target, from[first[2] + j * source_step]);
      }
    });
  });
}

void one_hot_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor indices = dense_indices(call.input(0));
  const Tensor& out = outputs[0];
  const int64_t classes = out.size(-1);
  const int64_t* index = indices.data_ptr<int64_t>();
  const int64_t bad = first_out_of_range(index, indices.numel(), classes);
  if (bad >= 0)
    fail("one_hot: class index {} is out of range for {} classes (index {})", index[bad], classes,
         indices.sizes());
  int64_t* to = out.data_ptr<int64_t>();
  std::fill(to, to + out.numel(), int64_t{0});
  for (int64_t k = 0; k < indices.numel(); ++k) to[k * classes + index[k]] = 1;
}

}  // namespace ember::cpu
