#pragma once

// The JSON of one node as results.json holds it, and the helpers its fields share, written
// once for the campaign's results (report_writer.cpp) and the dry run's report:
//
//   node := {"id":INT, "parent":INT|null, "depth":INT, "expansion":INT, "plan":plan,
//            "genotype":{"skill", "skill_version", "template", "params", "parent"},
//            "source_hash":STR, "status":node_status name, "disposition":name, "final":BOOL,
//            "failure_kind":STR|null, "failure_message":STR|null,
//            "timing":{"median_ms", "p10_ms", "p90_ms", "trials"}|null,
//            "fraction_of_roofline":REAL, "expansion_state":"open"|"exhausted",
//            ["resources"], ["verify"], ["vendor_libraries":[STR]], ["profile"], ["diagnosis"],
//            ["timed_gpu":INT], ["diagnostics":STR]}
//   plan := {"skill", "skill_version", "template", "description", "params":{...}, "key"}

#include "engine/plan.hpp"
#include "engine/search_tree.hpp"
#include "memory/store.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ks::report {

/// Returns the vendor libraries a node's verification (its verify JSON text) names, if any.
std::vector<std::string> vendor_libraries_of(const std::string& verify_json);

/// Returns `texts` as a JSON array of strings.
boost::json::array json_strings(const std::vector<std::string>& texts);

/// Returns `text` parsed as JSON, or as a string when it is not JSON; null when empty.
boost::json::value json_or_text(const std::string& text);

/// Returns `value` when it is above 0, else null.
boost::json::value positive_or_null(double value);

/// Returns `p` as the plan object of the grammar above.
boost::json::object plan_json(const engine::plan& p);

/// Returns `n`, with what its detail `d` adds when there is one, as the node object above.
boost::json::object node_json(const engine::node_record& n,
                              const std::optional<memory::node_detail>& d);

} // namespace ks::report
