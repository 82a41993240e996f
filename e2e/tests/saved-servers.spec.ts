/**
 * The Saved servers page with a real MariaDB server (e2e/saved_server.py starts one on this host, the worker's): an
 * admin adds it, checks it, edits it (the password field keeps the stored one when left empty, replaces it when
 * typed), a viewer sees it read-only, and the delete confirmation says what it affects.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { type Page } from "@playwright/test";

import { expect, test } from "./fixtures";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const NAME = "e2e-sandbox-server";

interface RealServer {
  socket: string;
  port: number;
  user: string;
  password: string;
}

let child: ChildProcess | undefined;
let server: RealServer;

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  const started = spawn(path.join(repo, ".venv/bin/python"), [path.join(repo, "e2e/saved_server.py")], {
    cwd: repo,
    // stdin stays open: when this worker process goes, the server sees it close and stops.
    stdio: ["pipe", "pipe", "inherit"],
  });
  child = started;
  if (started.stdout === null) throw new Error("saved_server.py has no stdout");
  const lines = createInterface({ input: started.stdout });
  for await (const line of lines) {
    if (line.startsWith("{")) {
      server = JSON.parse(line) as RealServer;
      break;
    }
  }
  if (server === undefined) throw new Error("e2e/saved_server.py ended before its server was ready (its errors are above)");
});

test.afterAll(async () => {
  if (child !== undefined && child.exitCode === null) {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
});

function row(page: Page) {
  return page.getByTestId(`server-row-${NAME}`);
}

function field(page: Page, label: string) {
  return page.locator(".field", { has: page.getByLabel(label, { exact: true }) });
}

test("an admin adds a real server, checks it and edits it", async ({ page, request, saveScreenshot }) => {
  await page.goto("/");
  await page.getByRole("link", { name: "Saved servers", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Saved servers" })).toBeVisible();

  const form = page.getByRole("form", { name: "Add a server" });
  await form.getByLabel("Name", { exact: true }).fill(NAME);
  await form.getByRole("radio", { name: "Unix socket" }).check();
  await form.getByLabel("Socket", { exact: true }).fill("mysqld.sock");
  await form.getByLabel("User", { exact: true }).fill(server.user);
  await form.getByLabel("Password", { exact: true }).fill(server.password);
  await form.getByRole("button", { name: "Add server" }).click();
  // The API's message sits under the field it is about, and nothing was saved.
  await expect(field(page, "Socket").locator(".field-error")).toHaveText(
    "a socket is an absolute path on the worker's host, such as /run/mysqld/mysqld.sock",
  );
  await expect(row(page)).toHaveCount(0);

  await form.getByLabel("Socket", { exact: true }).fill(server.socket);
  await form.getByRole("button", { name: "Add server" }).click();
  await expect(row(page)).toContainText(server.socket);
  await expect(row(page)).toContainText(`user ${server.user}`);
  await expect(row(page)).toContainText("not checked since it was saved or changed");
  await expect(form.getByLabel("Name", { exact: true })).toHaveValue("");

  // The check logs in: the server's version, its flavour, and it is on the worker's host (mariabackup, --tab).
  await row(page).getByRole("button", { name: "Check" }).click();
  const check = row(page).getByTestId("last-check");
  await expect(check.locator(".badge")).toHaveText("ok");
  await expect(check).toContainText(/MariaDB 1\d\.\d+\.\d+/);
  await expect(check).toContainText("on the worker's host");
  await saveScreenshot(page, "saved-servers");

  // An edit: over TCP into its shop database, the password field left empty ("unchanged") keeps the password.
  await row(page).getByRole("button", { name: "Edit" }).click();
  const edit = page.getByRole("form", { name: `Edit ${NAME}` });
  await expect(edit.getByLabel("Password", { exact: true })).toHaveAttribute("placeholder", "unchanged");
  await expect(edit.getByLabel("Password", { exact: true })).toHaveValue("");
  await edit.getByRole("radio", { name: "Host and port" }).check();
  await edit.getByLabel("Host", { exact: true }).fill("127.0.0.1");
  await edit.getByLabel("Port", { exact: true }).fill("70000");
  await edit.getByLabel("Default database", { exact: true }).fill("shop");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await expect(field(page, "Port").locator(".field-error")).toContainText("less than or equal to 65535");
  await edit.getByLabel("Port", { exact: true }).fill(String(server.port));
  await edit.getByRole("button", { name: "Save changes" }).click();
  await expect(page.getByRole("form", { name: "Add a server" })).toBeVisible();
  await expect(row(page)).toContainText(`127.0.0.1:${String(server.port)}`);
  await expect(row(page)).toContainText("database shop");
  // How it connects changed, so the old check no longer applies.
  await expect(row(page)).toContainText("not checked since it was saved or changed");
  await row(page).getByRole("button", { name: "Check" }).click();
  await expect(check.locator(".badge")).toHaveText("ok");

  // A typed password replaces the stored one: a wrong one fails the check with the reason.
  await row(page).getByRole("button", { name: "Edit" }).click();
  await edit.getByLabel("Password", { exact: true }).fill("not the password");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await row(page).getByRole("button", { name: "Check" }).click();
  await expect(check.locator(".badge")).toHaveText("failed");
  await expect(check).toContainText("wrong password or user");
  await expect(check).toContainText(`refused user '${server.user}': wrong password or no such user`);
  await saveScreenshot(page, "saved-servers-check-failed");
  await row(page).getByRole("button", { name: "Edit" }).click();
  await edit.getByLabel("Password", { exact: true }).fill(server.password);
  await edit.getByRole("button", { name: "Save changes" }).click();
  await row(page).getByRole("button", { name: "Check" }).click();
  await expect(check.locator(".badge")).toHaveText("ok");

  // Every edit is on record, naming what changed and never the password.
  const audit = (await (await request.get("/api/v1/audit?action=target.update")).json()) as { data: { detail: string }[] };
  const details = audit.data.map((event) => event.detail).reverse();
  expect(details).toEqual([
    `${NAME}: port 3306 -> ${String(server.port)}, socket ${server.socket} -> none, default database none -> shop`,
    `${NAME}: password replaced`,
    `${NAME}: password replaced`,
  ]);
  expect(JSON.stringify(audit)).not.toContain(server.password);

  // The backup form's picker lists it, and suggests its default database.
  await page.goto("/launch?kind=backup");
  await page.getByLabel("Saved server").selectOption({ label: `${NAME} (127.0.0.1:${String(server.port)}, user ${server.user})` });
  await expect(page.getByLabel("Databases")).toHaveValue("shop");
});

test.describe("a viewer", () => {
  test.use({ role: "viewer" });

  test("sees the saved servers and their last check, and cannot change or check them", async ({ page, request, saveScreenshot }) => {
    await page.goto("/servers");
    await expect(row(page)).toContainText(`127.0.0.1:${String(server.port)}`);
    await expect(row(page).getByTestId("last-check").locator(".badge")).toHaveText("ok");
    await expect(row(page)).toContainText("stored");
    await expect(page.getByText("Your role (viewer) reads saved servers: an admin adds, changes and deletes them.")).toBeVisible();
    await expect(page.getByRole("form", { name: "Add a server" })).toHaveCount(0);
    for (const name of ["Check", "Edit", "Delete"]) {
      await expect(page.getByRole("button", { name, exact: true })).toHaveCount(0);
    }
    await saveScreenshot(page, "saved-servers-viewer");

    const listed = (await (await request.get("/api/v1/targets")).json()) as { data: { id: number; name: string }[] };
    const mine = listed.data.find((t) => t.name === NAME);
    expect(mine).toBeDefined();
    expect(JSON.stringify(listed)).not.toContain(server.password);
    const id = String(mine?.id);
    expect((await request.patch(`/api/v1/targets/${id}`, { data: { port: 1 } })).status()).toBe(403);
    expect((await request.post(`/api/v1/targets/${id}/check`)).status()).toBe(403);
    expect((await request.delete(`/api/v1/targets/${id}`)).status()).toBe(403);
  });
});

test("an admin deletes it after a confirmation that says what it affects", async ({ page }) => {
  await page.goto("/servers");
  let question = "";
  page.once("dialog", (dialog) => {
    question = dialog.message();
    void dialog.accept();
  });
  await row(page).getByRole("button", { name: "Delete" }).click();
  await expect(row(page)).toHaveCount(0);
  expect(question).toContain(`Delete the saved server ${NAME} (127.0.0.1:${String(server.port)})?`);
  expect(question).toContain("No job has used it.");
  expect(question).toContain("Its stored password is erased.");
});
