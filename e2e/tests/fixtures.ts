/**
 * The tests' `test`: baseURL is the stack that global-setup started, and both the page and `request` are logged in
 * as the user of `role` (default admin; `test.use({ role: "viewer" })`, or null for nobody). apiAs(role) gives an
 * API client of another role; saveScreenshot() saves into e2e/screenshots.
 */

import { type APIRequestContext, type Page, test as base, expect } from "@playwright/test";
import path from "node:path";
import { fileURLToPath } from "node:url";

const screenshots = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "screenshots");

export type Role = "admin" | "operator" | "viewer";

export interface Account {
  username: string;
  password: string;
}

/** The users e2e/stack.py made (it hands them over through global-setup). */
export function account(role: Role): Account {
  const users = process.env.RESTORESCOPE_E2E_USERS;
  if (users === undefined) throw new Error("RESTORESCOPE_E2E_USERS is not set: run the tests through playwright.config.ts");
  const found = (JSON.parse(users) as Record<string, Account | undefined>)[role];
  if (found === undefined) throw new Error(`e2e/stack.py made no ${role} user`);
  return found;
}

/** Logs the client in: its cookie jar keeps the session cookie (a browser context's is its pages'). */
export async function logIn(client: APIRequestContext, role: Role): Promise<void> {
  const response = await client.post("/api/v1/auth/login", { data: account(role) });
  if (response.status() !== 200) throw new Error(`logging in as ${role} failed: ${String(response.status())} ${await response.text()}`);
}

interface Fixtures {
  role: Role | null;
  apiAs: (role: Role) => Promise<APIRequestContext>;
  saveScreenshot: (page: Page, name: string) => Promise<void>;
}

export const test = base.extend<Fixtures>({
  role: ["admin", { option: true }],
  baseURL: async ({}, use) => {
    const url = process.env.RESTORESCOPE_E2E_URL;
    if (url === undefined) throw new Error("RESTORESCOPE_E2E_URL is not set: run the tests through playwright.config.ts");
    await use(url);
  },
  context: async ({ context, role }, use) => {
    if (role !== null) await logIn(context.request, role);
    await use(context);
  },
  request: async ({ playwright, baseURL, role }, use) => {
    const request = await playwright.request.newContext({ baseURL });
    if (role !== null) await logIn(request, role);
    await use(request);
    await request.dispose();
  },
  apiAs: async ({ playwright, baseURL }, use) => {
    const made: APIRequestContext[] = [];
    await use(async (role) => {
      const request = await playwright.request.newContext({ baseURL });
      made.push(request);
      await logIn(request, role);
      return request;
    });
    for (const request of made) await request.dispose();
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
