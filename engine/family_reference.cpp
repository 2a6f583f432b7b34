#include "engine/family_reference.hpp"

#include "base/text.hpp"
#include "engine/template_context.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace ks::engine {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view template_suffix = ".cu.mustache";

} // namespace

fs::path default_families_dir() {
  if (const char* env = std::getenv("KS_FAMILIES_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed =
        (exe.parent_path() / ".." / "share" / "kernelskill" / "families").lexically_normal();
    if (fs::is_directory(installed, ec))
      return installed;
  }
#ifdef KS_SOURCE_DIR
  return fs::path(KS_SOURCE_DIR) / "families";
#else
  return "families";
#endif
}

fs::path reference_template(const fs::path& dir, std::string_view family) {
  return dir / std::string(family) / "reference.cu.mustache";
}

namespace {

/// Renders `text` (from `file`) for `subject` with the partials of dir/common.
expected<std::string> render_with_partials(const task& subject, const std::string& text,
                                           const fs::path& file, const fs::path& dir) {
  namespace mustache = template_detail::mustache;
  mustache::data root(mustache::data::type::object);
  template_detail::silent_names silent = template_detail::put_task(root, subject);
  std::error_code ec;
  for (fs::directory_iterator it(dir / "common", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= template_suffix.size() || !name.ends_with(template_suffix))
      continue;
    std::optional<std::string> partial = base::read_text(it->path());
    if (!partial)
      return fail(errc::not_found, "cannot read the partial " + it->path().string());
    name.resize(name.size() - template_suffix.size());
    root.set(name, mustache::data(mustache::partial([body = *partial] { return body; })));
  }
  template_detail::render_outcome outcome = template_detail::render_strict(text, root, silent);
  std::string problems = template_detail::problems_of(
      outcome, "no task value or partial provides for task '" + subject.name + "'");
  if (!problems.empty())
    return fail(errc::invalid_input, file.string() + ": " + problems);
  return std::move(outcome.text);
}

} // namespace

expected<std::string> render_family_reference(const task& subject, const fs::path& dir) {
  fs::path file = reference_template(dir, subject.family);
  std::optional<std::string> text = base::read_text(file);
  if (!text)
    return fail(errc::not_found, "cannot read the reference template " + file.string() +
                                     " (the families' folder is $KS_FAMILIES_DIR, or "
                                     "share/kernelskill/families beside the program)");
  return render_with_partials(subject, *text, file, dir);
}

expected<std::string> render_family_partial(const task& subject, const fs::path& dir,
                                            std::string_view name) {
  fs::path file = dir / "common" / (std::string(name) + std::string(template_suffix));
  return render_with_partials(subject, "{{> " + std::string(name) + "}}", file, dir);
}

} // namespace ks::engine
