import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';

/**
 * OpenTelemetry traces (and BullMQ's job metrics) through bullmq-otel, when FLOTILLA_OTEL is on.
 * Spans go to whatever OpenTelemetry SDK the process registered (for example with
 * `NODE_OPTIONS=--import @opentelemetry/auto-instrumentations-node/register`); without one they
 * cost next to nothing. Producer, hosts and the board pass the same object to every queue, so a
 * job's trace follows it from `submit` across hosts.
 */
export function createTelemetry(enabled: boolean): Telemetry | undefined {
  if (!enabled) return undefined;
  return new BullMQOtel({
    tracerName: 'flotilla',
    meterName: 'flotilla',
    enableMetrics: true,
  }) as unknown as Telemetry;
}
