// Result.save(): the package's result written as the command writes its result file. The file's
// structure — which objects, their names, order and kinds, the vectors' orientation — is
// visit_result's (results/record.hpp, through write_result's HDF5 visitor); the values are the
// Result's fields (the package orders, merges and rechecks what the extension returned, and adds
// the call's own: its matrix description, checksums, command, phases).
//
//   write_result_file(path, task, fields, history)
//     fields: the Result's fields under the file's names (str, numbers, NumPy arrays; eigenvectors
//     and solution as the (n, k) blocks SciPy returns, as the dict of results.cpp gives them);
//     history: the history group's arrays. A name the schema has and `fields` lacks (or holds
//     None) is left out of the file; a field the schema does not have is not written.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"
#include "python/src/bindings.hpp"

namespace tcsolve::pyext {

namespace {

// A record of `task` in which every object of the schema is present (non-empty, sized 1 × 1),
// so that visiting it names every object a result file of that task can hold.
ResultRecord every_object(const std::string& task, bool centered) {
  ResultRecord r;
  r.task = task, r.status = "converged", r.centered = centered, r.has_sigma = true;
  r.rows = r.cols = r.right_hand_sides = 1;
  r.eigenvalues = r.singular_values = r.vectors = r.left_vectors = r.backward_errors = r.optimality = {0.0};
  r.predicted_seconds = r.peak_device_bytes = r.process_device_bytes = 1;
  for (std::string* s : {&r.job, &r.mass, &r.rhs, &r.start, &r.reorder_plan, &r.mass_checksum, &r.matrix_checksum,
                         &r.resumed_from, &r.factorization, &r.matrix_kind, &r.method_reason, &r.checkpoint})
    *s = "-";
  r.history.resize(1);
  return r;
}

// Forwards each object the visit names to `out` with the Result's value under that name.
class FieldsVisitor : public ResultVisitor {
 public:
  FieldsVisitor(const py::dict& fields, const py::dict& history, ResultVisitor& out)
      : fields_(fields), history_(history), out_(out) {}
  void attr(const std::string& name, const std::string&) override {
    if (py::object v = value(name)) out_.attr(name, cast<std::string>(name, v, "a string"));
  }
  void attr(const std::string& name, double) override {
    if (py::object v = value(name)) out_.attr(name, cast<double>(name, v, "a number"));
  }
  void attr(const std::string& name, std::int64_t) override {
    if (py::object v = value(name)) out_.attr(name, cast<std::int64_t>(name, v, "an integer"));
  }
  void dataset(const std::string& name, const std::vector<double>&) override {
    if (py::object v = value(name)) out_.dataset(name, cast<std::vector<double>>(name, v, "numbers"));
  }
  void dataset(const std::string& name, const std::vector<std::int64_t>&) override {
    if (py::object v = value(name)) out_.dataset(name, cast<std::vector<std::int64_t>>(name, v, "integers"));
  }
  // The file's [rows][cols]; eigenvectors and solution come as (n, k), the transpose.
  void dataset_2d(const std::string& name, const double*, std::int64_t, std::int64_t) override {
    py::object v = value(name);
    if (!v) return;
    if (name == "eigenvectors" || name == "solution") v = py::array(v).attr("T");
    auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(v);
    if (!a || a.ndim() != 2) throw InvalidArgument("Result." + name + ": expected a 2-D array of numbers");
    out_.dataset_2d(name, a.data(), a.shape(0), a.shape(1));
  }

 private:
  py::object value(const std::string& name) const {
    const bool nested = name.rfind("history/", 0) == 0;
    const py::dict& d = nested ? history_ : fields_;
    const py::str key(nested ? name.substr(8) : name);
    if (!d.contains(key) || d[key].is_none()) return py::object();
    return d[key];
  }
  template <class T>
  static T cast(const std::string& name, const py::object& v, const char* what) {
    try {
      if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<std::int64_t>>) {
        using E = typename T::value_type;
        auto a = py::array_t<E, py::array::c_style | py::array::forcecast>::ensure(v);
        if (a && a.ndim() == 1) return T(a.data(), a.data() + a.size());
      } else {
        return v.cast<T>();
      }
    } catch (const py::cast_error&) {
    }
    throw InvalidArgument("Result." + name + ": expected " + what + " (got " +
                          std::string(py::str(py::type::of(v).attr("__name__"))) + ")");
  }
  const py::dict &fields_, &history_;
  ResultVisitor& out_;
};

void write_result_file(const std::string& path, const std::string& task, const py::dict& fields,
                       const py::dict& history) {
  if (task != "eigs" && task != "solve" && task != "svds")
    throw InvalidArgument("task '" + task + "': expected eigs, solve or svds");
  const bool centered = fields.contains("centered") && py::str(fields["centered"]).cast<std::string>() == "yes";
  AtomicFile out(path);  // (an exception on the way: the temporary is removed, the target untouched)
  Hdf5File f = Hdf5File::create(out.temp_path());
  const std::unique_ptr<ResultVisitor> hdf5 = hdf5_visitor(f);
  FieldsVisitor v(fields, history, *hdf5);
  visit_result(every_object(task, centered), v, [] { return 0.0; });  // (names time_write: the Result's value)
  f.close();
  out.commit();
}

}  // namespace

void define_result_file(py::module_& m) {
  m.def("write_result_file", &write_result_file, py::arg("path"), py::arg("task"), py::arg("fields"),
        py::arg("history"));
}

}  // namespace tcsolve::pyext
