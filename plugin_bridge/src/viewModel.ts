// The pane's logic without the DOM or Obsidian: ranking, formatting, the "why" lines and the state machine.
import type { Hit, Indexing, Recall, Status } from "./api";
import { CortexApiError } from "./errors";

/** The built-in modes (a vault may add more in its config; the server names the mode it used). */
export const MODES = ["balanced", "focus", "explore", "identity", "recent"] as const;
export const DEFAULT_MODE = "balanced";

/** Signals in the order the server computes them (DESIGN.md "Recall and context"). */
export const SIGNAL_ORDER = ["relevance", "region", "importance", "coactivation", "graph", "recency", "resonance"] as const;
const SIGNAL_LABELS: Record<string, string> = { coactivation: "co-activation" };

/** How long the pane waits before asking again while the index builds. */
export const BUILDING_RETRY_MS = 3000;

/** How long typing must pause before the pane asks about the paragraph being written (ms). */
export const TYPING_DELAY_MS = 700;
/** A paragraph shorter than this says too little to recall anything by. */
export const MIN_DRAFT_CHARS = 24;
/** The most of a paragraph sent as a query (the server's default recall.max_query_chars is 2,000). */
export const MAX_DRAFT_CHARS = 1500;

/**
 * The paragraph around a line: the run of non-blank lines holding it (frontmatter and fences are not
 * special-cased: a paragraph is what the writer sees as one), at most MAX_DRAFT_CHARS around the cursor line.
 */
export function paragraphAt(lines: readonly string[], line: number): string {
  if (line < 0 || line >= lines.length || !(lines[line] ?? "").trim()) return "";
  let start = line;
  let end = line;
  while (start > 0 && (lines[start - 1] ?? "").trim()) start--;
  while (end < lines.length - 1 && (lines[end + 1] ?? "").trim()) end++;
  const text = lines.slice(start, end + 1).join("\n").trim();
  if (text.length <= MAX_DRAFT_CHARS) return text;
  const before = lines.slice(start, line).join("\n").length;
  const from = Math.max(0, Math.min(before - MAX_DRAFT_CHARS / 2, text.length - MAX_DRAFT_CHARS));
  return text.slice(from, from + MAX_DRAFT_CHARS);
}

export interface OpenTarget {
  /** What `workspace.openLinkText` takes: the path (no `.md`) and, when known, `#heading`. */
  linktext: string;
  /** 0-based line to scroll to when there is no heading to jump to; null when unknown. */
  line: number | null;
}

export interface PaneItem {
  path: string;
  title: string;
  region: string;
  /** The last heading of the chunk that matched, when it is not just the note's title. */
  heading: string;
  snippet: string;
  score: number;
  scoreText: string;
  /** Why the note was chosen, in words (the server's reason without its values, worded for a note rather than a query). */
  why: string;
  /** The numbers behind the words, shown on request: the push gate's chance, then every non-zero signal. */
  signals: string;
  /** `[[link]]` to insert or drop into a note. */
  link: string;
  open: OpenTarget;
}

/**
 * The cards the pane shows: one list, best first. Grouping by region cannot be best first (a group's weaker
 * cards sit above the next group's best), so each card carries its region instead, unless all share one.
 */
export interface PaneList {
  items: PaneItem[];
  /** The region every card comes from, said once above the list; null when they come from several. */
  region: string | null;
}

export type PaneState =
  | { kind: "no-note" }
  | { kind: "loading"; path: string; mode: string; previous: PaneList | null }
  | { kind: "ready"; path: string; mode: string; list: PaneList; count: number; tookMs: number; fromDraft?: boolean; indexing?: Indexing | null }
  | { kind: "empty"; path: string; mode: string; fromDraft?: boolean; indexing?: Indexing | null }
  | { kind: "building"; path: string; detail: string }
  | { kind: "not-indexed"; path: string; detail: string }
  | { kind: "unreachable"; url: string; detail: string }
  | { kind: "unauthorised"; detail: string }
  | { kind: "error"; message: string };

export type PaneStateKind = PaneState["kind"];

/** `long_term` → `Long term`. */
export function regionLabel(region: string): string {
  const words = region.replace(/[_-]+/g, " ").trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : "(no region)";
}

