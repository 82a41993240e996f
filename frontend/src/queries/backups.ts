import { queryOptions } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Backup = Schemas["BackupPublic"];

/** Backups under the server's roots; each read rescans the disk, so a new dump shows up on refresh. */
export function backupsQuery() {
  return queryOptions({
    queryKey: keys.backups,
    queryFn: () => unwrap(api.GET("/api/v1/backups", { params: { query: { refresh: true } } })),
    staleTime: 30_000,
  });
}

/** Only the configured roots (no rescan), to show job paths relative to them. */
export function backupRootsQuery() {
  return queryOptions({
    queryKey: [...keys.backups, "roots"],
    queryFn: () => unwrap(api.GET("/api/v1/backups", { params: { query: { refresh: false } } })),
    select: (backups) => backups.roots,
    staleTime: Number.POSITIVE_INFINITY,
  });
}
