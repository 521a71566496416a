import { describe, expect, it } from "vitest";
import type * as Obsidian from "obsidian";
import { App, Plugin } from "./__mocks__/obsidian";
import { CortexClient } from "../src/client";
import { CortexSettingTab, DEFAULT_SETTINGS, normaliseSettings } from "../src/settings";
import type { CortexSettings } from "../src/settings";
import { STATUS, json, scripted, silentLog } from "./helpers";

describe("normaliseSettings", () => {
  it("gives the defaults on first run", () => {
    expect(normaliseSettings(null)).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS.serverUrl).toBe("http://127.0.0.1:8765");
  });

  it("keeps valid values, trims, and clamps numbers into range", () => {
    expect(
      normaliseSettings({ serverUrl: " http://localhost:9000/ ", token: " abc \n", budgetTokens: "2500", defaultMode: "explore", refreshDelayMs: 5 }),
    ).toEqual({ serverUrl: "http://localhost:9000", token: "abc", budgetTokens: 2500, defaultMode: "explore", refreshDelayMs: 200, showCaptures: false });
    expect(normaliseSettings({ budgetTokens: 10_000_000, refreshDelayMs: "soon" })).toMatchObject({ budgetTokens: 100_000, refreshDelayMs: 1500 });
  });

  it("shows captured sessions only when the setting is on (off by default)", () => {
    expect(DEFAULT_SETTINGS.showCaptures).toBe(false);
    expect(normaliseSettings({ showCaptures: true }).showCaptures).toBe(true);
    expect(normaliseSettings({ showCaptures: "yes" }).showCaptures).toBe(false);
  });

  it("ignores fields of the wrong type", () => {
    expect(normaliseSettings({ serverUrl: 42, token: ["x"], defaultMode: "" })).toEqual(DEFAULT_SETTINGS);
  });
});

describe("CortexSettingTab", () => {
  function tab() {
    const app = new App();
    const plugin = new Plugin(app, { id: "vault-cortex", name: "Vault Cortex", version: "0.1.0" });
    const settings: CortexSettings = { ...DEFAULT_SETTINGS, token: "secret-token-value" };
    let saves = 0;
    const transport = scripted(() => json(200, STATUS), "secret-token-value");
    const host = {
      settings,
      client: new CortexClient(() => settings, transport, silentLog),
      saveSettings: async () => {
        saves++;
      },
    };
    const t = new CortexSettingTab(app as unknown as Obsidian.App, plugin as unknown as Obsidian.Plugin, host);
    t.display();
    return { t, settings, saves: () => saves };
  }

  it("has the six settings and a connection check, with the token in a password field", () => {
    const { t } = tab();
    const names = [...t.containerEl.querySelectorAll(".setting-item-name")].map((e) => e.textContent);
    expect(names).toEqual(["Server URL", "Token", "Context budget", "Default mode", "Refresh delay (ms)", "Show captured sessions", "Check the connection"]);
    const inputs = t.containerEl.querySelectorAll("input");
    expect(inputs[1]?.type).toBe("password");
    expect(inputs[1]?.value).toBe("secret-token-value");
  });

  it("saves each change, normalised", async () => {
    const { t, settings, saves } = tab();
    const inputs = [...t.containerEl.querySelectorAll("input")];
    const type = (i: number, value: string) => {
      const input = inputs[i] as HTMLInputElement;
      input.value = value;
      input.dispatchEvent(new Event("input"));
    };
    type(0, "http://127.0.0.1:9999/");
    type(1, "  new-token ");
    type(2, "50");
    type(3, "800");
    const select = t.containerEl.querySelector("select") as HTMLSelectElement;
    select.value = "identity";
    select.dispatchEvent(new Event("change"));
    expect(settings.showCaptures).toBe(false); // off until turned on
    (t.containerEl.querySelector(".checkbox-container") as HTMLElement).click();
    await Promise.resolve();
    expect(settings).toMatchObject({ serverUrl: "http://127.0.0.1:9999", token: "new-token", budgetTokens: 100, refreshDelayMs: 800, defaultMode: "identity", showCaptures: true });
    expect(saves()).toBe(6);
  });
});
