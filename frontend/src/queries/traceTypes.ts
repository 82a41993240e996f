/**
 * The trace API's shapes as /work/coord's contract describes them. Replaced by the generated schema types
 * (src/client) once the trace routes are in the backend's OpenAPI schema.
 */

export interface MalformedLine {
  line_no: number;
  reason: string;
  text: string;
}

export interface TraceLane {
  tid: number;
  role: string;
  name: string | null;
  process: string | null;
  pid: number | null;
  connection_id: number | null;
  operations: number;
  busy_us: number;
}

export interface TraceSummary {
  job_id: number;
  source: "capture" | "import";
  backend: string;
  status: "recording" | "complete" | "failed";
  aio_mode: string | null;
  visibility: string | null;
  fallback_reason: string | null;
  operations: number;
  malformed_lines: number;
  malformed: MalformedLine[];
  t_min_us: number | null;
  t_max_us: number | null;
  lanes: TraceLane[];
  kinds: Record<string, number>;
  counters: { track: string; unit: string }[];
}

export interface WindowBucket {
  i: number;
  busy: number;
  kind: string;
  count: number;
  bytes: number;
}

export interface WindowOperation {
  start_us: number;
  duration_us: number;
  op: string;
  kind: string;
  path: string | null;
  offset: number | null;
  size: number | null;
  result: string;
}

export interface WindowSpan {
  start_us: number;
  duration_us: number;
  track: string;
  label: string;
}

export interface WindowLane {
  tid: number;
  detail: "buckets" | "operations";
  buckets: WindowBucket[];
  operations: WindowOperation[];
  spans: WindowSpan[];
}

export interface CounterTrack {
  track: string;
  unit: string;
  points: [number, number][];
}

export interface TraceWindow {
  t0_us: number;
  t1_us: number;
  bucket_us: number;
  lanes: WindowLane[];
  counters: CounterTrack[];
}

export interface LatencyPercentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface KindStats {
  kind: string;
  count: number;
  bytes: number;
  mb_per_s: number;
  latency_us: LatencyPercentiles;
}

export interface OpStats extends KindStats {
  op: string;
}

export interface TraceStats {
  t0_us: number;
  t1_us: number;
  duration_us: number;
  by_kind: KindStats[];
  by_op: OpStats[];
  latency_histogram: { kind: string; buckets: { le_us: number; count: number }[] }[];
  size_histogram: { kind: string; buckets: { le_bytes: number; count: number }[] }[];
  threads: { tid: number; role: string; busy_pct: number; cpu_pct: number | null; operations: number; bytes: number }[];
  files: {
    path: string;
    reads: number;
    writes: number;
    fsyncs: number;
    bytes_read: number;
    bytes_written: number;
    busy_us: number;
  }[];
  access: { sequential_ops: number; random_ops: number; sequential_pct: number };
  fsync_time_pct: number;
}

export interface ImportResult {
  job_id: number;
  format: string;
  operations: number;
  lanes: number;
  malformed_lines: number;
  malformed: MalformedLine[];
}
