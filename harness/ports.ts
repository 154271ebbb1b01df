import { createServer } from 'node:net'

/*
 * Ports for servers a test or the bench starts next (often in another process, a moment
 * later). Not the OS's pick (listen on port 0): that comes from the ephemeral range
 * (Linux: 32768–60999), the same range every outgoing connection takes its local port
 * from, so between the pick and the server's own listen a connection of any test running
 * beside it could take the port (EADDRINUSE). These come from below it instead, each
 * process from its own slice (by pid) and in turn within it, so processes running side
 * by side do not hand out the same port either.
 */
const FIRST_PORT = 16_000
const SLICES = 16
const SLICE_SIZE = 1_000
const slice = FIRST_PORT + (process.pid % SLICES) * SLICE_SIZE
let next = Math.floor(Math.random() * SLICE_SIZE)

async function listenable (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => { resolve(false) })
    server.listen(port, '127.0.0.1', () => server.close(() => { resolve(true) }))
  })
}

async function osPort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** A loopback port free right now, for a server started next. */
export async function freePort (): Promise<number> {
  for (let tried = 0; tried < SLICE_SIZE; tried++) {
    const port = slice + (next++ % SLICE_SIZE)
    if (await listenable(port)) return port
  }
  // The whole slice taken (a very long run): the OS's pick, as before.
  return await osPort()
}
