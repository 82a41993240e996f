/** Small shared pieces: badges, progress bars, messages, empty states. */

import type { ReactNode } from "react";

import { ApiError, errorMessage } from "../api/errors";
import { formatPercent } from "../timeline/format";

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge ${status}`}>{status}</span>;
}

export function ProgressBar({ percent, status, small = false }: { percent: number | null; status: string; small?: boolean }) {
  const value = percent ?? (status === "succeeded" ? 100 : 0);
  return (
    <div
      className={`progress ${status} ${small ? "small" : ""}`}
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={Math.round(value)}
      aria-label={`Progress ${formatPercent(value)}`}
    >
      <div style={{ width: `${String(Math.min(100, Math.max(0, value)))}%` }} />
    </div>
  );
}

export function ErrorMessage({
  error,
  title,
  children,
  withoutField = false,
}: {
  error: unknown;
  title?: string;
  children?: ReactNode;
  /** Leave out the field's name when the page has one field only (an upload's "file"). */
  withoutField?: boolean;
}) {
  return (
    <div className="message error" role="alert">
      {title !== undefined && <strong>{title}</strong>}
      {withoutField && error instanceof ApiError && error.fields.length > 0
        ? error.fields.map((field) => field.message).join("; ")
        : errorMessage(error)}
      {children}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <strong>{title}</strong>
      {children}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <div className="empty">Loading {what}…</div>;
}
