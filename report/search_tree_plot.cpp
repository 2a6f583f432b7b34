// A task's search tree as a tidy drawing: the leaves take consecutive columns in the order of
// a depth-first walk (children by id, the order they were planned), each parent sits centred
// over its first and last child, and a node's row is its depth. Every node is a link to its
// row in the node table below the drawing (plan, status, time: the click), and carries the
// same words as its tooltip (the hover). The winning lineage's edges and nodes are drawn
// heavier, so the path from the reference to the winner reads at a glance.

#include "report/plot_axis.hpp"
#include "report/report_format.hpp"
#include "report/report_parts.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace ks::report {

namespace json = boost::json;

namespace {

constexpr double column_px = 22;
constexpr double row_px = 60;
constexpr double margin_px = 24;

/// A node's place in the drawing.
struct placed_node {
  const json::object* node = nullptr;
  int64_t parent = -1;
  double column = 0;
  int64_t row = 0;
};

/// Returns what a node's tooltip and table row say of it.
std::string node_words(const json::object& n, double reference_ms) {
  std::string words = "node " + std::to_string(static_cast<int64_t>(number_at(n, "id")));
  if (const json::object* plan = object_at(n, "plan")) {
    std::string key = string_at(*plan, "key");
    words += ": " + (key.empty() ? std::string("the reference") : key);
  }
  words += "; " + string_at(n, "status");
  if (double ms = median_of(n); ms > 0) {
    words += ", " + format_ms(ms);
    if (reference_ms > 0)
      words += " (" + format_ratio(reference_ms / ms, "x") + " the reference)";
  }
  if (std::string kind = string_at(n, "failure_kind"); !kind.empty())
    words += ", " + kind;
  return words;
}

} // namespace

