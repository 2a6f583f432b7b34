#include "actors/gpu_bench_actor.hpp"

#include "actors/messages.hpp"
#include "engine/task.hpp"
#include "gpu/vendor_libraries.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <sstream>

namespace ks::actors {

namespace console = report::console;

namespace {

using clock_type = std::chrono::steady_clock;

// Returns a failure's message with the verification details a repairer needs.
std::string describe_failure(const gpu::failure& f) {
  std::ostringstream out;
  out << f.message;
  if (f.return_code)
    out << " (ks_forward returned " << *f.return_code << ")";
  if (!f.cuda_error.empty())
    out << " [" << f.cuda_error << "]";
  if (f.verify) {
    const gpu::verify_result& v = *f.verify;
    if (v.input_changed) {
      out << "; the candidate wrote to input " << v.bad_output;
    } else if (!v.bad_output.empty()) {
      out << "; output " << v.bad_output << ": " << v.bad_count << " elements out of tolerance";
      if (v.nan_count > 0)
        out << " (" << v.nan_count << " NaN: unwritten?)";
      out << ", first at flat index " << v.first_bad_index << ": expected " << v.expected
          << ", got " << v.actual << " (trial " << v.bad_trial << "); max abs error "
          << v.max_abs_err << ", norm-relative error " << v.norm_rel_err;
    }
  }
  return out.str();
}

struct bench_state {
  int32_t gpu = 0;
  bench_settings settings;
  task_table_ptr tasks;
  std::unique_ptr<gpu::worker_client> client;

  ~bench_state() {
    if (client)
      client->shutdown();
  }

  bool counters_said = false; ///< the console heard why this GPU's counters cannot be read

  template <class T>
  void take(bench_result& out, gpu::job_result<T>&& r) {
    if (r) {
      out.ok = true;
      out.payload = std::move(*r);
    } else {
      out.failure = static_cast<int32_t>(r.error().kind);
      out.message = describe_failure(r.error());
      out.device_lost = client->device_lost();
      if (r.error().verify)
        out.payload = *r.error().verify;
    }
  }

  bench_result run(const bench_job& job) {
    auto start = clock_type::now();
    const int32_t kills_before = client->kill_retries();
    bench_result out;
    out.kind = job.kind;
    out.gpu = gpu;
    const engine::task* t = nullptr;
    if (job.kind == bench_kind::verify || job.kind == bench_kind::time ||
        job.kind == bench_kind::profile) {
      auto i = tasks->find(job.task);
      if (i == tasks->end()) {
        out.failure = static_cast<int32_t>(gpu::failure_kind::protocol_error);
        out.message = "the bench actor knows no task named '" + job.task + "'";
        return out;
      }
      t = &i->second;
    }
    switch (job.kind) {
    case bench_kind::info:
      take(out, client->info());
      break;
    case bench_kind::calibrate:
      take(out, client->calibrate());
      break;
    case bench_kind::verify:
      take(out, client->verify(*t, job.reference, job.kernel, settings.verify));
      // A verification that ran but failed arrives as wrong_result; keep the two apart.
      if (out.ok && !out.verify().passed) {
        out.ok = false;
        out.failure = static_cast<int32_t>(gpu::failure_kind::wrong_result);
        gpu::failure f;
        f.message = "the outputs differ from the reference";
        f.verify = out.verify();
        out.message = describe_failure(f);
      }
      // Measured all the same, as bench.allow_vendor_libraries asks: said once per candidate.
      if (const auto& used = out.verify().vendor_libraries; !used.empty())
        console::line(console::stream::err,
                      "kernelskill: " + job.label + " uses " +
                          gpu::describe_vendor_libraries(used) +
                          ": measured because bench.allow_vendor_libraries = true, and labelled "
                          "so in results.json and report.md");
      break;
    case bench_kind::time:
      take(out, client->time(*t, job.kernel, job.reference, settings.timing));
      if (out.ok && out.timing().escaped) {
        out.ok = false;
        out.failure = static_cast<int32_t>(gpu::failure_kind::escaped_stream);
        out.message = "work ran outside the worker's stream (host-clock check: " +
                      std::to_string(out.timing().host_ms_per_call) + " ms per call against a " +
                      std::to_string(out.timing().median_ms) + " ms median)";
      }
      break;
    case bench_kind::profile:
      take(out, client->profile(*t, job.kernel, settings.profile, settings.verify.seed));
      // Counters a GPU refuses are said once; every diagnosis on it then rests on the timing
      // and the activity records.
      if (out.ok && !out.profile().counters && !counters_said) {
        counters_said = true;
        console::line(console::stream::err,
                      "kernelskill: GPU " + std::to_string(gpu) +
                          ": hardware counters cannot be read (" +
                          out.profile().counters_unavailable +
                          "); diagnoses use the timing and the kernels' activity records");
      }
      break;
    case bench_kind::probe:
      take(out, client->probe(settings.probe));
      break;
    case bench_kind::shutdown:
      out.failure = static_cast<int32_t>(gpu::failure_kind::protocol_error);
      out.message = "a bench actor takes no shutdown job: it shuts its worker down itself";
      break;
    }
    // A worker killed from outside is the host's fault: said, and the job was run again.
    if (client->kill_retries() > kills_before)
      console::line(console::stream::err,
                    "kernelskill: GPU " + std::to_string(gpu) + ": the bench worker was killed " +
                        "from outside during " + (job.label.empty() ? "a job" : job.label) + " (" +
                        client->last_kill() +
                        "); a fault of the host, not of the candidate: the job ran again on a "
                        "fresh worker");
    out.busy_ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
    return out;
  }
};

bench_actor::behavior_type gpu_bench(bench_actor::stateful_pointer<bench_state> self, int32_t gpu,
                                     gpu::worker_options worker, bench_settings settings,
                                     task_table_ptr tasks) {
  self->state.gpu = gpu;
  self->state.settings = settings;
  self->state.tasks = std::move(tasks);
  self->state.client = std::make_unique<gpu::worker_client>(std::move(worker));
  return {
      [self](const bench_job& job) { return self->state.run(job); },
  };
}

} // namespace

bench_actor spawn_gpu_bench(caf::actor_system& sys, int32_t gpu, gpu::worker_options worker,
                            bench_settings settings, task_table_ptr tasks, spawn_mode mode) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(gpu_bench, gpu, std::move(worker), settings, std::move(tasks));
  return sys.spawn(gpu_bench, gpu, std::move(worker), settings, std::move(tasks));
}

} // namespace ks::actors
