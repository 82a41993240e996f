/**
 * Starts the real stack (stack.py: private Redis, job store, users, demo backup, API serving the built app, a
 * Celery worker) and hands its URL and users to the tests through the environment; the returned function stops it.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

interface Ready {
  url: string;
  root: string;
  users: Record<string, { username: string; password: string }>;
}

async function readReadyLine(child: ChildProcess): Promise<Ready> {
  if (child.stdout === null) throw new Error("stack.py has no stdout");
  const lines = createInterface({ input: child.stdout });
  const exited = once(child, "exit").then(([code]) => {
    throw new Error(`e2e/stack.py exited with ${String(code)} before it was ready (its errors are above)`);
  });
  const ready = (async () => {
    for await (const line of lines) {
      if (line.startsWith("{")) return JSON.parse(line) as Ready;
    }
    throw new Error("e2e/stack.py closed its output before it was ready");
  })();
  return Promise.race([ready, exited]);
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  const child = spawn(path.join(repo, ".venv/bin/python"), [path.join(repo, "e2e/stack.py")], {
    cwd: repo,
    // stdin stays open as a pipe: when this process dies, stack.py sees it close and stops everything.
    stdio: ["pipe", "pipe", "inherit"],
  });
  const { url, root, users } = await readReadyLine(child);
  process.env.RESTORESCOPE_E2E_URL = url;
  // The stack's backup root, for specs that put a backup there as a DBA's backup job would.
  process.env.RESTORESCOPE_E2E_BACKUPS = path.join(root, "backups");
  process.env.RESTORESCOPE_E2E_USERS = JSON.stringify(users);
  return async () => {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
  };
}
