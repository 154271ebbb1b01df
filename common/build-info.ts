import { Gauge, type Registry } from 'prom-client'
import { portierVersion } from './openapi.js'

/** Read once: package.json does not change under a running process. */
let version: string | undefined

/**
 * `portier_build_info{version, node_version, service} 1`: the series dashboards join on
 * to say which release and which Node.js a service runs (the `*_build_info` convention
 * of Prometheus's own exporters). A clustered gateway's workers all run the same build,
 * so their sum keeps the first worker's value rather than counting the workers.
 */
export function registerBuildInfo (registry: Registry, service: 'gateway' | 'identity'): void {
  version ??= portierVersion()
  new Gauge({
    name: 'portier_build_info',
    help: 'Always 1, labelled with the Portier version, the Node.js version and the service that runs them.',
    labelNames: ['version', 'node_version', 'service'] as const,
    registers: [registry],
    aggregator: 'first'
  }).set({ version, node_version: process.version, service }, 1)
}
