#pragma once

#include "memory/store.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ks::memory {

/// Collects writes that store::write commits together: one transaction and one fsync for all
/// of them, and all or nothing. A commit costs milliseconds on a real disk (the fsync) and
/// microseconds of work, so a writer with several records at hand (a mailbox of them) should
/// batch them. The writes apply in the order they were added, each seeing the earlier ones:
/// a put_outcome of a plan already in the batch replaces it, as it would in the store.
class write_batch {
public:
  // -- member types ----------------------------------------------------------------------------

  struct campaign_write {
    campaign_record record;
  };
  struct task_write {
    task_state state;
  };
  struct node_write {
    std::string task;
    engine::node_record node;
    node_detail detail;
  };
  struct source_write {
    std::string hash;
    std::string text;
  };
  struct outcome_write {
    std::string task;
    engine::node_id parent = engine::no_node;
    engine::plan_outcome outcome;
  };
  struct repair_write {
    std::string task;
    engine::node_id branch = engine::no_node;
    engine::repair_round round;
  };
  struct calibration_write {
    std::string uuid;
    std::string json;
  };
  struct skill_result {
    std::string skill;
    std::string family;
    std::string gpu;
    bool success = false;
    double gain = 0;
  };

  /// Holds one write, as the store method of the same name takes it.
  using write = std::variant<campaign_write, task_write, node_write, source_write, outcome_write,
                             repair_write, calibration_write, skill_result>;

  // -- mutations (each as the store method of the same name) -----------------------------------

  void put_campaign(campaign_record record);
  void put_task(task_state state);
  void put_node(std::string task, engine::node_record node, node_detail detail);
  void put_source(std::string hash, std::string text);
  void put_outcome(std::string task, engine::node_id parent, engine::plan_outcome outcome);
  void put_repair(std::string task, engine::node_id branch, engine::repair_round round);
  void put_calibration(std::string uuid, std::string json);
  void add_skill_result(std::string skill, std::string family, std::string gpu, bool success,
                        double gain);

  /// Forgets every write.
  void clear() noexcept { writes_.clear(); }

  // -- queries ---------------------------------------------------------------------------------

  /// Returns the number of writes.
  int64_t size() const noexcept { return static_cast<int64_t>(writes_.size()); }

  /// Checks whether there is no write.
  bool empty() const noexcept { return writes_.empty(); }

  /// Returns the writes, in the order they were added.
  const std::vector<write>& writes() const noexcept { return writes_; }

private:
  std::vector<write> writes_;
};

} // namespace ks::memory
