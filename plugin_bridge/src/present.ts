// Pure wording for the commands and modals: notices, the status table, the sleep plan and request bodies.
import type { Context, RememberBody, Status } from "./api";
import { CortexApiError } from "./errors";

/** A one-line notice for a failed command, by what went wrong. */
export function errorNotice(err: unknown, serverUrl: string): string {
  if (!(err instanceof CortexApiError)) return `vault-cortex: ${err instanceof Error ? err.message : String(err)}`;
  switch (err.kind) {
    case "unreachable":
      return `vault-cortex: no server at ${serverUrl}. Start it with \`vault-cortex serve --vault <your vault>\`.`;
    case "unauthorised":
      return "vault-cortex: the server refused the token (401). Paste <vault>/.cortex/token into the plugin settings.";
    case "unavailable":
      return "vault-cortex: the index is still building (503); try again in a moment.";
    default:
      return `vault-cortex: ${err.message}`;
  }
}

export function contextNotice(ctx: Context): string {
  const notes = ctx.context.items.length;
  return `Copied context: ${notes} ${notes === 1 ? "note" : "notes"}, ${ctx.context.tokens} of ${ctx.context.budget_tokens} tokens (${ctx.mode}).`;
}

/** What "remember the selection" sends: the text, with the note it came from as its source (`derived_from`). */
export function rememberBody(selection: string, sourceLinktext: string | null): RememberBody {
  const body: RememberBody = { text: selection.trim() };
  if (sourceLinktext) body.relations = { derived_from: [`[[${sourceLinktext}]]`] };
  return body;
}

const INDEX_LABELS: Record<string, string> = {
  vault: "Vault",
  notes: "Notes",
  chunks: "Chunks",
  indexing: "Indexing",
  links: "Links",
  dangling: "Dangling links",
  skipped: "Skipped files",
  noise: "Noise blocks left out",
  vectors: "Vectors",
  model: "Model",
  last_sync: "Last sync",
};

function show(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (typeof value === "object" && "done" in value && "total" in value) {
    const { done, total } = value;
    const phase = "phase" in value ? value.phase : undefined;
    const unit = phase === "words" ? "notes" : "chunks";
    return `${String(done)} of ${String(total)} ${unit}${typeof phase === "string" ? ` (${phase})` : ""}`; // while a sync runs
  }
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** The status as label/value rows: the index (known keys first), then the watcher. */
export function statusRows(status: Status): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  const index = status.index;
  for (const key of Object.keys(INDEX_LABELS)) if (key in index) rows.push([INDEX_LABELS[key] ?? key, show(index[key])]);
  for (const key of Object.keys(index).sort()) if (!(key in INDEX_LABELS)) rows.push([key, show(index[key])]);
  const w = status.watch;
  if (w === null) rows.push(["Watcher", "off"]);
  else {
    rows.push(["Watcher", w.watching ? (w.pending ? "syncing changes" : "up to date") : "stopped"]);
    if (w.pending) rows.push(["Index lag", `${Math.round(w.lag_ms)} ms`]);
    rows.push(["Last watcher sync", show(w.last_sync_at)]);
    if (w.last_error) rows.push(["Last sync error", w.last_error]);
  }
  return rows;
}

/**
 * The sleep plan as markdown. The route is newer than this plugin's schema, so the reply is read loosely:
 * its own `markdown` if it has one, else its `operations` as a list, else the JSON itself.
 */
export function planMarkdown(plan: unknown): string {
  if (typeof plan === "object" && plan !== null) {
    const record = plan as Record<string, unknown>;
    if (typeof record["markdown"] === "string" && record["markdown"].trim()) return record["markdown"];
    const ops = record["operations"];
    if (Array.isArray(ops)) {
      if (ops.length === 0) return "Nothing to do: the plan has no operations.";
      return ops
        .map((op) => {
          if (typeof op !== "object" || op === null) return `- ${show(op)}`;
          const o = op as Record<string, unknown>;
          const what = show(o["op"] ?? o["kind"] ?? o["action"] ?? "operation");
          const target = o["path"] ?? o["paths"] ?? o["target"];
          const reason = o["reason"];
          return `- **${what}** ${target === undefined ? "" : show(target)}${typeof reason === "string" ? ` — ${reason}` : ""}`.trimEnd();
        })
        .join("\n");
    }
  }
  return "```json\n" + JSON.stringify(plan, null, 2) + "\n```";
}

export const SLEEP_UNAVAILABLE =
  "Sleep planning is not available on this server: it has no /v1/sleep/plan route yet. Update vault-cortex to preview a plan here.";
