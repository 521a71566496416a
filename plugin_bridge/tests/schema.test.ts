// The wire types must follow the server: src/api.ts is generated from openapi.json, which is dumped from the
// server code. Either drifting fails here, with the command that brings them back in step.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_OUT, DEFAULT_SCHEMA, dumpSchema, generate, typeOf } from "../scripts/gen-api.mjs";
import { ROUTES } from "../src/api";

const FIX = "run `npm run gen:api` in plugin_bridge/ (VAULT_CORTEX_PYTHON=<venv python> if the venv is not <repo>/.venv)";

describe("schema drift", () => {
  it("src/api.ts is what gen-api.mjs makes of openapi.json", () => {
    const expected = generate(JSON.parse(readFileSync(DEFAULT_SCHEMA, "utf8")));
    const actual = readFileSync(DEFAULT_OUT, "utf8");
    expect(actual, `src/api.ts is stale or edited by hand: ${FIX}`).toBe(expected);
  });

  it("openapi.json is the schema of the server code in this checkout", () => {
    const live = JSON.parse(dumpSchema());
    const saved = JSON.parse(readFileSync(DEFAULT_SCHEMA, "utf8"));
    expect(live, `the server's API changed: ${FIX}, then check the plugin still builds`).toEqual(saved);
    expect(generate(live), `src/api.ts does not match the server: ${FIX}`).toBe(readFileSync(DEFAULT_OUT, "utf8"));
  });

  it("has the routes the plugin calls", () => {
    for (const route of ["GET /v1/related", "GET /v1/status", "POST /v1/context", "POST /v1/notes", "GET /v1/health"]) {
      expect(Object.keys(ROUTES)).toContain(route);
    }
  });
});

describe("gen-api", () => {
  it("maps JSON schema to TypeScript", () => {
    expect(typeOf({ oneOf: [{ type: "string" }, { type: "null" }] })).toBe("string | null");
    expect(typeOf({ type: ["null", "object", "array"] })).toBe("null | Record<string, unknown> | unknown[]");
    expect(typeOf({ type: "array", items: { oneOf: [{ type: "integer" }, { type: "null" }] } })).toBe("Array<number | null>");
    expect(typeOf({ type: "object", additionalProperties: { type: "number" } })).toBe("Record<string, number>");
    expect(typeOf({ $ref: "#/components/schemas/Hit" })).toBe("Hit");
    expect(typeOf({ enum: ["a", "b"] })).toBe('"a" | "b"');
    expect(typeOf({ type: "object", properties: { "a-b": { type: "boolean" }, c: { type: "string" } }, required: ["c"] })).toBe(
      '{\n  "a-b"?: boolean;\n  c: string;\n}',
    );
    expect(typeOf({})).toBe("unknown");
  });

  it("is deterministic and writes every route", () => {
    const schema = JSON.parse(readFileSync(resolve(DEFAULT_SCHEMA), "utf8"));
    const text = generate(schema);
    expect(generate(schema)).toBe(text);
    for (const [path, ops] of Object.entries(schema.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) expect(text).toContain(`"${method.toUpperCase()} ${path}": {`);
    }
  });
});
