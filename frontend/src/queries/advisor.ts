/** The advisor: a run's advice, a re-run with one suggestion's change, and two runs compared. */

import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Advice = Schemas["AdvicePublic"];
export type SuggestionItem = Schemas["SuggestionPublic"];
export type OutcomeItem = Schemas["OutcomePublic"];
export type Comparison = Schemas["ComparePublic"];
export type CompareSide = Schemas["CompareSidePublic"];
export type OpCompare = Schemas["OpComparePublic"];

/** A run's advice; re-read every 3 s while it waits for the run to end or for a re-run to be measured. */
export function adviceQuery(jobId: number, enabled = true) {
  return queryOptions({
    queryKey: keys.advice(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/advice", { params: { path: { job_id: jobId } } })),
    enabled,
    refetchInterval: (query) => {
      const data = query.state.data;
      const measuring = data?.suggestions.some((s) => s.reruns.some((r) => r.verdict === "measuring")) ?? false;
      return data?.state === "pending" || measuring || data?.applied_from?.verdict === "measuring" ? 3_000 : false;
    },
  });
}

export function useRerun(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (rule: string) =>
      unwrap(api.POST("/api/v1/jobs/{job_id}/advice/{rule}/rerun", { params: { path: { job_id: jobId, rule } } })),
    onSuccess: (job) => {
      queryClient.setQueryData(keys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: keys.advice(jobId) });
      void queryClient.invalidateQueries({ queryKey: keys.allJobs });
    },
  });
}

export function compareQuery(a: number, b: number) {
  return queryOptions({
    queryKey: keys.compare(a, b),
    queryFn: () => unwrap(api.GET("/api/v1/compare", { params: { query: { a, b } } })),
    enabled: Number.isSafeInteger(a) && Number.isSafeInteger(b),
  });
}
