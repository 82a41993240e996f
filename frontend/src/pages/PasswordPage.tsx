import { type SyntheticEvent, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";

import { ApiError } from "../api/errors";
import { safeNext } from "../auth/next";
import { ErrorMessage } from "../components/common";
import { Field } from "../components/Field";
import { useChangePassword, useCurrentUser, useLogout } from "../queries/auth";

export const MIN_PASSWORD_LENGTH = 10;

/** Your own new password; the only page open with a one-time password, which must be changed first. */
export function PasswordPage() {
  const user = useCurrentUser();
  const [search] = useSearchParams();
  const next = safeNext(search.get("next"));
  const navigate = useNavigate();
  const change = useChangePassword();
  const logout = useLogout();
  const [current, setCurrent] = useState("");
  const [chosen, setChosen] = useState("");
  const [again, setAgain] = useState("");
  const forced = user.must_change_password;

  const apiError = change.error instanceof ApiError ? change.error : null;
  const mismatch = again !== "" && again !== chosen ? "the two new passwords differ" : undefined;
  const tooShort =
    chosen !== "" && chosen.length < MIN_PASSWORD_LENGTH ? `at least ${String(MIN_PASSWORD_LENGTH)} characters` : undefined;

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    change.mutate(
      { current_password: current, new_password: chosen },
      { onSuccess: () => void navigate(next, { replace: true }) },
    );
  };

  return (
    <div className="auth-page">
      <form className="panel auth-panel" onSubmit={submit} aria-label="Change password">
        <div className="brand">
          restore<span>scope</span>
        </div>
        <h1>{forced ? "Choose your password" : "Change your password"}</h1>
        {forced && (
          <div className="message info">
            {user.username}, you logged in with a one-time password. Choose your own to continue.
          </div>
        )}
        <Field label={forced ? "One-time password" : "Current password"} error={apiError?.fieldMessage("current_password")}>
          {(props) => (
            <input {...props} type="password" autoComplete="current-password" value={current} onChange={(event) => setCurrent(event.target.value)} />
          )}
        </Field>
        <Field label="New password" hint={`At least ${String(MIN_PASSWORD_LENGTH)} characters, not your user name.`} error={tooShort ?? apiError?.fieldMessage("new_password")}>
          {(props) => (
            <input {...props} type="password" autoComplete="new-password" value={chosen} onChange={(event) => setChosen(event.target.value)} />
          )}
        </Field>
        <Field label="New password again" error={mismatch}>
          {(props) => (
            <input {...props} type="password" autoComplete="new-password" value={again} onChange={(event) => setAgain(event.target.value)} />
          )}
        </Field>
        {change.isError && apiError?.fields.length === 0 && <ErrorMessage error={change.error} title="Could not change the password" />}
        <div className="filters">
          <button
            className="primary"
            type="submit"
            disabled={change.isPending || current === "" || chosen === "" || again !== chosen || tooShort !== undefined}
          >
            {change.isPending ? "Saving…" : "Save the new password"}
          </button>
          {forced ? (
            <button type="button" onClick={() => logout.mutate()}>
              Log out
            </button>
          ) : (
            <Link to={next}>Cancel</Link>
          )}
        </div>
      </form>
    </div>
  );
}
