import { LIGHT, spotsOfColour } from "./canvas";
import { account, expect, test } from "./fixtures";

test.describe.configure({ mode: "serial" });

test("a bad server setting is shown next to its field", async ({ page, saveScreenshot }) => {
  await page.goto("/launch");
  await page.getByRole("radio", { name: "demo/shop.sql.gz" }).check();
  await page.getByText("Server settings on top of the preset").click();
  await page.getByLabel("innodb_buffer_pool_size").fill("lots");
  await page.getByRole("button", { name: "Launch restore" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "should be a size such as 512M" }).first()).toBeVisible();
  // The message sits under the field it is about.
  const field = page.locator(".field", { has: page.getByLabel("innodb_buffer_pool_size") });
  await expect(field.locator(".field-error")).toContainText("should be a size such as 512M or 2G");
  await saveScreenshot(page, "launch-field-error");
});

test("a runner that cannot read the backup is refused under the runner; the loader's settings show on the run page", async ({ page }) => {
  await page.goto("/launch");
  await page.getByRole("radio", { name: "demo/shop.sql.gz" }).check();
  await page.getByLabel("Runner").selectOption("mysqlimport");
  await expect(page.locator(".field", { has: page.getByLabel("Runner") }).locator(".hint")).toContainText("cannot read this backup");
  await page.getByRole("button", { name: "Launch restore" }).click();
  const runnerField = page.locator(".field", { has: page.getByLabel("Runner") });
  await expect(runnerField.locator(".field-error")).toContainText("mysqlimport reads only a mysqldump --tab directory");

  await page.getByLabel("Runner").selectOption("loader");
  await page.getByLabel("Threads").fill("2");
  await page.getByLabel("Chunk size (MiB)").fill("1");
  await page.getByRole("button", { name: "Launch restore" }).click();
  await expect(page).toHaveURL(/\/jobs\/\d+$/);
  await expect(page.locator("dl.facts dd", { hasText: "restorescope's loader · 2 threads · 1 MiB chunks" })).toBeVisible();
  await expect(page.getByTestId("percent")).toHaveText("100 %", { timeout: 90_000 });
});

test("a physical backup offers mariabackup with its prepare settings and restores into a sandbox", async ({ page, saveScreenshot }) => {
  await page.goto("/launch");
  await page.getByRole("radio", { name: "demo/shop-mariabackup" }).check();
  // Only auto and the backup's own tool read it; its settings are the prepare's, not the loader's.
  const runner = page.getByLabel("Runner");
  await expect(runner.locator("option")).toHaveText([/^auto: /, /^mariabackup: /]);
  await expect(page.getByLabel("Threads", { exact: true })).toHaveCount(0);
  await runner.selectOption("mariabackup");
  const memory = page.getByLabel("Prepare memory (--use-memory)");
  await memory.fill("lots");
  await page.getByRole("button", { name: "Launch restore" }).click();
  await expect(page.locator(".field", { has: memory }).locator(".field-error")).toContainText("should be a size such as 512M or 2G");
  await memory.fill("64M");
  await page.getByLabel("Prepare write IO threads").fill("2");
  await saveScreenshot(page, "launch-physical");
  await page.getByRole("button", { name: "Launch restore" }).click();

  await expect(page).toHaveURL(/\/jobs\/\d+$/);
  await expect(page.locator("dl.facts dd", { hasText: "mariabackup · --use-memory 64M · 2 write IO threads" })).toBeVisible();
  await expect(page.getByTestId("percent")).toHaveText("100 %", { timeout: 90_000 });
  await expect(page.locator(".badge.succeeded").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole("table", { name: "Verification" })).toContainText("check table");
  await expect(page.getByText(/All \d+ checks passed/)).toBeVisible();
  await expect(page.locator("dl.facts .badge.ok", { hasText: "restores" })).toBeVisible();
  await expect(page.getByLabel("Job log")).toContainText("prepared: ");
  await saveScreenshot(page, "run-physical");
});

