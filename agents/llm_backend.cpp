#include "agents/llm_backend.hpp"

#include "agents/reply_parser.hpp"
#include "base/text.hpp"
#include "engine/skill_check.hpp"

#include <algorithm>
#include <functional>

namespace ks::agents {

using engine::errc;
using engine::fail;

namespace {

/// Sends `messages` and parses the reply with `parse`; a reply that cannot be used goes back
/// once with its error, and a second failure is errc::bad_reply saying both.
template <class T>
engine::expected<T> converse(model_client& client, const prompt_library& prompts,
                             model_request request,
                             const std::function<engine::expected<T>(const std::string&)>& parse) {
  std::string first_error;
  for (int round = 0; round < 2; ++round) {
    auto reply = client.complete(request);
    if (!reply)
      return tl::unexpected(reply.error());
    auto parsed = parse(reply->text);
    if (parsed)
      return parsed;
    if (parsed.error().code() != errc::bad_reply)
      return parsed;
    if (round == 1)
      return fail(errc::bad_reply,
                  "the " + request.role + "'s reply could not be used, even when asked again: " +
                      parsed.error().message() + " (the first time: " + first_error + ")");
    first_error = parsed.error().message();
    auto follow_up = prompts.retry(first_error);
    if (!follow_up)
      return tl::unexpected(follow_up.error());
    request.messages.push_back(chat_message{"assistant", reply->text});
    request.messages.push_back(chat_message{"user", std::move(*follow_up)});
  }
  return fail(errc::internal, "unreachable");
}

} // namespace

llm_backend::llm_backend(std::string name, std::shared_ptr<model_client> client,
                         std::shared_ptr<const prompt_library> prompts,
                         engine::backend_settings settings, engine::backend_context context)
  : name_(std::move(name)), client_(std::move(client)), prompts_(std::move(prompts)),
    settings_(std::move(settings)), context_(std::move(context)) {}

std::string_view llm_backend::name() const noexcept {
  return name_;
}

engine::expected<std::vector<engine::plan>>
llm_backend::propose(const engine::planning_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a planning request without a task");
  auto messages = prompts_->planner(request, context_);
  if (!messages)
    return tl::unexpected(messages.error());
  plan_rules rules;
  for (const engine::retrieved_skill& r : request.skills)
    if (context_.skills != nullptr && context_.skills->find(r.id) != nullptr)
      rules.skills.push_back(r.id);
  rules.library = context_.skills.get();
  rules.count = std::max<int64_t>(1, request.count);
  model_request m{"planner",
                  request.subject->name,
                  request.parent,
                  std::move(*messages),
                  settings_.reply_tokens,
                  settings_.temperature};
  // Plans already tried are dropped; a reply of nothing but those is asked again, so that
  // "no idea left" is only ever said by an empty list.
  std::function<engine::expected<std::vector<engine::plan>>(const std::string&)> parse =
      [&](const std::string& text) -> engine::expected<std::vector<engine::plan>> {
    auto plans = parse_plans(text, rules);
    if (!plans || plans->empty())
      return plans;
    std::vector<engine::plan> fresh;
    std::string repeated;
    for (engine::plan& p : *plans) {
      bool tried =
          std::any_of(request.tried.begin(), request.tried.end(),
                      [&](const engine::plan_outcome& o) { return engine::same_plan(o.plan, p); });
      bool lineage = std::any_of(request.parent_lineage.begin(), request.parent_lineage.end(),
                                 [&](const engine::plan& q) { return engine::same_plan(q, p); });
      if (tried || lineage)
        repeated += (repeated.empty() ? "" : ", ") + engine::plan_key(p);
      else
        fresh.push_back(std::move(p));
    }
    if (fresh.empty())
      return fail(errc::bad_reply, "every plan was tried on this kernel already (" + repeated +
                                       "): propose others, or an empty list");
    return fresh;
  };
  return converse(*client_, *prompts_, std::move(m), parse);
}

engine::expected<std::string> llm_backend::write_code(const engine::coding_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a coding request without a task");
  if (request.plan.skill == engine::reference_plan().skill)
    return request.reference_source;
  auto messages = prompts_->coder(request, context_);
  if (!messages)
    return tl::unexpected(messages.error());
  model_request m{"coder",
                  request.subject->name,
                  request.node,
                  std::move(*messages),
                  settings_.reply_tokens,
                  settings_.temperature};
  std::function<engine::expected<std::string>(const std::string&)> parse =
      [&](const std::string& text) -> engine::expected<std::string> {
    auto code = parse_code(text);
    if (code && !request.parent_source.empty() &&
        base::trim(*code) == base::trim(request.parent_source))
      return fail(errc::bad_reply, "the file is the kernel you were asked to change, unchanged: "
                                   "apply the plan");
    return code;
  };
  return converse(*client_, *prompts_, std::move(m), parse);
}

engine::expected<engine::repair_reply> llm_backend::repair(const engine::repair_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a repair request without a task");
  auto messages = prompts_->repairer(request, context_);
  if (!messages)
    return tl::unexpected(messages.error());
  model_request m{"repairer",           request.subject->name,  request.node,
                  std::move(*messages), settings_.reply_tokens, settings_.temperature};
  std::function<engine::expected<engine::repair_reply>(const std::string&)> parse =
      [&](const std::string& text) -> engine::expected<engine::repair_reply> {
    auto fix = parse_repair(text);
    if (fix && !fix->gave_up && base::trim(fix->source) == base::trim(request.source))
      return fail(errc::bad_reply, "the fixed file is the failed one, unchanged");
    return fix;
  };
  return converse(*client_, *prompts_, std::move(m), parse);
}

engine::expected<engine::skill> llm_backend::distill(const distill_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a distill request without a task");
  auto messages = prompts_->distiller(request, context_);
  if (!messages)
    return tl::unexpected(messages.error());
  model_request m{"distiller",          request.subject->name,  request.node,
                  std::move(*messages), settings_.reply_tokens, settings_.temperature};
  std::function<engine::expected<engine::skill>(const std::string&)> parse =
      [&](const std::string& text) -> engine::expected<engine::skill> {
    auto files = parse_skill_files(text, distilled_template_file);
    if (!files)
      return tl::unexpected(files.error());
    engine::skill_files folder{"learned", std::move(*files)};
    auto loaded = engine::load_skill(folder, engine::skill_origin::learned);
    if (!loaded)
      return fail(errc::bad_reply, "the skill does not load:\n" + loaded.error().message());
    // Its expressions are evaluated before the skill is tried or stored (skill_check.hpp).
    if (auto evaluates = engine::check_skill_evaluates(*loaded); !evaluates)
      return fail(errc::bad_reply, evaluates.error().message());
    if (std::find(request.existing_ids.begin(), request.existing_ids.end(), loaded->id) !=
        request.existing_ids.end())
      return fail(errc::bad_reply, "the id '" + loaded->id + "' is taken: choose a new one");
    return loaded;
  };
  return converse(*client_, *prompts_, std::move(m), parse);
}

} // namespace ks::agents
