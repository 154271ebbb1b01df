import t from 'tap'
import { GatewayEnvSchema, loadGatewayConfig, SETS_OPTION } from '../../gateway/config.js'
import { GatewayOptionsSchema } from '../../gateway/options.js'

/**
 * The standalone server's variables that set a plugin option take that option's
 * schema: the same type, bounds and default, so the server and a host app cannot be
 * configured differently by accident. The few defaults the server has of its own are
 * listed here, on purpose.
 */

const SERVER_DEFAULTS: Record<string, unknown> = {
  GATEWAY_UPSTREAMS_FILE: 'gateway/upstreams.default.yaml',
  GATEWAY_WATCH_UPSTREAMS: true,
  IDENTITY_PUBLIC_URL: 'http://127.0.0.1:3001',
  IDENTITY_INTERNAL_URL: 'http://127.0.0.1:3002'
}

type Schema = Record<string, unknown> & { properties?: Record<string, Schema>, default?: unknown }

function optionAt (path: string): Schema {
  const [name, member] = path.split('.') as [string, string | undefined]
  const option = (GatewayOptionsSchema.properties as unknown as Record<string, Schema>)[name] as Schema
  return member === undefined ? option : option.properties?.[member] as Schema
}

/** What validates: everything but the words and the default. */
function bounds (schema: Schema): Record<string, unknown> {
  const { description: _d, default: _default, [SETS_OPTION]: _path, ...rest } = schema
  return rest
}

t.test('every variable that sets an option has its bounds and default, and sets it', async (t) => {
  const variables = Object.entries(GatewayEnvSchema.properties as unknown as Record<string, Schema>).filter(([, schema]) => schema[SETS_OPTION] !== undefined)
  for (const name of Object.keys(SERVER_DEFAULTS)) t.ok(variables.some(([variable]) => variable === name), `${name} sets an option`)
  // Options without a default (no limit when unset) are given a value, so that each is seen to be set.
  const plugin = loadGatewayConfig({
    IDENTITY_SERVICE_TOKEN: 's'.repeat(32),
    GATEWAY_METRICS_ON_MAIN_LISTENER: 'true',
    GATEWAY_METRICS_TOKEN: 'm'.repeat(32),
    GATEWAY_MAX_INFLECTED_RESPONSE_BYTES: '1048576',
    GATEWAY_MAX_INFLECTED_RESPONSE_MEMBERS: '100000',
    GATEWAY_CONSOLE_URL: 'http://127.0.0.1:3004'
  }).plugin as Record<string, any>
  for (const [name, variable] of variables) {
    const path = variable[SETS_OPTION] as string
    const option = optionAt(path)
    t.same(bounds(variable), bounds(option), `${name}: the bounds of ${path}`)
    t.same(variable.default, name in SERVER_DEFAULTS ? SERVER_DEFAULTS[name] : option.default, `${name}: ${name in SERVER_DEFAULTS ? 'the server\'s own default' : `the default of ${path}`}`)
    const [head, member] = path.split('.') as [string, string | undefined]
    t.not(member === undefined ? plugin[head] : plugin[head]?.[member], undefined, `${name} sets ${path}`)
  }
})
