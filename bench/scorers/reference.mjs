// Reference harness: runs the @mastra/evals 1.10.2 code scorers on the golden corpus.
//
//   node bench/scorers/reference.mjs golden          -> writes tests/fixtures/golden/reference.jsonl
//   node bench/scorers/reference.mjs bench [ROUNDS]  -> prints {"cases", "rounds", "seconds", "cases_per_second"}
//
// Runs are turned into Mastra agent runs the way spanscore reads them: input and
// output messages keep their order, tool calls become tool invocations (run-level
// calls ride on the first output message).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createCompletenessScorer,
  createContentSimilarityScorer,
  createKeywordCoverageScorer,
  createTextualDifferenceScorer,
  createToneScorer,
  createToolCallAccuracyScorerCode,
} from "@mastra/evals/scorers/prebuilt";
import { createTestMessage } from "@mastra/evals/scorers/utils";

const here = path.dirname(fileURLToPath(import.meta.url));
// GOLDEN_DIR selects another corpus directory (for example tests/fixtures/golden/held_out).
const golden = path.resolve(process.env.GOLDEN_DIR || path.resolve(here, "../../tests/fixtures/golden"));

function readJsonl(file) {
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

function invocations(calls) {
  return (calls || []).map((c, i) => ({
    toolCallId: c.id || `call-${i}`,
    toolName: c.name,
    args: c.arguments ?? {},
    result: c.result ?? null,
    state: "result",
  }));
}

function messages(value, role) {
  if (value === null || value === undefined) return [];
  const list = typeof value === "string" ? [{ role, content: value }] : Array.isArray(value) ? value : [value];
  return list.map((m, i) =>
    createTestMessage({
      content: typeof m === "string" ? m : m.content ?? "",
      role: typeof m === "string" ? role : m.role ?? role,
      id: `${role}-${i}`,
      toolInvocations: typeof m === "string" ? [] : invocations(m.tool_calls),
    }),
  );
}

function toMastraRun(run) {
  const output = messages(run.output, "assistant");
  const calls = invocations(run.tool_calls);
  if (calls.length > 0) {
    if (output.length === 0) output.push(...messages([{ role: "assistant", content: "" }], "assistant"));
    output[0] = createTestMessage({ content: output[0].content.content, role: output[0].role, id: output[0].id, toolInvocations: calls });
  }
  return { input: { inputMessages: messages(run.input, "user"), rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} }, output, runId: run.id };
}

function makeScorer(name, options) {
  switch (name) {
    case "completeness":
      return createCompletenessScorer();
    case "keyword_coverage":
      return createKeywordCoverageScorer();
    case "textual_difference":
      return createTextualDifferenceScorer();
    case "content_similarity":
      // Mastra's default object applies only when nothing is passed; spanscore's options default
      // individually, so pass both explicitly whenever any is given.
      if (Object.keys(options).length === 0) return createContentSimilarityScorer();
      return createContentSimilarityScorer({
        ignoreCase: options.ignore_case ?? true,
        ignoreWhitespace: options.ignore_whitespace ?? true,
      });
    case "tone_consistency":
      return createToneScorer(options.reference_tone !== undefined ? { referenceTone: options.reference_tone } : {});
    case "tool_call_accuracy":
      return createToolCallAccuracyScorerCode({
        expectedTool: options.expected_tool,
        strictMode: options.strict_mode ?? false,
        expectedToolOrder: options.expected_tool_order,
      });
    default:
      throw new Error(`unknown scorer ${name}`);
  }
}

function prepare() {
  const runs = new Map(readJsonl(path.join(golden, "corpus.jsonl")).map((r) => [r.id, r]));
  return readJsonl(path.join(golden, "cases.jsonl")).map((c) => ({
    ...c,
    mastraRun: toMastraRun(runs.get(c.run)),
    scorer: makeScorer(c.scorer, c.options),
    scorerName: c.scorer,
  }));
}

function plain(value) {
  return JSON.parse(JSON.stringify(value ?? null, (_k, v) => (v instanceof Set ? [...v] : v)));
}

async function writeGolden() {
  const out = [];
  for (const c of prepare()) {
    const record = { case: c.case, run: c.run, scorer: c.scorerName, options: c.options };
    try {
      const result = await c.scorer.run({ input: c.mastraRun.input, output: c.mastraRun.output, runId: c.run });
      record.score = result.score;
      record.preprocess = plain(result.preprocessStepResult);
      record.analyze = plain(result.analyzeStepResult);
    } catch (err) {
      record.score = null;
      record.error = String(err && err.message ? err.message : err);
    }
    out.push(JSON.stringify(record));
  }
  fs.writeFileSync(path.join(golden, "reference.jsonl"), out.join("\n") + "\n");
  console.error(`wrote ${out.length} reference results`);
}

async function bench(rounds) {
  const cases = prepare();
  const start = process.hrtime.bigint();
  let scored = 0;
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      try {
        await c.scorer.run({ input: c.mastraRun.input, output: c.mastraRun.output, runId: c.run });
      } catch {
        // errors count as scored attempts, as in the python benchmark
      }
      scored++;
    }
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ cases: scored, rounds, seconds, cases_per_second: scored / seconds }));
}

const mode = process.argv[2] || "golden";
if (mode === "golden") await writeGolden();
else if (mode === "bench") await bench(Number(process.argv[3] || 1));
else throw new Error(`usage: reference.mjs golden|bench [rounds]`);
