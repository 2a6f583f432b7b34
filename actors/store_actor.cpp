#include "actors/store_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "memory/skill_store.hpp"
#include "memory/store.hpp"
#include "memory/write_batch.hpp"
#include "report/report_writer.hpp"
#include "report/torch_baselines.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct store_state {
  std::shared_ptr<memory::store> db;
  std::shared_ptr<memory::skill_store> skills;
  std::string run;

  // Counts the tries of `results` in long-term memory, after the campaign's store committed
  // them: the ledger makes a repeat (a resumed campaign re-offering a try) count nothing, and a
  // try lost by a kill between the two commits is counted at the next start (reconcile).
  engine::expected<void> remember(const std::vector<put_skill_result>& results) {
    if (!skills)
      return {};
    for (const put_skill_result& r : results) {
      if (r.attempt.skill.empty() || r.attempt.outcome == engine::outcome_kind::pending)
        continue;
      if (auto counted = skills->record_try(run, r.attempt); !counted)
        return tl::unexpected(counted.error());
    }
    return {};
  }

  // Offers long-term memory every settled try the campaign's store holds: the outcomes of its
  // short-term memory, with the genotype of the node each made.
  engine::expected<void> reconcile(const reconcile_tries& m) {
    if (!skills)
      return {};
    auto states = db->tasks();
    if (!states)
      return tl::unexpected(states.error());
    for (const memory::task_state& state : *states) {
      auto family = m.families.find(state.name);
      if (family == m.families.end())
        continue; // a task this run does not have: its family is unknown here
      auto nodes = db->nodes(state.name);
      if (!nodes)
        return tl::unexpected(nodes.error());
      auto memory = db->short_term(state.name);
      if (!memory)
        return tl::unexpected(memory.error());
      for (const auto& [parent, outcomes] : memory->outcomes())
        for (const engine::plan_outcome& o : outcomes) {
          if (o.outcome == engine::outcome_kind::pending || o.child < 0 ||
              o.child >= static_cast<engine::node_id>(nodes->size()) || o.plan.skill.empty())
            continue;
          const engine::node_record& n = (*nodes)[static_cast<size_t>(o.child)];
          engine::skill_try t;
          t.skill = n.plan.skill;
          t.skill_version = n.plan.skill_version;
          t.template_name = n.plan.template_name;
          t.params = n.plan.params;
          t.family = family->second;
          t.arch = m.arch.empty() ? "unknown" : m.arch;
          t.task = state.name;
          t.node = n.id;
          t.parent = parent;
          t.outcome = o.outcome;
          t.failure_kind = o.failure_kind;
          t.gain = o.gain;
          if (n.time.measured() && (*nodes)[0].time.measured())
            t.reference_speedup = (*nodes)[0].time.median_ms / n.time.median_ms;
          if (auto counted = skills->record_try(run, t); !counted)
            return tl::unexpected(counted.error());
        }
    }
    return {};
  }

  static caf::result<ack> done(const engine::expected<void>& r) {
    if (!r)
      return to_caf_error(actor_errc::store, r.error());
    return ack{};
  }

  caf::result<task_snapshot> snapshot(const std::string& task) const {
    task_snapshot out;
    auto state = db->task(task);
    if (!state)
      return to_caf_error(actor_errc::store, state.error());
    if (*state) {
      out.has_state = true;
      out.state = std::move(**state);
    }
    auto nodes = db->nodes(task);
    if (!nodes)
      return to_caf_error(actor_errc::store, nodes.error());
    out.nodes = std::move(*nodes);
    auto memory = db->short_term(task);
    if (!memory)
      return to_caf_error(actor_errc::store, memory.error());
    out.outcomes = memory->outcomes();
    out.repairs = memory->repairs();
    // The sources a resume needs: parents to come (accepted nodes) and unfinished nodes.
    for (const engine::node_record& n : out.nodes) {
      bool needed = n.status == engine::node_status::accepted || !engine::is_final(n);
      if (!needed)
        continue;
      auto detail = db->detail(task, n.id);
      if (!detail)
        return to_caf_error(actor_errc::store, detail.error());
      if (*detail)
        out.details.emplace(n.id, std::move(**detail));
      if (n.source_hash.empty() || out.sources.count(n.source_hash) > 0)
        continue;
      auto text = db->source(n.source_hash);
      if (!text)
        return to_caf_error(actor_errc::store, text.error());
      if (*text)
        out.sources.emplace(n.source_hash, std::move(**text));
    }
    return out;
  }
};

