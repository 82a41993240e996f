import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useState } from "react";

import { ApiError } from "../api/errors";
import { type Role, ROLE_DESCRIPTIONS } from "../auth/roles";
import { Empty, ErrorMessage, Loading } from "../components/common";
import { Field } from "../components/Field";
import { RequireRole } from "../components/RequireLogin";
import { whenText } from "../components/when";
import { useCurrentUser } from "../queries/auth";
import { type ManagedUser, useCreateUser, useDeleteUser, useResetPassword, useUpdateUser, usersQuery } from "../queries/users";
import { MIN_PASSWORD_LENGTH } from "./PasswordPage";

const ROLES: Role[] = ["viewer", "operator", "admin"];

/** A password the API made: shown once, here, for the admin to hand over. */
function OneTimePassword({ username, password, onDone }: { username: string; password: string; onDone: () => void }) {
  return (
    <div className="message warn" role="status">
      <strong>One-time password for {username}</strong>
      <code className="secret" data-testid="one-time-password">
        {password}
      </code>
      Give it to them: it is shown only now. They choose their own password when they first log in with it.
      <div>
        <button className="small" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function CreateUser({ onMade }: { onMade: (username: string, password: string | null) => void }) {
  const create = useCreateUser();
  const [username, setUsername] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [password, setPassword] = useState("");
  const [mustChange, setMustChange] = useState(true);
  const apiError = create.error instanceof ApiError ? create.error : null;

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    create.mutate(
      { username, role, password: password === "" ? null : password, must_change_password: password === "" || mustChange },
      {
        onSuccess: (made) => {
          onMade(made.user.username, made.one_time_password);
          setUsername("");
          setPassword("");
        },
      },
    );
  };
  return (
    <form className="panel" onSubmit={submit} aria-label="New user">
      <h2>New user</h2>
      <div className="grid-3">
        <Field label="User name" hint="Letters, digits and . _ @ -; not case-sensitive." error={apiError?.fieldMessage("username")}>
          {(props) => <input {...props} autoComplete="off" value={username} onChange={(event) => setUsername(event.target.value)} />}
        </Field>
        <Field label="Role" hint={ROLE_DESCRIPTIONS[role]} error={apiError?.fieldMessage("role")}>
          {(props) => (
            <select {...props} value={role} onChange={(event) => setRole(event.target.value as Role)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="Password"
          hint={`Empty: a one-time password is made and shown once. Else at least ${String(MIN_PASSWORD_LENGTH)} characters.`}
          error={apiError?.fieldMessage("password")}
        >
          {(props) => (
            <input {...props} type="password" autoComplete="new-password" value={password} onChange={(event) => setPassword(event.target.value)} />
          )}
        </Field>
      </div>
      <div className="filters">
        <label title={password === "" ? "A one-time password must always be changed" : undefined}>
          <input
            type="checkbox"
            checked={password === "" || mustChange}
            disabled={password === ""}
            onChange={(event) => setMustChange(event.target.checked)}
          />{" "}
          They choose their own password at the first login
        </label>
        <span className="spacer" />
        <button className="primary" type="submit" disabled={create.isPending || username.trim() === ""}>
          Create user
        </button>
      </div>
      {create.isError && apiError?.fields.every((f) => f.field === "") !== false && (
        <ErrorMessage error={create.error} title="Could not create the user" />
      )}
    </form>
  );
}

function UserRow({ user, me, onReset }: { user: ManagedUser; me: string; onReset: (username: string, password: string | null) => void }) {
  const update = useUpdateUser();
  const reset = useResetPassword();
  const remove = useDeleteUser();
  const failed = update.error ?? reset.error ?? remove.error;
  const self = user.username === me;
  return (
    <>
      <tr data-testid={`user-row-${user.username}`}>
        <td>
          <strong>{user.username}</strong>
          {self && <span className="sub"> (you)</span>}
        </td>
        <td>
          <select
            aria-label={`Role of ${user.username}`}
            value={user.role}
            disabled={update.isPending}
            onChange={(event) => update.mutate({ id: user.id, body: { role: event.target.value as Role } })}
          >
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </td>
        <td>
          {user.disabled ? (
            <span className="badge failed">disabled</span>
          ) : user.must_change_password ? (
            <span className="badge queued">one-time password</span>
          ) : (
            <span className="badge succeeded">active</span>
          )}
        </td>
        <td>{user.last_login_at === null ? <span className="sub">never</span> : whenText(user.last_login_at)}</td>
        <td>{whenText(user.created_at)}</td>
        <td className="actions">
          <button
            className="small"
            disabled={reset.isPending}
            onClick={() => {
              if (window.confirm(`Give ${user.username} a new one-time password? Their sessions end now.`)) {
                reset.mutate(user.id, { onSuccess: (made) => onReset(made.user.username, made.one_time_password) });
              }
            }}
          >
            Reset password
          </button>
          <button className="small" disabled={update.isPending} onClick={() => update.mutate({ id: user.id, body: { disabled: !user.disabled } })}>
            {user.disabled ? "Enable" : "Disable"}
          </button>
          {!self && (
            <button
              className="small danger"
              disabled={remove.isPending}
              onClick={() => {
                if (window.confirm(`Delete ${user.username}? Jobs and the audit log keep their name.`)) remove.mutate(user.id);
              }}
            >
              Delete
            </button>
          )}
        </td>
      </tr>
      {failed !== null && (
        <tr>
          <td colSpan={6}>
            <ErrorMessage error={failed} title={`Could not change ${user.username}`} />
          </td>
        </tr>
      )}
    </>
  );
}

function Users() {
  const me = useCurrentUser();
  const users = useQuery(usersQuery());
  const [shown, setShown] = useState<{ username: string; password: string } | null>(null);
  const show = (username: string, password: string | null): void => setShown(password === null ? null : { username, password });
  return (
    <>
      <div className="page-head">
        <h1>Users</h1>
        {users.data && <span className="sub">{users.data.data.length} user{users.data.data.length === 1 ? "" : "s"} · viewers read, operators also launch and cancel, admins also manage users and saved servers</span>}
      </div>
      {shown !== null && <OneTimePassword username={shown.username} password={shown.password} onDone={() => setShown(null)} />}
      <CreateUser onMade={show} />
      <div className="panel">
        {users.isPending && <Loading what="users" />}
        {users.isError && <ErrorMessage error={users.error} title="Could not read the users" />}
        {users.data?.data.length === 0 && <Empty title="No users" />}
        {users.data && users.data.data.length > 0 && (
          <div className="scroll">
            <table className="data">
              <thead>
                <tr>
                  <th>User</th>
                  <th>Role</th>
                  <th>Status</th>
                  <th>Last login</th>
                  <th>Created</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {users.data.data.map((user) => (
                  <UserRow key={user.id} user={user} me={me.username} onReset={show} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  );
}

export function UsersPage() {
  return (
    <RequireRole role="admin" what="managing users">
      <Users />
    </RequireRole>
  );
}
