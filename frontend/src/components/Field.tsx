import { type ReactNode, useId } from "react";

/** A labelled form control with a hint and the API's message for its field, if any. */
export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: ReactNode;
  error?: string | undefined;
  children: (props: { id: string; "aria-invalid": boolean; "aria-describedby"?: string }) => ReactNode;
}) {
  const id = useId();
  const errorId = `${id}-error`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, "aria-invalid": error !== undefined, ...(error !== undefined ? { "aria-describedby": errorId } : {}) })}
      {hint !== undefined && <span className="hint">{hint}</span>}
      {error !== undefined && (
        <span className="field-error" id={errorId} role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
