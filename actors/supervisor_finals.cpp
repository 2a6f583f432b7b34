// A supervisor's finals: the finalists re-timed interleaved (A B C A B C ...) before a task's
// winner is declared (see supervisor_actor.cpp for the rest of a supervisor's life).
//
// Each round is a block timed on one GPU, in the schedule's order; rounds run on as many GPUs
// as there are, the k-th started at once preferring the k-th card from the home on; a card
// left without a round takes the last slots of a round another card runs, so that the cards
// finish together. engine::align_final_samples then puts every card's samples on the home
// card's scale (per card, so a round that ended on two cards is fine), and the judge picks the
// winner. An interrupt starts no new slot; a task interrupted in its finals runs them again.
// The reference is always among the finalists (engine::with_reference), so a final runs
// whenever a candidate was accepted, and no winner is slower than the reference in its rounds.

#include "actors/actor_error.hpp"
#include "actors/supervisor_state.hpp"
#include "engine/judge.hpp"

#include <algorithm>

namespace ks::actors {

void supervisor_state::finals(const engine::stop_decision& decision) {
  state.stop_reason = engine::to_string(decision.reason);
  state.stop_text = decision.text;
  std::vector<engine::node_id> finalists =
      engine::with_reference(tree, engine::pick_finalists(tree, setup.finalists));
  if (finalists.empty()) {
    state.phase = engine::task_phase::failed;
    const engine::node_record& root = tree.root();
    if (engine::is_final(root) && root.status != engine::node_status::accepted)
      state.stop_text += ": " + details[0].message;
    store_then(put_task{state}, [this] { finish(); });
    return;
  }
  if (finalists.size() == 1) {
    engine::node_id only = finalists.front();
    store_then(put_task{state},
               [this, only] { declare_winner(only, tree.node(only).time.median_ms); });
    return;
  }
  state.phase = engine::task_phase::finals;
  auto run = std::make_shared<final_run>();
  run->finalists = std::move(finalists);
  run->rounds = setup.final_rounds;
  run->round_front.assign(static_cast<size_t>(std::max<int64_t>(run->rounds, 0)), 0);
  run->round_back.assign(static_cast<size_t>(std::max<int64_t>(run->rounds, 0)), 0);
  run->schedule =
      engine::interleaved_schedule(static_cast<int64_t>(run->finalists.size()), run->rounds);
  store_then(put_task{state}, [this, run] { compile_finalist(run); });
}

void supervisor_state::compile_finalist(std::shared_ptr<final_run> run) {
  if (run->objects.size() == run->finalists.size()) {
    start_rounds(run);
    return;
  }
  engine::node_id id = run->finalists[run->objects.size()];
  if (id == 0) {
    run->objects.push_back(reference_so);
    compile_finalist(run);
    return;
  }
  const std::string& text = source_of(tree.node(id).source_hash);
  request_then(
      setup.team.compiler, compile_job{label(id), text},
      [this, run](compile_done& r) {
        run->objects.push_back(r.ok ? r.shared_object : std::string());
        compile_finalist(run);
      },
      [this](caf::error& e) { fail_task("cannot compile a finalist: " + describe(e)); });
}

// Starts rounds while a GPU may be free for one (at most one round per GPU at a time); once
// none runs and none is left, the final is decided.
void supervisor_state::start_rounds(std::shared_ptr<final_run> run) {
  auto cards = static_cast<int64_t>(std::max<size_t>(setup.gpus.size(), 1));
  // Concurrent rounds of one final are meant for different cards (engine::final_round_card):
  // two on one card would leave the other card out of it.
  while (!interrupted && run->next_round < run->rounds && run->running < cards) {
    int32_t hint = engine::final_round_card(setup.home_gpu, run->running, cards);
    ++run->running;
    time_round(run, open_round(*run), -1, hint);
  }
  if (run->running > 0)
    return;
  if (interrupted)
    finish();
  else
    decide_final(run);
}

int64_t supervisor_state::open_round(final_run& run) {
  int64_t round = run.next_round++;
  run.round_front[static_cast<size_t>(round)] = 0;
  run.round_back[static_cast<size_t>(round)] = static_cast<int64_t>(run.finalists.size());
  return round;
}

// Times the slots of round `round` from its front, one at a time in the schedule's order: that
// is what makes the final interleaved. The round's first timing goes to any idle GPU (the home
// preferred), the others to the GPU that took it: a round is a block on one card.
void supervisor_state::time_round(std::shared_ptr<final_run> run, int64_t round, int32_t gpu,
                                  int32_t hint) {
  auto r = static_cast<size_t>(round);
  int64_t slot = run->round_front[r];
  if (interrupted || slot >= run->round_back[r]) {
    card_free(run, gpu);
    return;
  }
  ++run->round_front[r];
  time_slot(
      run, round, slot, gpu, [this, run, round](int32_t card) { time_round(run, round, card); },
      hint);
}

// GPU `gpu` finished its round: it starts the next round; with none left, it takes the last
// slot left of a round another GPU runs (align_final_samples works per card, so a round may
// end on two cards); with none of those either, it leaves the final.
void supervisor_state::card_free(std::shared_ptr<final_run> run, int32_t gpu) {
  if (!interrupted && run->next_round < run->rounds) {
    time_round(run, open_round(*run), gpu);
    return;
  }
  if (!interrupted && gpu >= 0)
    for (size_t r = 0; r < static_cast<size_t>(run->next_round); ++r)
      if (run->round_back[r] > run->round_front[r]) {
        int64_t slot = --run->round_back[r];
        time_slot(run, static_cast<int64_t>(r), slot, gpu,
                  [this, run](int32_t card) { card_free(run, card); });
        return;
      }
  --run->running;
  start_rounds(run);
}

// Times slot `slot` of round `round` on GPU `gpu` (-1: any idle one, `hint` or else the home
// preferred) and calls `then` with the GPU that timed it. A finalist that did not compile is
// skipped.
void supervisor_state::time_slot(std::shared_ptr<final_run> run, int64_t round, int64_t slot,
                                 int32_t gpu, std::function<void(int32_t)> then, int32_t hint) {
  auto n = static_cast<int64_t>(run->finalists.size());
  auto index = static_cast<size_t>(run->schedule[static_cast<size_t>(round * n + slot)]);
  if (run->objects[index].empty()) {
    // The next slot of the round keeps the hint while no card has taken the round yet.
    if (gpu < 0)
      time_round(run, round, gpu, hint);
    else
      then(gpu);
    return;
  }
  engine::placement_facts facts;
  facts.card = gpu;
  facts.round_card = hint;
  bench_job job =
      bench_job_for(engine::bench_purpose::final_round, bench_kind::time, run->objects[index],
                    label(run->finalists[index]) + " (final)", std::move(facts));
  request_then(
      setup.team.bench, std::move(job),
      [this, run, gpu, index, then](bench_result& r) {
        int32_t card = gpu >= 0 ? gpu : r.gpu;
        if (r.ok && r.timing().median_ms > 0)
          run->samples.push_back(
              engine::final_sample{static_cast<int64_t>(index), card, r.timing().median_ms});
        else
          warn("a final re-timing of " + label(run->finalists[index]) + " failed: " + r.message);
        then(card);
      },
      [this, run, gpu](caf::error& e) {
        if (!is_interrupted(e))
          warn("the bench is gone during the finals: " + describe(e));
        interrupted = true;
        card_free(run, gpu);
      });
}

void supervisor_state::decide_final(std::shared_ptr<final_run> run) {
  run->step.done(perf);
  // Rounds timed on other cards are put on the home card's scale; a finalist that failed every
  // re-timing drops out of the final.
  auto aligned = engine::align_final_samples(
      run->samples, static_cast<int64_t>(run->finalists.size()), setup.home_gpu);
  std::vector<engine::node_id> entrants;
  final_request request;
  request.torch_ms = setup.limits.torch_ms;
  for (size_t i = 0; i < run->finalists.size(); ++i) {
    if (aligned[i].empty())
      continue;
    if (run->finalists[i] == tree.root().id)
      request.reference = static_cast<int64_t>(entrants.size());
    entrants.push_back(run->finalists[i]);
    request.samples_ms.push_back(std::move(aligned[i]));
  }
  if (entrants.empty()) {
    engine::node_id best = tree.best_accepted().value_or(0);
    declare_winner(best, tree.node(best).time.median_ms);
    return;
  }
  const int64_t reference = request.reference;
  request_then(
      setup.team.judge, std::move(request),
      [this, entrants, reference](final_reply& r) {
        auto winner = static_cast<size_t>(r.winner);
        state.stop_text += "; final: " + r.reason;
        // The speedup compares two medians of the same interleaved rounds.
        double reference_ms =
            reference >= 0 ? r.timings[static_cast<size_t>(reference)].median_ms : 0;
        declare_winner(entrants[winner], r.timings[winner].median_ms, reference_ms);
      },
      [this](caf::error& e) { fail_task("the judge failed the final: " + describe(e)); });
}

void supervisor_state::declare_winner(engine::node_id winner, double median_ms,
                                      double reference_ms) {
  state.phase = engine::task_phase::done;
  state.winner = winner;
  state.winner_median_ms = median_ms;
  state.reference_median_ms = reference_ms > 0 ? reference_ms : tree.root().time.median_ms;
  state.roofline_floor_ms = floor_ms;
  store_then(put_task{state}, [this] { finish(); });
}

} // namespace ks::actors
