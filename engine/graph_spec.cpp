#include "engine/graph_spec.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace ks::engine {

namespace {

bool identifier_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string integers_text(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

/// Returns `expression` as an operand that binds tighter than any operator: as it is when it
/// is a name, a call, an attribute or already in parentheses (nothing but names, dots and
/// bracketed groups outside brackets), else in parentheses.
std::string operand(const std::string& expression) {
  int depth = 0;
  bool atomic = !expression.empty();
  for (char c : expression) {
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if (depth == 0 && !identifier_char(c) && c != '.')
      atomic = false;
  }
  return atomic ? expression : "(" + expression + ")";
}

std::string view_torch(const graph_view& v, const std::string& of) {
  switch (v.kind) {
  case view_kind::shape:
    return operand(of) + ".reshape(" + (v.args.empty() ? "()" : integers_text(v.args)) + ")";
  case view_kind::permute:
    return operand(of) + ".permute(" + integers_text(v.args) + ")";
  case view_kind::flip:
    return operand(of) + ".flip(" + integers_text(v.args) + ")";
  case view_kind::narrow:
    return operand(of) + ".narrow(" + integers_text(v.args) + ")";
  }
  return of;
}

} // namespace

const char* to_string(view_kind kind) noexcept {
  switch (kind) {
  case view_kind::shape:
    return "shape";
  case view_kind::permute:
    return "permute";
  case view_kind::flip:
    return "flip";
  case view_kind::narrow:
    return "narrow";
  }
  return "shape";
}

const graph_view* graph_spec::find_view(std::string_view name) const noexcept {
  auto it = std::find_if(views.begin(), views.end(),
                         [name](const graph_view& v) { return v.name == name; });
  return it == views.end() ? nullptr : &*it;
}

const tensor_spec* graph_spec::find_intermediate(std::string_view name) const noexcept {
  auto it = std::find_if(intermediates.begin(), intermediates.end(),
                         [name](const tensor_spec& t) { return t.name == name; });
  return it == intermediates.end() ? nullptr : &*it;
}

double nominal_roofline_s(const task_cost& cost) noexcept {
  return std::max(cost.bytes / 3e12, cost.flops / 6e13);
}

size_t default_main_node(const std::vector<graph_node>& nodes) noexcept {
  // An elementwise or concat node is the prologue or epilogue of its neighbours: the op a
  // search can make faster is another kind, even where a pointwise pass over a larger tensor
  // would take longer at the nominal peaks (a masked scan's multiply).
  auto pointwise = [&nodes](size_t i) {
    return nodes[i].op.family == "elementwise" || nodes[i].op.family == "concat";
  };
  auto better = [&nodes, &pointwise](size_t i, size_t best) {
    bool pointwise_i = pointwise(i);
    bool pointwise_best = pointwise(best);
    if (pointwise_i != pointwise_best)
      return pointwise_best;
    return nominal_roofline_s(nodes[i].op.cost) > nominal_roofline_s(nodes[best].op.cost);
  };
  size_t best = 0;
  for (size_t i = 1; i < nodes.size(); ++i)
    if (better(i, best))
      best = i;
  return best;
}

task_cost graph_cost(const graph_spec& g, const std::vector<tensor_spec>& inputs,
                     const std::vector<tensor_spec>& outputs) {
  task_cost cost;
  for (const graph_node& n : g.nodes)
    cost.flops += n.op.cost.flops;
  for (const std::vector<tensor_spec>* tensors : {&inputs, &outputs})
    for (const tensor_spec& t : *tensors)
      cost.bytes += static_cast<double>(t.bytes());
  return cost;
}

std::string substitute_names(std::string_view expression,
                             const std::vector<std::pair<std::string, std::string>>& names) {
  std::string out;
  size_t i = 0;
  while (i < expression.size()) {
    char c = expression[i];
    if (c == '"' || c == '\'') { // a string literal, copied as it is
      size_t end = i + 1;
      while (end < expression.size() && expression[end] != c)
        end += expression[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, expression.size());
      out.append(expression.substr(i, end - i));
      i = end;
      continue;
    }
    if (!identifier_start(c) || (i > 0 && identifier_char(expression[i - 1]))) {
      out += c;
      ++i;
      continue;
    }
    size_t end = i;
    while (end < expression.size() && identifier_char(expression[end]))
      ++end;
    std::string_view word = expression.substr(i, end - i);
    size_t before = i;
    while (before > 0 && expression[before - 1] == ' ')
      --before;
    size_t after = end;
    while (after < expression.size() && expression[after] == ' ')
      ++after;
    bool attribute = before > 0 && expression[before - 1] == '.';
    bool keyword = after < expression.size() && expression[after] == '=' &&
                   (after + 1 >= expression.size() || expression[after + 1] != '=');
    auto it = std::find_if(names.begin(), names.end(),
                           [word](const auto& entry) { return entry.first == word; });
    if (it != names.end() && !attribute && !keyword)
      out += it->second;
    else
      out.append(word);
    i = end;
  }
  return out;
}

std::string graph_torch(const graph_spec& g, const std::vector<tensor_spec>& inputs,
                        const std::vector<tensor_spec>& outputs) {
  // Each name's expression over the graph's inputs, in the order names become defined.
  std::vector<std::pair<std::string, std::string>> known;
  for (const tensor_spec& t : inputs)
    known.emplace_back(t.name, t.name);
  std::map<std::string, std::string> of_output;
  auto add_views = [&] {
    // A view becomes expressible once what it is of is: views of views follow their bases.
    for (bool grew = true; grew;) {
      grew = false;
      for (const graph_view& v : g.views) {
        auto defined = [&known](const std::string& name) {
          return std::any_of(known.begin(), known.end(),
                             [&name](const auto& entry) { return entry.first == name; });
        };
        if (defined(v.name))
          continue;
        auto base = std::find_if(known.begin(), known.end(),
                                 [&v](const auto& entry) { return entry.first == v.of; });
        if (base == known.end())
          continue;
        known.emplace_back(v.name, view_torch(v, base->second));
        grew = true;
      }
    }
  };
  for (const graph_node& n : g.nodes) {
    if (n.op.torch.empty())
      return {};
    add_views();
    std::string expression = substitute_names(n.op.torch, known);
    if (expression.size() > max_graph_torch_bytes)
      return {};
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& name = n.outputs[k];
      // A node of several outputs (a reduce of several maps) gives a tuple: each its element.
      std::string mine =
          n.outputs.size() == 1 ? expression : operand(expression) + "[" + std::to_string(k) + "]";
      known.emplace_back(name, operand(mine));
      of_output[name] = mine;
      if (const graph_view* v = g.find_view(name)) { // written through a shape view
        auto root = std::find_if(outputs.begin(), outputs.end(),
                                 [v](const tensor_spec& t) { return t.name == v->root; });
        if (root == outputs.end())
          continue;
        std::string whole = operand(mine) + ".reshape(" +
                            (root->shape.empty() ? "()" : integers_text(root->shape)) + ")";
        known.emplace_back(v->root, whole);
        of_output[v->root] = whole;
      }
    }
    add_views();
  }
  std::string tuple;
  for (const tensor_spec& t : outputs)
    tuple += (tuple.empty() ? "" : ", ") + of_output[t.name];
  return outputs.size() == 1 ? tuple : "(" + tuple + ")";
}

} // namespace ks::engine
