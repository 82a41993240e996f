/**
 * Traces: a job's trace summary, windows of its lanes at the canvas's resolution, statistics of a time
 * range, and imports of trace files.
 */

import { keepPreviousData, queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../api/client";
import { ApiError } from "../api/errors";
import { keys } from "./keys";
import { rowsFromColumns } from "../timeline/columns";
import type { ImportResult, TraceWindow } from "./traceTypes";

export type * from "./traceTypes";

/**
 * The window asked for in the columnar layout (cheaper for the server to build and send), as rows. The
 * schema describes the row layout, hence the reading through unknown.
 */
function windowFromColumns(raw: unknown): TraceWindow {
  const window = raw as Omit<TraceWindow, "lanes"> & { lanes: Record<string, unknown>[] };
  return {
    ...window,
    lanes: window.lanes.map((lane) => ({
      tid: lane.tid as number,
      detail: lane.detail as TraceWindow["lanes"][number]["detail"],
      buckets: rowsFromColumns(lane.buckets),
      operations: rowsFromColumns(lane.operations),
      spans: rowsFromColumns(lane.spans),
    })),
  };
}

const base = (jobId: number): string => `/api/v1/jobs/${String(jobId)}/trace`;

/**
 * The summary; polled every 2 s while the trace is still being recorded, so the timeline grows live, and
 * while a job that has none yet is still active (its capture starts with the restore).
 */
export function traceQuery(jobId: number, jobActive = false) {
  return queryOptions({
    queryKey: keys.trace(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/trace", { params: { path: { job_id: jobId } } })),
    refetchInterval: (q) => (q.state.data?.status === "recording" || (jobActive && q.state.data === undefined) ? 2_000 : false),
    retry: (count, error) => !(error instanceof ApiError && error.status === 404) && count < 2,
  });
}

export interface TraceFilter {
  tids?: string;
  kinds?: string;
  roles?: string;
  path?: string;
}

export interface WindowParams extends TraceFilter {
  t0_us: number;
  t1_us: number;
  width_px: number;
}

export function traceWindowQuery(jobId: number, params: WindowParams, live: boolean, enabled = true) {
  return queryOptions({
    queryKey: keys.traceWindow(jobId, params),
    queryFn: async ({ signal }) =>
      windowFromColumns(
        await unwrap(
          api.GET("/api/v1/jobs/{job_id}/trace/window", {
            params: { path: { job_id: jobId }, query: { ...params, layout: "columns" } },
            signal,
          }),
        ),
      ),
    // While zooming, keep drawing the last window until the new one arrives instead of blanking the lanes.
    placeholderData: keepPreviousData,
    refetchInterval: live ? 2_000 : false,
    staleTime: live ? 0 : 60_000,
    enabled,
  });
}

export interface StatsParams extends TraceFilter {
  t0_us?: number;
  t1_us?: number;
}

export function traceStatsQuery(jobId: number, params: StatsParams, live: boolean) {
  return queryOptions({
    queryKey: keys.traceStats(jobId, params),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/trace/stats", { params: { path: { job_id: jobId }, query: params } })),
    placeholderData: keepPreviousData,
    refetchInterval: live ? 3_000 : false,
    staleTime: live ? 0 : 60_000,
  });
}

export function perfettoUrl(jobId: number): string {
  return `${base(jobId)}/perfetto`;
}

export function useImportTrace() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ file, name }: { file: File; name: string }): Promise<ImportResult> => {
      const form = new FormData();
      form.append("file", file);
      if (name) form.append("name", name);
      const response = await fetch("/api/v1/traces/import", { method: "POST", body: form });
      const body: unknown = await response.json().catch(() => null);
      if (!response.ok) throw ApiError.from(response.status, body);
      return body as ImportResult;
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keys.allJobs }),
  });
}
