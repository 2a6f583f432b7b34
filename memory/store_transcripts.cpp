// The store's model transcripts: one record per request, its JSON text as the gateway wrote
// its file, under <task> \0 <node> \0 <seq>.
//
// The key comes from the text itself ("task", "node"), so a record can never sit under
// another request's task or node. The gateway's request ids are no key: they are only as
// unique as the transcripts folder they are numbered after (a campaign resumed without it
// counts from 1 again), and a store outlives that folder. The store numbers the transcripts of
// each (task, node) itself, the next seq after the last, read inside the write transaction
// (LMDB's single writer makes the read and the append one step, as put_repair's numbering
// does). A resumed campaign thus appends to what earlier runs kept and never replaces it.

#include "memory/store_impl.hpp"

namespace ks::memory {

namespace r = records;

using engine::errc;
using engine::expected;

expected<std::vector<transcript_record>>
store::impl::scan_transcripts(const lmdb::txn& t, const std::string& task,
                              const std::string& prefix) const {
  const size_t task_prefix = task.size() + 1;
  std::vector<transcript_record> out;
  auto ok = t.scan(
      transcripts, prefix, [&](std::string_view key, std::string_view value) -> expected<bool> {
        std::string_view rest = key.substr(task_prefix);
        size_t separator = rest.find('\0');
        std::optional<int64_t> node = separator == std::string_view::npos
                                          ? std::nullopt
                                          : r::parse_node_key(rest.substr(0, separator));
        std::optional<int64_t> seq =
            node ? r::parse_number_key(rest.substr(separator + 1)) : std::nullopt;
        if (!node || !seq)
          return tl::unexpected(
              corrupt(r::transcripts_db, key, "the key is not <task>/<node>/<seq>"));
        auto body = open(r::transcripts_db, key, value);
        if (!body)
          return tl::unexpected(body.error());
        auto fields = r::decode_transcript(*body);
        if (!fields)
          return tl::unexpected(corrupt(r::transcripts_db, key, fields.error()));
        if (fields->store_task() != task || fields->node != *node)
          return tl::unexpected(corrupt(r::transcripts_db, key,
                                        "holds the transcript of task '" + fields->store_task() +
                                            "', node " + std::to_string(fields->node)));
        out.push_back(transcript_record{task, *node, *seq, std::string(*body)});
        return true;
      });
  if (!ok)
    return tl::unexpected(ok.error());
  return out;
}

expected<void> store::impl::put_transcript(lmdb::txn& t, const std::string& json) const {
  auto fields = r::decode_transcript(json);
  if (!fields)
    return engine::fail(errc::invalid_input,
                        "not a model transcript the store can keep: " + fields.error());
  const std::string task = fields->store_task();
  if (auto ok = detail::check_name("a transcript's task", task); !ok)
    return ok;
  const std::string prefix = r::join(task, r::node_key(fields->node), "");
  std::optional<int64_t> last;
  auto ok =
      t.scan(transcripts, prefix, [&](std::string_view key, std::string_view) -> expected<bool> {
        last = r::parse_number_key(key.substr(prefix.size()));
        if (!last)
          return tl::unexpected(corrupt(r::transcripts_db, key, "the key holds no sequence"));
        return true;
      });
  if (!ok)
    return ok;
  return put(t, transcripts, r::transcripts_db, prefix + r::number_key(last ? *last + 1 : 0), json);
}

engine::expected<void> store::put_transcript(const std::string& json) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_transcript(t, json); });
}

engine::expected<std::vector<transcript_record>> store::transcripts(const std::string& task) const {
  if (auto ok = detail::check_name("a task name", task); !ok)
    return tl::unexpected(ok.error());
  return impl_->read(
      [&](lmdb::txn& t) { return impl_->scan_transcripts(t, task, r::join(task, "")); });
}

engine::expected<std::vector<transcript_record>> store::transcripts(const std::string& task,
                                                                    engine::node_id node) const {
  if (auto ok = detail::check_name("a task name", task); !ok)
    return tl::unexpected(ok.error());
  if (node < -1)
    return engine::fail(errc::invalid_input,
                        "a transcript's node must be a node id >= 0 or -1 (none), not " +
                            std::to_string(node));
  return impl_->read([&](lmdb::txn& t) {
    return impl_->scan_transcripts(t, task, r::join(task, r::node_key(node), ""));
  });
}

} // namespace ks::memory
