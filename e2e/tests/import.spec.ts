import path from "node:path";
import { fileURLToPath } from "node:url";

import { expect, test } from "./fixtures";
import { LIGHT, spotsOfColour } from "./canvas";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures");

test.describe.configure({ mode: "serial" });

test("an imported JuiceFS log (before v1.2) shows its lanes, zooms, hovers and selects", async ({ page, saveScreenshot }) => {
  await page.goto("/import");
  await page.getByLabel("Trace file").setInputFiles(path.join(fixtures, "juicefs-v1.1-access.log"));
  await page.getByRole("button", { name: "Import", exact: true }).click();

  const result = page.getByTestId("import-result");
  await expect(result).toContainText(/Imported juicefs trace as job #\d+/);
  await expect(result).toContainText("108 operations on 3 threads");
  // The line cut short is listed with its number.
  await expect(page.getByRole("table", { name: "Malformed lines" })).toContainText("55");
  await saveScreenshot(page, "import");

  await page.getByRole("link", { name: "Open its timeline" }).click();
  await expect(page).toHaveURL(/\/jobs\/\d+\/timeline/);
  const labels = page.getByTestId("lane-label");
  await expect(labels).toHaveCount(3);
  await expect(labels.first()).toContainText("4403");

  // Coloured bars: writes (orange) and fsyncs (pink) are drawn on the canvas.
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.write)).length).toBeGreaterThan(5);
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.fsync)).length).toBeGreaterThan(0);
  await saveScreenshot(page, "timeline-import");

  // Zoom in with the wheel over the lanes: less time on screen.
  const canvas = page.getByTestId("lanes-canvas");
  const box = await canvas.boundingBox();
  if (box === null) throw new Error("no lanes canvas");
  const spanBefore = await page.getByTestId("window-span").textContent();
  await page.mouse.move(box.x + box.width * 0.3, box.y + 10);
  for (let i = 0; i < 5; i += 1) await page.mouse.wheel(0, -200);
  await expect(page.getByTestId("window-span")).not.toHaveText(spanBefore ?? "");
  await expect(page).toHaveURL(/[?&]w=\d+-\d+/);
  // Keyboard as in Perfetto: D pans later in time (the window in the URL moves), S zooms back out a little.
  const windowParam = async (): Promise<string | null> => new URL(page.url()).searchParams.get("w");
  const before = await windowParam();
  await page.keyboard.press("d");
  await expect.poll(windowParam).not.toBe(before);
  await page.keyboard.press("a");
  const zoomedSpan = await page.getByTestId("window-span").textContent();
  await page.keyboard.press("s");
  await expect(page.getByTestId("window-span")).not.toHaveText(zoomedSpan ?? "");

  // Hover a write and read its tooltip.
  await page.getByRole("button", { name: "Whole trace" }).click();
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.write)).length).toBeGreaterThan(5);
  const writes = await spotsOfColour(page, LIGHT.write);
  const target = writes[Math.floor(writes.length / 2)];
  if (target === undefined) throw new Error("no write bar");
  await page.mouse.move(box.x + target.x + 0.5, box.y + target.y + 2);
  const tooltip = page.getByTestId("tooltip");
  await expect(tooltip).toBeVisible();
  await expect(tooltip).toContainText(/write|operations/);
  // Zoom far in where the mouse is, until the bar under it is one operation with its file and latency.
  for (let i = 0; i < 12; i += 1) {
    const again = await spotsOfColour(page, LIGHT.write);
    if ((await tooltip.isVisible()) && (await tooltip.textContent())?.includes("Latency")) break;
    await page.keyboard.press("w");
    await page.waitForTimeout(150);
    const near = again.sort((a, b) => Math.abs(a.x - target.x) - Math.abs(b.x - target.x))[0];
    if (near !== undefined) await page.mouse.move(box.x + near.x + 0.5, box.y + near.y + 2);
  }
  await expect(tooltip).toContainText("Latency");
  await expect(tooltip).toContainText("inode:");
  await expect(tooltip).toContainText("Offset");
  await expect(tooltip).toContainText("Size");
  await saveScreenshot(page, "timeline-tooltip");

  // Select a range with shift+drag and read its statistics.
  const whole = page.getByRole("button", { name: "Whole trace" });
  if (await whole.isEnabled()) await whole.click();
  await page.mouse.move(box.x + box.width * 0.1, box.y + 5);
  await page.keyboard.down("Shift");
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + 5, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up("Shift");
  const stats = page.getByTestId("selection-stats");
  await expect(stats).toBeVisible();
  const table = stats.getByRole("table", { name: "Selection statistics" });
  await expect(table).toContainText("write");
  await expect(table).toContainText("MB/s");
  await expect(table.locator("tbody tr").first()).toContainText(/µs|ms/);
  await expect(page).toHaveURL(/[?&]sel=\d+-\d+/);
  await expect(page.getByRole("table", { name: "Files" })).toContainText("inode:17669");
  await saveScreenshot(page, "timeline-selection");

  // The same URL shows the same selection to a colleague.
  await page.reload();
  await expect(page.getByTestId("selection-stats")).toBeVisible();
});

