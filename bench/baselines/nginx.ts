import { execFile } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { ToolSpec } from '../tools.js'

const run = promisify(execFile)

export const NGINX: ToolSpec = {
  name: 'nginx',
  aptPackage: 'nginx-light',
  candidates: ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx', '/opt/homebrew/bin/nginx'],
  refuseFlag: '--no-nginx-install'
}

export async function nginxVersion (binary: string): Promise<string> {
  const { stderr } = await run(binary, ['-v']) // nginx prints its version on stderr
  return stderr.trim().replace(/^nginx version:\s*/, '')
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
  # Neither side closes a kept-alive connection after 1 000 requests (the default), as Node does not either.
  keepalive_requests 1000000;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
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
