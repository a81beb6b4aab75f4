// The CPU pointwise iterator: applies a functor elementwise over an output and inputs broadcast
// to the output's shape, with any strides. Broadcasting, strides and dtype conversion are done
// here once; op files only supply the functor (see kernels/functors.h).
//
//   pointwise_cpu<float, float, float>(out, ember::fn::Add{alpha}, a, b);
//
// Out and In... are storage types; values are converted to compute_t<T> (fp32 for 16-bit floats)
// before the functor sees them. Inputs must already have the dtype named by their In type.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cpu/parallel_for.h"
#include "runtime/parallel.h"
#include "runtime/tensor.h"

namespace ember::cpu {

// Geometry of one pointwise loop: output shape and per-operand strides (0 on broadcast dims),
// with adjacent dims merged where every operand allows it.
template <int N>  // N = number of operands including the output (operand 0)
struct LoopGeometry {
  Dims sizes;
  std::array<Dims, N> strides;
  std::array<char*, N> base;
  bool all_contiguous = true;  // every operand walks memory linearly, no broadcast
};

// Strides of `tensor` seen from an output of shape `sizes` (broadcast dims get stride 0).
Dims broadcast_strides(const Tensor& tensor, const Dims& sizes);

template <int N>
LoopGeometry<N> make_geometry(const Tensor& out, const std::array<const Tensor*, N - 1>& inputs) {
  LoopGeometry<N> geometry;
  geometry.sizes = out.sizes();
  geometry.strides[0] = out.strides();
  geometry.base[0] = static_cast<char*>(out.raw_data_ptr());
  geometry.all_contiguous = out.is_contiguous();
  for (int k = 1; k < N; ++k) {
    const Tensor& input = *inputs[k - 1];
    geometry.strides[k] = broadcast_strides(input, geometry.sizes);
    geometry.base[k] = static_cast<char*>(input.raw_data_ptr());
    geometry.all_contiguous = geometry.all_contiguous && input.sizes() == geometry.sizes && input.is_contiguous();
  }
  // Merge dim i into dim i+1 when, for every operand, stride[i] == stride[i+1] * size[i+1].
  Dims sizes;
  std::array<Dims, N> strides;
  for (int i = 0; i < geometry.sizes.size(); ++i) {
    if (geometry.sizes[i] == 1) continue;  // size-1 dims never move the pointer
    bool mergeable = sizes.size() > 0;
    for (int k = 0; k < N && mergeable; ++k)
      mergeable = strides[k].back() == geometry.strides[k][i] * geometry.sizes[i];
    if (mergeable) {
      sizes[sizes.size() - 1] *= geometry.sizes[i];
      for (int k = 0; k < N; ++k) strides[k][strides[k].size() - 1] = geometry.strides[k][i];
    } else {
      sizes.push_back(geometry.sizes[i]);
      for (int k = 0; k < N; ++k) strides[k].push_back(geometry.strides[k][i]);
    }
  }
  geometry.sizes = sizes;
  geometry.strides = strides;
  return geometry;
}

// Element i of `base` in its compute type. bool is read through its byte: GCC has no vector type
// for bool loads and would leave every loop with a bool input (where, masks) scalar.
template <typename T>
inline compute_t<T> load_at(const T* base, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return reinterpret_cast<const uint8_t*>(base)[i] != 0;
  } else {
    return static_cast<compute_t<T>>(base[i]);
  }
}

template <typename T>
inline compute_t<T> load(const char* pointer) {
  return load_at(reinterpret_cast<const T*>(pointer), 0);
}

// Runs `body(element_pointers, count, element_strides_in_bytes)` over 1-D runs of the geometry.
// The innermost dim is the run; the outer dims are walked with a counter.
template <int N, typename Body>
void for_each_run(const LoopGeometry<N>& geometry, const std::array<size_t, N>& element_sizes,
                  int64_t first_run, int64_t last_run, Body&& body) {
  const int rank = geometry.sizes.size();
  const int64_t inner = rank == 0 ? 1 : geometry.sizes[rank - 1];
  std::array<int64_t, N> inner_bytes;
  for (int k = 0; k < N; ++k)
    inner_bytes[k] = rank == 0 ? 0 : geometry.strides[k][rank - 1] * static_cast<int64_t>(element_sizes[k]);
  for (int64_t run = first_run; run < last_run; ++run) {
    std::array<char*, N> pointers = geometry.base;
    int64_t remaining = run;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t index = remaining % geometry.sizes[d];
      remaining /= geometry.sizes[d];
      for (int k = 0; k < N; ++k)
        pointers[k] += index * geometry.strides[k][d] * static_cast<int64_t>(element_sizes[k]);
    }
    body(pointers, inner, inner_bytes);
  }
}

