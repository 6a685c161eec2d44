/* A C99 program that uses ktune through its C API and links libktune.so alone:
 *   cc -std=c99 main.c $(pkg-config --cflags --libs ktune) -o c_example
 * It takes the CUDA driver with dlopen (so that it also starts on a machine without one), makes
 * the device's primary context current as a CUDA runtime application would, and checks an SGEMM
 * and a copy against the host, and that every ktune call leaves the thread's context as it was.
 * Exit 0: all correct; 1: a wrong result or an unexpected error; 2: no CUDA driver or device
 * (the message says which). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktune/ktune.h"

typedef int (*fn_init)(unsigned);
typedef int (*fn_device_get)(int*, int);
typedef int (*fn_retain)(void**, int);
typedef int (*fn_ctx_set)(void*);
typedef int (*fn_ctx_get)(void**);
typedef int (*fn_alloc)(uint64_t*, size_t);
typedef int (*fn_free)(uint64_t);
typedef int (*fn_htod)(uint64_t, const void*, size_t);
typedef int (*fn_dtoh)(void*, uint64_t, size_t);
typedef int (*fn_sync)(void);

static struct {
  fn_init init;
  fn_device_get device_get;
  fn_retain retain;
  fn_ctx_set ctx_set;
  fn_ctx_get ctx_get;
  fn_alloc alloc;
  fn_free free_;
  fn_htod htod;
  fn_dtoh dtoh;
  fn_sync sync;
} cu;

static int fail(const char* what, ktune_status s) {
  fprintf(stderr, "c_example: %s: %s: %s\n", what, ktune_status_name(s), ktune_last_error());
  return 1;
}

static void* symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "c_example: the driver has no %s\n", name);
    exit(1);
  }
  return p;
}

int main(void) {
  printf("ktune %s, C API %d\n", ktune_version(), KTUNE_C_API_VERSION);

  /* Errors come back as statuses with a message, with or without a GPU. */
  ktune_status s = ktune_sgemm(NULL, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, 1, 1, 1, 1.0f, NULL,
                               1, NULL, 1, 0.0f, NULL, 1, NULL);
  if (s != KTUNE_ERROR_INVALID_ARGUMENT || strstr(ktune_last_error(), "runtime") == NULL)
    return fail("sgemm without a runtime was not refused", s);

  ktune_runtime_options options;
  memset(&options, 0, sizeof options);
  options.size = sizeof options;
  options.no_database = 1; /* built-in defaults: the same answer on every machine */
  ktune_runtime* rt = NULL;
  s = ktune_runtime_create(&options, &rt);
  if (s == KTUNE_ERROR_NO_DRIVER || s == KTUNE_ERROR_NO_DEVICE) {
    printf("c_example: %s\n", ktune_last_error()); /* "no CUDA driver: ..." */
    return 2;
  }
  if (s != KTUNE_OK) return fail("ktune_runtime_create", s);

  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return fail("dlopen libcuda.so.1 (ktune found a driver)", KTUNE_OK);
  *(void**)&cu.init = symbol(lib, "cuInit");
  *(void**)&cu.device_get = symbol(lib, "cuDeviceGet");
  *(void**)&cu.retain = symbol(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&cu.ctx_set = symbol(lib, "cuCtxSetCurrent");
  *(void**)&cu.ctx_get = symbol(lib, "cuCtxGetCurrent");
  *(void**)&cu.alloc = symbol(lib, "cuMemAlloc_v2");
  *(void**)&cu.free_ = symbol(lib, "cuMemFree_v2");
  *(void**)&cu.htod = symbol(lib, "cuMemcpyHtoD_v2");
  *(void**)&cu.dtoh = symbol(lib, "cuMemcpyDtoH_v2");
  *(void**)&cu.sync = symbol(lib, "cuCtxSynchronize");
  int dev = 0;
  void* primary = NULL;
  if (cu.init(0) || cu.device_get(&dev, 0) || cu.retain(&primary, dev) || cu.ctx_set(primary))
    return fail("the primary context", KTUNE_OK);

  /* C = A B, row-major, 67 x 45 x 33, against a double-precision host product. */
  enum { M = 67, N = 45, K = 33 };
  static float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; ++i) a[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  for (int i = 0; i < K * N; ++i) b[i] = (float)((i * 53 % 97) - 48) / 48.0f;
  uint64_t da = 0, db = 0, dc = 0, dcopy = 0;
  if (cu.alloc(&da, sizeof a) || cu.alloc(&db, sizeof b) || cu.alloc(&dc, sizeof c) ||
      cu.alloc(&dcopy, sizeof c) || cu.htod(da, a, sizeof a) || cu.htod(db, b, sizeof b))
    return fail("device memory", KTUNE_OK);

  void* before = NULL;
  void* after = NULL;
  cu.ctx_get(&before);
  s = ktune_sgemm(rt, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, M, N, K, 1.0f,
                  (const float*)(uintptr_t)da, K, (const float*)(uintptr_t)db, N, 0.0f,
                  (float*)(uintptr_t)dc, N, NULL);
  if (s != KTUNE_OK) return fail("ktune_sgemm", s);
  cu.ctx_get(&after);
  if (after != before) return fail("ktune_sgemm left another context current", KTUNE_OK);
  if (cu.sync() || cu.dtoh(c, dc, sizeof c)) return fail("reading C", KTUNE_OK);
  int wrong = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double want = 0, magnitude = 0;
      for (int p = 0; p < K; ++p) {
        want += (double)a[i * K + p] * b[p * N + j];
        magnitude += fabs((double)a[i * K + p] * b[p * N + j]);
      }
      if (fabs(c[i * N + j] - want) > 16 * 1.2e-7 * sqrt((double)K) * magnitude + 1e-30) ++wrong;
    }
  if (wrong) {
    fprintf(stderr, "c_example: sgemm: %d wrong element(s)\n", wrong);
    return 1;
  }

  /* With no context current at all, a call works and leaves none current. */
  cu.ctx_set(NULL);
  s = ktune_copy_f32(rt, (float*)(uintptr_t)dcopy, (const float*)(uintptr_t)dc, M * N, NULL);
  if (s != KTUNE_OK) return fail("ktune_copy_f32", s);
  cu.ctx_get(&after);
  if (after != NULL) return fail("ktune_copy_f32 left a context current", KTUNE_OK);
  cu.ctx_set(primary);
  static float copied[M * N];
  if (cu.sync() || cu.dtoh(copied, dcopy, sizeof copied)) return fail("reading the copy", KTUNE_OK);
  if (memcmp(copied, c, sizeof c) != 0) return fail("the copy differs", KTUNE_OK);

  char text[256];
  size_t needed = 0;
  s = ktune_explain(rt, "elementwise", "align=16;dtype=f32;n=3015;op=copy", text, sizeof text,
                    &needed);
  if (s != KTUNE_OK) return fail("ktune_explain", s);
  printf("explain: %s (%zu bytes)\n", text, needed);

  cu.free_(da);
  cu.free_(db);
  cu.free_(dc);
  cu.free_(dcopy);
  ktune_runtime_destroy(rt);
  printf("c_example: sgemm %dx%dx%d and a copy correct; the thread's context kept\n", M, N, K);
  return 0;
}
