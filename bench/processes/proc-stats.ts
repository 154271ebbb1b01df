import { readFileSync } from 'node:fs'

/** Resident memory of a live process, from /proc (Linux): now and its peak so far. */
export function memoryOf (pid: number): { rssMiB: number, peakRssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 }
}

/** CPU seconds (user + system) a live process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf (pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name (field 2) may hold spaces: count fields after its closing paren.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15)
  return ticks / CLOCK_TICKS_PER_SECOND
}

/** USER_HZ is 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100
