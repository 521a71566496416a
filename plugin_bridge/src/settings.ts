// The plugin's settings: what they are, how saved data becomes them, and the settings tab.
import { App, Notice, PluginSettingTab, Setting } from "obsidian";
import type { Plugin } from "obsidian";
import type { CortexClient } from "./client";
import { MODES } from "./viewModel";

export interface CortexSettings {
  /** Where `vault-cortex serve` listens. */
  serverUrl: string;
  /** The bearer token from `<vault>/.cortex/token`. Never logged. */
  token: string;
  /** Tokens of context the copy-context command asks for. */
  budgetTokens: number;
  /** The mode the pane starts in and the commands use. */
  defaultMode: string;
  /** How long the pane waits after the note changes before it asks again (ms). */
  refreshDelayMs: number;
  /** Whether the pane shows captured sessions (notes of `layer: raw`: what was said, not what is true). */
  showCaptures: boolean;
}

export const DEFAULT_SETTINGS: Readonly<CortexSettings> = {
  serverUrl: "http://127.0.0.1:8765",
  token: "",
  budgetTokens: 1500,
  defaultMode: "balanced",
  refreshDelayMs: 1500,
  showCaptures: false,
};

export const LIMITS = {
  budgetTokens: { min: 100, max: 100_000 },
  refreshDelayMs: { min: 200, max: 60_000 },
} as const;

function int(value: unknown, fallback: number, min: number, max: number): number {
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() ? Number(value) : NaN;
  return Number.isFinite(n) ? Math.min(max, Math.max(min, Math.round(n))) : fallback;
}

function str(value: unknown, fallback: string): string {
  return typeof value === "string" && value.trim() ? value.trim() : fallback;
}

/** Settings from whatever `loadData()` returned (null on first run, or an older shape): every field checked. */
export function normaliseSettings(raw: unknown): CortexSettings {
  const data = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  return {
    serverUrl: str(data["serverUrl"], DEFAULT_SETTINGS.serverUrl).replace(/\/+$/, ""),
    token: typeof data["token"] === "string" ? data["token"].trim() : "",
    budgetTokens: int(data["budgetTokens"], DEFAULT_SETTINGS.budgetTokens, LIMITS.budgetTokens.min, LIMITS.budgetTokens.max),
    defaultMode: str(data["defaultMode"], DEFAULT_SETTINGS.defaultMode),
    refreshDelayMs: int(data["refreshDelayMs"], DEFAULT_SETTINGS.refreshDelayMs, LIMITS.refreshDelayMs.min, LIMITS.refreshDelayMs.max),
    showCaptures: data["showCaptures"] === true,
  };
}

/** What the settings tab needs from the plugin. */
export interface SettingsHost {
  settings: CortexSettings;
  client: CortexClient;
  saveSettings(): Promise<void>;
}

export class CortexSettingTab extends PluginSettingTab {
  constructor(app: App, plugin: Plugin, private readonly host: SettingsHost) {
    super(app, plugin);
  }

  override display(): void {
    const { containerEl } = this;
    const s = this.host.settings;
    containerEl.empty();

    new Setting(containerEl)
      .setName("Server URL")
      .setDesc("Where `vault-cortex serve` listens.")
      .addText((text) =>
        text
          .setPlaceholder(DEFAULT_SETTINGS.serverUrl)
          .setValue(s.serverUrl)
          .onChange(async (value) => {
            s.serverUrl = value.trim().replace(/\/+$/, "") || DEFAULT_SETTINGS.serverUrl;
            await this.host.saveSettings();
          }),
      );

    new Setting(containerEl)
      .setName("Token")
      .setDesc("The API token: the contents of <vault>/.cortex/token (created on the first `vault-cortex serve`).")
      .addText((text) => {
        text.inputEl.type = "password";
        text.inputEl.autocomplete = "off";
        text
          .setPlaceholder("Paste the token")
          .setValue(s.token)
          .onChange(async (value) => {
            s.token = value.trim();
            await this.host.saveSettings();
          });
      });

    new Setting(containerEl)
      .setName("Context budget")
      .setDesc(`Tokens of context the copy command asks for (${LIMITS.budgetTokens.min}–${LIMITS.budgetTokens.max}).`)
      .addText((text) => {
        text.inputEl.type = "number";
        text.setValue(String(s.budgetTokens)).onChange(async (value) => {
          s.budgetTokens = int(value, s.budgetTokens, LIMITS.budgetTokens.min, LIMITS.budgetTokens.max);
          await this.host.saveSettings();
        });
      });

    new Setting(containerEl)
      .setName("Default mode")
      .setDesc("The recall mode the pane starts in and the commands use.")
      .addDropdown((dropdown) => {
        for (const mode of MODES) dropdown.addOption(mode, mode);
        if (!(MODES as readonly string[]).includes(s.defaultMode)) dropdown.addOption(s.defaultMode, s.defaultMode);
        dropdown.setValue(s.defaultMode).onChange(async (value) => {
          s.defaultMode = value;
          await this.host.saveSettings();
        });
      });

    new Setting(containerEl)
      .setName("Refresh delay (ms)")
      .setDesc("How long the pane waits after the note changes before asking again.")
      .addText((text) => {
        text.inputEl.type = "number";
        text.setValue(String(s.refreshDelayMs)).onChange(async (value) => {
          s.refreshDelayMs = int(value, s.refreshDelayMs, LIMITS.refreshDelayMs.min, LIMITS.refreshDelayMs.max);
          await this.host.saveSettings();
        });
      });

    new Setting(containerEl)
      .setName("Show captured sessions")
      .setDesc("Also show the notes captured from agent sessions (raw/): what was said, not what is true. Off: the pane shows memories only.")
      .addToggle((toggle) =>
        toggle.setValue(s.showCaptures).onChange(async (value) => {
          s.showCaptures = value;
          await this.host.saveSettings();
        }),
      );

    new Setting(containerEl)
      .setName("Check the connection")
      .setDesc("Asks the server for its status with this URL and token.")
      .addButton((b) =>
        b.setButtonText("Check").onClick(async () => {
          try {
            const status = await this.host.client.status();
            const notes = status.index["notes"];
            new Notice(`vault-cortex: connected; ${typeof notes === "number" ? notes : "?"} notes indexed.`);
          } catch (err) {
            new Notice(`vault-cortex: ${err instanceof Error ? err.message : String(err)}`);
          }
        }),
      );
  }
}
