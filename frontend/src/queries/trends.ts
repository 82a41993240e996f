import { keepPreviousData, queryOptions } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Trends = Schemas["TrendsPublic"];
export type DatabaseTrend = Schemas["DatabaseTrend"];
export type Run = Schemas["RunPublic"];

export const WINDOWS = [7, 30, 90, 365] as const;

/** Trends of every protected database over the last `days`; refreshed every 30 s, as drills add runs. */
export function trendsQuery(days: number) {
  return queryOptions({
    queryKey: keys.trends(days),
    queryFn: () => unwrap(api.GET("/api/v1/trends", { params: { query: { days } } })),
    refetchInterval: 30_000,
    placeholderData: keepPreviousData,
  });
}

export function runsCsvUrl(days: number): string {
  return `/api/v1/trends/runs.csv?days=${String(days)}`;
}
