#include "apps/job/inputs.hpp"

#include <cmath>

#include "apps/job/spec.hpp"
#include "core/finite.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "io/hdf5_file.hpp"
#include "io/matrix_market.hpp"
#include "solvers/random.hpp"

namespace tcsolve::app {

// Columns of length n stored in FILE.h5's DATASET as [s][n] (one row per column) or [n], as an
// n × s column-major block; `what` names them in errors ("right-hand sides", "start vectors").
std::vector<double> read_columns(const std::string& file, const std::string& dataset, std::int64_t n,
                                 const char* what, std::int64_t* s_out) {
  Hdf5File f = Hdf5File::open(file);
  if (!f.has_dataset(dataset))
    throw InputError(file, 0, format("no dataset '%s' for the %s", dataset.c_str(), what));
  std::vector<std::int64_t> dims;
  std::vector<double> data = f.read_doubles(dataset, &dims);
  std::int64_t s = 0, len = 0;
  if (dims.size() == 1) s = 1, len = dims[0];
  else if (dims.size() == 2) s = dims[0], len = dims[1];
  else throw InputError(file, 0, format("/%s: %s must be [n] or [s][n]", dataset.c_str(), what));
  if (len != n)
    throw InputError(file, 0, format("/%s: %s have length %lld but the matrix has %lld rows "
                                     "(expected [s][%lld] or [%lld])", dataset.c_str(), what,
                                     (long long)len, (long long)n, (long long)n, (long long)n));
  if (s < 1) throw InputError(file, 0, format("/%s: no %s", dataset.c_str(), what));
  // (a checkpoint holds GBs: checked on all host threads)
  if (const std::int64_t i = first_non_finite(data.data(), static_cast<std::int64_t>(data.size())); i >= 0)
    throw InputError(file, 0, format("/%s: non-finite value in the %s at column %lld, row %lld",
                                     dataset.c_str(), what, (long long)(i / len), (long long)(i % len)));
  *s_out = s;
  return data;  // [s][n] row-major == n × s column-major
}

std::vector<double> read_block(const std::string& spec, const char* dataset, std::int64_t n, const char* what,
                               std::int64_t* p_out) {
  const auto [file, ds] = split_start(spec, dataset);
  if (!ends_with(file, ".mtx") && !ends_with(file, ".mtx.gz")) return read_columns(file, ds, n, what, p_out);
  const Csr<double> m = read_matrix_market(file);
  if (m.nrows != n)
    throw InputError(file, 0, format("the %s have %lld rows but the matrix has %lld (expected an n x p array)", what,
                                     (long long)m.nrows, (long long)n));
  if (m.ncols < 1) throw InputError(file, 0, format("no %s (no columns)", what));
  std::vector<double> block(static_cast<std::size_t>(n * m.ncols), 0.0);  // n × p column-major
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t q = m.row_ptr[i]; q < m.row_ptr[i + 1]; ++q) {
      if (!std::isfinite(m.values[q]))
        throw InputError(file, 0, format("non-finite value in the %s at row %lld, column %lld", what, (long long)i,
                                         (long long)m.col_idx[q]));
      block[static_cast<std::size_t>(m.col_idx[q] * n + i)] += m.values[q];
    }
  *p_out = m.ncols;
  return block;
}

// Right-hand sides, n × s column-major on the host: "random:S" or "FILE.h5:DATASET" holding
// [s][n] (one row per right-hand side) or [n] (the spec checked by parse_rhs).
// random:S: with `materialize` false only the count is returned (the solve generates them where it
// runs: block_cg_random, the same values).
std::vector<double> load_rhs(const std::string& rhs, std::int64_t n, std::int64_t* s_out,
                             std::uint64_t seed, bool materialize) {
  const RhsSpec r = parse_rhs(rhs);
  if (r.random > 0) {
    const std::int64_t s = r.random;
    if (!materialize) {
      *s_out = s;
      return {};
    }
    // On all host threads (the values do not depend on the thread count).
    std::vector<double> b;
    resize_huge(b, static_cast<std::size_t>(n * s));  // (faulted in from all threads: 256 MB at 1M × 32)
    parallel_for(n * s, [&](std::int64_t e) {
      b[e] = detail::random_entry(seed + 1000, e % n, e / n);
    }, 1 << 15);
    *s_out = s;
    return b;
  }
  return read_columns(r.file, r.dataset, n, "right-hand sides", s_out);
}

}  // namespace tcsolve::app