// Runs `body(element_pointers, count, element_strides_in_bytes)` over the flat output elements
// [begin, end) in segments that each stay inside one run of the innermost dim, so a parallel
// chunk may start and end mid-run (one long broadcast run still spreads over the threads). The
// first segment's position is found by division; later ones step an odometer over the outer dims,
// because runs can be a few elements long (a channels-last copy's are C) and a division per dim
// per run cost more than the run.
template <int N, typename Body>
void for_each_segment(const LoopGeometry<N>& geometry, const std::array<size_t, N>& element_sizes,
                      int64_t begin, int64_t end, Body&& body) {
  if (begin >= end) return;
  const int rank = geometry.sizes.size();
  const int64_t inner = rank == 0 ? 1 : geometry.sizes[rank - 1];
  std::array<int64_t, N> inner_bytes;
  std::array<Dims, N> outer_bytes;  // each outer dim's stride in bytes, per operand
  for (int k = 0; k < N; ++k) {
    inner_bytes[k] = rank == 0 ? 0 : geometry.strides[k][rank - 1] * static_cast<int64_t>(element_sizes[k]);
    for (int d = 0; d + 1 < rank; ++d)
      outer_bytes[k].push_back(geometry.strides[k][d] * static_cast<int64_t>(element_sizes[k]));
  }
  Dims position = Dims::filled(std::max(rank - 1, 0), 0);  // the run's index in each outer dim
  std::array<char*, N> run_start = geometry.base;
  int64_t remaining = begin / inner;
  for (int d = rank - 2; d >= 0; --d) {
    position[d] = remaining % geometry.sizes[d];
    remaining /= geometry.sizes[d];
    for (int k = 0; k < N; ++k) run_start[k] += position[d] * outer_bytes[k][d];
  }
  int64_t offset = begin % inner;
  for (int64_t index = begin; index < end;) {
    const int64_t count = std::min(inner - offset, end - index);
    std::array<char*, N> pointers = run_start;
    for (int k = 0; k < N; ++k) pointers[k] += offset * inner_bytes[k];
    body(pointers, count, inner_bytes);
    index += count;
    offset = 0;
    for (int d = rank - 2; d >= 0; --d) {  // the next run: carry through the outer dims
      for (int k = 0; k < N; ++k) run_start[k] += outer_bytes[k][d];
      if (++position[d] < geometry.sizes[d]) break;
      for (int k = 0; k < N; ++k) run_start[k] -= geometry.sizes[d] * outer_bytes[k][d];
      position[d] = 0;
    }
  }
}

// A loop in which some operand is transposed in its last two dims (stride 1 on the rows, more on
// the columns: x.t(), an NCHW -> NHWC copy) walks that operand one cache line per element along
// each run. The loop goes by kTile x kTile tiles of the last two dims, and an input such a run
// would read across its columns is first copied into a tile buffer (for_each_tile).
inline constexpr int64_t kTile = 64;

template <int N>
bool has_transposed_operand(const LoopGeometry<N>& geometry) {
  const int rank = geometry.sizes.size();
  if (rank < 2) return false;
  for (int k = 0; k < N; ++k) {
    const int64_t column_stride = geometry.strides[k][rank - 1], row_stride = geometry.strides[k][rank - 2];
    if (row_stride == 1 && column_stride > 1) return true;
  }
  return false;
}

// The tiles of the last two dims, kTile x kTile (fewer at the edges), over every outer index.
template <int N>
int64_t tile_count(const LoopGeometry<N>& geometry) {
  const int rank = geometry.sizes.size();
  const int64_t rows = geometry.sizes[rank - 2], columns = geometry.sizes[rank - 1];
  const int64_t planes = geometry.sizes.product() / (rows * columns);
  return planes * ((rows + kTile - 1) / kTile) * ((columns + kTile - 1) / kTile);
}

// True when input k is laid out down the tile's columns (row stride one element, column stride
// another, not 0): runs along a row would read it one line per element.
template <int N>
bool read_across_columns(const LoopGeometry<N>& geometry, int k) {
  const int rank = geometry.sizes.size();
  const int64_t row_stride = geometry.strides[k][rank - 2], column_stride = geometry.strides[k][rank - 1];
  return row_stride == 1 && column_stride != 1 && column_stride != 0;
}

