#include "actors/distiller_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "agents/llm_backend.hpp"
#include "engine/bench_placement.hpp"
#include "engine/skill_template.hpp"
#include "gpu/failure.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

namespace ks::actors {

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string first_line(const std::string& text) {
  size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

/// One distillation in progress.
struct attempt {
  caf::typed_response_promise<distill_result> promise;
  distill_task request;
  const engine::task* subject = nullptr;
  engine::skill skill;
  std::string reference_source;
  std::string candidate_source;
  std::string reference_so;
  std::string candidate_so;
  double speedup = 1;
  double candidate_ms = 0;
  int32_t gpu = -1;
};

using attempt_ptr = std::shared_ptr<attempt>;

struct distiller_state {
  using pointer = distiller_actor::stateful_pointer<distiller_state>;

  pointer self = nullptr;
  distiller_setup setup;
  std::set<std::string> learned; ///< ids taken by this campaign's learned skills

  void refuse(const attempt_ptr& a, std::string why) {
    a->promise.deliver(distill_result{false, a->skill.id, std::move(why)});
  }

  caf::result<distill_result> start(distill_task& m) {
    auto a = std::make_shared<attempt>();
    a->promise = self->make_response_promise<distill_result>();
    a->request = std::move(m);
    auto t = setup.tasks->find(a->request.task);
    if (t == setup.tasks->end())
      return make_actor_error(actor_errc::task,
                              "the distiller knows no task '" + a->request.task + "'");
    a->subject = &t->second;
    // A graph task's winner is a whole composed graph, while its skills are its main node's:
    // a skill learned from it would not render for that node's family.
    if (a->subject->graph != nullptr) {
      refuse(a, "task '" + a->request.task +
                    "' is a graph task: learning a skill from a composed graph is not supported");
      return a->promise;
    }
    self->request(setup.store, caf::infinite, get_task{a->request.task})
        .then([this, a](task_snapshot& s) { ask_model(a, std::move(s)); },
              [this, a](caf::error& e) { refuse(a, "cannot read the task: " + describe(e)); });
    return a->promise;
  }

  // Blocks this (detached) actor's thread on the model, through the gateway actor.
  void ask_model(const attempt_ptr& a, task_snapshot s) {
    std::map<engine::node_id, const engine::node_record*> by_id;
    for (const engine::node_record& n : s.nodes)
      by_id[n.id] = &n;
    auto winner = by_id.find(s.state.winner);
    auto root = by_id.find(0);
    if (!s.has_state || winner == by_id.end() || root == by_id.end() || s.state.winner == 0)
      return refuse(a, "the task has no winner but its reference");
    agents::distill_request request;
    request.subject = a->subject;
    request.node = s.state.winner;
    request.gpu_name = a->request.gpu_name;
    request.peak_gbps = a->request.peak_gbps;
    request.peak_gflops = a->request.peak_gflops;
    for (const engine::node_record* n = winner->second; n != nullptr && n->id != 0;) {
      auto parent = by_id.find(n->parent);
      double gain = parent != by_id.end() && parent->second->time.measured() && n->time.measured()
                        ? 1 - n->time.median_ms / parent->second->time.median_ms
                        : 0;
      request.lineage.insert(request.lineage.begin(), agents::lineage_step{n->plan, gain});
      n = parent == by_id.end() ? nullptr : parent->second;
    }
    auto source_of = [&s](const std::string& hash) {
      auto found = s.sources.find(hash);
      return found == s.sources.end() ? std::string() : found->second;
    };
    request.winner_source = source_of(winner->second->source_hash);
    request.reference_source = source_of(root->second->source_hash);
    if (request.winner_source.empty() || request.reference_source.empty())
      return refuse(a, "the store lacks the winner's or the reference's source");
    a->reference_source = request.reference_source;
    a->speedup =
        s.state.winner_median_ms > 0 ? s.state.reference_median_ms / s.state.winner_median_ms : 1;
    request.speedup = a->speedup;
    if (setup.skills != nullptr)
      for (const engine::skill& k : setup.skills->skills)
        request.existing_ids.push_back(k.id);
    request.existing_ids.insert(request.existing_ids.end(), learned.begin(), learned.end());
    auto skill = setup.backend->distill(request);
    if (!skill)
      return refuse(a, "the model's skill was not usable: " + skill.error().message());
    a->skill = std::move(*skill);
    render(a);
  }

  // "schema" and "compiles": its first template, at its first valid parameters, for this task.
  void render(const attempt_ptr& a) {
    if (a->skill.templates.empty())
      return refuse(a, "skill " + a->skill.id +
                           " has no template: it cannot be re-applied, "
                           "so it cannot be shown to help");
    const engine::skill_template& t = a->skill.templates.front();
    auto space = engine::space_of(t, *a->subject, a->reference_source);
    if (!space)
      return refuse(a, "skill " + a->skill.id + ": " + space.error().message());
    auto values = engine::first_valid(t, *space, *a->subject);
    if (!values || !*values)
      return refuse(a, "skill " + a->skill.id + ": no instantiation of template " + t.name +
                           " is valid for task " + a->subject->name);
    auto text = engine::render(a->skill, t, *a->subject, **values, a->reference_source);
    if (!text)
      return refuse(a, "skill " + a->skill.id + " does not render: " + text.error().message());
    a->candidate_source = std::move(*text);
    compile(a, a->reference_source, "reference", [this, a](std::string so) {
      a->reference_so = std::move(so);
      compile(a, a->candidate_source, "candidate", [this, a](std::string so) {
        a->candidate_so = std::move(so);
        verify(a);
      });
    });
  }

  void compile(const attempt_ptr& a, const std::string& source, const std::string& what,
               std::function<void(std::string)> next) {
    std::string label = a->request.task + " (learned " + a->skill.id + ", " + what + ")";
    self->request(setup.compiler, caf::infinite, compile_job{label, source})
        .then(
            [this, a, what, next](compile_done& r) {
              if (!r.ok)
                return refuse(a, "skill " + a->skill.id + "'s " + what +
                                     " does not compile: " + first_line(r.diagnostics));
              next(std::move(r.shared_object));
            },
            [this, a](caf::error& e) { refuse(a, "the compile pool failed: " + describe(e)); });
  }

  // "helped": correct, then faster than the reference beyond min_gain on one GPU.
  void verify(const attempt_ptr& a) {
    bench_job job{bench_kind::verify,
                  a->request.task,
                  a->reference_so,
                  a->candidate_so,
                  -1,
                  a->request.task + " (learned " + a->skill.id + ")"};
    job.purpose = engine::bench_purpose::learned_skill;
    self->request(setup.bench, caf::infinite, std::move(job))
        .then(
            [this, a](bench_result& r) {
              if (!r.ok)
                return refuse(
                    a, "skill " + a->skill.id + " re-applied failed verification (" +
                           std::string(gpu::to_string(static_cast<gpu::failure_kind>(r.failure))) +
                           "): " + first_line(r.message));
              time(a, a->candidate_so, -1, [this, a](double ms, int32_t gpu) {
                a->candidate_ms = ms;
                a->gpu = gpu;
                time(a, a->reference_so, gpu,
                     [this, a](double reference_ms, int32_t) { judge(a, reference_ms); });
              });
            },
            [this, a](caf::error& e) { refuse(a, "the bench failed: " + describe(e)); });
  }

  // Times `so` on GPU `gpu` (-1: any), as engine::place puts a learned skill's jobs.
  void time(const attempt_ptr& a, const std::string& so, int32_t gpu,
            std::function<void(double, int32_t)> next) {
    engine::placement_facts facts;
    facts.card = gpu;
    engine::placement where = engine::place(engine::bench_purpose::learned_skill, facts);
    bench_job job{bench_kind::time, a->request.task,
                  a->reference_so,  so,
                  where.pinned,     a->request.task + " (learned " + a->skill.id + ", timing)"};
    job.prefer = std::move(where.prefer);
    job.purpose = engine::bench_purpose::learned_skill;
    self->request(setup.bench, caf::infinite, std::move(job))
        .then(
            [this, a, next](bench_result& r) {
              if (!r.ok || !(r.timing().median_ms > 0))
                return refuse(a, "skill " + a->skill.id +
                                     " could not be timed: " + first_line(r.message));
              next(r.timing().median_ms, r.gpu);
            },
            [this, a](caf::error& e) { refuse(a, "the bench failed: " + describe(e)); });
  }

  void judge(const attempt_ptr& a, double reference_ms) {
    double gain = reference_ms / a->candidate_ms;
    if (!(a->candidate_ms * (1 + setup.min_gain) < reference_ms))
      return refuse(a, "skill " + a->skill.id + " re-applied did not beat the reference (" +
                           number(gain) + "x; it needs " + number(1 + setup.min_gain) + "x)");
    memory::stored_skill stored;
    stored.id = a->skill.id;
    stored.origin = engine::skill_origin::learned;
    stored.version = a->skill.version;
    stored.content_hash = a->skill.content_hash;
    stored.added_at = utc_now();
    stored.files = a->skill.files;
    stored.provenance = "learned from task " + a->request.task + " on " +
                        (a->request.gpu_name.empty() ? std::string("a GPU") : a->request.gpu_name) +
                        " (" + setup.arch + "): the winner was " + number(a->speedup) +
                        "x the reference; re-applied, " + number(gain) + "x; campaign " + setup.run;
    std::string id = stored.id;
    std::string provenance = stored.provenance;
    self->request(setup.store, caf::infinite, put_learned_skill{std::move(stored)})
        .then(
            [this, a, id, provenance](ack&) {
              learned.insert(id);
              a->promise.deliver(distill_result{true, id, provenance});
            },
            [this, a](caf::error& e) { refuse(a, "the skill memory refused it: " + describe(e)); });
  }
};

distiller_actor::behavior_type distiller(distiller_actor::stateful_pointer<distiller_state> self,
                                         distiller_setup setup) {
  self->state.self = self;
  self->state.setup = std::move(setup);
  return {
      [self](distill_task& m) { return self->state.start(m); },
  };
}

} // namespace

distiller_actor spawn_distiller(caf::actor_system& sys, distiller_setup setup) {
  return sys.spawn<caf::detached>(distiller, std::move(setup));
}

} // namespace ks::actors
