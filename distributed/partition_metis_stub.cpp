// Built without METIS: only contiguous row ranges.
#include "core/error.hpp"
#include "distributed/partition.hpp"

namespace tcsolve::detail {

bool metis_available() { return false; }

std::vector<int> metis_parts(const Csr<double>&, int, std::int64_t*) {
  throw NotCompiled("tcsolve was built without METIS (libmetis-dev): --partition metis is not available");
}

}  // namespace tcsolve::detail
