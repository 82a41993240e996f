/** Saved servers: everyone reads them, operators check them, admins add, edit and delete them. */

import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { ApiError } from "../api/errors";
import { keys } from "./keys";

export type Target = Schemas["TargetPublic"];
export type TargetCreate = Schemas["TargetCreate"];
export type TargetUpdate = Schemas["TargetUpdate"];

export function targetsQuery() {
  return queryOptions({
    queryKey: keys.targets,
    queryFn: () => unwrap(api.GET("/api/v1/targets")),
    staleTime: 30_000,
  });
}

function useTargetsMutation<T, R>(mutationFn: (variables: T) => Promise<R>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: keys.targets });
      void queryClient.invalidateQueries({ queryKey: keys.allAudit });
    },
  });
}

export function useCreateTarget() {
  return useTargetsMutation((body: TargetCreate) => unwrap(api.POST("/api/v1/targets", { body })));
}

export function useUpdateTarget() {
  return useTargetsMutation(({ id, body }: { id: number; body: TargetUpdate }) =>
    unwrap(api.PATCH("/api/v1/targets/{target_id}", { params: { path: { target_id: id } }, body })),
  );
}

export function useCheckTarget() {
  return useTargetsMutation((id: number) => unwrap(api.POST("/api/v1/targets/{target_id}/check", { params: { path: { target_id: id } } })));
}

export function useDeleteTarget() {
  return useTargetsMutation(async (id: number) => {
    const { response, error } = await api.DELETE("/api/v1/targets/{target_id}", { params: { path: { target_id: id } } });
    if (!response.ok) throw ApiError.from(response.status, error);
  });
}
