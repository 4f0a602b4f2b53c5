#include "apps/batch/jobfile.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "apps/job/checkpoint.hpp"

namespace tcsolve::app {

namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void file_error(const std::string& file, int line, const std::string& msg) {
  throw InputError(file, line, msg);
}

// The options of a task plus the job-file-only keys.
void task_options(po::options_description& d, JobSpec& s, Task task) {
  add_job_options(d, s, task);
  d.add_options()("matrix", po::value(&s.matrix), "")
      ("task", po::value<std::string>()->notifier([&s](const std::string& v) { s.task = parse_task(v); }), "");
}

bool is_switch(const po::options_description& d, const std::string& key) {
  const po::option_description* o = d.find_nothrow(key, false);
  return o && o->semantic()->max_tokens() == 0;
}

// Command-line tokens for one key: "--key value", or "--key" for a true switch.
std::vector<std::string> tokens(const po::options_description& d, const std::string& key,
                                const std::string& value) {
  if (!is_switch(d, key)) return {"--" + key, value};
  if (value == "true" || value == "yes" || value == "1" || value == "on") return {"--" + key};
  if (value == "false" || value == "no" || value == "0" || value == "off") return {};
  throw UsageError("'" + key + "' expects true or false, not '" + value + "'");
}

// Whether `p` lies inside `dir`: by its name (no ".." out of it, an absolute path under it) and by
// where its folder resolves (symbolic links on the way followed; the file's own name is not: a
// link there is replaced by the atomic rename, never written through).
bool inside_folder(const fs::path& p, const fs::path& dir) {
  auto under = [](const fs::path& x, const fs::path& d) {
    const fs::path rel = x.lexically_relative(d);
    return !rel.empty() && rel != "." && *rel.begin() != "..";
  };
  const fs::path d = fs::absolute(dir).lexically_normal(), x = fs::absolute(p).lexically_normal();
  if (!under(x, d)) return false;
  std::error_code e1, e2;
  const fs::path rd = fs::weakly_canonical(d, e1), rx = fs::weakly_canonical(x.parent_path(), e2);
  return e1 || e2 || rx == rd || under(rx, rd);
}

// The key a path is compared by across jobs: the file it names (symbolic links of its folders
// resolved), as one spelling.
std::string path_key(const std::string& f) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(f, ec);
  return ec ? fs::absolute(f).lexically_normal().string() : p.string();
}

// A job's written files (result, plot, checkpoint: explicit or the automatic one) with the line
// that names each.
struct WrittenFile {
  std::string role, path, key;
  std::size_t job = 0;
  int line = 0;
};

// Every file the jobs write must be written by one job in one role: no result, plot or
// checkpoint is another's (a checkpoint is removed once its job's result is on disk, and a
// result replaced by a checkpoint is lost). InputError naming both jobs and the path. (Nor can
// one be another's temporary, "PATH.tmp-PID-HOST-XXXXXX": results and checkpoints end in .h5 or
// .hdf5, plots in .svg, a temporary in six letters and digits.)
void check_written_files(const std::string& path, const std::vector<JobSpec>& jobs,
                         const std::vector<WrittenFile>& files) {
  std::map<std::string, std::size_t> first;  // key -> its first entry
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto [it, fresh] = first.try_emplace(files[i].key, i);
    if (fresh) continue;
    const WrittenFile &a = files[i], &b = files[it->second];
    const std::string whose = a.job == b.job ? "its own " + b.role : "the " + b.role + " of job '" + jobs[b.job].name + "'";
    file_error(path, a.line,
               "job." + jobs[a.job].name + ": " + a.role + " " + a.path + " is also " + whose +
                   format(" (line %d)", b.line) +
                   (a.role == "automatic checkpoint" ? "; give the job another 'checkpoint = FILE.h5'" : ""));
  }
}

