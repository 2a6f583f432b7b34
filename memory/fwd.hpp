#pragma once

namespace ks::memory {

struct campaign_record;
struct task_state;
struct node_detail;
struct skill_stat;
class store;
class write_batch;

} // namespace ks::memory