// Runs `body(element_pointers, count, element_strides_in_bytes)` over tiles [first, last): each
// tile's runs go along its longer side, so a dim of 2 is crossed by runs of kTile, not walked in
// runs of 2. When the runs cross an input's columns (its row stride is one element), that input's
// tile is first copied column by column, contiguous reads, into its `tile_buffers` entry (kTile x
// kTile elements; null for the output), and the runs read it there: read in place, the tile's
// columns are lines a column stride apart, and at a power-of-two stride (a [1024, 1024]
// transpose's 4 KiB) they share one L1 set and evict each other from run to run (relu of that
// transpose took 1.55 ms against 0.3 ms staged, on a 2-core Zen 5).
template <int N, typename Body>
void for_each_tile(const LoopGeometry<N>& geometry, const std::array<size_t, N>& element_sizes,
                   const std::array<char*, N>& tile_buffers, int64_t first, int64_t last, Body&& body) {
  const int rank = geometry.sizes.size();
  const int64_t rows = geometry.sizes[rank - 2], columns = geometry.sizes[rank - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile, column_tiles = (columns + kTile - 1) / kTile;
  std::array<int64_t, N> row_bytes, column_bytes;
  std::array<bool, N> staged;
  for (int k = 0; k < N; ++k) {
    row_bytes[k] = geometry.strides[k][rank - 2] * static_cast<int64_t>(element_sizes[k]);
    column_bytes[k] = geometry.strides[k][rank - 1] * static_cast<int64_t>(element_sizes[k]);
    staged[k] = tile_buffers[k] != nullptr && read_across_columns(geometry, k);
  }
  for (int64_t tile = first; tile < last; ++tile) {
    const int64_t row0 = tile / column_tiles % row_tiles * kTile, column0 = tile % column_tiles * kTile;
    std::array<char*, N> corner = geometry.base;
    int64_t plane = tile / (column_tiles * row_tiles);
    for (int d = rank - 3; d >= 0; --d) {
      const int64_t position = plane % geometry.sizes[d];
      plane /= geometry.sizes[d];
      for (int k = 0; k < N; ++k)
        corner[k] += position * geometry.strides[k][d] * static_cast<int64_t>(element_sizes[k]);
    }
    for (int k = 0; k < N; ++k) corner[k] += row0 * row_bytes[k] + column0 * column_bytes[k];
    const int64_t tile_rows = std::min(kTile, rows - row0), tile_columns = std::min(kTile, columns - column0);
    const bool along_rows = tile_columns >= tile_rows;  // runs along a row, or down a column
    std::array<int64_t, N> along = along_rows ? column_bytes : row_bytes;
    const std::array<int64_t, N>& across = along_rows ? row_bytes : column_bytes;  // a staged tile's too
    for (int k = 0; k < N && along_rows; ++k) {
      if (!staged[k]) continue;
      const int64_t column_length = tile_rows * static_cast<int64_t>(element_sizes[k]);
      for (int64_t column = 0; column < tile_columns; ++column)
        std::memcpy(tile_buffers[k] + column * column_length, corner[k] + column * column_bytes[k],
                    static_cast<size_t>(column_length));
      corner[k] = tile_buffers[k];
      along[k] = column_length;
    }
    const int64_t runs = along_rows ? tile_rows : tile_columns, length = along_rows ? tile_columns : tile_rows;
    for (int64_t run = 0; run < runs; ++run) {
      body(corner, length, along);
      for (int k = 0; k < N; ++k) corner[k] += across[k];
    }
  }
}

// The strided path copies an operand whose inner stride is not its element size (broadcast,
// sliced, transposed) through a small contiguous buffer, kStageChunk elements at a time, so the
// functor always runs in a flat loop that vectorizes like the fast path. With runtime strides the
// loop stayed scalar: where(mask, grad, 0-d zero) ran 14x slower than on contiguous inputs.
inline constexpr int64_t kStageChunk = 256;

// Elements left uninitialized: std::array in a std::tuple is value-initialized, i.e. zeroed, and
// zeroing 16 KiB of tile buffer per parallel chunk cost ~10% of an NCHW -> NHWC copy (0.34 against
// 0.38 ms with C = 16). (StagingBuffers keeps std::array: made Scratch, that copy got ~10% slower.)
template <typename T, int64_t Size>
struct Scratch {
  Scratch() {}  // user-provided, so value-initialization leaves `values` alone
  T* data() { return values; }
  T values[Size];
};

template <typename Out, typename... In>
struct StagingBuffers {
  std::tuple<std::array<In, kStageChunk>...> inputs;
  std::array<Out, kStageChunk> output;
};

// One kTile x kTile tile per input for for_each_tile's staging, on the stack: no heap allocation.
template <typename... In>
struct TileBuffers {
  std::tuple<Scratch<In, kTile * kTile>...> inputs;
  template <int N>
  std::array<char*, N> pointers() {  // null for the output (operand 0)
    return [&]<size_t... K>(std::index_sequence<K...>) {
      return std::array<char*, N>{nullptr, reinterpret_cast<char*>(std::get<K>(inputs).data())...};
    }(std::index_sequence_for<In...>{});
  }
};

// `count` elements of type T at `source` with byte stride `step`, as a flat array: in place when
// they already are one, otherwise copied into `buffer`.
template <typename T>
const T* stage_input(const char* source, int64_t step, int64_t count, T* buffer) {
  if (step == static_cast<int64_t>(sizeof(T))) return reinterpret_cast<const T*>(source);
  if (step == 0) {
    const T value = *reinterpret_cast<const T*>(source);
    for (int64_t i = 0; i < count; ++i) buffer[i] = value;
  } else {
    for (int64_t i = 0; i < count; ++i) buffer[i] = *reinterpret_cast<const T*>(source + i * step);
  }
  return buffer;
}

// out[i] = functor(inputs[i]...), broadcasting inputs to out's shape.
template <typename Out, typename... In, typename Functor, typename... Inputs>
void pointwise_cpu(const Tensor& out, Functor functor, const Inputs&... inputs) {
  static_assert(sizeof...(In) == sizeof...(Inputs), "one storage type per input");
  constexpr int N = 1 + sizeof...(Inputs);
  const int64_t numel = out.numel();
  if (numel == 0) return;
  LoopGeometry<N> geometry = make_geometry<N>(out, {&inputs...});

  if (geometry.all_contiguous) {  // the fast path: flat arrays, vectorizable
    Out* output = reinterpret_cast<Out*>(geometry.base[0]);
    auto flat = [&](int64_t begin, int64_t end) {
      [&]<size_t... K>(std::index_sequence<K...>) {
        std::tuple<const In*...> in{reinterpret_cast<const In*>(geometry.base[K + 1])...};
        for (int64_t i = begin; i < end; ++i)
          output[i] = static_cast<Out>(functor(load_at(std::get<K>(in), i)...));
      }(std::index_sequence_for<In...>{});
    };
    parallel_ranges(numel, flat);
    return;
  }

  const std::array<size_t, N> element_sizes{sizeof(Out), sizeof(In)...};
  // `count` elements from `pointers`, each operand stepping `step` bytes, staged through `buffers`.
  auto run = [&](StagingBuffers<Out, In...>& buffers, const std::array<char*, N>& pointers, int64_t count,
                 const std::array<int64_t, N>& step) {
    const bool output_in_place = step[0] == static_cast<int64_t>(sizeof(Out));
    for (int64_t first = 0; first < count; first += kStageChunk) {
      const int64_t length = std::min(kStageChunk, count - first);
      Out* destination = output_in_place ? reinterpret_cast<Out*>(pointers[0] + first * step[0])
                                         : buffers.output.data();
      [&]<size_t... K>(std::index_sequence<K...>) {
        const std::tuple<const In*...> sources{stage_input<In>(
            pointers[K + 1] + first * step[K + 1], step[K + 1], length, std::get<K>(buffers.inputs).data())...};
        for (int64_t i = 0; i < length; ++i)
          destination[i] = static_cast<Out>(functor(load_at(std::get<K>(sources), i)...));
      }(std::index_sequence_for<In...>{});
      if (!output_in_place) {
        for (int64_t i = 0; i < length; ++i)
          *reinterpret_cast<Out*>(pointers[0] + (first + i) * step[0]) = buffers.output[i];
      }
    }
  };
  if (has_transposed_operand(geometry)) {
    // Tiles, kParallelGrain elements' worth per chunk (as parallel_ranges: independent of the threads).
    constexpr int64_t kTilesPerChunk = std::max<int64_t>(1, kParallelGrain / (kTile * kTile));
    const int64_t tiles_total = tile_count(geometry), chunks = (tiles_total + kTilesPerChunk - 1) / kTilesPerChunk;
    parallel_for(chunks, chunks > 1 && get_num_threads() > 1, [&](int64_t chunk) {
      TileBuffers<In...> tiles;
      StagingBuffers<Out, In...> buffers;  // per chunk, not per run: runs may be a few elements
      const int64_t first = chunk * kTilesPerChunk, last = std::min(tiles_total, first + kTilesPerChunk);
      for_each_tile<N>(geometry, element_sizes, tiles.template pointers<N>(), first, last,
                       [&](const auto&... args) { run(buffers, args...); });
    });
    return;
  }
  parallel_ranges(numel, [&](int64_t begin, int64_t end) {
    StagingBuffers<Out, In...> buffers;  // per range, not per run: runs may be a few elements
    for_each_segment<N>(geometry, element_sizes, begin, end, [&](const auto&... args) { run(buffers, args...); });
  });
}

}  // namespace ember::cpu