// Every key a job file may hold: every task's options and the file's own (task, matrix).
void add_all_keys(po::options_description& all, JobSpec (&scratch)[3]) {
  task_options(all, scratch[0], Task::eigs);
  for (const Task t : {Task::solve, Task::svds}) {
    po::options_description other;
    add_job_options(other, scratch[t == Task::solve ? 1 : 2], t);
    for (const auto& o : other.options())
      if (!all.find_nothrow(o->long_name(), false)) all.add(o);
  }
}

// One [job.NAME] section read into a spec, the lines of its keys kept for the messages.
class JobBuilder {
 public:
  JobBuilder(const std::string& path, const JobFile& jf, const JobSection& js, const OutputPlace& place)
      : path_(path), jf_(jf), js_(js), place_(place), where_("job." + js.name + ": ") {}
  JobSpec build();
  int line_of(const char* key) const { return merged_.count(key) ? merged_.at(key).line : js_.line; }

 private:
  Task task() const;
  void merge_keys(const po::options_description& d);
  void parse_keys(Task task, po::options_description& d);
  void place_outputs();
  void validate() const;

  const std::string& path_;
  const JobFile& jf_;
  const JobSection& js_;
  const OutputPlace& place_;
  const std::string where_;
  std::map<std::string, Entry> merged_;  // the keys that apply, with their lines
  JobSpec s_;
};

Task JobBuilder::task() const {
  if (!js_.keys.count("task") && !jf_.defaults.count("task"))
    file_error(path_, js_.line, where_ + "no 'task' (eigs, solve or svds)");
  const Entry& e = js_.keys.count("task") ? js_.keys.at("task") : jf_.defaults.at("task");
  try {
    return parse_task(e.value);
  } catch (const UsageError& ex) {
    file_error(path_, e.line, where_ + ex.what());
  }
}

// Defaults first, then the job's own keys; defaults for the other task are ignored, a key of the
// other task in the job's section is an error.
void JobBuilder::merge_keys(const po::options_description& d) {
  for (const auto& [k, e] : jf_.defaults)
    if (d.find_nothrow(k, false)) merged_[k] = e;
  for (const auto& [k, e] : js_.keys) {
    if (!d.find_nothrow(k, false))
      file_error(path_, e.line, where_ + "'" + k + "' does not apply to task " + to_string(s_.task));
    merged_[k] = e;
  }
}

// The keys parsed as the task's options (their choices by their notifiers): one at a time first,
// so that a bad value names its line, then all of them into the spec.
void JobBuilder::parse_keys(Task task, po::options_description& d) {
  std::vector<std::string> args;
  for (const auto& [k, e] : merged_) {
    try {
      JobSpec probe;
      po::options_description pd;
      task_options(pd, probe, task);
      po::variables_map vm;
      po::store(po::command_line_parser(tokens(pd, k, e.value)).options(pd).run(), vm);
      po::notify(vm);
    } catch (const po::error& ex) {
      file_error(path_, e.line, where_ + ex.what());
    } catch (const UsageError& ex) {
      file_error(path_, e.line, where_ + ex.what());
    }
    auto t = tokens(d, k, e.value);
    args.insert(args.end(), t.begin(), t.end());
  }
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
}

// out, plot and checkpoint: relative to --output-dir, and inside it.
void JobBuilder::place_outputs() {
  const std::string& outdir = place_.dir;
  for (auto [key, p] : {std::pair<const char*, std::string*>{"out", &s_.out}, {"plot", &s_.plot},
                        {"checkpoint", &s_.checkpoint}}) {
    if (p->empty()) continue;
    if (!outdir.empty() && fs::path(*p).is_relative()) *p = (fs::path(outdir) / *p).string();
    if (!place_.allow_outside && !inside_folder(*p, outdir.empty() ? "." : outdir))
      file_error(path_, line_of(key),
                 where_ + key + " " + *p + " is outside the output folder " +
                     (outdir.empty() ? "(the current folder)" : outdir) +
                     " (--allow-outside-output-dir lets a job file write there)");
  }
}

