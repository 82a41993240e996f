/** Users as an admin manages them. */

import { queryOptions, useMutation, useQueryClient } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { ApiError } from "../api/errors";
import { keys } from "./keys";

export type ManagedUser = Schemas["UserPublic"];
export type UserCreate = Schemas["UserCreate"];
export type UserUpdate = Schemas["UserUpdate"];

export function usersQuery() {
  return queryOptions({
    queryKey: keys.users,
    queryFn: () => unwrap(api.GET("/api/v1/users")),
  });
}

function useUsersMutation<T, R>(mutationFn: (variables: T) => Promise<R>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: keys.users });
      void queryClient.invalidateQueries({ queryKey: keys.allAudit });
      // An admin may have changed their own role: the header and the buttons follow.
      void queryClient.invalidateQueries({ queryKey: keys.me });
    },
  });
}

export function useCreateUser() {
  return useUsersMutation((body: UserCreate) => unwrap(api.POST("/api/v1/users", { body })));
}

export function useUpdateUser() {
  return useUsersMutation(({ id, body }: { id: number; body: UserUpdate }) =>
    unwrap(api.PATCH("/api/v1/users/{user_id}", { params: { path: { user_id: id } }, body })),
  );
}

export function useResetPassword() {
  return useUsersMutation((id: number) =>
    unwrap(api.POST("/api/v1/users/{user_id}/password", { params: { path: { user_id: id } }, body: { must_change_password: true } })),
  );
}

export function useDeleteUser() {
  return useUsersMutation(async (id: number) => {
    const { response, error } = await api.DELETE("/api/v1/users/{user_id}", { params: { path: { user_id: id } } });
    if (!response.ok) throw ApiError.from(response.status, error);
  });
}
