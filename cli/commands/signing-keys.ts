import type { Command } from 'commander'
import { signingKeyView } from '../../identity/views.js'
import type { CliIo } from '../io.js'
import { identityAction } from '../identity-action.js'

/** `portier signing-keys …`: the operations of /admin/signing-keys. */
export function registerSigningKeyCommands (program: Command, io: CliIo): void {
  const signingKeys = program.command('signing-keys').description('the keys that sign access tokens (public data only)')

  signingKeys.command('list')
    .description('list signing keys')
    .action(identityAction(io, async ({ services }) => {
      const s = await services()
      return {
        body: { signing_keys: s.signingKeys.list().map((k) => signingKeyView(k, s.clock.now())) },
        columns: { signing_keys: ['kid', 'alg', 'status', 'created_at', 'retired_at', 'publish_until'] }
      }
    }))

  signingKeys.command('rotate')
    .description('sign with a new key from now on; the old one stays in the JWKS until its tokens have expired')
    .action(identityAction(io, async ({ services }) => {
      const s = await services()
      return { body: { signing_key: signingKeyView(await s.signingKeys.rotate(), s.clock.now()) } }
    }))
}
