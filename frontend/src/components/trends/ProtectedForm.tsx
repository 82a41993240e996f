import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useState } from "react";

import { ApiError } from "../../api/errors";
import { presetsQuery } from "../../queries/presets";
import { type Protected, type ProtectedCreate, type ProtectedUpdate, useCreateProtected, useUpdateProtected } from "../../queries/protected";
import { targetsQuery } from "../../queries/targets";
import { durationInput, parseDuration } from "../../trends/duration";
import { ErrorMessage } from "../common";
import { Field } from "../Field";
import { SavedServerSelect } from "../SavedServerSelect";

const PLACED = [
  "name",
  "database",
  "backup_glob",
  "source_target_id",
  "rto_s",
  "drill_schedule",
  "drill_timezone",
  "drill_grace_s",
  "drill_preset",
  "webhook_url",
  "webhook_secret",
  "email_to",
];

function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

function zones(): string[] {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return ["UTC"];
  }
}

/** Addresses separated by commas, semicolons or spaces. */
export function splitAddresses(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((a) => a.trim())
    .filter((a) => a !== "");
}

/** Create a protected database, or change one (only the fields that changed are sent). */
export function ProtectedForm({
  existing,
  smtpConfigured,
  onDone,
}: {
  existing?: Protected;
  smtpConfigured: boolean;
  onDone: (saved: Protected) => void;
}) {
  const presets = useQuery(presetsQuery());
  const targets = useQuery(targetsQuery());
  const create = useCreateProtected();
  const update = useUpdateProtected();
  const mutation = existing === undefined ? create : update;

  const [name, setName] = useState(existing?.name ?? "");
  const [database, setDatabase] = useState(existing?.database ?? "");
  const [glob, setGlob] = useState(existing?.backup_glob ?? "");
  const [source, setSource] = useState(existing?.source_target_id != null ? String(existing.source_target_id) : "");
  const [rto, setRto] = useState(existing ? durationInput(existing.rto_s) : "15m");
  const [schedule, setSchedule] = useState(existing?.drill_schedule ?? "");
  const [zone, setZone] = useState(existing?.drill_timezone ?? browserZone());
  const [grace, setGrace] = useState(existing ? durationInput(existing.drill_grace_s) : "1h");
  const [preset, setPreset] = useState(existing?.drill_preset ?? "server-defaults");
  const [webhook, setWebhook] = useState("");
  const [secret, setSecret] = useState("");
  const [removeSecret, setRemoveSecret] = useState(false);
  const [emails, setEmails] = useState(existing?.email_to.join(", ") ?? "");
  const [localErrors, setLocalErrors] = useState<Record<string, string>>({});

  const apiError = mutation.error instanceof ApiError ? mutation.error : null;
  const fieldError = (field: string): string | undefined => localErrors[field] ?? apiError?.fieldMessage(field);
  const unplaced = apiError?.fields.filter((e) => !PLACED.some((f) => e.field === f || e.field.startsWith(`${f}.`)));

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    const rtoParsed = parseDuration(rto);
    const graceParsed = parseDuration(grace);
    const errors: Record<string, string> = {};
    if ("error" in rtoParsed) errors.rto_s = `The RTO ${rtoParsed.error}`;
    if ("error" in graceParsed) errors.drill_grace_s = `The grace period ${graceParsed.error}`;
    setLocalErrors(errors);
    if ("error" in rtoParsed || "error" in graceParsed) return;
    const fields: ProtectedCreate = {
      name: name.trim(),
      database: database.trim(),
      backup_glob: glob.trim() || null,
      source_target_id: source ? Number(source) : null,
      rto_s: rtoParsed.seconds,
      drill_schedule: schedule.trim() || null,
      drill_timezone: zone.trim(),
      drill_grace_s: graceParsed.seconds,
      drill_preset: preset,
      email_to: splitAddresses(emails),
    };
    if (existing === undefined) {
      const body: ProtectedCreate = { ...fields, webhook_url: webhook.trim() || null, webhook_secret: secret || null };
      create.mutate(body, { onSuccess: onDone });
      return;
    }
    // Only what changed; the webhook's address is shown without its path, so an empty field keeps it.
    const body: ProtectedUpdate = {};
    const changes = body as Record<string, unknown>;
    const before: Record<string, unknown> = {
      ...existing,
      backup_glob: existing.backup_glob ?? null,
      drill_schedule: existing.drill_schedule ?? null,
    };
    for (const [key, value] of Object.entries(fields)) {
      if (JSON.stringify(value) !== JSON.stringify(before[key])) changes[key] = value;
    }
    if (webhook.trim()) changes.webhook_url = webhook.trim();
    if (removeSecret) changes.webhook_secret = null;
    else if (secret) changes.webhook_secret = secret;
    update.mutate({ id: existing.id, body }, { onSuccess: onDone });
  };

  return (
    <form onSubmit={submit} noValidate aria-label={existing ? `Edit ${existing.name}` : "Protect a database"}>
      {mutation.isError && (
        <ErrorMessage error={mutation.error} title="Not saved">
          {unplaced && unplaced.length > 0 ? null : <div>Fix the fields marked below and save again.</div>}
        </ErrorMessage>
      )}
      <div className="grid-3">
        <Field label="Name" error={fieldError("name")} hint="How the pages and notifications call it.">
          {(props) => <input {...props} value={name} onChange={(e) => setName(e.target.value)} placeholder="shop (production)" />}
        </Field>
        <Field label="Database" error={fieldError("database")} hint="As the backups name it.">
          {(props) => <input {...props} value={database} onChange={(e) => setDatabase(e.target.value)} placeholder="shop" />}
        </Field>
        <Field label="RTO" error={fieldError("rto_s")} hint="Target restore time, e.g. 15m or 1h 30m.">
          {(props) => <input {...props} value={rto} onChange={(e) => setRto(e.target.value)} />}
        </Field>
        <Field
          label="Backups matching"
          error={fieldError("backup_glob")}
          hint="Optional pattern of backup paths under a root, e.g. nightly/shop-*. Needed for --tab directories, which do not name their database."
        >
          {(props) => <input {...props} value={glob} onChange={(e) => setGlob(e.target.value)} placeholder="(any backup naming it)" />}
        </Field>
        <Field label="Taken from saved server" error={fieldError("source_target_id")} hint="Optional: only backups that server's backup jobs wrote.">
          {(props) => <SavedServerSelect fieldProps={props} targets={targets.data?.data} value={source} onChange={setSource} />}
        </Field>
        <Field label="Drill sandbox preset" error={fieldError("drill_preset")}>
          {(props) => (
            <select {...props} value={preset} onChange={(e) => setPreset(e.target.value)}>
              {(presets.data ?? [{ name: "server-defaults" }]).map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="Drill schedule"
          error={fieldError("drill_schedule")}
          hint={
            <>
              cron: minute hour day month weekday, e.g. <code>0 2 * * *</code> every day at 02:00, <code>30 3 * * 1</code> Mondays
              at 03:30. Empty: drills by hand only.
            </>
          }
        >
          {(props) => <input {...props} className="mono" value={schedule} onChange={(e) => setSchedule(e.target.value)} placeholder="0 2 * * *" />}
        </Field>
        <Field label="Time zone" error={fieldError("drill_timezone")} hint="The schedule's clock, and the days of the status strip.">
          {(props) => (
            <>
              <input {...props} list="time-zones" value={zone} onChange={(e) => setZone(e.target.value)} />
              <datalist id="time-zones">
                {zones().map((z) => (
                  <option key={z} value={z} />
                ))}
              </datalist>
            </>
          )}
        </Field>
        <Field label="Overdue after" error={fieldError("drill_grace_s")} hint="A drill not started this long after its time is flagged.">
          {(props) => <input {...props} value={grace} onChange={(e) => setGrace(e.target.value)} />}
        </Field>
        <Field
          label="Webhook"
          error={fieldError("webhook_url")}
          hint={
            existing?.webhook ? `Now ${existing.webhook}; empty keeps it.` : "JSON POSTed on a failure, an overdue drill or an RTO breach."
          }
        >
          {(props) => <input {...props} type="url" value={webhook} onChange={(e) => setWebhook(e.target.value)} placeholder="https://hooks.example.com/…" />}
        </Field>
        <Field
          label="Webhook secret"
          error={fieldError("webhook_secret")}
          hint={
            <>
              Signs each body: X-Restorescope-Signature: sha256=HMAC. Stored encrypted, never shown.
              {existing?.has_webhook_secret && (
                <label style={{ display: "block" }}>
                  <input type="checkbox" checked={removeSecret} onChange={(e) => setRemoveSecret(e.target.checked)} /> remove the secret set now
                </label>
              )}
            </>
          }
        >
          {(props) => (
            <input
              {...props}
              type="password"
              autoComplete="new-password"
              value={secret}
              onChange={(e) => setSecret(e.target.value)}
              placeholder={existing?.has_webhook_secret ? "(set; empty keeps it)" : "(none)"}
            />
          )}
        </Field>
        <Field
          label="E-mail to"
          error={fieldError("email_to")}
          hint={smtpConfigured ? "Addresses, separated by commas." : "This server sends no e-mail yet: set RESTORESCOPE_SMTP_HOST."}
        >
          {(props) => <input {...props} value={emails} onChange={(e) => setEmails(e.target.value)} placeholder="dba@example.com" />}
        </Field>
      </div>
      <div className="form-actions">
        <button type="submit" className="primary" disabled={mutation.isPending}>
          {existing ? "Save changes" : "Protect"}
        </button>
      </div>
    </form>
  );
}
