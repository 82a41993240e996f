/** The logged-in user: who they are, logging in and out, and changing their own password. */

import { queryOptions, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router-dom";

import { type Schemas, api, unwrap } from "../api/client";
import { ApiError } from "../api/errors";
import { keys } from "./keys";

export type User = Schemas["UserPublic"];

/** Who is logged in; fails with a 401 ApiError when nobody is. */
export function meQuery() {
  return queryOptions({
    queryKey: keys.me,
    queryFn: () => unwrap(api.GET("/api/v1/auth/me")),
    retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 1,
    staleTime: 60_000,
  });
}

/** The logged-in user, for pages behind RequireLogin (which only renders them once it is known). */
export function useCurrentUser(): User {
  const { data } = useQuery(meQuery());
  if (data === undefined) throw new Error("useCurrentUser outside RequireLogin");
  return data;
}

export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas["LoginRequest"]) => unwrap(api.POST("/api/v1/auth/login", { body })),
    onSuccess: (login) => {
      // Another user's data must not show for a moment: start from an empty cache.
      queryClient.clear();
      queryClient.setQueryData(keys.me, login.user);
    },
  });
}

/** Ends the session and goes to the login page; the cache is emptied once no page is left to read it again. */
export function useLogout() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  return useMutation({
    mutationFn: async () => {
      const { response } = await api.POST("/api/v1/auth/logout");
      // Already logged out (401) is what we wanted anyway.
      if (!response.ok && response.status !== 401) throw ApiError.from(response.status, undefined);
    },
    onSuccess: async () => {
      await navigate("/login", { replace: true });
      queryClient.clear();
    },
  });
}

export function useChangePassword() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas["PasswordChange"]) => unwrap(api.POST("/api/v1/auth/password", { body })),
    onSuccess: (user) => queryClient.setQueryData(keys.me, user),
  });
}
