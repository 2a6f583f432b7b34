#include "actors/compile_pool_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "gpu/compiler.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <deque>

namespace ks::actors {

namespace {

std::string resources_json(const std::vector<gpu::kernel_resources>& kernels) {
  boost::json::array out;
  for (const gpu::kernel_resources& k : kernels)
    out.push_back(boost::json::object{{"name", k.name},
                                      {"registers", k.registers},
                                      {"shared_bytes", k.shared_bytes},
                                      {"stack_bytes", k.stack_bytes},
                                      {"spill_stores", k.spill_stores},
                                      {"spill_loads", k.spill_loads}});
  return encode::serialize(out);
}

kernel_usage usage_of(const std::vector<gpu::kernel_resources>& kernels) {
  kernel_usage u;
  for (const gpu::kernel_resources& k : kernels) {
    u.known = true;
    u.registers = std::max(u.registers, k.registers);
    u.shared_bytes = std::max(u.shared_bytes, k.shared_bytes);
    u.spill_stores = std::max(u.spill_stores, k.spill_stores);
    u.spill_loads = std::max(u.spill_loads, k.spill_loads);
  }
  return u;
}

// -- the worker: one nvcc at a time ------------------------------------------------------------

struct worker_state {
  std::shared_ptr<const gpu::compiler> compiler;
};

compiler_actor::behavior_type compile_worker(compiler_actor::stateful_pointer<worker_state> self,
                                             std::shared_ptr<const gpu::compiler> compiler) {
  self->state.compiler = std::move(compiler);
  return {
      [self](compile_job& job) {
        gpu::compile_request request;
        request.source = std::move(job.source);
        request.label = std::move(job.label);
        gpu::compile_result r = self->state.compiler->compile(request);
        compile_done out;
        out.ok = r.ok;
        out.cached = r.cached;
        out.timed_out = r.timed_out;
        out.host_fault = r.host_fault;
        out.shared_object = r.shared_object.string();
        out.diagnostics = std::move(r.diagnostics);
        out.resources_json = resources_json(r.kernels);
        out.usage = usage_of(r.kernels);
        out.wall_ms = r.wall_ms;
        return out;
      },
  };
}

// -- the pool: a queue in front of the workers -------------------------------------------------

struct pending_compile {
  compile_job job;
  caf::typed_response_promise<compile_done> promise;
};

struct pool_state {
  std::vector<compiler_actor> workers;
  std::vector<bool> busy;
  std::deque<pending_compile> queue;
};

using pool_pointer = compiler_actor::stateful_pointer<pool_state>;

void dispatch(pool_pointer self) {
  auto& st = self->state;
  for (size_t w = 0; w < st.workers.size() && !st.queue.empty(); ++w) {
    if (st.busy[w])
      continue;
    pending_compile p = std::move(st.queue.front());
    st.queue.pop_front();
    st.busy[w] = true;
    auto promise = p.promise;
    self->request(st.workers[w], caf::infinite, std::move(p.job))
        .then(
            [self, w, promise](compile_done& r) mutable {
              promise.deliver(std::move(r));
              self->state.busy[w] = false;
              dispatch(self);
            },
            [self, w, promise](caf::error& e) mutable {
              promise.deliver(make_actor_error(actor_errc::internal,
                                               "a compile worker failed: " + describe(e)));
              self->state.busy[w] = false;
              dispatch(self);
            });
  }
}

compiler_actor::behavior_type compile_pool(pool_pointer self, std::vector<compiler_actor> workers) {
  self->state.workers = std::move(workers);
  self->state.busy.assign(self->state.workers.size(), false);
  // The pool owns its workers: when it goes, they go.
  for (const compiler_actor& w : self->state.workers)
    self->link_to(w);
  return {
      [self](compile_job& job) {
        auto promise = self->make_response_promise<compile_done>();
        self->state.queue.push_back(pending_compile{std::move(job), promise});
        dispatch(self);
        return promise;
      },
  };
}

} // namespace

compiler_actor spawn_compile_pool(caf::actor_system& sys,
                                  std::shared_ptr<const gpu::compiler> compiler, int64_t workers,
                                  spawn_mode mode) {
  std::vector<compiler_actor> pool;
  for (int64_t i = 0; i < std::max<int64_t>(1, workers); ++i)
    pool.push_back(mode == spawn_mode::detached ? sys.spawn<caf::detached>(compile_worker, compiler)
                                                : sys.spawn(compile_worker, compiler));
  return sys.spawn(compile_pool, std::move(pool));
}

} // namespace ks::actors
