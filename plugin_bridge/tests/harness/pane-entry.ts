// The harness bundle: the pane's real code (client, state machine, DOM) mounted on a plain element, with
// `obsidian` replaced by the mock, whose requestUrl goes through the harness server (no CORS, as in Obsidian).
import { CortexClient, obsidianTransport } from "../../src/client";
import { renderPane } from "../../src/render";
import type { PaneHandlers } from "../../src/render";
import { PaneModel, modeChoices } from "../../src/viewModel";
import type { PaneState } from "../../src/viewModel";

export interface MountOptions {
  serverUrl: string;
  token: string;
  path: string | null;
  mode?: string;
  /** The "Show captured sessions" setting. */
  captures?: boolean;
}

export interface Recorded {
  opened: Array<{ path: string; linktext: string; line: number | null; newTab: boolean }>;
  inserted: string[];
  states: string[];
}

export function mount(root: HTMLElement, options: MountOptions) {
  const record: Recorded = { opened: [], inserted: [], states: [] };
  const client = new CortexClient(() => ({ serverUrl: options.serverUrl, token: options.token }), obsidianTransport);
  const handlers: PaneHandlers = {
    open: (item, newTab) => record.opened.push({ path: item.path, linktext: item.open.linktext, line: item.open.line, newTab }),
    insert: (item) => record.inserted.push(item.link),
    setMode: (mode) => void model.setMode(mode),
    refresh: () => void model.refresh(),
  };
  const draw = (state: PaneState) => {
    record.states.push(state.kind);
    renderPane(root, state, { modes: modeChoices(model.lastStatus, model.mode), mode: model.mode }, handlers);
  };
  const model: PaneModel = new PaneModel({
    client,
    serverUrl: () => options.serverUrl,
    onChange: draw,
    captures: () => options.captures === true,
    ...(options.mode ? { mode: options.mode } : {}),
  });
  void model.show(options.path);
  return { record, model };
}

(window as unknown as { CortexHarness: unknown }).CortexHarness = { mount };
