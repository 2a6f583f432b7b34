#include "memory/write_batch.hpp"

#include "memory/store_impl.hpp"

namespace ks::memory {

void write_batch::put_campaign(campaign_record record) {
  writes_.emplace_back(campaign_write{std::move(record)});
}

void write_batch::put_task(task_state state) {
  writes_.emplace_back(task_write{std::move(state)});
}

void write_batch::put_node(std::string task, engine::node_record node, node_detail detail) {
  writes_.emplace_back(node_write{std::move(task), std::move(node), std::move(detail)});
}

void write_batch::put_source(std::string hash, std::string text) {
  writes_.emplace_back(source_write{std::move(hash), std::move(text)});
}

void write_batch::put_outcome(std::string task, engine::node_id parent,
                              engine::plan_outcome outcome) {
  writes_.emplace_back(outcome_write{std::move(task), parent, std::move(outcome)});
}

void write_batch::put_repair(std::string task, engine::node_id branch, engine::repair_round round) {
  writes_.emplace_back(repair_write{std::move(task), branch, std::move(round)});
}

void write_batch::put_calibration(std::string uuid, std::string json) {
  writes_.emplace_back(calibration_write{std::move(uuid), std::move(json)});
}

void write_batch::add_skill_result(std::string skill, std::string family, std::string gpu,
                                   bool success, double gain) {
  writes_.emplace_back(
      skill_result{std::move(skill), std::move(family), std::move(gpu), success, gain});
}

namespace {

template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};
// C++20 deduces this without the guide; clang 14 (clang-tidy's) does not.
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

} // namespace

engine::expected<void> store::write(const write_batch& batch) {
  const impl& p = *impl_;
  return p.write([&](lmdb::txn& t) -> engine::expected<void> {
    for (const write_batch::write& w : batch.writes()) {
      auto ok = std::visit(
          overloaded{
              [&](const write_batch::campaign_write& c) { return p.put_campaign(t, c.record); },
              [&](const write_batch::task_write& c) { return p.put_task(t, c.state); },
              [&](const write_batch::node_write& c) {
                return p.put_node(t, c.task, c.node, c.detail);
              },
              [&](const write_batch::source_write& c) { return p.put_source(t, c.hash, c.text); },
              [&](const write_batch::outcome_write& c) {
                return p.put_outcome(t, c.task, c.parent, c.outcome);
              },
              [&](const write_batch::repair_write& c) {
                return p.put_repair(t, c.task, c.branch, c.round);
              },
              [&](const write_batch::calibration_write& c) {
                return p.put_calibration(t, c.uuid, c.json);
              },
              [&](const write_batch::skill_result& c) {
                return p.add_skill_result(t, c.skill, c.family, c.gpu, c.success, c.gain);
              }},
          w);
      if (!ok)
        return ok; // the transaction aborts: none of the batch is written
    }
    return {};
  });
}

} // namespace ks::memory
