import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Navigate, useLocation } from "react-router-dom";

import { ApiError } from "../api/errors";
import { loginPath, safeNext } from "../auth/next";
import { type Role, roleAllows } from "../auth/roles";
import { meQuery, useCurrentUser } from "../queries/auth";
import { Empty, ErrorMessage, Loading } from "./common";

/**
 * Renders its children for a logged-in user only: nobody logged in goes to the login page (and comes back here
 * afterwards), a one-time password goes to the password page first.
 */
export function RequireLogin({ children, allowOneTimePassword = false }: { children: ReactNode; allowOneTimePassword?: boolean }) {
  const me = useQuery(meQuery());
  const location = useLocation();
  const here = location.pathname + location.search + location.hash;
  if (me.isPending) return <Loading what="your session" />;
  if (me.isError) {
    if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={loginPath(here)} replace />;
    return <ErrorMessage error={me.error} title="Could not tell who is logged in" />;
  }
  if (me.data.must_change_password && !allowOneTimePassword) {
    return <Navigate to={`/password?next=${encodeURIComponent(safeNext(here))}`} replace />;
  }
  return children;
}

/** Children for users with at least `role`; others are told what their role does not allow. */
export function RequireRole({ role, what, children }: { role: Role; what: string; children: ReactNode }) {
  const user = useCurrentUser();
  if (roleAllows(user.role, role)) return children;
  return (
    <Empty title={`Your role (${user.role}) does not allow ${what}`}>
      It needs the {role} role: ask an admin if you should have it.
    </Empty>
  );
}
