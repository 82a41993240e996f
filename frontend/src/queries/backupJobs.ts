/** Backup jobs: launching one. The job itself is read like any other (queries/jobs). */

import { useMutation, useQueryClient } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type BackupRequest = Schemas["BackupJobCreate"];

export function useCreateBackup() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BackupRequest) => unwrap(api.POST("/api/v1/jobs/backup", { body })),
    onSuccess: (job) => {
      queryClient.setQueryData(keys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: keys.allJobs });
      // The new backup is listed once it is written; a rescan on the next visit finds it.
      void queryClient.invalidateQueries({ queryKey: keys.backups });
    },
  });
}
