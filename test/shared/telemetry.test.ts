import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/** With FLOTILLA_OTEL on, a mission's jobs leave OpenTelemetry spans through bullmq-otel. */
describe('OpenTelemetry traces', () => {
  const exporter = new InMemorySpanExporter();
  let cluster: TestCluster;

  beforeAll(async () => {
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    cluster = await startCluster({ hosts: 1, env: { FLOTILLA_OTEL: '1' } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('traces the run, verify, critic and gate jobs of a task', async () => {
    const status = await cluster.run(
      [
        'goal: traced',
        'workspace: ./ws',
        'tasks:',
        '  - id: one',
        '    title: one',
        '    exit_criteria: ["test -f one.txt"]',
        '    description: |',
        indent(sim('- write: {path: one.txt, content: "1"}')),
      ].join('\n'),
    );
    expect(status.status).toBe('done');
    const names = exporter.getFinishedSpans().map((s) => s.name);
    for (const queue of ['dispatch.code_implementation', 'verify', 'critic', 'mission']) {
      expect(
        names.some((n) => n.includes(queue)),
        `a span for ${queue} in ${names.join(', ')}`,
      ).toBe(true);
    }
  });
});
