/** Protected databases, their drills and their notifications: reads and the actions on them. */

import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { ApiError } from "../api/errors";
import { keys } from "./keys";

export type Protected = Schemas["ProtectedDatabasePublic"];
export type ProtectedCreate = Schemas["ProtectedDatabaseCreate"];
export type ProtectedUpdate = Schemas["ProtectedDatabaseUpdate"];
export type Drill = Schemas["DrillPublic"];
export type Notification = Schemas["NotificationPublic"];

function anyActive(drills: readonly Drill[]): boolean {
  return drills.some((drill) => drill.status === "queued" || drill.status === "running");
}

/** Polled every 5 s while a drill of any of them is queued or running, else every 30 s (a scheduled drill
 * appears on its own). */
export function protectedQuery() {
  return queryOptions({
    queryKey: keys.protected,
    queryFn: () => unwrap(api.GET("/api/v1/protected-databases")),
    refetchInterval: (query) =>
      query.state.data?.data.some((p) => p.status.active_drill_job_id !== null) ? 5_000 : 30_000,
  });
}

export function drillsQuery(protectedId: number | null) {
  return queryOptions({
    queryKey: keys.drills(protectedId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/drills", {
          params: { query: { protected_database_id: protectedId ?? undefined, limit: 50 } },
        }),
      ),
    refetchInterval: (query) => (query.state.data && anyActive(query.state.data.data) ? 3_000 : 10_000),
  });
}

export function notificationsQuery(protectedId: number | null) {
  return queryOptions({
    queryKey: keys.notifications(protectedId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/notifications", {
          params: { query: { protected_database_id: protectedId ?? undefined, limit: 50 } },
        }),
      ),
    refetchInterval: 15_000,
  });
}

function useRefresh(): () => void {
  const queryClient = useQueryClient();
  return () => {
    void queryClient.invalidateQueries({ queryKey: keys.protected });
    void queryClient.invalidateQueries({ queryKey: keys.allDrills });
    void queryClient.invalidateQueries({ queryKey: keys.allTrends });
    void queryClient.invalidateQueries({ queryKey: keys.allNotifications });
  };
}

export function useCreateProtected() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: (body: ProtectedCreate) => unwrap(api.POST("/api/v1/protected-databases", { body })),
    onSuccess: refresh,
  });
}

export function useUpdateProtected() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: ({ id, body }: { id: number; body: ProtectedUpdate }) =>
      unwrap(api.PATCH("/api/v1/protected-databases/{protected_id}", { params: { path: { protected_id: id } }, body })),
    onSuccess: refresh,
  });
}

export function useDeleteProtected() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: async (id: number) => {
      const { error, response } = await api.DELETE("/api/v1/protected-databases/{protected_id}", {
        params: { path: { protected_id: id } },
      });
      if (!response.ok) throw ApiError.from(response.status, error);
    },
    onSuccess: refresh,
  });
}

export function useStartDrill() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: (id: number) =>
      unwrap(api.POST("/api/v1/protected-databases/{protected_id}/drills", { params: { path: { protected_id: id } } })),
    onSuccess: refresh,
  });
}

export function useTestNotification() {
  const refresh = useRefresh();
  return useMutation({
    mutationFn: (id: number) =>
      unwrap(
        api.POST("/api/v1/protected-databases/{protected_id}/notifications/test", {
          params: { path: { protected_id: id } },
        }),
      ),
    onSuccess: refresh,
  });
}
