// The browser test's two servers: a live vault-cortex on a fixture vault, and the page server whose
// /__request route performs the plugin's requests as Obsidian's requestUrl does (outside the page, no CORS).
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import type { AddressInfo } from "node:net";
import { extname, join } from "node:path";
import { REPO_ROOT, resolvePython } from "../../scripts/python.mjs";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createNetServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CortexServer {
  readonly url: string;
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> | null = null;

  constructor(
    readonly vault: string,
    readonly port: number,
    private readonly logFile: string,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  /** `python -m server.cli serve` on the vault (created from the starter template when the folder is missing). */
  start(): void {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("VAULT_CORTEX_")) env[k] = v;
    const python = resolvePython();
    const log = createWriteStream(this.logFile, { flags: "a" });
    log.write(`$ ${python} -m server.cli serve --vault ${this.vault} --port ${this.port}\n`);
    const child = spawn(python, ["-m", "server.cli", "serve", "--vault", this.vault, "--port", String(this.port)], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    child.once("error", (err) => log.write(`spawn error: ${err.message}\n`));
    this.child = child;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  token(): string {
    return readFileSync(join(this.vault, ".cortex", "token"), "utf8").trim();
  }

  /** Wait until /v1/health answers and the start-up sync has indexed the vault. */
  async ready(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`vault-cortex exited early; see ${this.logFile}:\n${this.tail()}`);
      try {
        const health = await fetch(`${this.url}/v1/health`);
        if (health.ok && existsSync(join(this.vault, ".cortex", "token"))) {
          const status = (await (await fetch(`${this.url}/v1/status`, { headers: { Authorization: `Bearer ${this.token()}` } })).json()) as {
            index: { notes?: number };
            watch: { last_sync_at: string | null } | null;
          };
          if ((status.index.notes ?? 0) > 0 && (status.watch === null || status.watch.last_sync_at !== null)) return;
        }
      } catch {
        // not listening yet
      }
      await sleep(250);
    }
    throw new Error(`vault-cortex did not become ready in ${timeoutMs} ms; see ${this.logFile}:\n${this.tail()}`);
  }

  async get<T>(path: string): Promise<T> {
    const res = await fetch(`${this.url}${path}`, { headers: { Authorization: `Bearer ${this.token()}` } });
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child === null || !this.running) return;
    child.kill("SIGTERM");
    const code = await Promise.race([this.exited, sleep(10_000).then(() => "timeout" as const)]);
    if (code === "timeout") {
      child.kill("SIGKILL");
      await this.exited;
    }
  }

  private tail(): string {
    try {
      return readFileSync(this.logFile, "utf8").split("\n").slice(-30).join("\n");
    } catch {
      return "";
    }
  }
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

interface ProxiedRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Serves `files` (URL path → file) and proxies POST /__request to loopback URLs. */
export async function startPageServer(files: Record<string, string>): Promise<{ url: string; server: Server; proxied: ProxiedRequest[] }> {
  const proxied: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "POST" && path === "/__request") {
      let raw = "";
      req.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
      req.on("end", async () => {
        const param = JSON.parse(raw) as ProxiedRequest;
        proxied.push(param);
        res.setHeader("Content-Type", "application/json");
        if (!/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(param.url)) {
          res.end(JSON.stringify({ error: `the harness proxies loopback URLs only, not ${param.url}` }));
          return;
        }
        try {
          const reply = await fetch(param.url, { method: param.method ?? "GET", headers: param.headers ?? {}, body: param.body ?? null });
          const headers: Record<string, string> = {};
          reply.headers.forEach((v, k) => (headers[k] = v));
          res.end(JSON.stringify({ status: reply.status, headers, text: await reply.text() }));
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
          res.end(JSON.stringify({ error: cause === "ECONNREFUSED" ? "net::ERR_CONNECTION_REFUSED" : `net::ERR_FAILED (${cause})` }));
        }
      });
      return;
    }
    if (path === "/favicon.ico") {
      res.statusCode = 204;
      res.end();
      return;
    }
    const file = files[path];
    if (file === undefined || !existsSync(file)) {
      res.statusCode = 404;
      res.end("not found");
      return;
    }
    res.setHeader("Content-Type", TYPES[extname(file)] ?? "application/octet-stream");
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server, proxied };
}