export function formatScore(score: number): string {
  return Number.isFinite(score) ? score.toFixed(2) : "–";
}

/** `relevance 0.39 · region 0.70 · graph 0.75`: the non-zero signals in the server's order, then any others. */
export function signalBreakdown(signals: Record<string, number>): string {
  const known = SIGNAL_ORDER.filter((name) => name in signals);
  const others = Object.keys(signals).filter((name) => !(SIGNAL_ORDER as readonly string[]).includes(name)).sort();
  return [...known, ...others]
    .map((name) => [name, signals[name] ?? 0] as const)
    .filter(([, value]) => Number.isFinite(value) && value >= 0.005)
    .map(([name, value]) => `${SIGNAL_LABELS[name] ?? name} ${value.toFixed(2)}`)
    .join(" · ");
}

/** A reason's words without the values in parentheses: "recent (1.00)" → "recent" (the values are the signals'). */
export function reasonWords(reason: string): string {
  return reason.replace(/\s*\([-+]?\d*\.?\d+\)/g, "").replace(/\s+/g, " ").trim();
}

/**
 * Why a note was chosen, in words: the server's reason (its strongest weighted signals) without the values,
 * with "the query" read as "this note" (the pane's query is the active note), or as "your paragraph" for an
 * answer through the push gate (`push_probability` set: the query was the paragraph being written).
 */
export function whyLine(hit: Pick<Hit, "reason" | "push_probability">): string {
  const query = typeof hit.push_probability === "number" ? "your paragraph" : "this note";
  const words = reasonWords(hit.reason).replace(/\bthe query\b/g, query);
  return words || "weak match";
}

/** The numbers behind a why-line: `chance 0.42 · relevance 0.39 · recency 1.00` (the chance only through the push gate). */
export function signalLine(hit: Pick<Hit, "signals" | "push_probability">): string {
  const p = hit.push_probability;
  const chance = typeof p === "number" && Number.isFinite(p) ? [`chance ${p.toFixed(2)}`] : [];
  const signals = signalBreakdown(hit.signals);
  return [...chance, ...(signals ? [signals] : [])].join(" · ");
}

/**
 * A snippet as readable text: wikilinks and markdown links as their text, no emphasis markers, code fences
 * or backticks. The pane shows plain text (never HTML), so this is for reading, not for safety.
 */
export function plainSnippet(text: string): string {
  return text
    .replace(/!?\[\[([^\]|]*)\|([^\]]*)\]\]/g, "$2")
    .replace(/!?\[\[([^\]]*)\]\]/g, "$1")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/```\w*/g, " ")
    .replace(/`([^`]*)`/g, "$1")
    .replace(/(\*\*|__|~~|==)(?=\S)([\s\S]*?\S)\1/g, "$2")
    .replace(/\s+/g, " ")
    .trim();
}

/** A vault path without its `.md`, as links and `openLinkText` take it. */
export function linkPath(path: string): string {
  return path.replace(/\.md$/i, "");
}

/** `[[path]]` for a note (the full path, so it resolves whatever else shares its name). */
export function wikilink(path: string): string {
  return `[[${linkPath(path)}]]`;
}

/** The last heading of a chunk's heading path (`Title > Parts` → `Parts`), or "" when it is only the title. */
export function lastHeading(hit: Pick<Hit, "heading" | "title">): string {
  const parts = hit.heading.split(" > ").map((p) => p.trim()).filter(Boolean);
  const last = parts[parts.length - 1] ?? "";
  return parts.length <= 1 && last.toLowerCase() === hit.title.trim().toLowerCase() ? "" : last;
}

