// The dry run of one task, step by step (each step starts when the one before answered):
//
//   warnings:  the manifest's (a hand-written reference beside a family's params, tensors
//              the GPU cannot hold), printed, no failure
//   reference: compile it           -> fails the task when it does not compile
//   planner:   the first K plans    -> fails the task when the planner fails
//   per plan:  code it, write it to <folder>/<n>_<plan>.cu, compile it
//              (the coder failing fails the task; nvcc failing is reported, not a failure)
//
// Every step prints its line to stdout at once (through the console, above the progress
// display), and the lines are kept for the task_report. A stop ends the actor without waiting
// for the answers in flight; they go nowhere.

#include "actors/dry_run_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/plan.hpp"
#include "engine/search_tree.hpp"
#include "engine/task_warnings.hpp"
#include "gpu/compiler.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fstream>
#include <sstream>

namespace ks::actors {

namespace console = report::console;

namespace {

namespace fs = std::filesystem;
using engine::node_status;

// Returns `path` relative to the working directory when it lies below it: shorter to read and
// still a path a terminal or an editor opens.
std::string shown(const fs::path& path) {
  std::error_code ec;
  fs::path base = fs::current_path(ec);
  if (!ec) {
    fs::path relative = path.lexically_relative(base);
    if (!relative.empty() && *relative.begin() != "..")
      return relative.string();
  }
  return path.string();
}

// Returns `key` as part of a file name: letters, digits and "_=.-" kept, the rest '_'.
std::string file_part(const std::string& key) {
  std::string out;
  for (char c : key) {
    bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '=' || c == '.' || c == '-';
    out += keep ? c : '_';
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out.size() > 80 ? out.substr(0, 80) : out;
}

std::string without_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

std::string first_line(const std::string& text) {
  // nvcc's first line is often blank or a note: the first line that says "error" is the one.
  std::istringstream in(text);
  std::string line;
  std::string first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty())
      first = line;
    if (line.find("error") != std::string::npos)
      return line;
  }
  return first;
}

struct candidate {
  engine::plan plan;
  std::string key;  ///< the plan's key: "launch_params(KS_BLOCK_THREADS=128)"
  std::string name; ///< "candidate 2"
  fs::path file;
  node_status status = node_status::planned;
};

struct dry_run_state {
  using pointer = supervisor_actor::stateful_pointer<dry_run_state>;

  pointer self = nullptr;
  dry_run_setup setup;
  const engine::task* subject = nullptr;
  std::string reference_source;
  std::string reference_name; ///< how messages name the reference (the file nvcc's lines are in)
  caf::typed_response_promise<task_report> promise;
  std::string phase = "waiting";
  std::vector<candidate> candidates;
  node_status reference_status = node_status::coded;
  int64_t pending = 0; ///< candidates not yet compiled (or failed)
  std::vector<std::string> lines;
  bool started = false;
  bool finished = false;
  bool interrupted = false;
  std::string failure; ///< why the task could not run; empty when it could

  // -- steps ---------------------------------------------------------------------------------

  caf::result<task_report> start() {
    if (started)
      return make_actor_error(actor_errc::internal, setup.task + " is already running");
    started = true;
    // A task that cannot start answers at once; the promise is for the steps that follow.
    auto cannot_start = [this](const std::string& why) -> caf::result<task_report> {
      failure = why;
      say("cannot run: " + why);
      finished = true;
      self->quit();
      return report();
    };
    if (interrupted) {
      finished = true;
      self->quit();
      return report();
    }
    auto found = setup.tasks->find(setup.task);
    if (found == setup.tasks->end())
      return cannot_start("no task named '" + setup.task + "'");
    subject = &found->second;
    // Before a GPU is needed: what a campaign would only learn on the GPU host.
    for (const engine::task_warning& w : engine::task_warnings(*subject, setup.gpu))
      say(engine::located(shown(subject->manifest_path), w));
    auto source = engine::read_reference(*subject);
    if (!source)
      return cannot_start("cannot read its reference " + shown(subject->reference_path));
    reference_source = std::move(*source);
    reference_name = shown(subject->reference_path);
    std::error_code ec;
    fs::create_directories(setup.folder, ec);
    if (ec)
      return cannot_start("cannot create " + shown(setup.folder) + ": " + ec.message());
    // A reference rendered from its family's template is written beside the candidates, so
    // that nvcc's lines point into a file one can open.
    if (!subject->reference_source.empty()) {
      fs::path rendered = setup.folder / "reference.cu";
      std::ofstream out(rendered, std::ios::binary | std::ios::trunc);
      out << reference_source;
      if (out)
        reference_name = shown(rendered);
    }
    promise = self->make_response_promise<task_report>();
    compile_reference();
    return promise;
  }

