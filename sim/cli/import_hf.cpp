// starfish import-hf CONFIG.json [-o model.yaml [--force]] [--seq N] [--json]: a Hugging Face
// config.json as a Starfish model file (the conversion is sim/spec/hf_import.h, shared with the
// GUI), with its parameter count and what the import decided (the sequence length first).
#include <cstdio>
#include <filesystem>

#include "sim/cli/cli.h"
#include "sim/cli/plan_export.h"
#include "sim/cost/params.h"
#include "sim/spec/hf_import.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

void usage() {
  std::printf(
      "usage: starfish import-hf CONFIG.json [-o model.yaml [--force]] [--seq N] [--json]\n"
      "  Converts a Hugging Face config.json into a Starfish model file: llama, mistral, qwen2,\n"
      "  qwen3, gemma, gemma2, gemma3_text, phi3, falcon, gpt_neox, opt, bloom, gpt2, gpt_bigcode,\n"
      "  and the mixture-of-experts families mixtral, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss.\n"
      "  CONFIG.json '-' reads standard input. Without -o the model YAML goes to standard output.\n"
      "  --seq N: the training sequence length (default 4096, never the model's maximum context;\n"
      "  capped by learned position tables). -o never overwrites a file without --force.\n"
      "  --json: the model, its parameter count and the import's notes as one JSON object.\n");
}

}  // namespace

int run_import_hf(const std::vector<std::string>& argv) {
  std::vector<std::string> normalized = argv;
  for (std::string& a : normalized)
    if (a == "-o") a = "--output";  // the short form of --output
  Args args(normalized, {"output", "seq"}, {"force", "json", "help"});
  if (args.flag("help")) {
    usage();
    return 0;
  }
  if (args.positional().size() != 1)
    throw UsageError(args.positional().empty() ? "missing CONFIG.json (a Hugging Face config file, or - for stdin)"
                                               : "unexpected argument '" + args.positional()[1] + "'");
  if (args.flag("force") && !args.get("output")) throw UsageError("--force only applies to -o");
  HfImportOptions options;
  if (auto seq = args.get("seq")) options.seq_len = parse_positive("seq", *seq);
  const std::string output = args.get("output").value_or("");
  // Refused before any work, so nothing is half-done: an existing file stays as it is.
  if (!output.empty() && !args.flag("force") && std::filesystem::exists(output))
    throw SpecError(output + ": already exists (refusing to overwrite it; --force replaces it)");
  const HfImport r = import_hf_config_file(args.positional().front(), options);
  const int64_t params = count_parameters(r.model).total;
  const std::string yaml = to_yaml(r.model);
  if (!output.empty()) save_text_file(output, yaml, args.flag("force"));
  if (args.flag("json")) {
    JsonWriter w(true);
    w.begin_object();
    w.field("name", r.model.name).field("parameters", params).field("seq_len", r.model.seq_len);
    if (!output.empty()) w.field("written", output);
    w.key("notes").begin_array();
    for (const std::string& n : r.notes) w.value(n);
    w.end_array();
    w.field("model_yaml", yaml);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }
  // The summary goes where it does not mix with the YAML: stdout with -o, else stderr.
  std::FILE* summary = output.empty() ? stderr : stdout;
  std::fprintf(summary, "%s: %s parameters (%lld), %d layers, hidden %d, seq_len %d\n", r.model.name.c_str(),
               units::human_count(static_cast<double>(params)).c_str(), static_cast<long long>(params), r.model.layers,
               r.model.hidden, r.model.seq_len);
  for (const std::string& n : r.notes) std::fprintf(summary, "  note: %s\n", n.c_str());
  if (output.empty()) std::fputs(yaml.c_str(), stdout);
  else std::printf("wrote %s\n", output.c_str());
  return 0;
}

}  // namespace starfish::cli
