import { queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../api/client";
import { keys } from "./keys";

/** Whether a worker is up: without one, launched jobs wait in the queue. */
export function healthQuery() {
  return queryOptions({
    queryKey: keys.health,
    queryFn: () => unwrap(api.GET("/api/v1/health")),
    refetchInterval: 10_000,
    retry: false,
  });
}
