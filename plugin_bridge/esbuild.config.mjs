// Builds the plugin: `node esbuild.config.mjs production` writes a minified main.js; with no argument it
// rebuilds on every change (with an inline source map) for development.
import process from "node:process";
import { builtinModules } from "node:module";
import esbuild from "esbuild";

const banner = "/* vault-cortex Obsidian plugin: a bundle built by esbuild from plugin_bridge/src; edit the sources. */";
const prod = process.argv[2] === "production";

/** What Obsidian provides at run time, so the bundle must not include it. */
export const EXTERNAL = [
  "obsidian",
  "electron",
  "@codemirror/autocomplete",
  "@codemirror/collab",
  "@codemirror/commands",
  "@codemirror/language",
  "@codemirror/lint",
  "@codemirror/search",
  "@codemirror/state",
  "@codemirror/view",
  "@lezer/common",
  "@lezer/highlight",
  "@lezer/lr",
  ...builtinModules,
  ...builtinModules.map((name) => `node:${name}`),
];

const options = {
  banner: { js: banner },
  entryPoints: ["src/main.ts"],
  bundle: true,
  external: EXTERNAL,
  format: "cjs",
  target: "es2020",
  logLevel: "info",
  sourcemap: prod ? false : "inline",
  minify: prod,
  treeShaking: true,
  outfile: "main.js",
};

if (prod) {
  await esbuild.build(options);
} else {
  const ctx = await esbuild.context(options);
  await ctx.watch();
}
