#include "gpu/library_watch.hpp"

#include "gpu/loaded_objects.hpp"
#include "gpu/vendor_libraries.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace ks::gpu {

namespace {

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// Returns the path of the loaded object the loader answers `name` (a DT_NEEDED entry) with,
// or `name` when none is loaded.
std::string loaded_path_of(const std::string& name) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr)
    return name;
  std::string path = name;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name != '\0')
    path = map->l_name;
  dlclose(handle); // RTLD_NOLOAD took a reference
  return path;
}

failure vendor_failure(std::string message) {
  failure f;
  f.kind = failure_kind::vendor_library;
  f.message = std::move(message);
  return f;
}

} // namespace

library_watch::library_watch() {
  seen_count_ = load_count();
  seen_ = sorted(loaded_objects());
  own_.insert(seen_.begin(), seen_.end());
}

// -- a job -------------------------------------------------------------------------------------

void library_watch::start_job(std::string kernel, vendor_policy policy) {
  kernel_ = std::move(kernel);
  policy_ = policy;
  // A kernel refused once stays refused where its code is still loaded (nothing new loads to
  // tell): as long as the policy refuses it, or it hid what it loaded.
  auto refused = refused_.find(kernel_);
  refusal_.reset();
  if (refused != refused_.end() && (policy_ == vendor_policy::refuse || refused->second.always))
    refusal_ = refused->second.why;
  if (!opened_candidate_)
    take_all_as_own();
  // Loaded between jobs, by no call of ours: no one can be blamed, and no later job trusted.
  for (const std::string& library : unaccounted_vendor_libraries()) {
    accounted_.insert(library);
    tainted_ = true;
  }
}

tl::expected<void*, failure> library_watch::open(const std::string& path) {
  const bool untrusted = !kernel_.empty() && path == kernel_;
  if (untrusted && refusal_)
    return tl::unexpected(*refusal_);
  if (untrusted && !opened_candidate_) {
    take_all_as_own();
    opened_candidate_ = true;
  }
  // Its own dependencies first, before any of its code (or theirs) runs. A file the reader
  // cannot take is left to dlopen, which says why better.
  std::vector<std::string> needed;
  if (untrusted)
    if (auto names = needed_libraries(path))
      needed = vendor_libraries_among(*names);
  if (!needed.empty() && policy_ == vendor_policy::refuse) {
    auto refused = found(path, needed, "is linked against (DT_NEEDED)", false);
    return tl::unexpected(refused ? failure{} : std::move(refused.error()));
  }

  before_call();
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  changes c = look();
  if (handle == nullptr) {
    const char* why = dlerror();
    return tl::unexpected(
        failure{failure_kind::load_error,
                "cannot load '" + path + "': " + (why != nullptr ? why : "unknown dlopen error"),
                {},
                {},
                {}});
  }
  // The kernel itself is no library: its own name is the loader's (what the list shows).
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr)
    own_.insert(map->l_name);
  own_.insert(path);
  if (!needed.empty()) {
    // Allowed: name each by the object the loader bound the name to (by file or by soname,
    // loaded now or before), found without loading anything.
    std::vector<std::string> paths;
    for (const std::string& name : needed)
      paths.push_back(loaded_path_of(name));
    if (auto ok = found(path, paths, "is linked against (DT_NEEDED)", true); !ok)
      return tl::unexpected(std::move(ok.error()));
  }
  if (auto ok = account(path, c, "when it was opened"); !ok)
    return tl::unexpected(std::move(ok.error()));
  return handle;
}

void library_watch::before_call() {
  // Cheap unless something was loaded since the last look (the worker's CUPTI, say): then
  // the list is read again, so that the call is charged only with what it loads.
  if (load_count() != seen_count_)
    (void)look();
}

tl::expected<void, failure> library_watch::after_call(const std::string& path) {
  if (refusal_ && path == kernel_)
    return tl::unexpected(*refusal_);
  if (load_count() == seen_count_)
    return {};
  return account(path, look(), "during a call of its ks_forward");
}

tl::expected<void, failure> library_watch::finish_job() {
  std::vector<std::string> left = unaccounted_vendor_libraries();
  if (left.empty())
    return {};
  if (kernel_.empty()) {
    // Only our code ran: whatever came in came from an earlier candidate's thread.
    accounted_.insert(left.begin(), left.end());
    tainted_ = true;
    return {};
  }
  return found(kernel_, left, "loaded outside its calls (by a thread of its own?)", true);
}

