// Runs after the specs that read job lists (files run in name order): its jobs and cancels must not show in them.
import { account, expect, test } from "./fixtures";

test.describe.configure({ mode: "serial" });

test.describe("a viewer", () => {
  test.use({ role: "viewer" });

  test("sees no launch, backup, import, cancel or retry button, and the API answers 403 if it tries", async ({
    page,
    request,
    apiAs,
    saveScreenshot,
  }) => {
    // An operator's restore, still queued or running while the viewer looks at it.
    const operator = await apiAs("operator");
    const created = await operator.post("/api/v1/jobs/restore", {
      data: { backup_path: "big/shop.sql.zst", target: { kind: "sandbox" }, capture: "none" },
    });
    expect(created.status()).toBe(201);
    const { id } = (await created.json()) as { id: number };
    try {
      await page.goto("/");
      await expect(page.getByTestId("current-user")).toHaveText(account("viewer").username);
      await expect(page.locator(".user-menu .badge")).toHaveText("viewer");
      await expect(page.getByTestId(`job-row-${String(id)}`)).toBeVisible();
      for (const name of ["New restore", "New backup", "Import trace", "Import a trace", "Users", "Audit log"]) {
        await expect(page.getByRole("link", { name, exact: true })).toHaveCount(0);
      }
      await saveScreenshot(page, "viewer-jobs");

      await page.goto(`/jobs/${String(id)}`);
      await expect(page.getByRole("heading", { name: `Restore #${String(id)}` })).toBeVisible();
      await expect(page.getByRole("button", { name: "Cancel" })).toHaveCount(0);
      await expect(page.getByRole("button", { name: "Retry" })).toHaveCount(0);

      // Typing the address does not help either.
      await page.goto("/launch");
      await expect(page.getByText("Your role (viewer) does not allow launching restores")).toBeVisible();
      await expect(page.getByRole("button", { name: "Launch restore" })).toHaveCount(0);

      const launch = await request.post("/api/v1/jobs/restore", { data: { backup_path: "demo/shop.sql.gz" } });
      expect(launch.status()).toBe(403);
      expect(((await launch.json()) as { detail: string }).detail).toBe(
        `this needs the operator role and ${account("viewer").username} is viewer: ask an admin`,
      );
      expect((await request.post(`/api/v1/jobs/${String(id)}/cancel`)).status()).toBe(403);
      expect((await request.get("/api/v1/users")).status()).toBe(403);
      expect((await request.get(`/api/v1/jobs/${String(id)}`)).status()).toBe(200);
    } finally {
      await operator.post(`/api/v1/jobs/${String(id)}/cancel`);
    }
  });
});

test("an admin creates a user, who must choose their own password at the first login", async ({ page, saveScreenshot }) => {
  await page.goto("/users");
  await expect(page.getByRole("heading", { name: "Users" })).toBeVisible();
  await expect(page.getByTestId(`user-row-${account("viewer").username}`)).toBeVisible();
  const form = page.getByRole("form", { name: "New user" });
  await form.getByLabel("User name").fill("E2E-Newbie");
  await form.getByLabel("Role").selectOption("operator");
  await form.getByRole("button", { name: "Create user" }).click();
  const oneTime = page.getByTestId("one-time-password");
  await expect(oneTime).toBeVisible();
  const password = (await oneTime.textContent()) ?? "";
  expect(password.length).toBeGreaterThanOrEqual(16);
  const row = page.getByTestId("user-row-e2e-newbie");
  await expect(row).toContainText("one-time password");
  await expect(row.getByLabel("Role of e2e-newbie")).toHaveValue("operator");
  await saveScreenshot(page, "users");

  // The same name again is refused under its field.
  await form.getByLabel("User name").fill("e2e-newbie");
  await form.getByRole("button", { name: "Create user" }).click();
  await expect(form.getByText("a user named 'e2e-newbie' already exists; choose another name")).toBeVisible();

  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.getByLabel("User name").fill("e2e-newbie");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();

  // Nothing but choosing a password until it is done.
  await expect(page).toHaveURL(/\/password/);
  await expect(page.getByRole("heading", { name: "Choose your password" })).toBeVisible();
  await expect(page.getByText("e2e-newbie, you logged in with a one-time password")).toBeVisible();
  await page.goto("/");
  await expect(page).toHaveURL(/\/password/);
  await page.getByLabel("One-time password").fill(password);
  await page.getByLabel("New password", { exact: true }).fill("short");
  await expect(page.getByText("at least 10 characters", { exact: true })).toBeVisible();
  await page.getByLabel("New password", { exact: true }).fill("newbie-chose-this");
  await page.getByLabel("New password again").fill("newbie-chose-that");
  await expect(page.getByText("the two new passwords differ")).toBeVisible();
  await expect(page.getByRole("button", { name: "Save the new password" })).toBeDisabled();
  await page.getByLabel("New password again").fill("newbie-chose-this");
  await saveScreenshot(page, "password-forced");
  await page.getByRole("button", { name: "Save the new password" }).click();

  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByTestId("current-user")).toHaveText("e2e-newbie");
  // An operator launches, but does not manage users.
  await expect(page.getByRole("link", { name: "New restore", exact: true }).first()).toBeVisible();
  await expect(page.getByRole("link", { name: "Users", exact: true })).toHaveCount(0);
});

test.describe("nobody logged in", () => {
  test.use({ role: null });

  test("is sent to the login page and back to the page they asked for", async ({ page, saveScreenshot }) => {
    await page.goto("/audit?action=user.create");
    await expect(page).toHaveURL(/\/login\?next=%2Faudit%3Faction%3Duser.create$/);
    await expect(page.getByText("Log in to see that page.")).toBeVisible();
    await page.getByLabel("User name").fill(account("admin").username);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Log in" }).click();
    await expect(page.getByRole("alert")).toContainText("wrong user name or password");
    await saveScreenshot(page, "login");
    await page.getByLabel("Password").fill(account("admin").password);
    await page.getByRole("button", { name: "Log in" }).click();

    await expect(page).toHaveURL(/\/audit\?action=user.create$/);
    const events = page.getByRole("table", { name: "Audit events" });
    await expect(events).toContainText("e2e-newbie as operator");
    await expect(events).toContainText(account("admin").username);
    await page.getByLabel("Action").selectOption("auth.login_failed");
    await expect(events).toContainText("wrong password");
    await saveScreenshot(page, "audit");
  });

  test("an ended session sends the page to the login", async ({ page, context }) => {
    await context.request.post("/api/v1/auth/login", { data: account("operator") });
    await page.goto("/");
    await expect(page.getByTestId("current-user")).toHaveText(account("operator").username);
    // Logged out elsewhere (the same cookie): the page's next request gets a 401.
    expect((await context.request.post("/api/v1/auth/logout")).status()).toBe(204);
    await page.getByRole("button", { name: "running", exact: true }).click();
    await expect(page).toHaveURL(/\/login\?next=%2F%3Fstatus%3Drunning$/);
  });
});
