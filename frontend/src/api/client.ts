/** The typed API client: paths and bodies come from the backend's OpenAPI schema (src/client, generated). */

import createClient from "openapi-fetch";

import type { components, paths } from "../client/schema";
import { ApiError } from "./errors";

export type Schemas = components["schemas"];

export const api = createClient<paths>({ baseUrl: "" });

/** The data of a response, or an ApiError carrying the status and what the API said. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || data === undefined) throw ApiError.from(response.status, error);
  return data;
}
