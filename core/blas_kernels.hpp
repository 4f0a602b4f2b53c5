// The BLAS kernels this process runs, where the BLAS is OpenBLAS built for several CPUs
// (DYNAMIC_ARCH, as Debian's): read and re-chosen through its exported functions, found with
// dlsym, so that no layer needs OpenBLAS's headers for it. Without OpenBLAS: empty, no-ops.
#pragma once
#include <string>

namespace tcsolve {

// OpenBLAS's kernel family as it chose it ("SkylakeX", "Haswell", "Prescott", ...); empty
// without OpenBLAS. The engine rates' cache key names it (factor/engine_rates.cpp).
std::string blas_core_name();

// The OPENBLAS_CORETYPE this CPU should be given, or empty: where OpenBLAS did not know the CPU
// (one newer than the OpenBLAS) and fell back to a family without AVX2 (Debian 12's 0.3.21 on the
// family 6 model 207 Xeons of the 2-core CPU and the H200 host: "Prescott", SSE3 kernels, block
// CG's dense passes 2.3× slower) while the CPU has AVX2 and FMA: "Haswell", or "SkylakeX" for an
// Intel CPU with AVX-512 F/DQ/BW/VL.
std::string blas_core_override();

// Has OpenBLAS choose its kernels again with OPENBLAS_CORETYPE = core (gotoblas_dynamic_quit/
// init); true when it then runs `core`. Only before any BLAS call and while no other thread runs
// one (apps/tcsolve.cpp: the first thing main does).
bool blas_use_core(const std::string& core);

}  // namespace tcsolve
