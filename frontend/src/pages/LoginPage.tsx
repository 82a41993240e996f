import { type SyntheticEvent, useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";

import { ApiError } from "../api/errors";
import { safeNext } from "../auth/next";
import { ErrorMessage } from "../components/common";
import { Field } from "../components/Field";
import { useLogin } from "../queries/auth";

export function LoginPage() {
  const [search] = useSearchParams();
  const next = safeNext(search.get("next"));
  const navigate = useNavigate();
  const login = useLogin();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    login.mutate(
      { username, password },
      {
        onSuccess: ({ user }) => {
          const to = user.must_change_password ? `/password?next=${encodeURIComponent(next)}` : next;
          void navigate(to, { replace: true });
        },
      },
    );
  };
  const refused = login.error instanceof ApiError && (login.error.status === 401 || login.error.status === 429);

  return (
    <div className="auth-page">
      <form className="panel auth-panel" onSubmit={submit} aria-label="Log in">
        <div className="brand">
          restore<span>scope</span>
        </div>
        <h1>Log in</h1>
        {search.get("next") !== null && next !== "/" && <div className="message info">Log in to see that page.</div>}
        <Field label="User name">
          {(props) => (
            <input {...props} autoComplete="username" autoFocus value={username} onChange={(event) => setUsername(event.target.value)} />
          )}
        </Field>
        <Field label="Password">
          {(props) => (
            <input {...props} type="password" autoComplete="current-password" value={password} onChange={(event) => setPassword(event.target.value)} />
          )}
        </Field>
        {login.isError && (
          <ErrorMessage error={login.error} title={refused ? "Not logged in" : "Could not log in"} withoutField />
        )}
        <button className="primary" type="submit" disabled={login.isPending || username.trim() === "" || password === ""}>
          {login.isPending ? "Logging in…" : "Log in"}
        </button>
        <p className="hint">
          No account? An admin creates users on the Users page. The first admin&apos;s one-time password is printed by{" "}
          <code>make run</code>.
        </p>
      </form>
    </div>
  );
}
