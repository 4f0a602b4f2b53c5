/* The floor of a GPU process's start-up and exit on a machine (issue 16: wall − total).
 *
 * One program, built three ways by run.sh:
 *   startup_bare     links nothing:                          process creation and exit only
 *   startup_linked   links cudart/cuBLAS/cuSOLVER/cuSPARSE:  "none" = library loading alone;
 *                                                            "serial" = then the context (cudaFree(0))
 *                                                            and one handle of each library
 *   startup_dl       links only libdl:                       "ctx" = libcuda's context alone (cuInit,
 *                                                            primary context); "overlap" = the context on
 *                                                            a thread while this one dlopens the four
 *                                                            libraries, then the same handles
 * Each prints its own phase times (seconds from main) and ends with _Exit, as tcsolve does; run.py
 * adds the process's wall time as its parent sees it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef LINKED
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static void finish(void) {
  fflush(stdout);
  _Exit(0);
}

#ifndef LINKED
typedef int (*fn_init)(unsigned);
typedef int (*fn_get)(int*, int);
typedef int (*fn_retain)(void**, int);
typedef int (*fn_ptr)(void*);
typedef int (*fn_pp)(void**);
static double t_main, t_ctx0, t_ctx1;
static void* make_context(void* arg) {
  (void)arg;
  t_ctx0 = now();
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); exit(3); }
  fn_init init = (fn_init)dlsym(h, "cuInit");
  fn_get get = (fn_get)dlsym(h, "cuDeviceGet");
  fn_retain retain = (fn_retain)dlsym(h, "cuDevicePrimaryCtxRetain");
  int d;
  void* c;
  if (init(0) || get(&d, 0) || retain(&c, d)) { fprintf(stderr, "no CUDA context\n"); exit(4); }
  t_ctx1 = now();
  return 0;
}
#endif

int main(int argc, char** argv) {
  const double t0 = now();
  const char* mode = argc > 1 ? argv[1] : "none";
  if (!strcmp(mode, "none")) return 0;
#ifdef LINKED
  if (!strcmp(mode, "serial")) {
    cudaFree(0);
    const double t1 = now();
    cublasHandle_t b;
    cusolverDnHandle_t s;
    cusparseHandle_t sp;
    cublasCreate(&b);
    cusolverDnCreate(&s);
    cusparseCreate(&sp);
    printf("context %.3f handles %.3f", t1 - t0, now() - t1);
    finish();
  }
#else
  t_main = t0;
  if (!strcmp(mode, "ctx") || !strcmp(mode, "overlap")) {
    pthread_t th;
    pthread_create(&th, 0, make_context, 0);
    void* h[4] = {0, 0, 0, 0};
    double libs = 0;
    if (!strcmp(mode, "overlap")) {
      const char* names[4] = {"libcudart.so.13", "libcublas.so.13", "libcusolver.so.12", "libcusparse.so.12"};
      for (int i = 0; i < 4; ++i)
        if (!(h[i] = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL))) { fprintf(stderr, "%s\n", dlerror()); return 5; }
      libs = now() - t0;
    }
    pthread_join(th, 0);
    const double joined = now() - t0;
    printf("context [%.3f, %.3f]", t_ctx0 - t0, t_ctx1 - t0);
    if (h[0]) {
      ((fn_ptr)dlsym(h[0], "cudaFree"))(0);
      const double f = now() - t0;
      void* x;
      ((fn_pp)dlsym(h[1], "cublasCreate_v2"))(&x);
      ((fn_pp)dlsym(h[2], "cusolverDnCreate"))(&x);
      ((fn_pp)dlsym(h[3], "cusparseCreate"))(&x);
      printf(" libraries %.3f joined %.3f runtime %.3f handles %.3f", libs, joined, f, now() - t0);
    }
    finish();
  }
#endif
  return 0;
}