store_actor::behavior_type store_fn(store_actor::stateful_pointer<store_state> self,
                                    std::shared_ptr<memory::store> db,
                                    std::shared_ptr<memory::skill_store> skills, std::string run) {
  self->state.db = std::move(db);
  self->state.skills = std::move(skills);
  self->state.run = std::move(run);
  auto& db_ = self->state.db;
  return {
      [&db_](const put_node& m) {
        return store_state::done(db_->put_node(m.task, m.node, m.detail));
      },
      [&db_](const put_source& m) { return store_state::done(db_->put_source(m.hash, m.text)); },
      [&db_](const put_outcome& m) {
        return store_state::done(db_->put_outcome(m.task, m.parent, m.outcome));
      },
      [&db_](const put_repair& m) {
        return store_state::done(db_->put_repair(m.task, m.branch, m.round));
      },
      [&db_](const put_task& m) { return store_state::done(db_->put_task(m.state)); },
      [&db_](const put_campaign& m) { return store_state::done(db_->put_campaign(m.record)); },
      [&db_](const put_calibration& m) {
        return store_state::done(db_->put_calibration(m.uuid, m.json));
      },
      [&db_](const put_transcript& m) { return store_state::done(db_->put_transcript(m.json)); },
      [self](const put_skill_result& m) {
        auto& st = self->state;
        auto ok = st.db->add_skill_result(m.skill, m.family, m.gpu, m.success, m.gain);
        if (ok)
          ok = st.remember({m});
        return store_state::done(ok);
      },
      [self](const reconcile_tries& m) { return store_state::done(self->state.reconcile(m)); },
      [self](const put_learned_skill& m) {
        if (!self->state.skills)
          return store_state::done(engine::fail(engine::errc::invalid_input,
                                                "no skill memory to keep a learned skill in"));
        return store_state::done(self->state.skills->import_skills({m.skill}, m.skill.added_at));
      },
      [self](const get_skill_stats& m) -> caf::result<skill_stats_reply> {
        if (!self->state.skills)
          return skill_stats_reply{};
        auto stats = self->state.skills->stats(m.family, m.arch);
        if (!stats)
          return to_caf_error(actor_errc::store, stats.error());
        return skill_stats_reply{std::move(*stats)};
      },
      [self, &db_](const put_batch& m) {
        memory::write_batch batch;
        for (const put_source& w : m.sources)
          batch.put_source(w.hash, w.text);
        for (const put_node& w : m.nodes)
          batch.put_node(w.task, w.node, w.detail);
        for (const put_repair& w : m.repairs)
          batch.put_repair(w.task, w.branch, w.round);
        for (const put_outcome& w : m.outcomes)
          batch.put_outcome(w.task, w.parent, w.outcome);
        for (const put_task& w : m.tasks)
          batch.put_task(w.state);
        for (const put_skill_result& w : m.skills)
          batch.add_skill_result(w.skill, w.family, w.gpu, w.success, w.gain);
        auto ok = db_->write(batch);
        if (ok)
          ok = self->state.remember(m.skills);
        return store_state::done(ok);
      },
      [self](const get_task& m) { return self->state.snapshot(m.task); },
      [&db_](const get_campaign&) -> caf::result<campaign_reply> {
        auto r = db_->campaign();
        if (!r)
          return to_caf_error(actor_errc::store, r.error());
        if (!*r)
          return campaign_reply{};
        return campaign_reply{true, std::move(**r)};
      },
      [&db_](const get_calibration& m) -> caf::result<calibration_reply> {
        auto r = db_->calibration(m.uuid);
        if (!r)
          return to_caf_error(actor_errc::store, r.error());
        if (!*r)
          return calibration_reply{};
        return calibration_reply{true, std::move(**r)};
      },
      [&db_](const write_outputs& m) {
        // The campaign's checked copy of its torch baselines (run_campaign writes it at the
        // start); one broken since then costs the columns, not the outputs.
        auto baselines = report::read_campaign_baselines(m.dir);
        const report::torch_baselines* b = baselines && *baselines ? &**baselines : nullptr;
        return store_state::done(report::write_campaign_outputs(*db_, m.dir, b));
      },
  };
}

} // namespace

store_actor spawn_store(caf::actor_system& sys, std::shared_ptr<memory::store> store,
                        spawn_mode mode, std::shared_ptr<memory::skill_store> skills,
                        std::string run) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(store_fn, std::move(store), std::move(skills), std::move(run));
  return sys.spawn(store_fn, std::move(store), std::move(skills), std::move(run));
}

} // namespace ks::actors
