/**
 * Prometheus text exposition format 0.0.4, written by hand: the board exposes a handful of
 * families, which does not justify a metrics library.
 */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface MetricSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
  /** `_bucket`, `_sum`, `_count` of a histogram; appended to the family name. */
  readonly suffix?: string;
}

export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter' | 'histogram' | 'summary' | 'untyped';
  readonly samples: readonly MetricSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function formatLabels(labels: Readonly<Record<string, string>> | undefined): string {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return '';
  for (const [key] of entries)
    if (!LABEL.test(key)) throw new Error(`invalid Prometheus label name '${key}'`);
  return `{${entries.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

export function formatPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    if (!NAME.test(family.name)) throw new Error(`invalid Prometheus metric name '${family.name}'`);
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      lines.push(
        `${family.name}${sample.suffix ?? ''}${formatLabels(sample.labels)} ${formatValue(sample.value)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Cumulative `_bucket` samples plus `_sum` and `_count` for one label set. */
export function histogramSamples(
  values: readonly number[],
  bounds: readonly number[],
  labels: Readonly<Record<string, string>> = {},
): MetricSample[] {
  const buckets = bounds.map((le) => ({
    suffix: '_bucket',
    labels: { ...labels, le: formatValue(le) },
    value: values.filter((v) => v <= le).length,
  }));
  return [
    ...buckets,
    { suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: values.length },
    { suffix: '_sum', labels, value: values.reduce((a, b) => a + b, 0) },
    { suffix: '_count', labels, value: values.length },
  ];
}
