/** Query keys in one place, so invalidation after a mutation names the same keys the reads use. */
export const keys = {
  health: ["health"] as const,
  jobs: (filters: object) => ["jobs", filters] as const,
  allJobs: ["jobs"] as const,
  job: (id: number) => ["job", id] as const,
  jobServer: (id: number) => ["job", id, "server"] as const,
  backups: ["backups"] as const,
  presets: ["sandbox-presets"] as const,
  targets: ["targets"] as const,
  trace: (id: number) => ["trace", id] as const,
  traceWindow: (id: number, params: object) => ["trace", id, "window", params] as const,
  traceStats: (id: number, params: object) => ["trace", id, "stats", params] as const,
};
