/** The tests' `test`: baseURL is the stack that global-setup started; saveScreenshot() saves into e2e/screenshots. */

import { type Page, test as base, expect } from "@playwright/test";
import path from "node:path";
import { fileURLToPath } from "node:url";

const screenshots = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "screenshots");

export const test = base.extend<{ saveScreenshot: (page: Page, name: string) => Promise<void> }>({
  baseURL: async ({}, use) => {
    const url = process.env.RESTORESCOPE_E2E_URL;
    if (url === undefined) throw new Error("RESTORESCOPE_E2E_URL is not set: run the tests through playwright.config.ts");
    await use(url);
  },
  saveScreenshot: async ({}, use) => {
    await use(async (page, name) => {
      // A sticky header gets stitched into the middle of a full-page capture; pin it for the picture.
      await page.screenshot({
        path: path.join(screenshots, `${name}.png`),
        fullPage: true,
        style: ".topbar { position: static !important; }",
      });
    });
  },
});

export { expect };