// -- properties --------------------------------------------------------------------------------

std::vector<std::string> library_watch::used_by(const std::string& path) const {
  auto it = used_.find(path);
  return it == used_.end() ? std::vector<std::string>{} : it->second;
}

// -- the accounting ----------------------------------------------------------------------------

void library_watch::take_all_as_own() {
  // Until the first candidate is opened only our code has run: whatever it loaded (the CUDA
  // runtime's driver, a profiler's injection library through CUDA_INJECTION64_PATH) is ours.
  for (const std::string& name : loaded_objects())
    own_.insert(name);
}

tl::unexpected<failure> library_watch::refuse(const std::string& path, failure f, bool always) {
  refused_[path] = {f, always};
  if (path == kernel_)
    refusal_ = f;
  return tl::unexpected(std::move(f));
}

library_watch::changes library_watch::look() {
  uint64_t count = load_count();
  std::vector<std::string> now = sorted(loaded_objects());
  changes c;
  std::set_difference(now.begin(), now.end(), seen_.begin(), seen_.end(),
                      std::back_inserter(c.added));
  // Every object mapped since the last look is either still there or was unloaded again.
  uint64_t mapped = count - seen_count_;
  if (mapped > c.added.size())
    c.vanished = static_cast<int64_t>(mapped - c.added.size());
  seen_ = std::move(now);
  seen_count_ = count;
  return c;
}

std::vector<std::string> library_watch::unaccounted_vendor_libraries() const {
  std::vector<std::string> out;
  for (const std::string& name :
       vendor_libraries_among(seen_count_ == load_count() ? seen_ : sorted(loaded_objects())))
    if (own_.count(name) == 0 && accounted_.count(name) == 0)
      out.push_back(name);
  return out;
}

tl::expected<void, failure> library_watch::account(const std::string& path, const changes& c,
                                                   const std::string& when) {
  const bool untrusted = !kernel_.empty() && path == kernel_;
  if (!untrusted) {
    // Ours (the reference): what it brings in is the worker's from now on.
    own_.insert(c.added.begin(), c.added.end());
    return {};
  }
  std::vector<std::string> vendor;
  for (const std::string& name : vendor_libraries_among(c.added))
    if (own_.count(name) == 0)
      vendor.push_back(name);
  if (c.vanished > 0) {
    accounted_.insert(vendor.begin(), vendor.end());
    tainted_ = true;
    return refuse(
        path,
        vendor_failure("the candidate '" + path + "' loaded " + std::to_string(c.vanished) +
                       " shared object(s) " + when + " and unloaded them before it returned" +
                       (vendor.empty() ? std::string()
                                       : " (besides " + describe_vendor_libraries(vendor) +
                                             ", which it kept)") +
                       ": nothing can tell which libraries they were, so it is refused "
                       "whatever bench.allow_vendor_libraries says"),
        true);
  }
  if (vendor.empty())
    return {};
  return found(path, vendor, "loaded " + when, true);
}

tl::expected<void, failure> library_watch::found(const std::string& path,
                                                 const std::vector<std::string>& libraries,
                                                 const std::string& how, bool in_process) {
  if (in_process) {
    accounted_.insert(libraries.begin(), libraries.end());
    tainted_ = true;
  }
  if (policy_ == vendor_policy::refuse) {
    failure f = vendor_failure(
        "the candidate '" + path + "' uses " +
        (libraries.size() == 1 ? std::string("a vendor library: ") : "vendor libraries: ") +
        describe_vendor_libraries(libraries) + ", which it " + how +
        "; only kernels of its own count (bench.allow_vendor_libraries = true, or eval "
        "--allow-vendor-libraries, measures it and labels its result instead)");
    // Only named by DT_NEEDED, nothing of it is loaded: the next opening reads it again.
    if (!in_process)
      return tl::unexpected(std::move(f));
    return refuse(path, std::move(f), false);
  }
  std::vector<std::string>& used = used_[path];
  for (const std::string& library : libraries)
    if (std::find(used.begin(), used.end(), library) == used.end())
      used.push_back(library);
  return {};
}

} // namespace ks::gpu