/** Where a click should land: the heading when the chunk has one, else its line. */
export function openTarget(hit: Pick<Hit, "path" | "heading" | "title" | "line">): OpenTarget {
  const heading = lastHeading(hit).replace(/[#|^[\]]/g, " ").replace(/\s+/g, " ").trim();
  if (heading) return { linktext: `${linkPath(hit.path)}#${heading}`, line: null };
  return { linktext: linkPath(hit.path), line: hit.line > 0 ? hit.line - 1 : null };
}

export function toItem(hit: Hit, link: (path: string) => string = wikilink): PaneItem {
  return {
    path: hit.path,
    title: hit.title || linkPath(hit.path).split("/").pop() || hit.path,
    region: hit.region,
    heading: lastHeading(hit),
    snippet: plainSnippet(hit.snippet),
    score: hit.score,
    scoreText: formatScore(hit.score),
    why: whyLine(hit),
    signals: signalLine(hit),
    link: link(hit.path),
    open: openTarget(hit),
  };
}

/**
 * Hits as the pane lists them: best score first (the server's order among equal scores; a score that is not a
 * number last), nothing dropped (ranking, not filtering), and the region they share, if they all share one.
 */
export function rankHits(hits: readonly Hit[], link?: (path: string) => string): PaneList {
  const key = (hit: Hit) => (Number.isFinite(hit.score) ? hit.score : -Infinity);
  const ranked = hits.map((hit, at) => ({ hit, at })).sort((a, b) => key(b.hit) - key(a.hit) || a.at - b.at);
  const items = ranked.map(({ hit }) => toItem(hit, link));
  const regions = new Set(items.map((item) => item.region));
  return { items, region: regions.size === 1 ? (items[0]?.region ?? null) : null };
}

/** The modes to offer: the built-ins, then any the server reports in /v1/status `modes`, then the current one. */
export function modeChoices(status: unknown, current: string): string[] {
  const out: string[] = [...MODES];
  const extra = typeof status === "object" && status !== null ? (status as Record<string, unknown>)["modes"] : undefined;
  if (Array.isArray(extra)) for (const m of extra) if (typeof m === "string" && !out.includes(m)) out.push(m);
  if (current && !out.includes(current)) out.push(current);
  return out;
}

/** The list a state shows (kept on screen, dimmed, while the next answer loads). */
export function listOf(state: PaneState): PaneList | null {
  if (state.kind === "ready") return state.list;
  if (state.kind === "loading") return state.previous;
  return null;
}

export function retryDelay(state: PaneState): number | null {
  if (state.kind === "building") return BUILDING_RETRY_MS;
  // Answered from a partial index: ask again, so the pane fills in as the server's sync goes on.
  if ((state.kind === "ready" || state.kind === "empty") && state.indexing) return BUILDING_RETRY_MS;
  return null;
}

/** One line for an answer the server gave while it was still indexing (`indexing` in recall responses): in phase
 * "words" notes are still being written; in phase "vectors" every note is found by its words and the chunks are
 * getting their vectors (a hit without one says so: `vector: false`). */
export function indexingLine(indexing: Indexing): string {
  const pct = indexing.total > 0 ? Math.floor((100 * indexing.done) / indexing.total) : 0;
  const of = `${indexing.done} of ${indexing.total}`;
  if (indexing.phase === "vectors") {
    return `Every note is searchable by words; matching by meaning fills in (${of} chunks, ${pct}%).`;
  }
  const unit = indexing.phase === "words" ? "notes" : "chunks";
  return `Still indexing (${of} ${unit}, ${pct}%): showing what is indexed so far.`;
}

export interface PaneClient {
  related(path: string, options: { mode?: string | null; k?: number | null; captures?: "include" }): Promise<Recall>;
  recall(query: string, options: { mode?: string | null; k?: number | null; gate?: boolean; captures?: "include" }): Promise<Recall>;
  status(): Promise<Status>;
}

export interface PaneModelOptions {
  client: PaneClient;
  /** The server URL, for the "server not running" message. */
  serverUrl: () => string;
  onChange: (state: PaneState) => void;
  mode?: string;
  k?: number;
  /** How a path becomes the `[[link]]` that is inserted or dragged (Obsidian's shortest form in the app). */
  link?: (path: string) => string;
  /** Whether captured sessions are shown too (the "Show captured sessions" setting; off: memories only). */
  captures?: () => boolean;
}

/**
 * The pane's state machine: `show(path)`, `setMode(mode)` and `refresh()` each ask the server and move to
 * ready / empty / one of the error states. Answers that arrive after a newer request are dropped.
 */
export class PaneModel {
  state: PaneState = { kind: "no-note" };
  path: string | null = null;
  mode: string;
  private statusCache: Status | null = null;
  private seq = 0;

  constructor(private readonly options: PaneModelOptions) {
    this.mode = options.mode ?? DEFAULT_MODE;
  }

  /** The last /v1/status read (for the mode list), if any. */
  get lastStatus(): Status | null {
    return this.statusCache;
  }

  /** The paragraph being written, when the pane follows it rather than the saved note. */
  draft: string | null = null;
  private lastDraft: string | null = null;

  show(path: string | null): Promise<PaneState> {
    if (path !== this.path) this.draft = this.lastDraft = null;
    this.path = path;
    return this.refresh();
  }

  /**
   * Follow the paragraph being written (debounced by the view): memories the push gate passes for it, or
   * "nothing close". The same text twice asks once; an answer to an older text is dropped (see `set`).
   */
  typing(paragraph: string): Promise<PaneState> {
    const text = paragraph.trim();
    if (text.length < MIN_DRAFT_CHARS || text === this.lastDraft) return Promise.resolve(this.state);
    this.draft = text;
    return this.refresh();
  }

  setMode(mode: string): Promise<PaneState> {
    this.mode = mode;
    return this.refresh();
  }

  /** Stop delivering answers (the view closed). */
  dispose(): void {
    this.seq++;
  }

  async refresh(): Promise<PaneState> {
    const seq = ++this.seq;
    const { path, mode } = this;
    if (path === null) return this.set(seq, { kind: "no-note" });
    this.set(seq, { kind: "loading", path, mode, previous: listOf(this.state) });
    try {
      const draft = this.draft;
      const k = this.options.k ?? null;
      // the server leaves captured sessions out unless asked: asked only when the setting is on
      const captures = this.options.captures?.() === true ? { captures: "include" as const } : {};
      const [answer] = await Promise.all([
        draft === null
          ? this.options.client.related(path, { mode, k, ...captures })
          : this.options.client.recall(draft, { mode, k, gate: true, ...captures }),
        this.statusOnce(),
      ]);
      // a paragraph of this note recalls the note itself: not news to its writer
      const recall = draft === null ? answer : { ...answer, hits: answer.hits.filter((h) => h.path !== path) };
      if (draft !== null && seq === this.seq) this.lastDraft = draft;
      const fromDraft = draft !== null;
      const indexing = recall.indexing ?? null;
      if (recall.hits.length === 0) return this.set(seq, { kind: "empty", path, mode: recall.mode || mode, fromDraft, indexing });
      return this.set(seq, {
        fromDraft,
        kind: "ready",
        path,
        mode: recall.mode || mode,
        list: rankHits(recall.hits, this.options.link),
        count: recall.hits.length,
        tookMs: recall.took_ms,
        indexing,
      });
    } catch (err) {
      return this.set(seq, await this.errorState(err, path));
    }
  }

  private set(seq: number, state: PaneState): PaneState {
    if (seq !== this.seq) return this.state;
    this.state = state;
    this.options.onChange(state);
    return state;
  }

  private async readStatus(): Promise<Status | null> {
    try {
      this.statusCache = await this.options.client.status();
      return this.statusCache;
    } catch {
      return null;
    }
  }

  /** /v1/status, read once per server (for the modes it offers); asked again after a failed read. */
  private async statusOnce(): Promise<void> {
    if (this.statusCache === null) await this.readStatus();
  }

  private async errorState(err: unknown, path: string): Promise<PaneState> {
    if (!(err instanceof CortexApiError)) return { kind: "error", message: err instanceof Error ? err.message : String(err) };
    switch (err.kind) {
      case "unreachable":
        this.statusCache = null; // the next server may be configured differently
        return { kind: "unreachable", url: this.options.serverUrl(), detail: err.message };
      case "unauthorised":
        return { kind: "unauthorised", detail: err.detail || err.message };
      case "unavailable":
        return { kind: "building", path, detail: err.detail || err.message };
      case "not-found": {
        const status = await this.readStatus();
        if (status?.watch?.pending) return { kind: "building", path, detail: "the server is indexing recent changes" };
        const skipped = status?.skipped.find((s) => s.path === path);
        const detail = skipped
          ? `the index skipped it: ${skipped.reason}`
          : "save it and the server indexes it within a moment; notes in archive/ or excluded by index.exclude are left out";
        return { kind: "not-indexed", path, detail };
      }
      case "no-route":
        return { kind: "error", message: `This server has no related-notes route (${err.message}); update vault-cortex.` };
      default:
        return { kind: "error", message: err.message };
    }
  }
}
