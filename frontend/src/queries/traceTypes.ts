/** The trace API's shapes, from the generated schema (src/client), under the names the timeline uses. */

import type { Schemas } from "../api/client";

export type MalformedLine = Schemas["MalformedLinePublic"];
export type TraceLane = Schemas["LanePublic"];
export type TraceSummary = Schemas["TracePublic"];
export type WindowBucket = Schemas["BucketPublic"];
export type WindowOperation = Schemas["WindowOperationPublic"];
export type WindowSpan = Schemas["SpanPublic"];
export type WindowLane = Schemas["WindowLanePublic"];
// Counter points are [t_us, value] pairs; openapi-fetch hands them over as number[][], so the timeline
// takes that wider type (and reads both items with a check).
export type CounterTrack = Omit<Schemas["CounterSeriesPublic"], "points"> & { points: number[][] };
export type TraceWindow = Omit<Schemas["WindowPublic"], "counters"> & { counters: CounterTrack[] };
export type TraceStats = Schemas["StatsPublic"];
export type ImportResult = Schemas["TraceImportPublic"];
