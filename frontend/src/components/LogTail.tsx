import { useEffect, useRef } from "react";

import type { JobLogLine } from "../queries/jobs";

/** The job's log, following new lines unless the reader has scrolled up to read older ones. */
export function LogTail({ lines, streaming }: { lines: JobLogLine[]; streaming: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const following = useRef(true);

  useEffect(() => {
    const element = box.current;
    if (element !== null && following.current) element.scrollTop = element.scrollHeight;
  }, [lines]);

  return (
    <div
      className="log"
      ref={box}
      aria-label="Job log"
      aria-live="polite"
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current = element.scrollHeight - element.scrollTop - element.clientHeight < 24;
      }}
    >
      {lines.length === 0 && <span className="time">{streaming ? "Waiting for the first log line…" : "No log lines."}</span>}
      {lines.map((line) => (
        <div key={line.id} className={`level-${line.level.toLowerCase()}`}>
          <span className="time">{new Date(line.created_at).toLocaleTimeString([], { hour12: false })}</span>{" "}
          {line.source !== "job" && <span className="time">[{line.source}] </span>}
          {line.message}
        </div>
      ))}
    </div>
  );
}
