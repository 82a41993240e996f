import { queryOptions } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Target = Schemas["TargetPublic"];

export function targetsQuery() {
  return queryOptions({
    queryKey: keys.targets,
    queryFn: () => unwrap(api.GET("/api/v1/targets")),
    staleTime: 30_000,
  });
}
