import { Link } from "react-router-dom";

import { isAdmin } from "../auth/roles";
import type { components } from "../client/schema";
import { useCurrentUser } from "../queries/auth";

type Target = components["schemas"]["TargetPublic"];

/** The saved servers as a select, for a Field: each named with where it listens and as whom, and flagged when its
 * last check failed. */
export function SavedServerSelect({
  fieldProps,
  targets,
  value,
  onChange,
}: {
  fieldProps: { id: string; "aria-invalid": boolean; "aria-describedby"?: string };
  targets: Target[] | undefined;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <select {...fieldProps} value={value} onChange={(event) => onChange(event.target.value)} style={{ maxWidth: 420 }}>
      <option value="">Choose a server…</option>
      {targets?.map((target) => (
        <option key={target.id} value={target.id}>
          {target.name} ({target.socket ?? `${target.host}:${String(target.port)}`}, user {target.user})
          {target.last_check?.ok === false ? " – last check failed" : ""}
        </option>
      ))}
    </select>
  );
}

/** The hint under a saved-server picker when there is none yet: where to add one, or who can. */
export function NoSavedServers() {
  const { role } = useCurrentUser();
  return isAdmin(role) ? (
    <>
      No saved servers yet: <Link to="/servers">add one on the Saved servers page</Link>.
    </>
  ) : (
    <>
      No saved servers yet: an admin adds them on the <Link to="/servers">Saved servers</Link> page.
    </>
  );
}
