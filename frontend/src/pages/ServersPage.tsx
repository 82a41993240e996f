import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useState } from "react";
import { Link } from "react-router-dom";

import { ApiError } from "../api/errors";
import { canOperate, isAdmin } from "../auth/roles";
import { Empty, ErrorMessage, Loading } from "../components/common";
import { Field } from "../components/Field";
import {
  type ServerForm,
  type TargetCheck,
  checkSummary,
  createBody,
  deleteQuestion,
  emptyForm,
  formOf,
  updateBody,
  whereText,
  workerHostText,
} from "../components/savedServer";
import { whenText } from "../components/when";
import { useCurrentUser } from "../queries/auth";
import { type Target, targetsQuery, useCheckTarget, useCreateTarget, useDeleteTarget, useUpdateTarget } from "../queries/targets";

// The fields the form shows the API's messages under; any other message goes above the form.
const PLACED_FIELDS = ["name", "host", "port", "socket", "user", "password", "default_database", "notes"];

/** Add a server (no `target`) or edit one: the API's messages under their fields. */
function ServerFormPanel({ target, onDone }: { target?: Target; onDone: () => void }) {
  const create = useCreateTarget();
  const update = useUpdateTarget();
  const [form, setForm] = useState<ServerForm>(target === undefined ? emptyForm() : formOf(target));
  const saving = target === undefined ? create : update;
  const apiError = saving.error instanceof ApiError ? saving.error : null;
  const fieldError = (field: string): string | undefined => apiError?.fieldMessage(field);
  const unplaced = apiError === null || apiError.fields.some((e) => !PLACED_FIELDS.includes(e.field.split(".")[0] ?? ""));
  const set = <K extends keyof ServerForm>(name: K, value: ServerForm[K]): void => setForm((current) => ({ ...current, [name]: value }));

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    if (target === undefined) {
      create.mutate(createBody(form), {
        onSuccess: () => {
          setForm(emptyForm());
          onDone();
        },
      });
    } else {
      update.mutate({ id: target.id, body: updateBody(form, target) }, { onSuccess: onDone });
    }
  };

  const title = target === undefined ? "Add a server" : `Edit ${target.name}`;
  return (
    <form className="panel" onSubmit={submit} noValidate aria-label={title}>
      <h2>{title}</h2>
      {saving.isError && unplaced && <ErrorMessage error={saving.error} title={target === undefined ? "The server was not saved" : "The changes were not saved"} />}
      <div className="grid-3">
        <Field label="Name" hint="How forms and job pages name it." error={fieldError("name")}>
          {(props) => <input {...props} autoComplete="off" value={form.name} onChange={(event) => set("name", event.target.value)} />}
        </Field>
        <div className="field">
          <span className="label">Connect through</span>
          <div className="filters" role="radiogroup" aria-label="Connect through">
            <label>
              <input type="radio" name="connect-via" checked={form.connectVia === "tcp"} onChange={() => set("connectVia", "tcp")} /> Host and port
            </label>
            <label>
              <input type="radio" name="connect-via" checked={form.connectVia === "socket"} onChange={() => set("connectVia", "socket")} /> Unix socket
            </label>
          </div>
          <span className="hint">A socket reaches a server on the worker's host only.</span>
        </div>
        {form.connectVia === "tcp" ? (
          <div className="grid-2">
            <Field label="Host" error={fieldError("host")}>
              {(props) => <input {...props} autoComplete="off" value={form.host} onChange={(event) => set("host", event.target.value)} />}
            </Field>
            <Field label="Port" error={fieldError("port")}>
              {(props) => <input {...props} inputMode="numeric" value={form.port} onChange={(event) => set("port", event.target.value)} />}
            </Field>
          </div>
        ) : (
          <Field label="Socket" hint="An absolute path, such as /run/mysqld/mysqld.sock." error={fieldError("socket")}>
            {(props) => (
              <input {...props} autoComplete="off" value={form.socket} placeholder="/run/mysqld/mysqld.sock" onChange={(event) => set("socket", event.target.value)} />
            )}
          </Field>
        )}
        <Field label="User" error={fieldError("user")}>
          {(props) => <input {...props} autoComplete="off" value={form.user} onChange={(event) => set("user", event.target.value)} />}
        </Field>
        <Field
          label="Password"
          hint={
            target === undefined
              ? "Stored encrypted; never shown again. Empty: the account has no password."
              : target.has_password
                ? "Leave empty to keep the stored password; type a new one to replace it."
                : "No password is stored; type one to store it."
          }
          error={fieldError("password")}
        >
          {(props) => (
            <input
              {...props}
              type="password"
              autoComplete="new-password"
              value={form.password}
              placeholder={target === undefined ? "" : form.removePassword ? "removed" : "unchanged"}
              disabled={form.removePassword}
              onChange={(event) => set("password", event.target.value)}
            />
          )}
        </Field>
        <Field label="Default database" hint="A check opens it; the backup form suggests it. Empty: none." error={fieldError("default_database")}>
          {(props) => (
            <input {...props} autoComplete="off" value={form.defaultDatabase} placeholder="(none)" onChange={(event) => set("defaultDatabase", event.target.value)} />
          )}
        </Field>
      </div>
      <Field label="Notes" error={fieldError("notes")}>
        {(props) => <textarea {...props} rows={2} value={form.notes} onChange={(event) => set("notes", event.target.value)} />}
      </Field>
      <div className="filters">
        {target?.has_password === true && (
          <label>
            <input
              type="checkbox"
              checked={form.removePassword}
              onChange={(event) => {
                set("removePassword", event.target.checked);
                if (event.target.checked) set("password", "");
              }}
            />{" "}
            Remove the stored password
          </label>
        )}
        <span className="spacer" />
        {target !== undefined && (
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        )}
        <button className="primary" type="submit" disabled={saving.isPending}>
          {target === undefined ? "Add server" : "Save changes"}
        </button>
      </div>
    </form>
  );
}

