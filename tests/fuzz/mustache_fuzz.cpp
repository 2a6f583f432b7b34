// libFuzzer target: a Mustache template from outside, checked by template_limit_error and
// rendered by kainjow's library through the bounded context (engine/bounded_context.hpp) over
// data with lists, booleans, a long string and a partial that is the template itself (so a
// template that includes {{> self}} recurses). Run by run_fuzzer.sh (ctest "fuzz: mustache").
// Whatever the text, the render ends within the budget: a larger output is a failure.

#include "engine/bounded_context.hpp"
#include "engine/mustache_limits.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mustache = kainjow::mustache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (ks::engine::template_limit_error(text))
    return 0;
  mustache::mustache tmpl(text);
  if (!tmpl.is_valid())
    return 0;
  mustache::data root(mustache::data::type::object);
  mustache::data list(mustache::data::type::list);
  for (int i = 0; i < 8; ++i) {
    mustache::data item(mustache::data::type::object);
    item.set("at", std::to_string(i));
    list.push_back(item);
  }
  root.set("l", list);
  root.set("yes", mustache::data(true));
  root.set("no", mustache::data(false));
  root.set("s", std::string(1000, 's'));
  root.set("self", mustache::data(mustache::partial([text] { return text; })));
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  ks::engine::render_budget budget(text.size());
  ks::engine::bounded_context context(&root, budget);
  try {
    std::string out = tmpl.render(context);
    if (static_cast<int64_t>(out.size()) > ks::engine::max_render_bytes)
      __builtin_trap();
  } catch (const ks::engine::render_limit_reached&) {
  }
  return 0;
}
