// After roles.spec (files run in name order): the drills' jobs must not show in the other specs' job lists.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

import type { APIRequestContext } from "@playwright/test";

import { expect, test } from "./fixtures";

test.describe.configure({ mode: "serial" });

interface Job {
  id: number;
  status: string;
  error: string | null;
}

async function waitForJob(api: APIRequestContext, id: number): Promise<Job> {
  for (let i = 0; i < 240; i += 1) {
    const job = (await (await api.get(`/api/v1/jobs/${String(id)}`)).json()) as Job;
    if (["succeeded", "failed", "cancelled"].includes(job.status)) return job;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`job ${String(id)} did not end in 2 minutes`);
}

test.describe("a manager", () => {
  test.use({ role: "viewer" });

  test("sees restore times over several real runs, the RTO verdict and the 30-day strip, and exports them", async ({
    page,
    request,
    apiAs,
    saveScreenshot,
  }) => {
    test.setTimeout(300_000);
    // An operator protects the database and restores it four times: three drills (the loader) and one restore with
    // the mysql client, one after the other. (Its backup, the plain demo dump, is no other spec's; should one restore
    // it too, those runs are the database's as well, so the checks below look for these four.)
    const operator = await apiAs("operator");
    const created = await operator.post("/api/v1/protected-databases", {
      data: { name: "shop (e2e)", database: "shop", rto_s: 600, backup_glob: "demo/shop.sql" },
    });
    expect(created.status()).toBe(201);
    const { id } = (await created.json()) as { id: number };
    const jobs: Job[] = [];
    for (let i = 0; i < 3; i += 1) {
      const drill = await operator.post(`/api/v1/protected-databases/${String(id)}/drills`);
      expect(drill.status()).toBe(201);
      jobs.push(await waitForJob(operator, ((await drill.json()) as { job_id: number }).job_id));
    }
    const restore = await operator.post("/api/v1/jobs/restore", {
      data: { backup_path: "demo/shop.sql", runner: "mysql", capture: "none" },
    });
    expect(restore.status()).toBe(201);
    jobs.push(await waitForJob(operator, ((await restore.json()) as { id: number }).id));
    for (const job of jobs) expect(job.status, job.error ?? "").toBe("succeeded");

    await page.goto("/trends");
    const row = page.getByTestId("rto-shop (e2e)");
    await expect(row.getByText("within RTO")).toBeVisible();
    await expect(row.getByTestId("estimate")).toHaveText(/^\d+(\.\d)? s$/);
    await expect(row).toContainText(/median of [3-5] runs of loader · mysqldump(?! \()/);
    await expect(row).toContainText("succeeded");

    const panel = page.getByRole("region", { name: "Trends of shop (e2e)" });
    const durations = panel.getByRole("img", { name: "Restore duration of shop (e2e)" });
    const throughput = panel.getByRole("img", { name: "Throughput of shop (e2e)" });
    // A dot per run in both charts; hovering one names it (clicking opens its job).
    const kinds = ["drill", "drill", "drill", "restore"];
    for (const [index, job] of jobs.entries()) {
      const title = new RegExp(`^${kinds[index] ?? ""} #${String(job.id)} · ${index < 3 ? "loader" : "mysql"} · mysqldump · `);
      await expect(durations.locator(".run-point title").filter({ hasText: title })).toHaveCount(1);
      await expect(throughput.locator(".run-point title").filter({ hasText: title })).toHaveCount(1);
    }
    // One line per method, and the RTO drawn across the duration chart.
    await expect(durations.locator("path[fill='none']")).toHaveCount(2);
    await expect(durations.locator(".reference")).toContainText("RTO 10 min");
    await expect(panel.getByLabel("Methods")).toContainText("loader · mysqldump");
    await expect(panel.getByLabel("Methods")).toContainText("mysql · mysqldump");
    const strip = panel.getByRole("list", { name: "Last 30 days of shop (e2e)" }).getByRole("listitem");
    await expect(strip).toHaveCount(30);
    await expect(strip.last()).toHaveAttribute("data-state", "ok");
    await expect(strip.last()).toHaveAttribute("title", /restored fine \(\d+ runs\)$/);
    await saveScreenshot(page, "trends");

    const download = page.waitForEvent("download");
    await page.getByRole("link", { name: "Export CSV" }).click();
    const csv = await readFile(await (await download).path(), "utf8");
    const exported = csv
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("shop (e2e),"))
      .map((line) => Number(line.split(",")[2]));
    for (const job of jobs) expect(exported).toContain(job.id);

    // The database grows: its next backup restores the same tables many times over (each copy of a mysqldump
    // drops and recreates them), big enough that at the measured throughput it takes over 3 s. A target of 2 s,
    // which the small backup met (a calm machine restores it in under a second), is now breached.
    const backups = process.env.RESTORESCOPE_E2E_BACKUPS;
    if (backups === undefined) throw new Error("RESTORESCOPE_E2E_BACKUPS is not set: run the tests through playwright.config.ts");
    const measured = (await (await operator.get(`/api/v1/protected-databases/${String(id)}`)).json()) as {
      status: { estimate: { mb_per_s: number } };
    };
    const dump = await readFile(path.join(backups, "demo", "shop.sql"));
    const copies = Math.max(20, Math.ceil((3 * measured.status.estimate.mb_per_s * 1_000_000) / dump.length));
    await mkdir(path.join(backups, "demo-grown"), { recursive: true });
    await writeFile(path.join(backups, "demo-grown", "shop.sql"), Buffer.concat(Array.from({ length: copies }, () => dump)));
    expect((await operator.get("/api/v1/backups")).status()).toBe(200); // the backups page rescans the roots
    const grown = await operator.patch(`/api/v1/protected-databases/${String(id)}`, {
      data: { backup_glob: "demo*/shop.sql", rto_s: 2 },
    });
    expect(grown.status()).toBe(200);
    await page.reload();
    await expect(row.getByText("over RTO")).toBeVisible();
    await expect(row).toHaveClass(/flagged/);

    // A manager reads; changing is an operator's.
    await page.goto("/protected");
    await expect(page.getByRole("region", { name: "Protected database shop (e2e)", exact: true })).toBeVisible();
    await expect(page.getByRole("button", { name: "Run drill now" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Protect a database" })).toHaveCount(0);
    expect((await request.post(`/api/v1/protected-databases/${String(id)}/drills`)).status()).toBe(403);
    expect((await operator.delete(`/api/v1/protected-databases/${String(id)}`)).status()).toBe(204);
  });
});

test.describe("an operator", () => {
  test.use({ role: "operator" });

  test("schedules a drill a minute ahead, and it runs and appears", async ({ page, saveScreenshot }) => {
    test.setTimeout(300_000);
    // The next whole minute in UTC, or the one after when this one is nearly over (the form takes a few seconds).
    const now = new Date();
    const slot = new Date(Math.ceil((now.getTime() + (now.getUTCSeconds() > 40 ? 60_000 : 0)) / 60_000) * 60_000);
    const cron = `${String(slot.getUTCMinutes())} ${String(slot.getUTCHours())} * * *`;

    await page.goto("/protected");
    await page.getByRole("button", { name: "Protect a database" }).click();
    const form = page.getByRole("form", { name: "Protect a database" });
    await form.getByLabel("Name", { exact: true }).fill("shop drilled");
    await form.getByLabel("Database", { exact: true }).fill("shop");
    // A backup no other spec restores (a dump naming its database in its header only).
    await form.getByLabel("Backups matching", { exact: true }).fill("demo/shop-nodb.sql");
    await form.getByLabel("RTO", { exact: true }).fill("15m");
    await form.getByLabel("Drill schedule", { exact: true }).fill(cron);
    await form.getByLabel("Time zone", { exact: true }).fill("UTC");
    await form.getByRole("button", { name: "Protect", exact: true }).click();

    const card = page.getByRole("region", { name: "Protected database shop drilled", exact: true });
    await expect(card).toContainText(`At ${String(slot.getUTCHours()).padStart(2, "0")}:${String(slot.getUTCMinutes()).padStart(2, "0")} every day (UTC)`);
    await expect(card).toContainText(/next (in \d min|just now)/);
    await expect(card).toContainText("1 found matching demo/shop-nodb.sql");

    // The scheduler starts it at its minute; the page shows it running, then its outcome.
    const drills = page.getByRole("table", { name: "Drills" });
    const drill = drills.locator("tr", { hasText: "shop drilled" }).filter({ hasText: "schedule" });
    await expect(drill).toHaveCount(1, { timeout: 150_000 });
    await expect(drill.locator(".badge.succeeded")).toBeVisible({ timeout: 120_000 });
    await expect(drill.locator(".badge.ok", { hasText: "restores" })).toBeVisible();
    await saveScreenshot(page, "protected-drill");

    const link = drill.getByRole("link", { name: /^job #\d+$/ });
    const jobId = Number((await link.textContent())?.replace("job #", ""));
    await link.click();
    await expect(page).toHaveURL(`/jobs/${String(jobId)}`);
    await expect(page.locator("dl.facts dd", { hasText: "restore-and-verify of shop drilled" })).toBeVisible();

    // The drill feeds the trends.
    await page.goto("/trends");
    const panel = page.getByRole("region", { name: "Trends of shop drilled" });
    const points = panel.getByRole("img", { name: "Restore duration of shop drilled" }).locator(".run-point title");
    await expect(points.filter({ hasText: new RegExp(`^drill #${String(jobId)} · loader · mysqldump · `) })).toHaveCount(1);
    await expect(page.getByTestId("rto-shop drilled").getByText("within RTO")).toBeVisible();
  });
});
