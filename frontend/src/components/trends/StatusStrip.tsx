import { type DayLike, dayTitle, stripSummary } from "../../trends/strip";

/** One square per day, oldest first: green restored fine, amber slower than usual, red a failure, grey nothing. */
export function StatusStrip({ days, name }: { days: DayLike[]; name: string }) {
  return (
    <div className="status-strip-row">
      <div className="status-strip" role="list" aria-label={`Last ${String(days.length)} days of ${name}`}>
        {days.map((day) => (
          <span key={day.date} role="listitem" className={`day ${day.state}`} title={dayTitle(day)} aria-label={dayTitle(day)} data-state={day.state} />
        ))}
      </div>
      <span className="sub">{stripSummary(days)}</span>
    </div>
  );
}
