import { queryOptions } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type Preset = Schemas["PresetPublic"];
export type ServerOptions = Schemas["ServerOptions"];

export function presetsQuery() {
  return queryOptions({
    queryKey: keys.presets,
    queryFn: () => unwrap(api.GET("/api/v1/sandbox-presets")),
    staleTime: Number.POSITIVE_INFINITY,
  });
}
