import { expect, test } from "./fixtures";

test("the backup form shows the API's messages under its fields", async ({ page, request, saveScreenshot }) => {
  // A saved server is only a row here: the request is refused before anything would connect to it.
  const created = await request.post("/api/v1/targets", {
    data: { name: "e2e-backup-source", host: "127.0.0.1", port: 3306, user: "backup", password: "pw" },
  });
  expect([201, 409]).toContain(created.status());

  await page.goto("/launch");
  await page.getByRole("radio", { name: "Backup", exact: true }).check();
  await expect(page).toHaveURL(/kind=backup/);
  await expect(page.getByRole("heading", { name: "New backup" })).toBeVisible();

  // mariabackup turns compression off: its backups stay directories, ready to prepare.
  await page.getByLabel("Tool").selectOption("mariabackup");
  await expect(page.getByLabel("Compression")).toHaveValue("none");
  await expect(page.getByLabel("Compression")).toBeDisabled();
  await page.getByLabel("Tool").selectOption("mydumper");
  await expect(page.getByLabel("Compression")).toHaveValue("zstd");

  // No server chosen: the message sits under the server select.
  await page.getByLabel("Directory").fill("../outside");
  await page.getByRole("button", { name: "Launch backup" }).click();
  const server = page.locator(".field", { has: page.getByLabel("Saved server") });
  await expect(server.locator(".field-error")).toContainText("no saved target with id 0");

  // A destination outside the backup roots is refused under the directory field.
  await page.getByLabel("Saved server").selectOption({ label: "e2e-backup-source (127.0.0.1:3306, user backup)" });
  await page.getByRole("button", { name: "Launch backup" }).click();
  const directory = page.locator(".field", { has: page.getByLabel("Directory") });
  await expect(directory.locator(".field-error")).toContainText("is outside the backup roots");
  await saveScreenshot(page, "launch-backup-field-error");

  // Back to Restore: the restore form, with its backup list.
  await page.getByRole("radio", { name: "Restore", exact: true }).check();
  await expect(page.getByRole("heading", { name: "New restore" })).toBeVisible();
  await expect(page.getByRole("table", { name: "Backups" })).toBeVisible();
});
