#pragma once

namespace ks::report {

class markup;
struct axis;
struct trace_job;
struct trace_run;
struct dry_run_task;

} // namespace ks::report