test("a user restores the demo backup and watches it reach 100 %", async ({ page, saveScreenshot }) => {
  await page.goto("/");
  await page.getByRole("link", { name: "New restore" }).first().click();
  await expect(page.getByRole("table", { name: "Backups" })).toContainText("demo/shop.sql.gz");
  // A dump without a mysqldump header cannot be chosen, and the page says why.
  await page.getByRole("radio", { name: "demo/shop.sql.gz" }).check();
  await page.getByLabel("Preset").selectOption("fast-restore");
  await expect(page.getByText("Settings for bulk loading")).toBeVisible();
  await saveScreenshot(page, "launch");
  await page.getByRole("button", { name: "Launch restore" }).click();

  await expect(page).toHaveURL(/\/jobs\/\d+$/);
  await expect(page.getByRole("heading", { name: /Restore #\d+/ })).toBeVisible();
  await expect(page.getByTestId("percent")).toHaveText("100 %", { timeout: 90_000 });
  await expect(page.locator(".badge.succeeded").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole("table", { name: "Verification" })).toContainText("shop.customers");
  await expect(page.getByText(/All \d+ checks passed/)).toBeVisible();
  await expect(page.locator("dl.facts .badge.ok", { hasText: "restores" })).toBeVisible();
  await expect(page.getByRole("table", { name: "Server variables" })).toContainText("innodb_buffer_pool_size");
  await expect(page.getByRole("table", { name: "Server variables" })).toContainText("At end");
  await expect(page.getByRole("table", { name: "Status counter deltas" })).toContainText("Innodb_");
  await expect(page.getByLabel("Job log")).toContainText("restor");
  await expect(page.locator("dl.facts dd", { hasText: /[\d,]+ operations on \d+ threads/ })).toBeVisible();
  await saveScreenshot(page, "run");

  // The IO timeline of the restore: one lane per server thread, labelled by its role, with coloured bars.
  await page.getByRole("link", { name: "IO timeline" }).click();
  await expect(page).toHaveURL(/\/jobs\/\d+\/timeline$/);
  const labels = page.getByTestId("lane-label");
  await expect(labels.first()).toBeVisible();
  expect(await labels.count()).toBeGreaterThan(1);
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.write)).length + (await spotsOfColour(page, LIGHT.read)).length).toBeGreaterThan(0);
  await saveScreenshot(page, "timeline-restore");

  await page.getByRole("link", { name: "Jobs" }).first().click();
  const row = page.locator("tbody tr").first();
  await expect(row).toContainText("succeeded");
  await expect(row).toContainText("sandbox · fast-restore");
  await expect(row).toContainText(account("admin").username); // who launched it: the logged-in user
  await saveScreenshot(page, "jobs");
});

test("the jobs list follows a running job live, and a finished job can be retried", async ({ page, apiAs }) => {
  const operator = await apiAs("operator");
  const created = await operator.post("/api/v1/jobs/restore", {
    data: { backup_path: "demo/shop.sql.zst", target: { kind: "sandbox", preset: "fast-restore" }, capture: "none" },
  });
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: number };
  await page.goto("/");
  const row = page.getByTestId(`job-row-${String(id)}`);
  await expect(row).toContainText(account("operator").username); // launched through the API with its session
  // No reload: the list polls while a job is active.
  await expect(row).toContainText("succeeded", { timeout: 90_000 });

  await row.click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${String(id)}$`));
  await page.getByRole("button", { name: "Retry" }).click();
  await page.waitForURL((url) => /^\/jobs\/\d+$/.test(url.pathname) && url.pathname !== `/jobs/${String(id)}`);
  await expect(page.getByText(`job #${String(id)}`)).toBeVisible();
  await expect(page.getByTestId("percent")).toHaveText("100 %", { timeout: 90_000 });
});

test("a user cancels a running restore from its page", async ({ page, request, saveScreenshot }) => {
  const created = await request.post("/api/v1/jobs/restore", {
    data: { backup_path: "big/shop.sql.zst", target: { kind: "sandbox" }, capture: "none" },
  });
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: number };
  await page.goto(`/jobs/${String(id)}`);
  // Wait until rows are going in, then cancel (the page asks first).
  await expect(page.getByText("phase: restoring")).toBeVisible({ timeout: 90_000 });
  page.once("dialog", (dialog) => void dialog.accept());
  await page.getByRole("button", { name: "Cancel" }).click();
  await expect(page.locator(".badge.cancelled").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole("button", { name: "Retry" })).toBeVisible();
  await expect(page.getByLabel("Job log")).toContainText(/cancel/i);
  await saveScreenshot(page, "run-cancelled");
});
