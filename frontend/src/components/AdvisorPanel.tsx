import { useQuery } from "@tanstack/react-query";
import { Link, useNavigate } from "react-router-dom";

import { recordText, settingText, speedupText, verdictClass, verdictText } from "../advisor/advice";
import { type OutcomeItem, type SuggestionItem, adviceQuery, useRerun } from "../queries/advisor";
import { Empty, ErrorMessage, Loading } from "./common";

function Outcome({ outcome }: { outcome: OutcomeItem }) {
  return (
    <li>
      <Link to={`/jobs/${String(outcome.child_job_id)}`}>job #{outcome.child_job_id}</Link>{" "}
      <span className={`badge ${verdictClass(outcome)}`} data-testid="rerun-verdict">
        {verdictText(outcome)}
      </span>
      {outcome.expected_speedup !== null && <span className="sub"> expected {speedupText(outcome.expected_speedup)}</span>}
      {outcome.verdict !== "measuring" && (
        <>
          {" · "}
          <Link to={`/compare?a=${String(outcome.parent_job_id)}&b=${String(outcome.child_job_id)}`}>compare</Link>
        </>
      )}
    </li>
  );
}

interface CardProps {
  suggestion: SuggestionItem;
  jobId: number;
  canRerun: boolean;
  active: boolean;
  onShow: (suggestion: SuggestionItem) => void;
}

function SuggestionCard({ suggestion, jobId, canRerun, active, onShow }: CardProps) {
  const rerun = useRerun(jobId);
  const navigate = useNavigate();
  const record = recordText(suggestion.record);
  const lanes = suggestion.where.lanes.length;
  return (
    <article className={`suggestion ${suggestion.minor ? "minor" : ""} ${active ? "active" : ""}`} data-testid={`suggestion-${suggestion.rule}`}>
      <div className="suggestion-head">
        <button
          className="link"
          onClick={() => onShow(suggestion)}
          aria-pressed={active}
          title={`Highlight the evidence on the timeline: ${String(lanes)} lane${lanes === 1 ? "" : "s"}, ${String(suggestion.where.ranges.length)} time range${suggestion.where.ranges.length === 1 ? "" : "s"}`}
        >
          {suggestion.title}
        </button>
        <span className={`badge ${suggestion.minor ? "queued" : "ok"}`} title="Expected from this run's evidence">
          ≈{speedupText(suggestion.expected_speedup)}
        </span>
      </div>
      <p className="seen">{suggestion.seen}</p>
      <dl className="facts">
        <dt>Change</dt>
        <dd>
          {suggestion.change.settings.map((setting) => (
            <code key={setting.option} className="change">
              {settingText(setting)}
            </code>
          ))}
          {suggestion.change.note && <div className="sub">{suggestion.change.note}</div>}
        </dd>
        <dt>Expected</dt>
        <dd>{suggestion.expected}</dd>
        <dt>Caveat</dt>
        <dd className="sub">{suggestion.caveat}</dd>
        {(suggestion.reruns.length > 0 || record !== null) && (
          <>
            <dt>Score</dt>
            <dd>
              {suggestion.reruns.length > 0 && (
                <ul className="outcomes" aria-label={`Re-runs with ${suggestion.rule}`}>
                  {suggestion.reruns.map((outcome) => (
                    <Outcome key={outcome.child_job_id} outcome={outcome} />
                  ))}
                </ul>
              )}
              {record !== null && <span className="sub">{record} (every job)</span>}
            </dd>
          </>
        )}
      </dl>
      <div className="suggestion-actions">
        <button className="small" onClick={() => onShow(suggestion)}>
          Show in timeline
        </button>
        {canRerun && (
          <button
            className="small primary"
            disabled={!suggestion.change.rerun || rerun.isPending}
            title={suggestion.change.rerun ? "Queue this restore again with the change; it is compared with this run when it ends" : (suggestion.change.note ?? undefined)}
            onClick={() => rerun.mutate(suggestion.rule, { onSuccess: (child) => void navigate(`/jobs/${String(child.id)}`) })}
          >
            Re-run with this change
          </button>
        )}
      </div>
      {rerun.isError && <ErrorMessage error={rerun.error} title="Could not re-run" />}
    </article>
  );
}

export interface AdvisorPanelProps {
  jobId: number;
  /** Restores can be re-run; imported traces cannot. */
  canRerun: boolean;
  activeRule?: string | null;
  onShow: (suggestion: SuggestionItem) => void;
}

/** What held the run back, the changes worth a re-run (most to gain first), and what was checked for little. */
export function AdvisorPanel({ jobId, canRerun, activeRule = null, onShow }: AdvisorPanelProps) {
  const advice = useQuery(adviceQuery(jobId));
  if (advice.isPending) return <Loading what="the advice" />;
  if (advice.isError) return <ErrorMessage error={advice.error} title="Could not read the advice" />;
  const data = advice.data;
  const appliedFrom = data.applied_from;
  const major = data.suggestions.filter((s) => !s.minor);
  const minor = data.suggestions.filter((s) => s.minor);
  return (
    <div className="advisor" data-testid="advisor">
      {appliedFrom !== null && (
        <div className="message info" data-testid="applied-from">
          <strong>Re-run of job #{appliedFrom.parent_job_id}</strong>
          with “{appliedFrom.title}”:{" "}
          <span className={`badge ${verdictClass(appliedFrom)}`}>{verdictText(appliedFrom)}</span>
          {appliedFrom.expected_speedup !== null && <span className="sub"> (expected {speedupText(appliedFrom.expected_speedup)})</span>}{" "}
          <Link to={`/compare?a=${String(appliedFrom.parent_job_id)}&b=${String(appliedFrom.child_job_id)}`}>Compare the two runs</Link>
        </div>
      )}
      {data.state !== "ready" ? (
        <Empty title={data.state === "pending" ? "Advice comes when the run has ended" : "No advice for this run"}>{data.note}</Empty>
      ) : (
        <>
          <p className="headline" data-testid="advisor-headline">
            <strong>What held it back: </strong>
            {data.headline}
          </p>
          {data.notes.map((note) => (
            <p key={note} className="sub">
              {note}
            </p>
          ))}
          {major.length === 0 ? (
            <Empty title="Nothing worth a re-run">
              {String(data.rules_checked)} rules read this run; none found a change that its evidence says would save
              time.
            </Empty>
          ) : (
            major.map((suggestion) => (
              <SuggestionCard key={suggestion.rule} suggestion={suggestion} jobId={jobId} canRerun={canRerun} active={suggestion.rule === activeRule} onShow={onShow} />
            ))
          )}
          {minor.length > 0 && (
            <details className="minor-list">
              <summary>
                Checked, little to gain here ({minor.length}): {minor.map((s) => s.title).join("; ")}
              </summary>
              {minor.map((suggestion) => (
                <SuggestionCard key={suggestion.rule} suggestion={suggestion} jobId={jobId} canRerun={canRerun} active={suggestion.rule === activeRule} onShow={onShow} />
              ))}
            </details>
          )}
        </>
      )}
    </div>
  );
}
