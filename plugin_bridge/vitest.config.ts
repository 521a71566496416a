import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Unit tests: `obsidian` is the mock in tests/__mocks__ (the dataview pattern); the DOM is happy-dom.
export default defineConfig({
  resolve: { alias: { obsidian: fileURLToPath(new URL("./tests/__mocks__/obsidian.ts", import.meta.url)) } },
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["tests/browser.test.ts", "node_modules/**"],
    environment: "happy-dom",
    testTimeout: 60_000,
    // The client's own debug/warn lines (console.debug is hidden in Obsidian's console by default).
    onConsoleLog: (log) => !log.startsWith("[vault-cortex]"),
  },
});
