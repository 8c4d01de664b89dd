/* Calls the ahead-of-time compiled examples/fma_reduce.hlo:
 * sum(x + y * z) over f32[8] vectors.
 *
 *   tools/aot_compile.py --target=x86_64 --out_dir=OUT --name=fma_reduce examples/fma_reduce.hlo
 *   gcc -O2 -I OUT examples/aot/main.c OUT/fma_reduce.o -lm -o fma_reduce && ./fma_reduce
 *
 * With a file argument, the three arguments are read from it (3 x 8 raw
 * float32, in parameter order) and the result is also written to FILE.out
 * (one raw float32); the tests use this to compare with the interpreter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fma_reduce.h"

int main(int argc, char** argv) {
  void* table[fma_reduce_NUM_BUFFERS];
  for (int i = 0; i < fma_reduce_NUM_BUFFERS; ++i) {
    table[i] = NULL;
    if (fma_reduce_BUFFER_IS_CONSTANT[i]) continue; /* the function sets these */
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t align = fma_reduce_BUFFER_ALIGNMENT;
    size_t size = ((size_t)fma_reduce_BUFFER_SIZES[i] + align - 1) / align * align;
    table[i] = aligned_alloc(align, size ? size : align);
    if (!table[i]) { perror("aligned_alloc"); return 1; }
    memset(table[i], 0, size ? size : align);
  }

  float* x = table[fma_reduce_ARG0_INDEX];
  float* y = table[fma_reduce_ARG1_INDEX];
  float* z = table[fma_reduce_ARG2_INDEX];
  if (argc > 1) {
    FILE* f = fopen(argv[1], "rb");
    if (!f || fread(x, sizeof(float), 8, f) != 8 || fread(y, sizeof(float), 8, f) != 8 ||
        fread(z, sizeof(float), 8, f) != 8) {
      fprintf(stderr, "cannot read 3 x 8 floats from %s\n", argv[1]);
      return 1;
    }
    fclose(f);
  } else {
    for (int i = 0; i < 8; ++i) {
      x[i] = (float)i;        /* 0 1 2 ... 7 */
      y[i] = 0.5f;
      z[i] = (float)(i + 1);  /* 1 2 ... 8 */
    }
  }

  fma_reduce(table);

  const float* result =
      (const float*)((const char*)table[fma_reduce_RESULT_INDEX] + fma_reduce_RESULT_OFFSET);
  printf("fma_reduce = %.9g\n", *result); /* 28 + 0.5 * 36 = 46 without a file */
  if (argc > 1) {
    char path[4096];
    snprintf(path, sizeof path, "%s.out", argv[1]);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(result, sizeof(float), 1, f) != 1) {
      fprintf(stderr, "cannot write %s\n", path);
      return 1;
    }
    fclose(f);
  }
  for (int i = 0; i < fma_reduce_NUM_BUFFERS; ++i)
    if (!fma_reduce_BUFFER_IS_CONSTANT[i]) free(table[i]);
  return 0;
}
