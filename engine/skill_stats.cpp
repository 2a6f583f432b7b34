#include "engine/skill_stats.hpp"

#include <cmath>

namespace ks::engine {

double skill_stats::acceptance_rate() const noexcept {
  return tries > 0 ? static_cast<double>(acceptances) / static_cast<double>(tries) : 0.0;
}

double skill_stats::geomean_speedup() const noexcept {
  return acceptances > 0 ? std::exp(log_speedup_sum / static_cast<double>(acceptances)) : 0.0;
}

void add_try(skill_stats& s, const skill_try& t) {
  if (t.outcome == outcome_kind::pending)
    return;
  s.tries += 1;
  if (!t.at.empty())
    s.last_used = std::max(s.last_used, t.at);
  if (t.outcome != outcome_kind::failed && t.reference_speedup > s.best_speedup &&
      std::isfinite(t.reference_speedup)) {
    s.best_speedup = t.reference_speedup;
    s.best_template = t.template_name;
    s.best_params = t.params;
    s.best_task = t.task;
  }
  switch (t.outcome) {
  case outcome_kind::accepted: {
    s.acceptances += 1;
    // gain = 1 - child / parent, so parent / child = 1 / (1 - gain); a gain >= 1 is no time.
    double speedup = t.gain < 1 ? 1.0 / (1.0 - t.gain) : 1.0;
    if (!(speedup > 0) || !std::isfinite(speedup))
      speedup = 1.0;
    s.log_speedup_sum += std::log(speedup);
    break;
  }
  case outcome_kind::rejected:
    s.rejections += 1;
    break;
  case outcome_kind::failed:
    if (t.failure_kind == "compile_error")
      s.compile_failures += 1;
    else if (t.failure_kind == "wrong_result")
      s.wrong_results += 1;
    else
      s.other_failures += 1;
    break;
  case outcome_kind::pending:
    break;
  }
}

} // namespace ks::engine
