import t from 'tap'
import {
  IDENTITY_PUBLIC_FILE, WRITE_VARIABLE, committedIdentityPublicText, generatedIdentityPublicText, writeIdentityPublicText
} from '../helpers/identity-public-document.js'

/**
 * The gateway documents identity's public operations from a committed copy of identity's
 * document (gateway/docs/identity-public.json), so that no identity code runs in a
 * gateway process. This suite regenerates it from identity's routes and fails when the
 * copy is stale; `npm run docs:identity` runs it in writing mode.
 */

t.test('the gateway\'s copy of identity\'s public document is identity\'s document now', async (t) => {
  const generated = await generatedIdentityPublicText()
  if (process.env[WRITE_VARIABLE] === '1') {
    writeIdentityPublicText(generated)
    t.pass(`wrote ${IDENTITY_PUBLIC_FILE}`)
    return
  }
  const committed = committedIdentityPublicText()
  t.equal(committed, generated, 'gateway/docs/identity-public.json differs from the document identity generates from its ' +
    'public routes: if they changed on purpose, run `npm run docs:identity` and commit the file')
})
