import { defineConfig } from "vitest/config";

// The real-browser test: a live vault-cortex server, headless Chromium through playwright-core.
export default defineConfig({
  test: {
    include: ["tests/browser.test.ts"],
    environment: "node",
    testTimeout: 60_000,
    hookTimeout: 240_000,
    fileParallelism: false,
  },
});