  void compile_reference() {
    phase = "compiling";
    self->request(setup.team.compiler, caf::infinite,
                  compile_job{setup.task + "#0", reference_source})
        .then(
            [this](compile_done& c) {
              if (finished)
                return;
              reference_status = c.ok ? node_status::compiled : node_status::compile_failed;
              if (!c.ok) {
                fail("its reference " + reference_name + " does not compile for " + setup.arch +
                     ":\n" +
                     without_trailing_newlines(
                         gpu::name_source_in_diagnostics(c.diagnostics, reference_name)));
                return;
              }
              say(std::string("reference compiled for ") + setup.arch +
                  (c.cached ? " (cached)" : ""));
              plan();
            },
            [this](caf::error& e) { fail("cannot compile its reference: " + describe(e)); });
  }

  void plan() {
    phase = "planning";
    plan_request request;
    request.task = setup.task;
    request.parent = 0;
    request.parent_lineage = {engine::reference_plan()};
    request.parent_source = reference_source;
    request.count = setup.count;
    self->request(setup.team.planners.front(), caf::infinite, std::move(request))
        .then(
            [this](plan_reply& r) {
              if (finished)
                return;
              if (static_cast<int64_t>(r.plans.size()) > setup.count)
                r.plans.resize(static_cast<size_t>(setup.count));
              if (r.plans.empty()) {
                say("the planner has no plan for the reference: a campaign would time the "
                    "reference and stop");
                finish();
                return;
              }
              say("the planner proposes " + std::to_string(r.plans.size()) +
                  (r.plans.size() == 1 ? " plan" : " plans") +
                  " for the first expansion (a campaign verifies and times the reference, "
                  "then each candidate that compiles)");
              for (size_t i = 0; i < r.plans.size(); ++i) {
                candidate c;
                c.key = engine::plan_key(r.plans[i]);
                c.name = "candidate " + std::to_string(i + 1);
                c.file = setup.folder /
                         (std::to_string(i + 1) + "_" + file_part(r.plans[i].skill) + ".cu");
                c.plan = std::move(r.plans[i]);
                candidates.push_back(std::move(c));
              }
              pending = static_cast<int64_t>(candidates.size());
              phase = "coding";
              for (size_t i = 0; i < candidates.size(); ++i)
                code(i);
            },
            [this](caf::error& e) { fail("the planner failed: " + describe(e)); });
  }

  void code(size_t i) {
    const candidate& c = candidates[i];
    // Candidate i + 1 is node i + 1 of the round, for a model's transcripts.
    code_request request{setup.task,       c.plan,           {engine::reference_plan(), c.plan},
                         reference_source, reference_source, static_cast<engine::node_id>(i + 1)};
    const auto& coders = setup.team.coders;
    self->request(coders[i % coders.size()], caf::infinite, std::move(request))
        .then(
            [this, i](code_reply& r) {
              if (finished)
                return;
              candidate& c = candidates[i];
              c.status = node_status::coded;
              phase = "compiling";
              std::ofstream out(c.file, std::ios::binary | std::ios::trunc);
              out << r.source;
              if (!out) {
                fail("cannot write " + shown(c.file));
                return;
              }
              compile(i, std::move(r.source));
            },
            [this, i](caf::error& e) {
              fail("the coder failed on " + candidates[i].name + " " + candidates[i].key + ": " +
                   describe(e));
            });
  }

