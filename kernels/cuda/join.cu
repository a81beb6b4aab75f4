// CUDA concatenation: one launch copies up to kMaxCatPieces inputs into their windows of the
// output (blockIdx.z picks the input). A byte copy in the widest word every row, offset and
// pointer allows, with each input's rows tiled over lanes like the gathers (no per-element division).
#include "kernels/cuda/index_device.cuh"
#include "kernels/cuda/join.h"

namespace ember::cuda {

namespace {

using device::kThreads;

// Per input of a launch: its rows in words and their tiling.
struct WordPiece {
  const void* source = nullptr;
  int64_t row_words = 0;
  int64_t offset_words = 0;
  device::RowTiling tiling;
};

struct WordBatch {
  void* out = nullptr;
  int64_t outer = 1;
  int64_t out_row_words = 0;
  WordPiece pieces[kMaxCatPieces];
};

template <typename Word>
__global__ void cat_kernel(WordBatch batch) {
  const WordPiece& piece = batch.pieces[blockIdx.z];
  Word* out = static_cast<Word*>(batch.out) + piece.offset_words;
  const Word* source = static_cast<const Word*>(piece.source);
  device::copy_rows<Word>(batch.outer, piece.row_words, piece.tiling, [&](int64_t row, Word*& to, const Word*& from) {
    to = out + row * batch.out_row_words;
    from = source + row * piece.row_words;
  });
}

}  // namespace

int launch_cat(const CatBatch& batch, void* stream) {
  if (batch.count == 0 || batch.outer == 0) return 0;
  int word_bytes = device::word_bytes_for({static_cast<uint64_t>(batch.out_row_bytes),
                                           reinterpret_cast<uint64_t>(batch.out)});
  for (int p = 0; p < batch.count; ++p) {
    const CatPiece& piece = batch.pieces[p];
    word_bytes = device::word_bytes_for({static_cast<uint64_t>(word_bytes), static_cast<uint64_t>(piece.row_bytes),
                                         static_cast<uint64_t>(piece.offset_bytes),
                                         reinterpret_cast<uint64_t>(piece.source)});
  }
  WordBatch words;
  words.out = batch.out;
  words.outer = batch.outer;
  words.out_row_words = batch.out_row_bytes / word_bytes;
  unsigned grid_x = 1;
  unsigned grid_y = 1;
  for (int p = 0; p < batch.count; ++p) {
    WordPiece& piece = words.pieces[p];
    piece.source = batch.pieces[p].source;
    piece.row_words = batch.pieces[p].row_bytes / word_bytes;
    piece.offset_words = batch.pieces[p].offset_bytes / word_bytes;
    piece.tiling = device::tiling_for(piece.row_words);
    const unsigned rows_blocks = device::grid_rows(batch.outer, piece.tiling);
    const unsigned column_blocks = device::grid_columns(piece.row_words, piece.tiling);
    grid_x = rows_blocks > grid_x ? rows_blocks : grid_x;
    grid_y = column_blocks > grid_y ? column_blocks : grid_y;
  }
  const dim3 grid(grid_x, grid_y, static_cast<unsigned>(batch.count));
  device::dispatch_word(word_bytes, [&](auto word) {
    using Word = decltype(word);
    cat_kernel<Word><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(words);
  });
  return device::check_launch();
}

}  // namespace ember::cuda
