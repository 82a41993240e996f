/** The 30-day status strip: what each day's square says. */

export interface DayLike {
  date: string;
  state: "ok" | "slow" | "failed" | "none";
  runs: number;
  failed: number;
  slow: number;
}

const STATE_WORDS: Record<DayLike["state"], string> = {
  ok: "restored fine",
  slow: "restored, but slower than usual",
  failed: "a restore failed",
  none: "no restore",
};

export function dayTitle(day: DayLike): string {
  const date = new Date(`${day.date}T12:00:00`).toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" });
  if (day.runs === 0) return `${date}: ${STATE_WORDS.none}`;
  const counts = [`${String(day.runs)} run${day.runs === 1 ? "" : "s"}`];
  if (day.failed > 0) counts.push(`${String(day.failed)} failed`);
  if (day.slow > 0) counts.push(`${String(day.slow)} slow`);
  return `${date}: ${STATE_WORDS[day.state]} (${counts.join(", ")})`;
}

/** How many of the days had a failure, for the strip's summary. */
export function stripSummary(days: readonly DayLike[]): string {
  const tested = days.filter((d) => d.runs > 0).length;
  const failed = days.filter((d) => d.state === "failed").length;
  const slow = days.filter((d) => d.state === "slow").length;
  if (tested === 0) return `no restore in ${String(days.length)} days`;
  const parts = [`restored on ${String(tested)} of ${String(days.length)} days`];
  if (failed > 0) parts.push(`${String(failed)} with a failure`);
  if (slow > 0) parts.push(`${String(slow)} slow`);
  return parts.join(", ");
}