  void compile(size_t i, std::string source) {
    self->request(setup.team.compiler, caf::infinite,
                  compile_job{setup.task + "#" + std::to_string(i + 1), std::move(source)})
        .then(
            [this, i](compile_done& done) {
              if (finished)
                return;
              candidate& c = candidates[i];
              if (done.ok) {
                c.status = node_status::compiled;
                say(c.name + " compiled" + (done.cached ? " (cached)" : "") + ": " + shown(c.file) +
                    " " + c.key);
              } else {
                c.status = node_status::compile_failed;
                say(c.name + " does not compile (a campaign hands it to the repairer): " +
                    first_line(gpu::name_source_in_diagnostics(done.diagnostics, shown(c.file))) +
                    " " + c.key);
              }
              if (--pending == 0)
                finish();
            },
            [this, i](caf::error& e) {
              fail("cannot compile " + candidates[i].name + ": " + describe(e));
            });
  }

  // -- the end -------------------------------------------------------------------------------

  void say(const std::string& line) {
    lines.push_back(setup.task + ": " + line);
    console::line(console::stream::out, lines.back());
  }

  void fail(const std::string& why) {
    if (finished)
      return;
    failure = why;
    say("cannot run: " + why);
    finish();
  }

  void stop(const stop_msg& m) {
    if (m.kind != stop_kind::interrupt || finished)
      return;
    interrupted = true;
    if (started) // else run_task answers at once
      finish();
  }

  task_progress progress() const {
    task_progress p;
    p.name = setup.task;
    if (!finished)
      p.step = phase;
    p.phase = !finished         ? engine::task_phase::searching
              : failure.empty() ? engine::task_phase::done
                                : engine::task_phase::failed;
    p.nodes = 1 + static_cast<int64_t>(candidates.size());
    p.by_status.assign(engine::status_count, 0);
    for (const candidate& c : candidates)
      ++p.by_status[static_cast<size_t>(c.status)];
    p.budget = setup.count;
    return p;
  }

  task_report report() const {
    task_report r;
    r.name = setup.task;
    r.phase = failure.empty() ? engine::task_phase::done : engine::task_phase::failed;
    r.stop_reason = interrupted ? "interrupted" : failure.empty() ? "" : "error";
    r.stop_text = failure;
    r.nodes = 1 + static_cast<int64_t>(candidates.size());
    r.dry_run_lines = lines;
    r.dry_run_nodes = nodes();
    r.by_status = progress().by_status;
    return r;
  }

  // Returns the round as a tree: the reference, and each candidate as its child.
  std::vector<engine::node_record> nodes() const {
    std::vector<engine::node_record> out;
    engine::node_record root;
    root.id = 0;
    root.plan = engine::reference_plan();
    root.status = reference_status;
    out.push_back(std::move(root));
    for (size_t i = 0; i < candidates.size(); ++i) {
      engine::node_record n;
      n.id = static_cast<engine::node_id>(i + 1);
      n.parent = 0;
      n.depth = 1;
      n.plan = candidates[i].plan;
      n.status = candidates[i].status;
      out.push_back(std::move(n));
    }
    return out;
  }

  void finish() {
    if (finished)
      return;
    finished = true;
    promise.deliver(report());
    self->quit();
  }
};

supervisor_actor::behavior_type dry_run(dry_run_state::pointer self, dry_run_setup setup) {
  self->state.self = self;
  self->state.setup = std::move(setup);
  return {
      [self](const run_task&) { return self->state.start(); },
      [self](const stop_msg& m) { self->state.stop(m); },
      [self](const progress_request&) { return self->state.progress(); },
      // A dry run asks the planner once: a request put off for later ends as a failure
      // instead (see plan()), so there is nothing to retry.
      [](const retry_plan&) {},
      [](const retry_node&) {},
  };
}

} // namespace

supervisor_actor spawn_dry_run(caf::actor_system& sys, dry_run_setup setup) {
  return sys.spawn(dry_run, std::move(setup));
}

} // namespace ks::actors
