import { spotsOfColour } from "./canvas";
import { expect, test } from "./fixtures";

// The light theme's highlight outline (frontend/src/styles.css --highlight-line).
const HIGHLIGHT_LINE = "#9c36b5";

test("after a restore the advisor points at the evidence, re-runs with its change and compares the runs", async ({ page, request, saveScreenshot }) => {
  test.setTimeout(360_000);
  // One stream of SQL through the mysql client on server defaults: what most restores still are.
  const created = await request.post("/api/v1/jobs/restore", {
    data: { backup_path: "big/shop.sql", runner: "mysql", target: { kind: "sandbox", preset: "server-defaults" } },
  });
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: number };

  await page.goto(`/jobs/${String(id)}`);
  await expect(page.locator(".badge.succeeded").first()).toBeVisible({ timeout: 180_000 });
  const advisor = page.getByTestId("advisor");
  await expect(advisor.getByTestId("advisor-headline")).toContainText("What held it back: CPU: the 1 loading thread wanted");
  const suggestion = advisor.getByTestId("suggestion-parallel_load");
  await expect(suggestion).toContainText("One loading thread was CPU-bound: load with 2 threads");
  await expect(suggestion.locator("code.change")).toHaveText(["runner: mysql → loader", "threads: 1 → 2"]);
  await expect(suggestion).toContainText("Caveat");
  await saveScreenshot(page, "run-advice");

  // The suggestion's evidence on the timeline: the mysql client's server thread, over the restore.
  await suggestion.getByRole("button", { name: "Show in timeline" }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${String(id)}/timeline\\?.*advice=parallel_load`));
  const bar = page.getByTestId("highlight-bar");
  await expect(bar).toContainText("Highlighted: One loading thread was CPU-bound");
  await expect(bar).toContainText("(mysql)");
  const marked = page.locator('[data-testid="lane-label"][data-highlighted="true"]');
  await expect(marked.first()).toBeVisible();
  await expect(marked.first()).toContainText("(mysql)");
  await expect.poll(async () => (await spotsOfColour(page, HIGHLIGHT_LINE)).length).toBeGreaterThan(0);
  await expect(page.getByTestId("timeline-advisor").getByTestId("suggestion-parallel_load")).toHaveClass(/active/);
  await saveScreenshot(page, "timeline-advice");
  // Clearing the highlight leaves the lanes as they were.
  await bar.getByRole("button", { name: "Clear" }).click();
  await expect(page.getByTestId("highlight-bar")).toHaveCount(0);
  await expect(marked).toHaveCount(0);

  // Re-run with the change: a new job, a child of this one, with the loader on 2 threads.
  await page.getByTestId("timeline-advisor").getByTestId("suggestion-parallel_load").getByRole("button", { name: "Re-run with this change" }).click();
  await page.waitForURL((url) => /^\/jobs\/\d+$/.test(url.pathname) && url.pathname !== `/jobs/${String(id)}`);
  await expect(page.locator("dl.facts dd", { hasText: `job #${String(id)}` })).toBeVisible();
  await expect(page.locator("dl.facts dd", { hasText: "restorescope's loader · 2 threads" })).toBeVisible();
  const appliedFrom = page.getByTestId("applied-from");
  await expect(appliedFrom).toContainText(`Re-run of job #${String(id)}`);
  await expect(page.locator(".badge.succeeded").first()).toBeVisible({ timeout: 180_000 });
  // Measured, whatever the gain was: a speedup or "no difference", never still measuring.
  await expect(appliedFrom).toContainText(/faster|no difference|slower/, { timeout: 30_000 });
  await saveScreenshot(page, "run-rerun");

  // Both runs side by side.
  await appliedFrom.getByRole("link", { name: "Compare the two runs" }).click();
  await expect(page).toHaveURL(new RegExp(`/compare\\?a=${String(id)}&b=\\d+`));
  await expect(page.getByTestId("speedup")).toHaveText(/^\d+\.\d\dx$/);
  await expect(page.getByTestId("compare-applied")).toContainText("One loading thread was CPU-bound");
  const settings = page.getByRole("table", { name: "Settings that differ" });
  await expect(settings.locator("tr", { hasText: "runner" })).toContainText("mysql");
  await expect(settings.locator("tr", { hasText: "runner" })).toContainText("loader");
  await expect(page.getByRole("table", { name: "By kind" })).toContainText("write");
  await expect(page.getByTestId("compare-timeline-A").getByTestId("lane-label").first()).toBeVisible();
  await expect(page.getByTestId("compare-timeline-B").getByTestId("lane-label").first()).toBeVisible();
  await saveScreenshot(page, "compare");

  // Back on the first run, the suggestion keeps its score.
  await page.goto(`/jobs/${String(id)}`);
  await expect(page.getByTestId("suggestion-parallel_load").getByTestId("rerun-verdict")).toHaveText(/faster|no difference|slower/);
});
