import { expect, test } from "./fixtures";

test("the jobs page opens empty with a way forward", async ({ page, saveScreenshot }) => {
  await page.goto("/");
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByText("1 worker online")).toBeVisible();
  await saveScreenshot(page, "jobs-empty");
});

test("a deep link opens its page, and an unknown API path stays a JSON 404", async ({ page, request }) => {
  await page.goto("/jobs/999999");
  await expect(page.getByText("Could not read job #999999")).toBeVisible();
  const response = await request.get("/api/v1/no-such-thing");
  expect(response.status()).toBe(404);
  expect(response.headers()["content-type"]).toContain("application/json");
});
