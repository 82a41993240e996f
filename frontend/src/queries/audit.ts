/** The audit log: who did what, newest first. */

import { keepPreviousData, queryOptions } from "@tanstack/react-query";

import { type Schemas, api, unwrap } from "../api/client";
import { keys } from "./keys";

export type AuditEvent = Schemas["AuditEventPublic"];

export interface AuditFilters {
  action: string;
  username: string;
  offset: number;
}

export const EVENTS_PER_PAGE = 100;

export function auditQuery(filters: AuditFilters) {
  return queryOptions({
    queryKey: keys.audit(filters),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/audit", {
          params: {
            query: {
              action: filters.action ? [filters.action] : undefined,
              username: filters.username.trim() || undefined,
              offset: filters.offset,
              limit: EVENTS_PER_PAGE,
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: 15_000,
  });
}
