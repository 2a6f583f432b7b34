#pragma once

namespace ks::campaign {

struct run_options;
struct task_summary;
struct campaign_summary;
struct campaign_error;

} // namespace ks::campaign
