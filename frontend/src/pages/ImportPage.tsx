import { type DragEvent, type SyntheticEvent, useState } from "react";
import { Link } from "react-router-dom";

import { ApiError } from "../api/errors";
import { ErrorMessage } from "../components/common";
import { RequireRole } from "../components/RequireLogin";
import { useImportTrace } from "../queries/traces";
import { formatBytes, formatCount } from "../timeline/format";

/** The API's refusals in plain words, with what to do about them. */
function importErrorTitle(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 400) return "This file is not a trace restorescope can read";
    if (error.status === 413) return "This file is too large to upload here";
  }
  return "The import failed";
}

function importErrorHint(error: unknown): string | null {
  if (error instanceof ApiError && error.status === 400) {
    return "Upload a JuiceFS access log (cat .accesslog inside a JuiceFS mount) or strace output taken with -f -tt -T (or -ttt).";
  }
  if (error instanceof ApiError && error.status === 413) {
    return "Cut the log to the part you want to look at (e.g. with head or sed), or raise the server's upload limit.";
  }
  return null;
}

export function ImportPage() {
  return (
    <RequireRole role="operator" what="importing traces">
      <ImportForm />
    </RequireRole>
  );
}

function ImportForm() {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [over, setOver] = useState(false);
  const upload = useImportTrace();

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    if (file !== null) upload.mutate({ file, name });
  };
  const drop = (event: DragEvent): void => {
    event.preventDefault();
    setOver(false);
    const dropped = event.dataTransfer.files[0];
    if (dropped !== undefined) setFile(dropped);
  };
  const result = upload.data;

  return (
    <>
      <div className="page-head">
        <h1>Import a trace</h1>
        <span className="sub">Look at an IO trace taken elsewhere on the same timeline as a restore.</span>
      </div>
      <form className="panel" onSubmit={submit}>
        <div
          className={`dropzone ${over ? "over" : ""}`}
          onDragOver={(event) => {
            event.preventDefault();
            setOver(true);
          }}
          onDragLeave={() => setOver(false)}
          onDrop={drop}
        >
          <p style={{ marginTop: 0 }}>
            Drop a <strong>JuiceFS access log</strong> or <strong>strace log</strong> here, or choose one:
          </p>
          <input
            type="file"
            aria-label="Trace file"
            onChange={(event) => setFile(event.target.files?.[0] ?? null)}
          />
          {file !== null && (
            <p className="mono">
              {file.name} · {formatBytes(file.size)}
            </p>
          )}
          <p className="hint" style={{ marginBottom: 0 }}>
            JuiceFS: <code>cat /jfs/.accesslog &gt; access.log</code> (any version, before and after 1.2). strace:{" "}
            <code>strace -f -tt -T -o trace.log -p PID</code>.
          </p>
        </div>
        <div className="filters" style={{ marginTop: 12 }}>
          <label htmlFor="import-name">Name</label>
          <input id="import-name" value={name} onChange={(event) => setName(event.target.value)} placeholder="(the file's name)" />
          <button className="primary" type="submit" disabled={file === null || upload.isPending}>
            {upload.isPending ? "Importing…" : "Import"}
          </button>
        </div>
      </form>
      {upload.isError && (
        <ErrorMessage error={upload.error} title={importErrorTitle(upload.error)} withoutField>
          {importErrorHint(upload.error) !== null && <div>{importErrorHint(upload.error)}</div>}
        </ErrorMessage>
      )}
      {result !== undefined && (
        <div className="panel" data-testid="import-result">
          <h2>
            Imported {result.format} trace as job #{result.job_id}
          </h2>
          <p>
            {formatCount(result.operations)} operations on {formatCount(result.lanes)} thread{result.lanes === 1 ? "" : "s"}.{" "}
            <Link className="button primary" to={`/jobs/${String(result.job_id)}/timeline`}>
              Open its timeline
            </Link>
          </p>
          {result.malformed_lines > 0 ? (
            <>
              <div className="message warn">
                {formatCount(result.malformed_lines)} line{result.malformed_lines === 1 ? " was" : "s were"} not understood and left out
                {result.malformed.length < result.malformed_lines ? ` (the first ${String(result.malformed.length)} are listed)` : ""}.
              </div>
              <div className="scroll" style={{ maxHeight: 300 }}>
                <table className="data" aria-label="Malformed lines">
                  <thead>
                    <tr>
                      <th className="num">Line</th>
                      <th>Why</th>
                      <th>Text</th>
                    </tr>
                  </thead>
                  <tbody>
                    {result.malformed.map((line) => (
                      <tr key={line.line_no}>
                        <td className="num">{line.line_no}</td>
                        <td>{line.reason}</td>
                        <td className="mono">{line.text}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          ) : (
            <p className="sub">Every line was read.</p>
          )}
        </div>
      )}
    </>
  );
}
