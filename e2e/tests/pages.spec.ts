import { expect, test } from "./fixtures";

test("the jobs page says what to do when no job matches its filters", async ({ page, saveScreenshot }) => {
  await page.goto("/?status=cancelled");
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByText("1 worker online")).toBeVisible();
  await expect(page.getByText("No job matches these filters")).toBeVisible();
  await saveScreenshot(page, "jobs-filtered-empty");
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page).toHaveURL(/\/$/);
});

test("a deep link opens its page, and an unknown API path stays a JSON 404", async ({ page, request }) => {
  await page.goto("/jobs/999999");
  await expect(page.getByText("Could not read job #999999")).toBeVisible();
  await page.goto("/jobs/999999/timeline");
  await expect(page.getByRole("heading", { name: "IO timeline · job #999999" })).toBeVisible();
  await expect(page.getByText(/no IO trace|Could not read the trace/)).toBeVisible();
  const response = await request.get("/api/v1/no-such-thing");
  expect(response.status()).toBe(404);
  expect(response.headers()["content-type"]).toContain("application/json");
});
