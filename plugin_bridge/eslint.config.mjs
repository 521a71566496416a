// Lint with the Obsidian community review's rules (eslint-plugin-obsidianmd, as obsidian-sample-plugin does),
// over the plugin's sources; `npm run lint` (part of `npm test`).
import tseslint from "typescript-eslint";
import obsidianmd from "eslint-plugin-obsidianmd";

export default tseslint.config(
  // src/api.ts is generated from the server's OpenAPI schema (scripts/gen-api.mjs): wire types only.
  { ignores: ["main.js", "node_modules/**", "tests/**", "scripts/**", "*.config.*", "artifacts/**", "build/**", "src/api.ts"] },
  ...obsidianmd.configs.recommended,
  {
    files: ["src/**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname },
    },
  },
);
