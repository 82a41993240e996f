import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { RouterProvider } from "react-router-dom";

import { ApiError } from "./api/errors";
import { loginPath } from "./auth/next";
import { router } from "./router";
import "./styles.css";

/** A 401 anywhere means the session ended (logged out elsewhere, expired, account disabled): log in again and
 * come back to this page. */
function sendToLoginOn401(error: unknown): void {
  if (!(error instanceof ApiError) || error.status !== 401) return;
  const { pathname, search, hash } = window.location;
  if (pathname === "/login") return;
  void router.navigate(loginPath(pathname + search + hash), { replace: true });
}

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: sendToLoginOn401 }),
  mutationCache: new MutationCache({ onError: sendToLoginOn401 }),
  defaultOptions: {
    queries: {
      refetchOnWindowFocus: false,
      // Asking again will not change a refusal (401, 403, 404...): only a failure of the server or the network.
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 1,
    },
  },
});

const root = document.getElementById("root");
if (root === null) throw new Error("index.html has no #root");
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