// validate_job, naming the line of the offending key when the message starts with "--key".
void JobBuilder::validate() const {
  try {
    validate_job(s_);
  } catch (const UsageError& ex) {
    int line = js_.line;
    const std::string msg = ex.what();
    if (msg.rfind("--", 0) == 0) {
      const std::string k = msg.substr(2, msg.find_first_of(" :'", 2) - 2);
      if (merged_.count(k)) line = merged_.at(k).line;
    }
    file_error(path_, line, where_ + msg);
  }
}

JobSpec JobBuilder::build() {
  const Task t = task();
  s_.name = js_.name;
  s_.task = t;
  po::options_description d;
  task_options(d, s_, t);
  merge_keys(d);
  parse_keys(t, d);
  if (s_.matrix.empty()) file_error(path_, js_.line, where_ + "no 'matrix'");
  if (s_.out.empty()) s_.out = s_.name + ".h5";
  place_outputs();
  validate();
  return s_;
}

}  // namespace

JobFile read_job_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the job file");
  JobFile jf;
  std::map<std::string, Entry>* section = nullptr;
  std::set<std::string> seen;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = raw;
    if (auto h = s.find('#'); h != std::string::npos) s = s.substr(0, h);
    s = trim(s);
    if (s.empty()) continue;
    if (s.front() == '[') {
      if (s.back() != ']') file_error(path, line, "unterminated section header '" + s + "'");
      const std::string name = trim(s.substr(1, s.size() - 2));
      if (!seen.insert(name).second) file_error(path, line, "section [" + name + "] appears twice");
      if (name == "defaults") {
        section = &jf.defaults;
      } else if (name.rfind("job.", 0) == 0 && name.size() > 4) {
        const std::string job = name.substr(4);
        for (char c : job)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            file_error(path, line, "job name '" + job + "' may hold only letters, digits, '_', '-' and '.'");
        jf.jobs.push_back({job, line, {}});
        section = &jf.jobs.back().keys;
      } else {
        file_error(path, line, "unknown section [" + name + "] (expected [defaults] or [job.NAME])");
      }
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) file_error(path, line, "expected 'key = value', found '" + s + "'");
    const std::string key = trim(s.substr(0, eq)), value = trim(s.substr(eq + 1));
    if (key.empty()) file_error(path, line, "missing key before '='");
    if (!section) file_error(path, line, "'" + key + "' outside a section ([defaults] or [job.NAME])");
    if (section->count(key)) file_error(path, line, "'" + key + "' given twice in this section");
    (*section)[key] = {value, line};
  }
  if (jf.jobs.empty()) throw InputError(path, 0, "no [job.NAME] section: nothing to run");
  return jf;
}

std::vector<JobSpec> build_jobs(const std::string& path, const JobFile& jf, const OutputPlace& place) {
  po::options_description all;
  JobSpec scratch[3];
  add_all_keys(all, scratch);
  auto check_known = [&](const std::map<std::string, Entry>& keys) {
    for (const auto& [k, e] : keys)
      if (!all.find_nothrow(k, false))
        file_error(path, e.line,
                   "unknown key '" + k + "' (see 'tcsolve eigs --help', 'tcsolve solve --help', 'tcsolve svds --help')");
  };
  check_known(jf.defaults);
  std::vector<JobSpec> jobs;
  std::vector<WrittenFile> written;
  for (const JobSection& js : jf.jobs) {
    check_known(js.keys);
    JobBuilder b(path, jf, js, place);
    const JobSpec s = b.build();
    const std::size_t j = jobs.size();
    written.push_back({"output", s.out, path_key(s.out), j, b.line_of("out")});
    if (!s.plot.empty()) written.push_back({"plot", s.plot, path_key(s.plot), j, b.line_of("plot")});
    const std::string ck = s.checkpoint.empty() ? checkpoint_path_for(s.out) : s.checkpoint;
    written.push_back({s.checkpoint.empty() ? "automatic checkpoint" : "checkpoint", ck, path_key(ck), j,
                       b.line_of(s.checkpoint.empty() ? "out" : "checkpoint")});
    jobs.push_back(s);
  }
  check_written_files(path, jobs, written);
  return jobs;
}
}  // namespace tcsolve::app