function LastCheck({ check }: { check: TargetCheck | null }) {
  if (check === null) return <span className="sub">not checked since it was saved or changed</span>;
  const host = workerHostText(check);
  return (
    <div data-testid="last-check">
      <span className={`badge ${check.ok ? "succeeded" : "failed"}`}>{check.ok ? "ok" : "failed"}</span> {checkSummary(check)}
      {host !== null && (
        <span className="sub" title={check.worker_host_note ?? undefined}>
          {" "}
          · {host}
        </span>
      )}
      <div className="sub">
        {whenText(check.checked_at)}
        {!check.ok && <>: {check.message}</>}
      </div>
    </div>
  );
}

function ServerRow({ target, onEdit }: { target: Target; onEdit: () => void }) {
  const { role } = useCurrentUser();
  const check = useCheckTarget();
  const remove = useDeleteTarget();
  const failed = check.error ?? remove.error;
  return (
    <>
      <tr data-testid={`server-row-${target.name}`}>
        <td>
          <strong>{target.name}</strong>
          {target.notes !== null && <div className="sub">{target.notes}</div>}
        </td>
        <td>
          <span className="mono">{whereText(target)}</span>
          <div className="sub">
            user {target.user}
            {target.default_database !== null && <>, database {target.default_database}</>}
          </div>
        </td>
        <td>{target.has_password ? "stored" : <span className="sub">none</span>}</td>
        <td>
          <LastCheck check={target.last_check ?? null} />
        </td>
        <td>
          {target.job_count === 0 ? <span className="sub">none</span> : target.job_count}
          {target.active_job_ids.length > 0 && (
            <div className="sub">
              in use by{" "}
              {target.active_job_ids.map((id, index) => (
                <span key={id}>
                  {index > 0 && ", "}
                  <Link to={`/jobs/${String(id)}`}>#{id}</Link>
                </span>
              ))}
            </div>
          )}
        </td>
        <td className="actions">
          {canOperate(role) && (
            <button className="small" disabled={check.isPending} onClick={() => check.mutate(target.id)}>
              {check.isPending ? "Checking…" : "Check"}
            </button>
          )}
          {isAdmin(role) && (
            <>
              <button className="small" onClick={onEdit}>
                Edit
              </button>
              <button
                className="small danger"
                disabled={remove.isPending}
                onClick={() => {
                  if (window.confirm(deleteQuestion(target))) remove.mutate(target.id);
                }}
              >
                Delete
              </button>
            </>
          )}
        </td>
      </tr>
      {failed !== null && (
        <tr>
          <td colSpan={6}>
            <ErrorMessage error={failed} title={check.error !== null ? `Could not check ${target.name}` : `Could not delete ${target.name}`} />
          </td>
        </tr>
      )}
    </>
  );
}

export function ServersPage() {
  const { role } = useCurrentUser();
  const targets = useQuery(targetsQuery());
  const [editing, setEditing] = useState<number | null>(null);
  const edited = targets.data?.data.find((t) => t.id === editing);
  const count = targets.data?.data.length ?? 0;
  return (
    <>
      <div className="page-head">
        <h1>Saved servers</h1>
        {targets.data && (
          <span className="sub">
            {count} server{count === 1 ? "" : "s"} · restores write into them, backups read from them, checksums compare with them; passwords
            are stored encrypted and never shown
          </span>
        )}
      </div>
      {!isAdmin(role) && (
        <div className="message info" role="note">
          Your role ({role}) reads saved servers{canOperate(role) ? " and checks them" : ""}: an admin adds, changes and deletes them.
        </div>
      )}
      {isAdmin(role) &&
        (edited === undefined ? <ServerFormPanel onDone={() => undefined} /> : <ServerFormPanel key={edited.id} target={edited} onDone={() => setEditing(null)} />)}
      <div className="panel">
        {targets.isPending && <Loading what="saved servers" />}
        {targets.isError && <ErrorMessage error={targets.error} title="Could not read the saved servers" />}
        {targets.data?.data.length === 0 && (
          <Empty title="No saved servers yet">{isAdmin(role) ? "Add one above." : "An admin adds them here."}</Empty>
        )}
        {targets.data && targets.data.data.length > 0 && (
          <div className="scroll">
            <table className="data" aria-label="Saved servers">
              <thead>
                <tr>
                  <th>Server</th>
                  <th>Connects to</th>
                  <th>Password</th>
                  <th>Last check</th>
                  <th>Jobs</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {targets.data.data.map((target) => (
                  <ServerRow
                    key={target.id}
                    target={target}
                    onEdit={() => {
                      setEditing(target.id);
                      window.scrollTo({ top: 0 });
                    }}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  );
}
