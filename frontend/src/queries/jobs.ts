/** Jobs: the list, one job, its server snapshots, its live events, and the actions on it. */

import { keepPreviousData, queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Job = Schemas["JobPublic"];
export type JobDetail = Schemas["JobDetail"];
export type JobLogLine = Schemas["JobLogPublic"];
export type RestoreRequest = Schemas["RestoreJobCreate"];

export const ACTIVE_STATUSES = ["queued", "running"] as const;
export const JOB_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"] as const;

export function isActive(status: string): boolean {
  return (ACTIVE_STATUSES as readonly string[]).includes(status);
}

export interface JobFilters {
  status: string[];
  kind: string;
  offset: number;
}

export const JOBS_PER_PAGE = 100;

/** Jobs newest first; polled every 2 s while any listed job is queued or running. */
export function jobsQuery(filters: JobFilters) {
  return queryOptions({
    queryKey: keys.jobs(filters),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: {
            query: {
              status: filters.status.length > 0 ? filters.status : undefined,
              kind: filters.kind || undefined,
              offset: filters.offset,
              limit: JOBS_PER_PAGE,
            },
          },
        }),
      ),
    refetchInterval: (query) => (query.state.data?.data.some((job) => isActive(job.status)) ? 2_000 : 15_000),
    placeholderData: keepPreviousData,
  });
}

export function jobQuery(id: number) {
  return queryOptions({
    queryKey: keys.job(id),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}", { params: { path: { job_id: id } } })),
    // The event stream keeps an active job fresh; this poll is the fallback if the stream drops.
    refetchInterval: (query) => (query.state.data && isActive(query.state.data.status) ? 3_000 : false),
  });
}

export function jobServerQuery(id: number, enabled: boolean) {
  return queryOptions({
    queryKey: keys.jobServer(id),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/server", { params: { path: { job_id: id } } })),
    enabled,
  });
}

const LOG_LINES_KEPT = 2_000;

/**
 * Follows /jobs/{id}/events (server-sent events): progress goes straight into the job's query, log lines
 * into a tail of the last 2000. On "end" the job is read again for its verification table.
 */
export function useJobEvents(id: number): { lines: JobLogLine[]; streaming: boolean } {
  const queryClient = useQueryClient();
  // Lines are kept with the job they belong to, so moving to another job never shows the previous one's.
  const [log, setLog] = useState<{ id: number; lines: JobLogLine[] }>({ id, lines: [] });
  const [streaming, setStreaming] = useState(false);

  useEffect(() => {
    const source = new EventSource(`/api/v1/jobs/${String(id)}/events`);
    let pending: JobLogLine[] = [];
    let timer: number | null = null;
    // Lines arrive in bursts (a restore can log hundreds at once): render them at most ~10 times a second.
    const flush = (): void => {
      timer = null;
      const batch = pending;
      pending = [];
      setLog((previous) => ({
        id,
        lines: [...(previous.id === id ? previous.lines : []), ...batch].slice(-LOG_LINES_KEPT),
      }));
    };
    source.onopen = () => setStreaming(true);
    source.addEventListener("log", (event) => {
      pending.push(JSON.parse((event as MessageEvent<string>).data) as JobLogLine);
      timer ??= window.setTimeout(flush, 100);
    });
    source.addEventListener("job", (event) => {
      const job = JSON.parse((event as MessageEvent<string>).data) as Job;
      queryClient.setQueryData<JobDetail>(keys.job(id), (previous) =>
        previous ? { ...previous, ...job } : undefined,
      );
    });
    source.addEventListener("end", () => {
      source.close();
      setStreaming(false);
      void queryClient.invalidateQueries({ queryKey: keys.job(id) });
      void queryClient.invalidateQueries({ queryKey: keys.jobServer(id) });
      void queryClient.invalidateQueries({ queryKey: keys.trace(id) });
      void queryClient.invalidateQueries({ queryKey: keys.advice(id) });
    });
    source.onerror = () => setStreaming(false);
    return () => {
      source.close();
      if (timer !== null) window.clearTimeout(timer);
    };
  }, [id, queryClient]);

  return { lines: log.id === id ? log.lines : [], streaming };
}

export function useCreateRestore() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: RestoreRequest) => unwrap(api.POST("/api/v1/jobs/restore", { body })),
    onSuccess: (job) => {
      queryClient.setQueryData(keys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: keys.allJobs });
    },
  });
}

export function useCancelJob(id: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/v1/jobs/{job_id}/cancel", { params: { path: { job_id: id } } })),
    onSuccess: (job) => {
      queryClient.setQueryData(keys.job(id), job);
      void queryClient.invalidateQueries({ queryKey: keys.allJobs });
    },
  });
}

export function useRetryJob(id: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/v1/jobs/{job_id}/retry", { params: { path: { job_id: id } } })),
    onSuccess: (job) => {
      queryClient.setQueryData(keys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: keys.allJobs });
    },
  });
}
