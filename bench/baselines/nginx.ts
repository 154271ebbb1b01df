import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Debian puts nginx in /usr/sbin, which is not on every user's PATH. */
const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx', '/opt/homebrew/bin/nginx']

async function onPath (): Promise<string | null> {
  try {
    const { stdout } = await run('sh', ['-c', 'command -v nginx'])
    return stdout.trim() === '' ? null : stdout.trim()
  } catch {
    return null
  }
}

/** The nginx binary, or null. */
export async function findNginx (): Promise<string | null> {
  return await onPath() ?? CANDIDATES.find((path) => existsSync(path)) ?? null
}

export async function nginxVersion (binary: string): Promise<string> {
  const { stderr } = await run(binary, ['-v']) // nginx prints its version on stderr
  return stderr.trim().replace(/^nginx version:\s*/, '')
}

/**
 * Finds nginx, or installs Debian's `nginx-light` when allowed and possible (root and
 * apt-get present). Returns the binary, or why there is none (the bench prints it and
 * runs without the nginx reference).
 */
export async function findOrInstallNginx (install: boolean, say: (line: string) => void): Promise<{ binary: string } | { absent: string }> {
  const found = await findNginx()
  if (found !== null) return { binary: found }
  if (!install) return { absent: 'nginx is not installed and --no-nginx-install was given' }
  const canInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')
  if (!canInstall) return { absent: 'nginx is not installed and cannot be installed here (apt-get as root): install it to get the nginx reference' }
  say('nginx is absent: installing Debian\'s nginx-light with apt-get (--no-nginx-install skips this)')
  try {
    await run('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 16 * 1024 * 1024 })
  } catch (err) {
    return { absent: `nginx could not be installed (${(err as Error).message.split('\n')[0] ?? 'apt-get failed'})` }
  }
  const installed = await findNginx()
  return installed !== null ? { binary: installed } : { absent: 'apt-get installed nginx-light, but no nginx binary was found' }
}

/**
 * An nginx configuration equivalent to the bare proxy: one worker (the gateway is one
 * Node process), keep-alive to the upstream, no access log (the reference is the
 * proxy, not its logging), everything under `dir`.
 */
export async function writeNginxConfig (dir: string, port: number, upstreamPort: number): Promise<string> {
  await mkdir(join(dir, 'temp'), { recursive: true })
  const root = process.getuid?.() === 0 ? 'user root;\n' : ''
  const config = `${root}worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'temp', 'body')};
  proxy_temp_path ${join(dir, 'temp', 'proxy')};
  fastcgi_temp_path ${join(dir, 'temp', 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'temp', 'uwsgi')};
  scgi_temp_path ${join(dir, 'temp', 'scgi')};
  upstream mock { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`
  const file = join(dir, 'nginx.conf')
  await writeFile(file, config)
  return file
}