test("an imported JuiceFS log (v1.2 and later) shows its lanes; a bad file is refused in plain words", async ({ page, saveScreenshot }) => {
  await page.goto("/import");
  await page.getByLabel("Trace file").setInputFiles(path.join(fixtures, "juicefs-v1.2-access.log"));
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await expect(page.getByTestId("import-result")).toContainText("108 operations on 3 threads");
  await page.getByRole("link", { name: "Open its timeline" }).click();
  await expect(page.getByTestId("lane-label")).toHaveCount(3);
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.read)).length).toBeGreaterThan(0);

  // Lanes: filter by role, collapse one, sort by busy time.
  await page.getByRole("button", { name: "pid 4410 (1)" }).click();
  await expect(page.getByTestId("lane-label")).toHaveCount(1);
  await expect(page).toHaveURL(/roles=pid\+4410|roles=pid%204410/);
  // The statistics follow the filter: only that thread's busy time is listed.
  await expect(page.getByLabel("Busy per thread")).toContainText("4410");
  await expect(page.getByLabel("Busy per thread")).not.toContainText("4403");
  await page.getByRole("button", { name: "all roles" }).click();
  await expect(page.getByTestId("lane-label")).toHaveCount(3);
  await page.getByRole("button", { name: "Collapse pid 4403 4403" }).click();
  await expect(page.getByRole("button", { name: "Expand pid 4403 4403" })).toHaveAttribute("aria-expanded", "false");
  await page.getByLabel("Sort lanes").selectOption("busy");
  await expect(page).toHaveURL(/sort=busy/);
  // Filter by file: only that file's operations are counted.
  await page.getByLabel("Filter by file").fill("inode:17670");
  await expect(page.getByRole("table", { name: "Files" }).locator("tbody tr")).toHaveCount(1);
  await expect(page.getByRole("table", { name: "Files" })).toContainText("17670");
  await page.getByLabel("Filter by file").fill("");

  // The overview strip's brush picks the window.
  const overview = page.getByTestId("overview");
  const strip = await overview.boundingBox();
  if (strip === null) throw new Error("no overview");
  const before = await page.getByTestId("window-span").textContent();
  await page.mouse.move(strip.x + strip.width * 0.2, strip.y + strip.height / 2);
  await page.mouse.down();
  await page.mouse.move(strip.x + strip.width * 0.4, strip.y + strip.height / 2, { steps: 4 });
  await page.mouse.up();
  await expect(page.getByTestId("window-span")).not.toHaveText(before ?? "");

  // Open in Perfetto downloads Chrome trace-event JSON.
  const href = await page.getByRole("link", { name: /Open in Perfetto/ }).getAttribute("href");
  const perfetto = await page.request.get(href ?? "");
  expect(perfetto.status()).toBe(200);
  expect(JSON.stringify(await perfetto.json())).toContain("traceEvents");

  // Dark theme, remembered across a reload.
  await page.getByRole("button", { name: /Dark/ }).click();
  await page.reload();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(page.getByTestId("lane-label")).toHaveCount(3);
  await saveScreenshot(page, "timeline-dark");
  await page.getByRole("button", { name: /Light/ }).click();

  await page.goto("/import");
  await page.getByLabel("Trace file").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello\nthis is not a trace\n") });
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await expect(page.getByRole("alert")).toContainText("not a trace restorescope can read");
  await expect(page.getByRole("alert")).toContainText("JuiceFS access log");
  await saveScreenshot(page, "import-refused");

  // Over the server's upload limit (4 MiB in the test stack): said in plain words, with what to do.
  const line = "2024.05.01 10:00:00.000100 [uid:0,gid:0,pid:77] write (5,16384,49152,12) - OK <0.000050>\n";
  await page.getByLabel("Trace file").setInputFiles({ name: "huge.log", mimeType: "text/plain", buffer: Buffer.from(line.repeat(60_000)) });
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await expect(page.getByRole("alert")).toContainText("too large to upload here");
  await expect(page.getByRole("alert")).toContainText("Cut the log");
});

test("an imported strace log shows one lane per thread and every line read", async ({ page, saveScreenshot }) => {
  await page.goto("/import");
  await page.getByLabel("Trace file").setInputFiles(path.join(fixtures, "strace-mariadbd.log"));
  await page.getByLabel("Name").fill("mariadbd under strace");
  await page.getByRole("button", { name: "Import", exact: true }).click();
  const result = page.getByTestId("import-result");
  await expect(result).toContainText(/Imported strace trace as job #\d+/);
  await expect(result).toContainText("30 operations on 3 threads");
  await expect(result).toContainText("Every line was read.");
  await page.getByRole("link", { name: "Open its timeline" }).click();
  await expect(page.getByTestId("lane-label")).toHaveCount(3);
  await expect.poll(async () => (await spotsOfColour(page, LIGHT.fsync)).length).toBeGreaterThan(0);
  await expect(page.getByRole("table", { name: "Files" })).toContainText("ibdata1");
  await saveScreenshot(page, "timeline-strace");
});
