#pragma once

// The bench worker's account of the shared objects in its process (issue 27, "only our
// kernels count"): which libraries each kernel it opened brought in, so that a candidate that
// reaches cuBLAS, cuDNN or any other vendor library (gpu/vendor_libraries.hpp) is refused,
// or, where the job allows them, labelled with the libraries it used.
//
// Method. The watch starts with the objects loaded in the worker before any candidate (the
// worker's own: what it linked, the driver, a profiler's injection library). A job names its
// untrusted kernel: the candidate of a verify job, the kernel of a time or profile job, unless that
// is the job's reference, which is ours. Then:
//
//   - open(): before a candidate is opened, its DT_NEEDED entries are read from the file
//     (gpu/loaded_objects.hpp): one linked against a vendor library is refused before any
//     of its code runs, even if that library is in the process already. After dlopen, the
//     objects its opening brought in (its dependencies, what its constructors loaded).
//   - before_call() and after_call() around every call of ks_forward: the loader's counter
//     of mapped objects is read before and after (one callback); only when it moved are the
//     loaded objects listed and compared. An object that was mapped during the call and is
//     gone at its end was unloaded to hide it: the candidate is refused whatever the policy
//     says, for nothing can tell what it was.
//   - finish_job(): every vendor library in the process that is not the worker's own and
//     not accounted for is blamed on the job's candidate (a thread of its own may have
//     loaded it between calls).
//
// What the reference brings in is trusted: it becomes the worker's own. A vendor library
// that came in through a candidate stays in the process (nothing is unloaded), where a later
// candidate could reach it with dlopen unseen (the loader answers from what it holds). So
// once one has, the watch is tainted and the worker asks to be replaced after the job
// (response.retire): the client starts a fresh worker for the next job. A refusal on
// DT_NEEDED loads nothing, and does not taint.

#include "gpu/worker_protocol.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ks::gpu {

/// Accounts for the shared objects of the bench worker's process, kernel by kernel.
class library_watch {
public:
  /// Takes stock of the process: every object loaded now, and until the first candidate is
  /// opened, is the worker's own.
  library_watch();

  // -- a job -----------------------------------------------------------------------------------

  /// Starts a job whose untrusted kernel is the shared object `kernel` (empty: the job runs
  /// only ours), with vendor libraries treated as `policy` says. Vendor libraries that came
  /// in between jobs are blamed on no one, but taint the watch.
  void start_job(std::string kernel, vendor_policy policy);

  /// Opens `path` (dlopen, RTLD_NOW | RTLD_LOCAL) and returns its handle, checked as above
  /// when it is the job's kernel. Fails with load_error when dlopen does, and with
  /// vendor_library, naming the libraries, when the policy refuses what the kernel needs or
  /// brought in.
  [[nodiscard]] tl::expected<void*, failure> open(const std::string& path);

  /// Marks the start of a call of a kernel's ks_forward.
  void before_call();

  /// Accounts for what the call of the kernel at `path` since before_call() loaded. Fails
  /// with vendor_library when the policy refuses it (or it unloaded what it loaded).
  [[nodiscard]] tl::expected<void, failure> after_call(const std::string& path);

  /// Blames the vendor libraries in the process not yet accounted for on the job's kernel.
  /// Fails with vendor_library when the policy refuses them.
  [[nodiscard]] tl::expected<void, failure> finish_job();

  // -- properties ------------------------------------------------------------------------------

  /// Returns the vendor libraries the kernel `path` needs or loaded, as the policy allowed,
  /// in the order they were found (paths; the name it was linked by if it never loaded).
  std::vector<std::string> used_by(const std::string& path) const;

  /// Checks whether a vendor library came into the process through a candidate: the worker
  /// must be replaced once the job is answered.
  bool tainted() const noexcept { return tainted_; }

private:
  // Lists what was loaded since the last look (sorted `seen_`), and how many objects were
  // mapped and unmapped again meanwhile.
  struct changes {
    std::vector<std::string> added;
    int64_t vanished = 0;
  };
  changes look();

  // Takes every object loaded now as the worker's own (before any candidate was opened).
  void take_all_as_own();

  // Returns the vendor libraries loaded now that are neither the worker's own nor any
  // kernel's, nor accounted for already.
  std::vector<std::string> unaccounted_vendor_libraries() const;

  // Accounts for vendor libraries `libraries` of the kernel at `path`, which it `how` ("is
  // linked against", "loaded ..."); `in_process` says whether they are loaded (no: only named
  // by DT_NEEDED).
  [[nodiscard]] tl::expected<void, failure> found(const std::string& path,
                                                  const std::vector<std::string>& libraries,
                                                  const std::string& how, bool in_process);

  // Remembers that the kernel at `path` is refused with `f` (`always`: whatever the policy),
  // and returns `f`.
  tl::unexpected<failure> refuse(const std::string& path, failure f, bool always);

  // Accounts for what the kernel at `path` loaded (`c`) `when` ("during a call of ...").
  [[nodiscard]] tl::expected<void, failure> account(const std::string& path, const changes& c,
                                                    const std::string& when);

  std::set<std::string> own_;       // the worker's objects, the reference's, the kernels
  std::set<std::string> accounted_; // vendor libraries attributed, refused or unattributed
  std::map<std::string, std::vector<std::string>> used_; // kernel -> libraries allowed
  std::vector<std::string> seen_;                        // loaded at the last look, sorted
  uint64_t seen_count_ = 0;                              // the loader's count then
  struct refusal {
    failure why;
    bool always = false; // it hid what it loaded: refused whatever the policy
  };
  std::map<std::string, refusal> refused_; // kernel -> why it was refused
  std::optional<failure> refusal_;         // this job's kernel's, if refused
  std::string kernel_;                     // this job's untrusted kernel
  vendor_policy policy_ = vendor_policy::refuse;
  bool opened_candidate_ = false; // a candidate was opened: code not ours may have run
  bool tainted_ = false;
};

} // namespace ks::gpu
