// Warp-level tensor-core products (PTX mma.sync), one tile shape per type of A:
//   MmaTile<double>          m8n8k4 f64 (DMMA):      D(8×8) += A(8×4)·B(4×8), fp64 throughout
//   MmaTile<__half>,
//   MmaTile<__nv_bfloat16>   m16n8k16 → f32: D(16×8) += A(16×16)·B(16×8), fp32 accumulation
// Fragments (what one lane holds; lane = 4·g + t, g = lane/4, t = lane%4):
//   m8n8k4 f64   A[g][t]; B[t][g]; C[g][2t], C[g][2t+1]         (measured on H200, docs gpu.md)
//   m16n8k16     A: 4 registers of 2 halves {A[g][2t..2t+1]}, {A[g+8][2t..]}, {A[g][2t+8..]},
//                {A[g+8][2t+8..]} (one uint4); B: {B[2t][g], B[2t+1][g]}, {B[2t+8][g], B[2t+9][g]}
//                (unsigned[2]); C: c[2h + q] = C[g + 8h][2t + q]  (PTX ISA)
// In both shapes a lane's C holds rows g + 8h (h < M/8) and columns 2t + q (q < 2): kAcc = 2·M/8.
// Device code only; include from .cu files.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace tcsolve {

template <class TA>
struct MmaTile;

template <>
struct MmaTile<double> {
  static constexpr int M = 8, N = 8, K = 4;
  using Value = double;  // A's and B's element
  using AFrag = double;  // A[g][t]
  using BFrag = double;  // B[t][g]
  using Acc = double;
  static constexpr int kAcc = 2;  // C[g][2t + q]
  // c += A·B (D = C in place).
  __device__ static __forceinline__ void mma(Acc (&c)[kAcc], AFrag a, BFrag b) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
        : "+d"(c[0]), "+d"(c[1])
        : "d"(a), "d"(b));
  }
};

// The m16n8k16 shape, fp16 or bf16 (the instructions differ in their type names only).
template <class T16>
struct MmaTile16 {
  static constexpr int M = 16, N = 8, K = 16;
  using Value = T16;
  using AFrag = uint4;  // 8 values, 4 registers
  using BFrag = unsigned[2];  // 4 values, 2 registers
  using Acc = float;
  static constexpr int kAcc = 4;  // C[g + 8h][2t + q] at 2h + q
  // c += A·B (D = C in place).
  __device__ static __forceinline__ void mma(Acc (&c)[kAcc], const AFrag& a, const BFrag& b) {
    if constexpr (std::is_same_v<T16, __half>)
      asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
          "{%8, %9}, {%0, %1, %2, %3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b[0]), "r"(b[1]));
    else
      asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
          "{%8, %9}, {%0, %1, %2, %3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct MmaTile<__half> : MmaTile16<__half> {};
template <>
struct MmaTile<__nv_bfloat16> : MmaTile16<__nv_bfloat16> {};

// The tile arithmetic: a warp's 32 fragments cover A, B and C exactly, and C's layout is the one
// above (two columns a lane, rows g + 8h).
template <class TA>
constexpr bool mma_tile_fits() {
  using T = MmaTile<TA>;
  return 32 * sizeof(typename T::AFrag) == T::M * T::K * sizeof(typename T::Value) &&
         32 * sizeof(typename T::BFrag) == T::K * T::N * sizeof(typename T::Value) &&
         32 * T::kAcc == T::M * T::N && T::N == 8 && T::M % 8 == 0 && T::kAcc == 2 * (T::M / 8);
}
static_assert(mma_tile_fits<double>(), "m8n8k4 f64 fragments");
static_assert(mma_tile_fits<__half>(), "m16n8k16 f16 fragments");
static_assert(mma_tile_fits<__nv_bfloat16>(), "m16n8k16 bf16 fragments");

}  // namespace tcsolve
