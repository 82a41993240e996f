// One measured run of the IO timeline in Chromium, for bench/browser_timeline.py (see its docstring).
//
//   RESTORESCOPE_SESSION_TOKEN=<token> node bench/browser_timeline.mjs <app url> <job id> <seconds per phase, or "open">
//
// Prints one JSON object: the open time and, per interaction phase, rAF intervals, input-to-drawn times,
// canvas draw durations, long tasks and the window fetches.

import { createRequire } from "node:module";

// Playwright comes from the e2e project's node_modules (Chromium itself is Debian's: no download here).
const require = createRequire(new URL("../e2e/package.json", import.meta.url));
const { chromium } = require("playwright");

const [url, jobId, secondsArg] = process.argv.slice(2);
const openOnly = secondsArg === "open";
const seconds = openOnly ? 0 : Number(secondsArg ?? "3");

// Installed before the page's own scripts: turns on the per-draw measures (frontend/src/timeline/perf.ts),
// keeps every resource timing, and records rAF intervals, input times and long tasks while `recording`.
function instrument() {
  window.restorescopePerf = true;
  performance.setResourceTimingBufferSize(100_000);
  const bench = { recording: false, frames: [], inputs: [], longTasks: [] };
  // The span on screen in microseconds, read from the page's "on screen" figure (e.g. "10.9 s", "55 µs").
  bench.spanUs = () => {
    const [value, unit] = (document.querySelector("[data-testid=window-span]")?.textContent ?? "").split(" ");
    const scale = { "µs": 1, ms: 1e3, s: 1e6, min: 60e6, h: 3600e6 }[unit] ?? 1;
    return Number(value) * scale;
  };
  window.__bench = bench;
  let last = null;
  const tick = (time) => {
    if (bench.recording && last !== null) bench.frames.push(time - last);
    last = time;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  for (const type of ["wheel", "pointermove", "pointerdown", "keydown"]) {
    window.addEventListener(type, (event) => bench.recording && bench.inputs.push(event.timeStamp), { capture: true, passive: true });
  }
  new PerformanceObserver((list) => {
    if (bench.recording) for (const entry of list.getEntries()) bench.longTasks.push(entry.duration);
  }).observe({ type: "longtask" });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function windowFetches(entries) {
  return entries
    .filter((entry) => entry.name.includes("/trace/window"))
    .map((entry) => ({ start: entry.startTime, ms: entry.responseEnd - entry.startTime, bytes: entry.encodedBodySize }));
}

async function measureOpen(page) {
  const started = Date.now();
  await page.goto(`${url}/jobs/${jobId}/timeline`);
  try {
    await page.waitForFunction(() => performance.getEntriesByName("timeline:drawn", "mark").length > 0, null, { timeout: 120_000 });
  } catch (error) {
    const shown = await page.locator("main").innerText().catch(() => "");
    throw new Error(`the lanes were never drawn with data; the page shows:\n${shown.slice(0, 2000)}`, { cause: error });
  }
  const wallMs = Date.now() - started;
  const facts = await page.evaluate(() => {
    const [navigation] = performance.getEntriesByType("navigation");
    const resources = performance.getEntriesByType("resource").map((e) => ({ name: e.name, startTime: e.startTime, responseEnd: e.responseEnd, encodedBodySize: e.encodedBodySize }));
    const summary = resources.find((e) => /\/trace$/.test(e.name));
    return {
      drawnMs: performance.getEntriesByName("timeline:drawn", "mark")[0].startTime,
      documentMs: navigation.responseEnd,
      domContentLoadedMs: navigation.domContentLoadedEventEnd,
      summaryEndMs: summary ? summary.responseEnd : null,
      resources,
    };
  });
  const fetches = windowFetches(facts.resources);
  return {
    open_ms: facts.drawnMs,
    wall_ms: wallMs,
    document_ms: facts.documentMs,
    dom_content_loaded_ms: facts.domContentLoadedMs,
    summary_end_ms: facts.summaryEndMs,
    first_window_start_ms: fetches[0]?.start ?? null,
    first_window_ms: fetches[0]?.ms ?? null,
    first_window_bytes: fetches[0]?.bytes ?? null,
    first_window_end_ms: fetches[0] ? fetches[0].start + fetches[0].ms : null,
  };
}

/** Runs `act` (which returns when the phase's time is up) while recording; what the page saw. */
async function phase(page, name, act) {
  const before = await page.evaluate(() => {
    performance.clearMeasures("timeline:draw");
    Object.assign(window.__bench, { frames: [], inputs: [], longTasks: [], recording: true });
    return performance.getEntriesByType("resource").length;
  });
  const started = Date.now();
  await act();
  await sleep(400); // let the last settled window arrive and draw
  const seen = await page.evaluate((skip) => {
    const bench = window.__bench;
    bench.recording = false;
    const draws = performance.getEntriesByName("timeline:draw", "measure").map((e) => ({ start: e.startTime, ms: e.duration }));
    const resources = performance.getEntriesByType("resource").slice(skip).map((e) => ({ name: e.name, startTime: e.startTime, responseEnd: e.responseEnd, encodedBodySize: e.encodedBodySize }));
    return { frames: bench.frames, inputs: bench.inputs, longTasks: bench.longTasks, draws, resources, span: document.querySelector("[data-testid=window-span]")?.textContent ?? "" };
  }, before);
  // Input to drawn: for each draw, from the first input event not yet drawn to the end of that draw
  // (input handling, React's render and the canvas calls on the main thread).
  const inputs = [...seen.inputs].sort((a, b) => a - b);
  const inputToDrawn = [];
  let next = 0;
  for (const draw of seen.draws) {
    const end = draw.start + draw.ms;
    if (next < inputs.length && inputs[next] <= draw.start) {
      inputToDrawn.push(end - inputs[next]);
      while (next < inputs.length && inputs[next] <= draw.start) next += 1;
    }
  }
  return {
    name,
    seconds: (Date.now() - started) / 1000,
    span_after: seen.span,
    inputs: inputs.length,
    frames: seen.frames,
    draws: seen.draws.map((d) => d.ms),
    input_to_drawn: inputToDrawn,
    long_tasks: seen.longTasks,
    fetches: windowFetches(seen.resources).map((f) => ({ ms: f.ms, bytes: f.bytes })),
  };
}

async function forSeconds(step) {
  const until = Date.now() + seconds * 1000;
  for (let i = 0; Date.now() < until; i += 1) await step(i);
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-background-networking"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    // Logged in as the browser would be after the login page: the session cookie for the API.
    const token = process.env.RESTORESCOPE_SESSION_TOKEN;
    if (!token) throw new Error("RESTORESCOPE_SESSION_TOKEN is not set: run this through bench/browser_timeline.py");
    const { hostname } = new URL(url);
    await context.addCookies([
      { name: "restorescope_session", value: token, domain: hostname, path: "/api", httpOnly: true, sameSite: "Strict" },
    ]);
    const page = await context.newPage();
    await page.addInitScript(instrument);
    const open = await measureOpen(page);
    if (openOnly) {
      process.stdout.write(`${JSON.stringify({ open, phases: [] })}\n`);
      return;
    }

    const canvas = await page.getByTestId("lanes-canvas").boundingBox();
    const cx = canvas.x + canvas.width / 2;
    const cy = canvas.y + Math.min(canvas.height, 400) / 2;
    const frame = () => sleep(16); // wheel and key events come about once a frame from a user's hand
    const wheelInOut = (steps) => async (i) => {
      await page.mouse.move(cx + ((i % 40) - 20) * 4, cy);
      await page.mouse.wheel(0, Math.floor(i / steps) % 2 === 0 ? -100 : 100);
      await frame();
    };
    const dragBackAndForth = async () => {
      await page.mouse.move(cx, cy);
      await page.mouse.down();
      await forSeconds(async (i) => {
        const offset = ((i % 60) < 30 ? i % 30 : 30 - (i % 30)) * 12 - 180;
        await page.mouse.move(cx + offset, cy);
        await frame();
      });
      await page.mouse.up();
    };
    const keys = async () => {
      await page.mouse.move(cx, cy);
      await forSeconds(async (i) => {
        await page.keyboard.press("wasd"[Math.floor(i / 6) % 4]);
        await frame();
      });
    };
    const phases = [];
    // Zoomed out: the whole run (150 s, summaries per pixel column).
    phases.push(await phase(page, "out: wheel zoom", () => forSeconds(wheelInOut(10))));
    const whole = page.getByRole("button", { name: "Whole trace" });
    if (await whole.isEnabled()) await whole.click();
    for (let i = 0; i < 8; i += 1) await page.keyboard.press("w"); // a quarter of the run, still summaries
    await sleep(500);
    phases.push(await phase(page, "out: drag pan", dragBackAndForth));
    phases.push(await phase(page, "out: W/S/A/D keys", keys));
    // Deep in: wheel down to a few milliseconds (single operations), then the same there.
    phases.push(
      await phase(page, "dive: wheel in to ~5 ms", async () => {
        await page.mouse.move(cx, cy);
        // exp(-0.2) per event (viewport.ts wheelZoomFactor): this many take the view to about 5 ms.
        const span = await page.evaluate(() => window.__bench.spanUs());
        const events = Math.max(0, Math.round(Math.log(span / 5_000) / 0.2));
        for (let i = 0; i < events; i += 1) {
          await page.mouse.wheel(0, -100);
          await frame();
        }
      }),
    );
    await sleep(500);
    phases.push(await phase(page, "in: wheel zoom", () => forSeconds(wheelInOut(6))));
    phases.push(await phase(page, "in: drag pan", dragBackAndForth));
    phases.push(await phase(page, "in: W/S/A/D keys", keys));
    process.stdout.write(`${JSON.stringify({ open, phases })}\n`);
  } finally {
    await browser.close();
  }
}

await main();