void write_search_tree(markup& m, const json::object& task, const std::string& id) {
  std::map<int64_t, placed_node> nodes;
  std::map<int64_t, std::vector<int64_t>> children;
  for (const json::value& v : array_at(task, "nodes")) {
    if (!v.is_object())
      continue;
    const json::object& n = v.get_object();
    placed_node p;
    p.node = &n;
    const json::value* parent = n.if_contains("parent");
    p.parent = parent != nullptr && parent->is_number() ? parent->to_number<int64_t>() : -1;
    nodes[static_cast<int64_t>(number_at(n, "id"))] = p;
  }
  if (nodes.empty()) {
    m.element("p", {}, "No node yet.");
    return;
  }
  std::vector<int64_t> roots;
  for (auto& [node_id, p] : nodes) {
    if (p.parent >= 0 && nodes.count(p.parent) != 0 && p.parent != node_id)
      children[p.parent].push_back(node_id);
    else
      roots.push_back(node_id);
  }

  // Depth-first, iteratively (a deep tree must not exhaust the stack), leaves in columns.
  double next_column = 0;
  int64_t max_row = 0;
  std::set<int64_t> visited;
  struct frame_entry {
    int64_t id;
    int64_t row;
    size_t next_child;
  };
  for (int64_t root : roots) {
    std::vector<frame_entry> stack{{root, 0, 0}};
    visited.insert(root);
    while (!stack.empty()) {
      frame_entry& top = stack.back();
      placed_node& p = nodes[top.id];
      p.row = top.row;
      max_row = std::max(max_row, top.row);
      const std::vector<int64_t>& kids = children[top.id];
      if (top.next_child < kids.size()) {
        int64_t child = kids[top.next_child++];
        if (visited.insert(child).second)
          stack.push_back({child, top.row + 1, 0});
        continue;
      }
      if (kids.empty())
        p.column = next_column++;
      else
        p.column = (nodes[kids.front()].column + nodes[kids.back()].column) / 2;
      stack.pop_back();
    }
  }

  const std::vector<int64_t> lineage = lineage_of(task);
  const std::set<int64_t> on_lineage(lineage.begin(), lineage.end());
  const json::object* reference = object_at(task, "reference");
  const double reference_ms = reference != nullptr ? number_at(*reference, "median_ms") : 0;

  plot_frame frame;
  frame.left = frame.right = frame.top = frame.bottom = margin_px;
  frame.width = std::max(200.0, 2 * margin_px + std::max(next_column - 1, 0.0) * column_px);
  frame.height = 2 * margin_px + static_cast<double>(max_row) * row_px;
  auto x_of = [&](const placed_node& p) { return margin_px + p.column * column_px; };
  auto y_of = [&](const placed_node& p) { return margin_px + static_cast<double>(p.row) * row_px; };

  plot_text text;
  text.id = id + "-tree";
  text.kind = "tree";
  text.title = "Search tree of " + string_at(task, "name");
  text.description = std::to_string(nodes.size()) + " node(s), " + std::to_string(max_row + 1) +
                     " level(s), the reference at the top; colour and the node table below say "
                     "each node's status" +
                     (lineage.empty() ? std::string(".")
                                      : "; the winning lineage (" + std::to_string(lineage.size()) +
                                            " nodes) is drawn heavier.");
  m.open("div", {{"class", "scroll"}});
  m.open("figure");
  open_figure(m, text, frame);
  m.open("g", {{"class", "edges"}, {"aria-hidden", "true"}});
  for (const auto& [node_id, p] : nodes) {
    if (p.parent < 0 || nodes.count(p.parent) == 0 || p.parent == node_id)
      continue;
    const placed_node& parent = nodes[p.parent];
    bool heavy = on_lineage.count(node_id) != 0 && on_lineage.count(p.parent) != 0;
    m.element("line", {{"class", heavy ? "edge lineage" : "edge"},
                       {"x1", coordinate(x_of(parent))},
                       {"y1", coordinate(y_of(parent))},
                       {"x2", coordinate(x_of(p))},
                       {"y2", coordinate(y_of(p))}});
  }
  m.close();
  for (const auto& [node_id, p] : nodes) {
    std::string classes = "point node g-" + std::string(status_group(*p.node));
    if (on_lineage.count(node_id) != 0)
      classes += " lineage";
    m.open("a", {{"href", "#" + id + "-n" + std::to_string(node_id)}});
    m.open("g", {{"class", classes}});
    m.element("title", {}, node_words(*p.node, reference_ms));
    m.element("circle", {{"cx", coordinate(x_of(p))},
                         {"cy", coordinate(y_of(p))},
                         {"r", node_id == 0 ? "8" : "6"}});
    m.close().close();
  }
  m.close(); // svg
  m.element("figcaption", {}, text.title + ": " + text.description);
  m.close().close(); // figure, div

  std::set<std::string_view> groups;
  for (const auto& [node_id, p] : nodes)
    groups.insert(status_group(*p.node));
  m.open("ul", {{"class", "legend"}});
  for (std::string_view g : {"accepted", "rejected", "failed", "open"})
    if (groups.count(g) != 0) {
      m.open("li");
      m.element("span", {{"class", "swatch g-" + std::string(g)}, {"aria-hidden", "true"}});
      m.text(status_group_label(g));
      m.close();
    }
  if (!lineage.empty()) {
    m.open("li");
    m.element("span", {{"class", "swatch lineage-swatch"}, {"aria-hidden", "true"}});
    m.text("winning lineage");
    m.close();
  }
  m.close();

  m.open("details", {{"class", "nodes"}});
  m.element("summary", {}, "Every node: plan, status, time (a node of the tree links here)");
  m.open("table");
  m.open("thead").open("tr");
  for (std::string_view h : {"node", "parent", "plan", "status", "median", "p10 to p90", "why"})
    m.element("th", {{"scope", "col"}}, h);
  m.close().close();
  m.open("tbody");
  for (const auto& [node_id, p] : nodes) {
    const json::object& n = *p.node;
    m.open("tr", {{"id", id + "-n" + std::to_string(node_id)},
                  {"class", on_lineage.count(node_id) != 0 ? "lineage-row" : ""}});
    m.element("th", {{"scope", "row"}}, std::to_string(node_id));
    m.element("td", {}, p.parent >= 0 ? std::to_string(p.parent) : "-");
    const json::object* plan = object_at(n, "plan");
    std::string plan_words = plan != nullptr ? string_at(*plan, "key") : std::string();
    if (plan != nullptr && !string_at(*plan, "description").empty())
      plan_words += (plan_words.empty() ? "" : ": ") + string_at(*plan, "description");
    m.element("td", {}, plan_words.empty() ? "the reference" : plan_words);
    m.element("td", {{"class", "g-text-" + std::string(status_group(n))}},
              string_at(n, "status") +
                  (string_at(n, "disposition") == "incorrect" ? " (incorrect)" : ""));
    m.element("td", {}, format_ms(median_of(n)));
    const json::object* timing = object_at(n, "timing");
    m.element("td", {},
              timing != nullptr ? format_ms(number_at(*timing, "p10_ms")) + " to " +
                                      format_ms(number_at(*timing, "p90_ms"))
                                : "-");
    std::string why = string_at(n, "failure_kind");
    if (std::string message = string_at(n, "failure_message"); !message.empty())
      why += (why.empty() ? "" : ": ") + message;
    m.element("td", {{"class", "why"}}, why);
    m.close();
  }
  m.close().close().close();
}

} // namespace ks::report
